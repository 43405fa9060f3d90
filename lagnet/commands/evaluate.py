"""`lagnet evaluate RUN_DIR [--data FILE ...]` and `lagnet compare RUN_DIR ...`."""

import jax


def _precision_of(run_dir: str) -> None:
    """The CLI owns its process: a float64 run needs 64-bit floats before any array is made."""
    from ..run.spec import RunSpec

    try:
        if RunSpec.read(run_dir).dtype == "float64":
            jax.config.update("jax_enable_x64", True)
    except (FileNotFoundError, ValueError):
        pass  # loading the run reports it


def register(sub) -> None:
    p = sub.add_parser(
        "evaluate",
        help="evaluate a trained run: window errors, long rollout, figures, report",
        description="Evaluate RUN_DIR on its test data (or --data): writes metrics.json, PNG figures and "
        "report.md under RUN_DIR/evaluation (or --out).",
    )
    p.add_argument("run_dir")
    p.add_argument("--data", nargs="+", help="evaluation file(s), mapped like the run's config")
    p.add_argument("--out", help="output folder (default RUN_DIR/evaluation)")
    p.add_argument("--no-plots", action="store_true")
    p.set_defaults(func=run)
    register_compare(sub)


def run(args) -> int:
    from ..evaluate.report import format_table
    from ..evaluate.run import evaluate_run

    _precision_of(args.run_dir)
    metrics = evaluate_run(args.run_dir, args.data, args.out, plots=not args.no_plots)
    print(format_table(metrics))
    return 0


def register_compare(sub) -> None:
    p = sub.add_parser(
        "compare",
        help="put several evaluated runs side by side (one table, one figure)",
        description="Compare runs on their window errors (evaluating any that have not been evaluated).",
    )
    p.add_argument("run_dirs", nargs="+")
    p.add_argument("--out", help="write comparison.md and comparison.png here")
    p.set_defaults(func=run_compare)


def run_compare(args) -> int:
    from ..evaluate.compare import compare_runs

    for run_dir in args.run_dirs:
        _precision_of(run_dir)
    table, _ = compare_runs(args.run_dirs, args.out)
    print(table)
    return 0

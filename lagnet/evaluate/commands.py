"""`lagnet evaluate RUN_DIR [--data FILE ...]`."""


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


def run(args) -> int:
    from .run import evaluate_run, format_table

    metrics = evaluate_run(args.run_dir, args.data, args.out, plots=not args.no_plots)
    print(format_table(metrics))
    return 0

"""`lagnet evaluate RUN_DIR [--data FILE ...]` and `lagnet compare RUN_DIR ...`."""

import argparse
import sys

import jax

from .options import seed


def use_run_precision(run_dir: str) -> None:
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
        help="evaluate a trained run: window errors at given horizons, long rollout, figures, report",
        description="Evaluate RUN_DIR on its test data (or --data): the |error| of rollouts from measured states "
        "with the recorded inputs, averaged over each window and at its horizon, per state variable, against the "
        "model's physics prior (its network removed) and holding the initial state, split by the windows' "
        "initial amplitude and the config's evaluation.regions; the share of test states outside the training "
        "states' range; the error against the horizon; a long rollout with its energy and reversibility. "
        "Writes metrics.json, report.md and PNG figures under RUN_DIR/evaluation "
        "(or --out).",
        epilog="examples:\n  lagnet evaluate runs/cartpole_pinode --horizon 0.1s 0.5s 2s\n"
        "  lagnet evaluate RUN --horizon 0.5s --stride 0.25s --data data/other_run.csv\n"
        "  lagnet evaluate RUN --horizon 250 --starts 1.0 12.5",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("run_dir")
    p.add_argument(
        "--data",
        nargs="+",
        help="evaluation file(s), mapped like the run's config (default: its test data)",
    )
    p.add_argument(
        "--horizon",
        nargs="+",
        metavar="H",
        help="prediction horizon(s): seconds ('0.5s', '500ms': each window ends at the first sample that long "
        "after its start, so uneven time steps are handled) or steps ('30'); several at once on the same "
        "windows (default: the config's evaluation.horizon)",
    )
    pick = p.add_mutually_exclusive_group()
    pick.add_argument(
        "--windows",
        type=int,
        metavar="N",
        help="N windows at random, seeded (default evaluation.windows)",
    )
    pick.add_argument(
        "--stride",
        metavar="S",
        help="a window every S seconds ('0.25s') or rows ('10') of each recording",
    )
    pick.add_argument(
        "--starts",
        nargs="+",
        type=float,
        metavar="T",
        help="windows starting at these times (seconds from each recording's start)",
    )
    p.add_argument(
        "--long-horizon",
        metavar="H",
        help="length of the long rollout, seconds or steps (default evaluation.long_horizon)",
    )
    p.add_argument("--out", help="output folder (default RUN_DIR/evaluation)")
    p.add_argument("--no-plots", action="store_true", help="metrics.json and report.md only")
    _control_options(p)
    p.set_defaults(func=run_with_control)
    register_compare(sub)


def _control_options(p) -> None:
    """--control and what it takes: --task, --plant, --seeds."""
    p.add_argument(
        "--control",
        action="store_true",
        help="also the closed loop on a named control task. A cart-pole run without --task or --plant: on the "
        "simulated true rig, LQR from 14 starts up to 0.4 rad from upright, MPC swing-up from 6 starts with its "
        "solve times, q̈ at rest and the linearisation against the rig's. Otherwise (any system with a task, "
        "or --task/--plant): a controller designed on the model for each task, from the task's starts (a "
        "swing-up: the receding-horizon iLQR; a reach: the LQR), with its successes and solve times "
        "(metrics.json 'control', a closed-loop figure and a report.md section)",
    )
    p.add_argument(
        "--task",
        nargs="+",
        metavar="NAME",
        help="with --control: the named task(s) (pendulum-swingup, cartpole-swingup, pendubot-swingup, "
        "acrobot-swingup, arm-reach; default: those made for the run's system; a double pendulum driving both "
        "joints: the pendubot and the acrobot)",
    )
    p.add_argument(
        "--plant",
        metavar="SPEC",
        help="with --control: what the controller runs on: rig (the default: the system's simulated rig, "
        "read by its sensors; the double pendulum's is the lab's model with its joint friction), known (the "
        "run's known system, the true state) or model (the learned model itself, the true state)",
    )
    p.add_argument(
        "--seeds",
        nargs="+",
        type=seed,
        metavar="K",
        help="with --control on a cart-pole run: also the run's config trained with each training seed K (into "
        "RUN_DIR/seeds/seed-K; the run's own seed is the run) and evaluated the same way, with the counts "
        "summed over seeds (metrics.json control.seeds and control.over_seeds, a report.md table)",
    )


def run_with_control(args) -> int:
    """`run`, then with --control the closed-loop evaluation: the cart-pole's
    (`lagnet.control.cartpole_evaluation`, over --seeds) or the named tasks' (`lagnet.control.task_evaluation`).
    Bad options fail before any work."""
    control = getattr(args, "control", False)
    seeds = getattr(args, "seeds", None)
    tasks, plant = getattr(args, "task", None), getattr(args, "plant", None)
    if seeds and not control:
        raise ValueError(
            "--seeds repeats the closed-loop evaluation over training seeds: give --control too"
        )
    if (tasks or plant) and not control:
        raise ValueError("--task and --plant choose the closed-loop evaluation: give --control too")
    dyn, choices = _task_model(args) if control else (None, None)
    if seeds and dyn is not None:
        raise ValueError(
            "--seeds repeats the cart-pole's LQR and MPC evaluation over training seeds: it takes neither "
            "--task nor --plant, nor a run of another system"
        )
    code = run(args)
    if control and dyn is None:
        from ..control import cartpole_evaluation

        result = cartpole_evaluation.evaluate_run_control(args.run_dir, args.out)
        print(cartpole_evaluation.control_section({"control": result}))
        if seeds:
            from ..control_seeds import evaluate_run_control_seeds

            result = evaluate_run_control_seeds(args.run_dir, seeds, args.out, progress=True)
            print(cartpole_evaluation.seeds_section(result))
    elif control:
        from ..control import task_evaluation

        result = task_evaluation.evaluate_run_tasks(args.run_dir, args.out, dyn, **choices)
        print(task_evaluation.tasks_section(result))
    return code


def _control_choices(args) -> dict:
    """The tasks, plant, starts and pacing of the closed-loop evaluation: --task and --plant, else the run
    config's `control` section."""
    from ..run.load import read_config

    section = read_config(args.run_dir).control
    return {
        "names": args.task or section.tasks or None,
        "plant_spec": args.plant or section.plant,
        "starts": section.starts,
        "paced": section.paced,
        "options": section.options or None,
    }


def _task_model(args):
    """(the run's model, `_control_choices`) for the named tasks, its tasks and plant checked; (None, None) for
    the cart-pole's own evaluation (a cart-pole run without --task or --plant)."""
    from ..control import task_evaluation
    from ..control.load import load
    from ..systems import CartPole

    task_evaluation.check_plant_spec(args.plant)
    use_run_precision(args.run_dir)
    dyn = load(args.run_dir)
    choices = _control_choices(args)
    if isinstance(dyn.system, CartPole) and not choices["names"] and not choices["plant_spec"]:
        return None, None
    for t in task_evaluation.resolve_tasks(dyn.system, choices["names"]):
        task_evaluation.check_controller_options(t, choices["options"] or {})
    return dyn, choices


def run(args) -> int:
    from ..evaluate.report import format_table, ratio_table
    from ..evaluate.run import evaluate_run

    use_run_precision(args.run_dir)
    metrics = evaluate_run(
        args.run_dir,
        args.data,
        args.out,
        plots=not args.no_plots,
        horizons=args.horizon,
        windows=args.windows,
        stride=args.stride,
        starts=args.starts,
        long_horizon=args.long_horizon,
    )
    print(format_table(metrics))
    print("\n" + ratio_table(metrics))
    coverage = metrics.get("coverage") or {}
    if "variables" in coverage:
        # Always said: errors on states the training never saw measure extrapolation, not the fit.
        shares = ", ".join(
            f"{k} {100 * v['outside']:.1f} %" for k, v in coverage["variables"].items()
        )
        print(f"\ncoverage: test states outside the training states' range: {shares}")
    if coverage.get("warning"):
        print(f"lagnet evaluate: warning: {coverage['warning']}", file=sys.stderr)
    print("wrote " + ", ".join(metrics["written"]))
    return 0


def register_compare(sub) -> None:
    p = sub.add_parser(
        "compare",
        help="put several evaluated runs side by side (one table, one figure)",
        description="Compare runs on their window errors (evaluating any that have not been evaluated; an "
        "evaluation of an older checkpoint than the run's best.eqx is refused: evaluate it again).",
    )
    p.add_argument("run_dirs", nargs="+")
    p.add_argument("--out", help="write comparison.md and comparison.png here")
    p.set_defaults(func=run_compare)


def run_compare(args) -> int:
    from ..evaluate.compare import compare_runs

    for run_dir in args.run_dirs:
        use_run_precision(run_dir)
    table, _ = compare_runs(args.run_dirs, args.out)
    print(table)
    if args.out:
        print(f"wrote {args.out}/comparison.md, {args.out}/comparison.png")
    return 0

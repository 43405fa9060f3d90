"""`lagnet cv CONFIG [CONFIG ...]`: leave-one-run-out cross-validation of configs, and the choice among them
(`lagnet.cross_validation`)."""

import argparse
import os

from ..cross_validation import cross_validate, format_cv


def register(sub) -> None:
    p = sub.add_parser(
        "cv",
        help="leave-one-run-out cross-validation of one or more configs, and the choice among them",
        description="For each CONFIG with training files F1..Fk, fold i trains on the others (validating on "
        "whole recordings among them: the next file in order; with two files, the config's own split of the "
        "other) into OUT/<config name>/fold-i, and scores the held-out Fi: the mean |error| at the horizon "
        "per state variable of the trained model and of its identified physics (the model with its network "
        "removed), each divided by that of the physics as given (the model before training, network removed, "
        "of the first config that holds out that recording; every config is scored on its windows). Prints a "
        "table of these ratios per fold and variable, per config the mean over folds of the per-fold mean "
        "ratio and the worst ratio, and the choice: the lowest worst ratio over folds and variables, then the "
        "lowest mean (ties: the simpler, physics before network, fewer trained parameters). Writes OUT/cv.json "
        "and OUT/chosen.yaml, the chosen config: `lagnet train OUT/chosen.yaml` trains it on all its "
        "recordings.",
        epilog="examples:\n  lagnet cv configs/dfki_double_pendulum_pinode.yaml "
        "configs/dfki_double_pendulum_pure_ode.yaml\n"
        "  lagnet cv my_rig.yaml --vary model.type=known,pure_ode,pinode\n"
        "  lagnet cv CONFIG --folds F1,F3 --epochs 2 --horizon 0.5s --stride 10 --out runs/cv_quick",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("configs", nargs="+", metavar="CONFIG", help="YAML config files")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY.PATH=VALUE",
        help="override a value of every config, the reference included, as lagnet train's --set (repeatable; "
        "VALUE is YAML); to compare values of a key, --vary",
    )
    p.add_argument(
        "--vary",
        action="append",
        default=[],
        metavar="KEY.PATH=V1,V2",
        help="cross-validate each config once per value of KEY.PATH (repeatable: every combination), e.g. "
        "--vary model.type=known,pure_ode,pinode; each variant is named after its config and values",
    )
    p.add_argument(
        "--folds",
        metavar="F1,F3",
        help="only these folds: the held-out files by position (F1 or 1 is data.train's first) or "
        "file name, comma-separated (default: all)",
    )
    p.add_argument(
        "--epochs", type=int, metavar="N", help="training.epochs for every fold (quick runs)"
    )
    p.add_argument(
        "--horizon",
        metavar="H",
        help="seconds ('0.5s') or steps ('30') (default: the first config's evaluation.horizon)",
    )
    p.add_argument(
        "--stride",
        metavar="S",
        help="score windows starting every S rows ('10') or seconds ('0.2s') of each held-out recording "
        "(default: evaluation.windows windows at random starts)",
    )
    p.add_argument(
        "--out",
        default=os.path.join("runs", "cv"),
        help="folder (default runs/cv): every fold trains into OUT/<config name>/fold-i, the name made a "
        "plain folder name by lagnet, and nothing is written outside it",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a fold folder that holds another run; without it a fold folder is reused only when it "
        "holds the same fold of the same config (resumed, or scored as it is when finished)",
    )
    p.add_argument(
        "--reference",
        metavar="CONFIG",
        help="the fair reference, trained per fold on that fold's recordings like every config: each config's "
        "ratios to it are tabled too (default: the least-squares refit of the first config with physics: "
        "its learned parameters and friction fitted by the equation error, `model.identification.method: "
        "least_squares`, on the fold's training and validation recordings); 'none': no reference",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=run)


def _command(args) -> str:
    """The command line that reproduces this cross-validation, for its record."""
    options = [("--folds", args.folds), ("--epochs", args.epochs), ("--horizon", args.horizon)]
    options += [("--stride", args.stride)]
    options += [("--set", item) for item in args.set] + [("--vary", item) for item in args.vary]
    options += [("--reference", args.reference)]
    given = [f"{flag} {value}" for flag, value in options if value is not None]
    return " ".join(["lagnet cv", *args.configs, *given, "--out", args.out])


def run(args) -> int:
    report = cross_validate(
        args.configs,
        args.out,
        folds=args.folds,
        epochs=args.epochs,
        horizon=args.horizon,
        stride=args.stride,
        progress=not args.quiet,
        command=_command(args),
        overwrite=args.overwrite,
        overrides=args.set,
        reference_config=args.reference,
        vary=args.vary,
    )
    print(format_cv(report))
    print(f"wrote {os.path.join(args.out, 'cv.json')}")
    chosen = os.path.join(args.out, "chosen.yaml")
    print(f"wrote {chosen}: train the choice on all its recordings with `lagnet train {chosen}`")
    return 0

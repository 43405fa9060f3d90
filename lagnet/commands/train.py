"""`lagnet train CONFIG [--set key.path=value ...] [--out RUN_DIR]`."""

import argparse
import os
import sys

import jax

from .. import config as _config
from ..config.defaults import changed_defaults, describe_changes
from ..config.files import check_printable


def register(sub) -> None:
    p = sub.add_parser(
        "train",
        help="train a model from a YAML config",
        description=(
            "Train the model a YAML config describes (see configs/ and `lagnet train --show-config`) "
            "and write a run directory: config.yaml (the resolved config), checkpoints/best.eqx and "
            "last.eqx, metrics.jsonl (one line per epoch) and summary.json."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("config", nargs="?", help="a YAML config file")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY.PATH=VALUE",
        help="override a config value, e.g. --set training.epochs=5 (repeatable; VALUE is YAML)",
    )
    p.add_argument("--out", help="the run directory (default: runs/<config name>)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --out from its newest checkpoint (bit-identical to an uninterrupted run)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the run already in --out (its checkpoints and evaluation/ are deleted, once the config, "
        "data and model have been checked); without it lagnet train refuses a folder that holds a run",
    )
    p.add_argument(
        "--compare-defaults",
        metavar="RUN",
        help="print the keys CONFIG leaves to lagnet's defaults whose value differs from what the run RUN "
        "resolved (a default changed since RUN was made), and exit; --resume and model.start_from print them "
        "too",
    )
    p.add_argument(
        "--show-config",
        action="store_true",
        help="print every config key with its default and meaning as a YAML template, and exit; with "
        "CONFIG (and --set), every key with the value that file resolves to: the whole config it means",
    )
    multi = p.add_argument_group(
        "multi-process (multi-host) training",
        "Start the same command on every host; each process loads the same config and data files, the batch is "
        "split over all processes' devices and process 0 writes the run directory (a shared filesystem is "
        "needed for --resume). See lagnet.parallel.",
    )
    multi.add_argument(
        "--distributed",
        action="store_true",
        help="join a multi-process run whose cluster JAX detects (SLURM, Open MPI, Kubernetes)",
    )
    multi.add_argument("--coordinator", metavar="HOST:PORT", help="process 0's address")
    multi.add_argument("--num-processes", type=int, metavar="N", help="processes in the run")
    multi.add_argument(
        "--process-id", type=int, metavar="I", help="this process's index, 0 … N − 1"
    )
    p.set_defaults(func=run)


def default_run_dir(name: str) -> str:
    """runs/<name>: a config's name may pick a folder under runs/, never one elsewhere."""
    if (
        not name
        or name in (".", "..")
        or os.path.isabs(name)
        or any(sep in name for sep in ("/", "\\", os.sep))
    ):
        raise ValueError(
            f"the config's name {name!r} cannot name a run directory under runs/ (it must be a plain name, "
            "without '/', '\\' or '..'): rename it, or give --out"
        )
    return os.path.join("runs", name)


def run(args) -> int:
    if args.show_config:
        # With a CONFIG: that file's whole resolved config, every key with its value and meaning.
        loaded = _config.load_config(args.config, args.set) if args.config else None
        print(_config.describe(values=loaded))
        return 0
    if not args.config:
        raise ValueError("lagnet train needs a CONFIG file (or --show-config)")
    config = _config.load_config(args.config, args.set)
    if args.compare_defaults:
        print(
            describe_changes(
                changed_defaults(args.config, args.compare_defaults, args.set),
                args.compare_defaults,
            )
        )
        return 0
    for earlier in (args.out if args.resume else None, config.model.setting("start_from")):
        if earlier and os.path.isfile(os.path.join(earlier, "config.yaml")):
            changed = changed_defaults(args.config, earlier, args.set)
            if changed:
                print(describe_changes(changed, earlier), file=sys.stderr)
    from ..config.schema import SELECT_BY
    from ..models.summary import physics_summary
    from ..run.training import train_run

    if config.dtype == "float64":
        # The CLI owns its process: a float64 run needs 64-bit floats before any array is made.
        jax.config.update("jax_enable_x64", True)
    out = args.out or default_run_dir(config.name)
    check_printable(out, "--out", source="the command line")
    result = train_run(
        config, out, progress=not args.quiet, resume=args.resume, overwrite=args.overwrite
    )
    metric = SELECT_BY[result.select_by].removeprefix("validation ")
    print(
        f"trained {config.name} ({config.model.type}): best validation {metric} "
        f"{result.best_validation:.4g} after {result.epochs} epochs in {result.seconds:.1f} s → {out}"
    )
    if result.fallback == "physics":
        print(
            "  no trained epoch beat the identified physics on validation: the run ships the physics "
            "(summary.json: fallback)"
        )
    for line in describe_physics(physics_summary(result.model)):
        print("  " + line)
    return 0


def _number(value) -> str:
    """One value: a list (a vector or matrix parameter, e.g. body_pos, one row per body) in brackets, nested as
    it is; a number to 4 digits."""
    if isinstance(value, list):
        return "[" + ", ".join(_number(v) for v in value) + "]"
    return f"{value:.4g}" if isinstance(value, int | float) else str(value)


def _numbers(values) -> str:
    """Numbers as text: a dict as "name value, ...", a list (a vector parameter, e.g. one armature per joint)
    as "[a, b, ...]" where it is a dict's value (nested for a matrix)."""
    if isinstance(values, dict):
        return ", ".join(f"{k} {_number(v)}" for k, v in values.items())
    return ", ".join(_number(v) for v in (values if isinstance(values, list) else [values]))


def describe_physics(physics: dict) -> list[str]:
    """The fitted/trained friction, learned parameters and output scale as lines (what summary.json holds)."""
    lines = []
    friction = physics.get("friction")
    if friction:
        terms = "; ".join(
            f"{t} {_numbers(friction[t])}"
            for t in ("viscous", "coulomb", "stribeck")
            if t in friction
        )
        lines.append(f"friction ({friction['shape']}, ε {friction['epsilon']:g}): {terms}")
    if physics.get("learned_parameters"):
        lines.append(f"learned parameters: {_numbers(physics['learned_parameters'])}")
    if "output_scale" in physics:
        lines.append(f"network output scale: {_numbers(physics['output_scale'])}")
    return lines

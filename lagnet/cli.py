"""The `lagnet` console script. Each subcommand lives with its concept and registers itself here."""

import argparse
import importlib
import sys

# Each module defines `register(subparsers)` that adds its subcommand(s).
_COMMANDS = (
    "lagnet.commands.train",
    "lagnet.commands.evaluate",
    "lagnet.commands.data",
    "lagnet.commands.export",
    "lagnet.commands.cv",
)
# Subcommands that build a config or a run folder, and so may run the Python code it names (--trust-code).
_RUN_CODE = (
    "lagnet.commands.train",
    "lagnet.commands.evaluate",
    "lagnet.commands.export",
    "lagnet.commands.cv",
)
# Subcommands that train a config, which may point at another run whose code it would run (--trust-run).
_TRAIN = ("lagnet.commands.train", "lagnet.commands.cv")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lagnet",
        description="Learn the dynamics of mechanical systems with physics built in (PINODE-style).",
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMANDS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:  # the subcommand is not part of this build yet
                continue
            raise
        before = set(sub.choices)
        module.register(sub)
        if name in _RUN_CODE:
            for command in sorted(set(sub.choices) - before):
                sub.choices[command].add_argument(
                    "--trust-code",
                    action="store_true",
                    help="let the config or run you name run the Python system source it names (a file, or "
                    "a module of a package in LAGNET_TRUSTED_PACKAGES); only for code you trust. Not the "
                    "code of another run a config points at (--trust-run). Also LAGNET_TRUST_CODE=1. See "
                    "docs/guides/security.md",
                )
                if name in _TRAIN:
                    sub.choices[command].add_argument(
                        "--trust-run",
                        action="append",
                        default=[],
                        metavar="RUN",
                        help="let the run folder RUN, which the config points at (model.start_from), run the "
                        "Python system source it keeps; repeatable; only for a run you trust",
                    )
    return parser


def _version() -> str:
    from ._version import __version__

    return f"lagnet {__version__}"


def _start_jax(args) -> None:
    """Before the first computation: join a multi-process run if asked, use every CPU core as a device
    (`lagnet.parallel.use_cpu_cores`; `LAGNET_CPU_DEVICES=1` for one), and turn on the compilation cache."""
    from . import parallel
    from .compilation_cache import use_compilation_cache

    if getattr(args, "distributed", False) or getattr(args, "coordinator", None):
        parallel.initialize_distributed(args.coordinator, args.num_processes, args.process_id)
    parallel.use_cpu_cores()
    use_compilation_cache()


def main(argv: list[str] | None = None) -> int:
    from .config.sources import trust_code, trust_runs
    from .train.fit import TrainingDiverged

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        _start_jax(args)
        with (
            trust_code(getattr(args, "trust_code", False)),
            trust_runs(getattr(args, "trust_run", [])),
        ):
            return int(args.func(args) or 0)
    except (ValueError, TrainingDiverged) as e:
        # Configuration and data errors are the user's to fix: show the message, not a traceback.
        print(f"lagnet {args.command}: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        # A path the user gave that cannot be read or written (missing, a directory, no permission, disk
        # full): the system's message names the file.
        print(f"lagnet {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

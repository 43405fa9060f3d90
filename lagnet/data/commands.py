"""`lagnet data ...`: generate the simulated rigs, tabulate the shipped datasets, check they regenerate."""

import argparse
import tempfile
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `lagnet data {generate, stats, list, verify}`."""
    data = subparsers.add_parser("data", help="generate, list, tabulate and verify datasets")
    data.set_defaults(func=lambda args: data.print_help())
    sub = data.add_subparsers(dest="data_command", metavar="SUBCOMMAND")

    from .generate import GENERATORS

    gen = sub.add_parser(
        "generate",
        help="simulate a rig and write its recordings (NPZ with generator, parameters and seed)",
    )
    gen.add_argument("name", choices=[*GENERATORS, "all"], help="which rig")
    gen.add_argument("--out", default=None, help="output folder (default: <data root>/sim)")
    gen.add_argument("--seed", type=int, default=None, help="seed (default: the shipped one)")
    gen.add_argument("--duration", type=float, default=None, help="override every length (s)")
    gen.set_defaults(func=_generate)

    stats = sub.add_parser("stats", help="statistics table of each shipped dataset (markdown)")
    stats.add_argument("names", nargs="*", help="datasets (default: all)")
    stats.add_argument("--write", metavar="README", help="replace the generated block of this file")
    stats.set_defaults(func=_stats)

    lst = sub.add_parser("list", help="the shipped datasets and their files")
    lst.set_defaults(func=_list)

    verify = sub.add_parser(
        "verify",
        help="regenerate the simulated datasets in a temp folder and compare them bit for bit",
    )
    verify.add_argument("names", nargs="*", help="generators (default: all)")
    verify.set_defaults(func=_verify)


def _generate(args) -> int:
    from .catalog import data_root
    from .generate import GENERATORS, generate

    out = Path(args.out) if args.out else data_root() / "sim"
    names = list(GENERATORS) if args.name == "all" else [args.name]
    for name in names:
        for path in generate(name, out, seed=args.seed, duration=args.duration):
            print(f"wrote {path} ({path.stat().st_size / 1e3:.0f} kB)")
    return 0


def _stats(args) -> int:
    from .catalog import datasets
    from .stats import stats_markdown, write_stats

    names = args.names or None
    known = datasets()
    for n in names or []:
        if n not in known:
            raise ValueError(f"unknown dataset {n!r}; shipped datasets: {', '.join(known)}")
    if args.write:
        write_stats(args.write, names)
        print(f"wrote the statistics of {len(names or known)} datasets into {args.write}")
    else:
        print(stats_markdown(names))
    return 0


def _list(args) -> int:
    from .catalog import data_root, datasets

    root = data_root()
    for spec in datasets().values():
        path = root / spec.path
        size = f"{path.stat().st_size / 1e3:.0f} kB" if path.exists() else "missing"
        print(f"{spec.name:34s} {spec.path:70s} {size:>8s}  {spec.description}")
    return 0


def _verify(args) -> int:
    from .catalog import data_root, sha256
    from .generate import GENERATORS, generate

    names = args.names or list(GENERATORS)
    root = data_root()
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            for path in generate(name, tmp):
                shipped = root / "sim" / path.name
                same = shipped.exists() and sha256(shipped) == sha256(path)
                print(f"{'same' if same else 'DIFFERENT'}  {shipped}")
                if not same:
                    bad.append(str(shipped))
    if bad:
        raise ValueError(f"{len(bad)} file(s) do not regenerate bit for bit: {', '.join(bad)}")
    return 0

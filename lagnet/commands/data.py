"""`lagnet data ...`: generate the simulated rigs, tabulate the shipped datasets, check they regenerate.

Registered from here rather than from `lagnet.data`: generating needs the simulation, and the data package
(loading, windows, the catalog) stays below it.
"""

import argparse
import tempfile
from pathlib import Path

import numpy as np

from ..data.catalog import data_root, datasets
from ..data.stats import stats_markdown, write_stats
from ..simulate.coverage import RADII, coverage, coverage_figure, coverage_table, load_recording
from ..simulate.generate import GENERATORS, SHIPPED, check_overwrite, generate, output_paths
from .options import positive_float, seed


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `lagnet data {generate, coverage, stats, list, verify}`."""
    data = subparsers.add_parser("data", help="generate, list, tabulate and verify datasets")
    data.set_defaults(func=lambda args: data.print_help())
    sub = data.add_subparsers(dest="data_command", metavar="SUBCOMMAND")

    gen = sub.add_parser(
        "generate",
        help="simulate a rig and write its recordings (NPZ with generator, parameters and seed)",
    )
    gen.add_argument(
        "name",
        choices=[*GENERATORS, "all"],
        help="which rig ('all': the generators of the shipped data sets, "
        f"{', '.join(SHIPPED)}; cartpole_control: swing-up and balance under feedback with exploration "
        "noise, PRBS, chirp and multisine inputs, random stabilising LQR policies)",
    )
    gen.add_argument("--out", default=None, help="output folder (default: <data root>/sim)")
    gen.add_argument("--seed", type=seed, default=None, help="seed (default: the shipped one)")
    gen.add_argument(
        "--duration", type=positive_float, default=None, help="override every length (s, > 0)"
    )
    gen.add_argument(
        "--overwrite",
        action="store_true",
        help="replace recordings that already exist in the folder",
    )
    gen.set_defaults(func=_generate)

    cov = sub.add_parser(
        "coverage",
        help="where a dataset's states lie: percentiles per coordinate, share near upright / hanging",
        description="For each FILE (an NPZ written by `lagnet data generate`): percentiles of every "
        "coordinate and velocity, and the share of samples within each radius of the angles' equilibria "
        "(upright: every angle at pi, hanging: at 0), all and slow ones; and a PNG figure per file.",
    )
    cov.add_argument("files", nargs="+", metavar="FILE")
    cov.add_argument(
        "--radii",
        nargs="+",
        type=positive_float,
        default=list(RADII),
        help="radii (rad, > 0), default 0.1 0.3 0.5",
    )
    cov.add_argument(
        "--slow-rate", type=positive_float, default=1.0, help="slow: |angle rate| below (rad/s)"
    )
    cov.add_argument(
        "--slow-speed", type=positive_float, default=0.2, help="slow: |other velocity| below (m/s)"
    )
    cov.add_argument(
        "--out", default="coverage", help="folder for the figures (default ./coverage)"
    )
    cov.set_defaults(func=_coverage)

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
    verify.add_argument("names", nargs="*", help="generators (default: the shipped ones)")
    verify.set_defaults(func=_verify)


def _generate(args) -> int:
    out = Path(args.out) if args.out else data_root() / "sim"
    names = SHIPPED if args.name == "all" else [args.name]
    # Every file is checked before the first is written: `all` does not stop half way.
    check_overwrite([p for name in names for p in output_paths(name, out)], args.overwrite)
    for name in names:
        for path in generate(
            name, out, seed=args.seed, duration=args.duration, overwrite=args.overwrite
        ):
            print(f"wrote {path} ({path.stat().st_size / 1e3:.0f} kB)")
    return 0


def _coverage(args) -> int:
    for name in args.files:
        if not Path(name).exists():
            raise FileNotFoundError(f"lagnet data coverage: no such file {name}")
    for name in args.files:
        trajs = load_recording(name)
        result = coverage(
            trajs, radii=args.radii, slow_rate=args.slow_rate, slow_speed=args.slow_speed
        )
        print(coverage_table(result, name))
        figure = coverage_figure(trajs, Path(args.out) / f"{Path(name).name}.png", name)
        print(f"wrote {figure}")
    return 0


def _stats(args) -> int:
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
    root = data_root()
    for spec in datasets().values():
        path = root / spec.path
        size = f"{path.stat().st_size / 1e3:.0f} kB" if path.exists() else "missing"
        print(f"{spec.name:34s} {spec.path:70s} {size:>8s}  {spec.description}")
    return 0


# A regenerated recording may differ from the shipped one in its last bits on another CPU: XLA's vectorised
# tanh and cos (the simulated hand's command) are rounded differently per instruction set. The quantised
# sensor columns stay exact; an unquantised column counts as reproduced within this relative difference.
ROUNDING = 1e-9


def compare_recordings(shipped, regenerated) -> tuple[bool, float]:
    """(bit for bit, the largest difference relative to each column's largest magnitude) of two NPZ files."""
    with np.load(shipped) as a, np.load(regenerated) as b:
        if sorted(a.files) != sorted(b.files):
            return False, float("inf")
        worst, exact = 0.0, True
        for key in a.files:
            x, y = a[key], b[key]
            if x.shape != y.shape or x.dtype != y.dtype:
                return False, float("inf")
            if np.array_equal(x, y):
                continue
            exact = False
            if x.dtype.kind != "f":
                return False, float("inf")
            scale = max(float(np.max(np.abs(x))), np.finfo(x.dtype).tiny)
            worst = max(worst, float(np.max(np.abs(x - y))) / scale)
        return exact, worst


def _verify(args) -> int:
    names = args.names or SHIPPED
    root = data_root()
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            for path in generate(name, tmp):
                shipped = root / "sim" / path.name
                if not shipped.exists():
                    print(f"MISSING  {shipped}")
                    bad.append(str(shipped))
                    continue
                exact, worst = compare_recordings(shipped, path)
                if exact:
                    print(f"same  {shipped}")
                elif worst <= ROUNDING:
                    print(f"same to rounding (largest relative difference {worst:.1e})  {shipped}")
                else:
                    print(f"DIFFERENT (largest relative difference {worst:.1e})  {shipped}")
                    bad.append(str(shipped))
    if bad:
        raise ValueError(f"{len(bad)} file(s) do not regenerate: {', '.join(bad)}")
    return 0

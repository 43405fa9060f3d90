"""`lagnet export RUN [--out model.jaxexport]`: the model's f and step as StableHLO, loadable with JAX alone."""

import os

from .evaluate import use_run_precision


def register(sub) -> None:
    p = sub.add_parser(
        "export",
        help="export a trained model's f and step (StableHLO, jax.export) for use without lagnet",
        description="Serialise RUN's f(x, u) and step(x, u) (with an input history also f_history and "
        "step_history, the past inputs as an argument; each also batched) with jax.export into one archive "
        "with a metadata.json (dt, dtype, state layout, shapes). Load it with JAX alone: see the README, "
        "'Deployment without lagnet'.",
    )
    p.add_argument("run_dir", help="a run directory (or RUN/checkpoints/NAME.eqx)")
    p.add_argument("--out", help="the archive to write (default RUN/model.jaxexport)")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the file at --out if there is one (without it, an existing file is refused)",
    )
    p.add_argument("--checkpoint", default="best", help="the checkpoint to export (default: best)")
    p.add_argument(
        "--platforms",
        default=None,
        help="comma-separated backends to lower for, of cpu, cuda, rocm, tpu (default: this machine's)",
    )
    p.set_defaults(func=run)


def run(args) -> int:
    from ..control.export import SUFFIX, export_run
    from ..run.load import split_checkpoint_path

    run_dir, which = split_checkpoint_path(args.run_dir, args.checkpoint)
    use_run_precision(run_dir)  # a float64 run is exported in float64
    out = args.out or os.path.join(run_dir, f"model{SUFFIX}")
    platforms = tuple(p.strip() for p in args.platforms.split(",")) if args.platforms else None
    meta = export_run(run_dir, out, which, platforms=platforms, overwrite=args.overwrite)
    names = ", ".join(meta["functions"])
    print(
        f"wrote {out}: {names} ({meta['dtype']}, dt = {meta['dt']} s, {'/'.join(meta['platforms'])}; "
        f"state {tuple(meta['state_names'])}, input {tuple(meta['input_names'])})"
    )
    return 0

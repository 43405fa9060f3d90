"""Training steps at long horizons: ms per step and peak memory over a grid of horizon × batch.

The same step as benchmarks/train_step.py (its model, windows, loss, Adam and implementations, cross-checked
there): lagnet's compiled epoch (one device per core, and on one device), a hand-written `lax.scan` RK4 with
`jax.value_and_grad`, and diffrax `diffeqsolve` at a fixed step with its `RecursiveCheckpointAdjoint`. For each
cell, all implementations are timed interleaved in one process (medians of `--repeats` calls of `--steps` steps)
and the peak memory is XLA's own account of the compiled step (arguments + outputs + temporaries).

    .venv/bin/python benchmarks/long_horizon.py [--horizons 100 250 1000] [--batches 32 128] [--json out.json]
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from _common import (  # noqa: E402
    DT,
    block,
    first_call,
    load,
    make_model,
    parser,
    time_interleaved,
    write,
)
from train_step import jax_steps, make_data  # noqa: E402

PEERS = ("lagnet", "lagnet, 1 device", "hand-written scan", "diffrax")


def peak_bytes(loss_of, params, arrays) -> int:
    """XLA's memory account (arguments + outputs + temporaries) of one compiled value-and-grad of `loss_of`."""
    m = jax.jit(jax.value_and_grad(loss_of)).lower(params, arrays).compile().memory_analysis()
    return int(m.temp_size_in_bytes + m.argument_size_in_bytes + m.output_size_in_bytes)


def lagnet_loss(model):
    """lagnet's batch loss (the one its epoch differentiates, with the integrator's compact form as `fit` uses it)
    as loss(params, arrays)."""
    import equinox as eqx

    from lagnet.integrators import RK4
    from lagnet.train.loss import StateLoss, batch_loss

    ones = jnp.ones(2, jnp.float32)
    loss = StateLoss((False, True), ones, ones, ones, ones)
    _, static = eqx.partition(model, eqx.is_inexact_array)

    def of(params, arrays):
        q0, qd0, us, q_true, qd_true = arrays
        dts = jnp.full(us.shape[:2], DT, jnp.float32)
        return batch_loss(
            eqx.combine(params, static),
            RK4().compact_form(),
            loss,
            (q0, qd0, us, dts, q_true, qd_true),
        )

    return of


def cell(horizon: int, batch: int, steps: int, repeats: int) -> dict:
    model = make_model(jnp.float32)
    data, stacked = make_data(batch, horizon, steps)
    batches = [tuple(a[k * batch : (k + 1) * batch] for a in stacked) for k in range(steps)]
    params, opt_states, fns, losses = jax_steps(model, data, horizon, batch)
    losses["lagnet"] = losses["lagnet, 1 device"] = lagnet_loss(model)
    fns = {k: fns[k] for k in PEERS}
    calls = {
        name: (lambda fn=fn, name=name: block(fn(params, opt_states[name], batches)))
        for name, fn in fns.items()
    }
    compile_s = {name: first_call(call)[0] for name, call in calls.items()}
    median, _ = time_interleaved(calls, repeats)
    out = {}
    for name, seconds in median.items():
        out[name] = {
            "ms_per_step": 1e3 * seconds / steps,
            "vs_scan": median["hand-written scan"] / seconds,
            "vs_diffrax": median["diffrax"] / seconds,
            "compile_s": max(compile_s[name] - seconds, 0.0),
            "peak_mb": peak_bytes(losses[name], params, batches[0]) / 1e6,
        }
    return out


def main():
    p = parser(__doc__)
    p.add_argument("--horizons", type=int, nargs="+", default=[100, 250, 1000])
    p.add_argument("--batches", type=int, nargs="+", default=[32, 128])
    p.add_argument("--steps", type=int, default=5, help="training steps per timed call")
    args = p.parse_args()
    if args.quick:
        args.horizons, args.batches, args.repeats = [100, 250], [32], 3
    load_before = load()
    grid = {}
    for horizon in args.horizons:
        for batch in args.batches:
            grid[f"{horizon}x{batch}"] = r = cell(horizon, batch, args.steps, args.repeats)
            print(
                f"horizon {horizon:5d} batch {batch:4d}: "
                + ", ".join(
                    f"{k} {v['ms_per_step']:.1f} ms, {v['peak_mb']:.1f} MB ({v['vs_scan']:.2f}× scan, "
                    f"{v['vs_diffrax']:.2f}× diffrax)"
                    for k, v in r.items()
                ),
                flush=True,
            )
    write(
        args.json,
        "long_horizon",
        {
            "steps_per_call": args.steps,
            "repeats": args.repeats,
            "dtype": "float32",
            "load_before": load_before,
            "load_after": load(),
            "results": grid,
        },
    )


if __name__ == "__main__":
    jax.config.update("jax_enable_x64", False)
    main()

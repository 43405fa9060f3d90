"""How lagnet's step time grows with the batch, the horizon and the degrees of freedom, and the memory of a
long-horizon training step with and without rematerialisation.

- batch: RK4 on the benchmark cart-pole (benchmarks/_common.py), batch 1 … 65,536, time per step;
- horizon: batch 1024, 1 … 1000 steps, time per step (fixed per-call costs show at short horizons);
- degrees of freedom: `MassSpringChain(N)`, N = 2 … 1024, batch 64, leapfrog (explicit, one force evaluation per
  step) and RK4; Newmark(¼, ½) (a Newton solve with an N × N Jacobian per iteration) up to N = 128;
- memory: a value-and-grad of a 1000-step rollout loss (batch 128), XLA's buffer assignment for the compiled
  step (`memory_analysis()`: temporaries + outputs + arguments), with `remat=False` and `remat=True`.

    .venv/bin/python benchmarks/scaling.py [--quick] [--json out.json]
"""

import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from _common import DT, block, load, make_inputs, make_model, parser, write

from lagnet.integrators import RK4, Leapfrog, Newmark
from lagnet.rollout import rollout
from lagnet.systems import MassSpringChain


def time_call(fn, repeats):
    block(fn())
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        block(fn())
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def batched(model, integrator, q0, qd0, us, steps=None):
    @eqx.filter_jit
    def run(model, q0, qd0, us):
        if us is None:
            return jax.vmap(lambda a, b: rollout(model, integrator, a, b, None, DT, steps=steps))(
                q0, qd0
            )
        return jax.vmap(lambda a, b, c: rollout(model, integrator, a, b, c, DT))(q0, qd0, us)

    return lambda: run(model, q0, qd0, us)


def time_rk4(model, batch, steps, repeats):
    """µs per step and sample-steps per second of a batched RK4 rollout of the benchmark model."""
    q0, qd0, us = map(jnp.asarray, make_inputs(batch, steps))
    s = time_call(batched(model, RK4(), q0, qd0, us), repeats)
    return {"us_per_step": 1e6 * s / steps, "sample_steps_per_s": batch * steps / s}


def sweep_batch(model, sizes, repeats):
    out = []
    for batch in sizes:
        steps = int(np.clip(2**17 // batch, 10, 1000))
        out.append({"batch": batch, "steps": steps, **time_rk4(model, batch, steps, repeats)})
        print(out[-1], flush=True)
    return out


def sweep_horizon(model, horizons, repeats, batch=1024):
    out = []
    for steps in horizons:
        out.append({"steps": steps, "batch": batch, **time_rk4(model, batch, steps, repeats)})
        print(out[-1], flush=True)
    return out


def sweep_dof(sizes, repeats, batch=64, steps=200, implicit_max=128):
    out = []
    rng = np.random.default_rng(0)
    for n in sizes:
        chain = MassSpringChain(n, stiffness=100.0)
        chain = jax.tree_util.tree_map(
            lambda x: x.astype(jnp.float32) if eqx.is_inexact_array(x) else x, chain
        )
        q0 = jnp.asarray(rng.normal(size=(batch, n)) * 0.1, jnp.float32)
        qd0 = jnp.zeros_like(q0)
        row = {"n": n, "batch": batch, "steps": steps}
        methods = {"leapfrog": Leapfrog(), "rk4": RK4()}
        if n <= implicit_max:
            methods["newmark"] = Newmark()
        for name, integrator in methods.items():
            k = steps if name != "newmark" else max(steps // 10, 5)
            s = time_call(batched(chain, integrator, q0, qd0, None, steps=k), repeats)
            row[f"{name}_us_per_step"] = 1e6 * s / k
        out.append(row)
        print(row, flush=True)
    return out


def memory(model, steps, batch=128):
    q0, qd0, us = map(jnp.asarray, make_inputs(batch, steps))
    params, static = eqx.partition(model, eqx.is_inexact_array)
    out = {}
    for remat in (False, True):

        def loss(p, remat=remat):
            m = eqx.combine(p, static)
            qs, qds = jax.vmap(
                lambda a, b, c: rollout(m, RK4(), a, b, c, DT, throw=False, remat=remat)
            )(q0, qd0, us)
            return jnp.mean(qs**2) + jnp.mean(qds**2)

        step = jax.jit(jax.value_and_grad(loss))
        compiled = step.lower(params).compile()
        mem = compiled.memory_analysis()
        seconds = time_call(lambda step=step: step(params), 3)
        out["remat" if remat else "no_remat"] = {
            "temp_bytes": int(mem.temp_size_in_bytes),
            "total_bytes": int(
                mem.temp_size_in_bytes + mem.output_size_in_bytes + mem.argument_size_in_bytes
            ),
            "seconds": seconds,
        }
        print(out, flush=True)
    out["steps"], out["batch"] = steps, batch
    return out


def main():
    p = parser(__doc__)
    args = p.parse_args()
    repeats = 2 if args.quick else 3
    model = make_model(jnp.float32)
    load_before = load()
    batches = (
        [1, 16, 256, 1024, 4096] if args.quick else [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536]
    )
    horizons = [1, 10, 100] if args.quick else [1, 3, 10, 30, 100, 300, 1000]
    dofs = [2, 32, 256] if args.quick else [2, 8, 32, 128, 512, 1024]
    record = {
        "batch": sweep_batch(model, batches, repeats),
        "horizon": sweep_horizon(model, horizons, repeats, batch=256 if args.quick else 1024),
        "dof": sweep_dof(dofs, repeats, implicit_max=32 if args.quick else 128),
        "memory": memory(model, 200 if args.quick else 1000),
        "load_before": load_before,
        "load_after": load(),
    }
    write(args.json, "scaling", record)


if __name__ == "__main__":
    main()

"""Leapfrog and an implicit method on the benchmark cart-pole: `lagnet.rollout` against hand-written scans.

The rollout benchmark's model, states and inputs (benchmarks/_common.py), float32, h = 0.02:
- leapfrog: `Leapfrog(implicit_kick=False)` (explicit: the learned force depends on q̇), against a hand-written
  velocity Verlet with the same predicted velocity; the input changes every step, so both evaluate the force
  twice per step (at the start with the new input, at the end for the closing kick);
- implicit: `Newmark()` (average acceleration, β = ¼, γ = ½), whose step solves for the new acceleration by
  Newton, against a hand-written Newmark with the textbook fixed count of 8 Newton iterations (lagnet stops at
  the first correction below √ε and differentiates the root implicitly).
Trajectories are cross-checked before timing; ratios are to the hand-written scan of the same method.

    .venv/bin/python benchmarks/rollout_other.py [--batch 1024] [--steps 1000] [--json out.json]
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from _common import (
    DT,
    block,
    first_call,
    load,
    make_inputs,
    make_model,
    max_abs_diff,
    parser,
    time_interleaved,
    versus_scan,
    write,
)

from lagnet.integrators import Leapfrog, Newmark
from lagnet.rollout import rollout


def lagnet_fn(integrator):
    @eqx.filter_jit
    def run(model, q0, qd0, us):
        return jax.vmap(lambda a, b, c: rollout(model, integrator, a, b, c, DT))(q0, qd0, us)

    return run


def scan_fn(step):
    @eqx.filter_jit
    def run(model, q0, qd0, us):
        accel = jax.vmap(model.acceleration)

        def body(carry, u):
            q1, qd1 = step(accel, *carry, u)
            return (q1, qd1), (q1, qd1)

        _, (qs, qds) = jax.lax.scan(body, (q0, qd0), jnp.swapaxes(us, 0, 1))
        qs = jnp.concatenate([q0[None], qs])
        qds = jnp.concatenate([qd0[None], qds])
        return jnp.swapaxes(qs, 0, 1), jnp.swapaxes(qds, 0, 1)

    return run


def verlet_step(accel, q, qd, u):
    a0 = accel(q, qd, u)
    qd_half = qd + 0.5 * DT * a0
    q1 = q + DT * qd_half
    a1 = accel(q1, qd + DT * a0, u)
    return q1, qd_half + 0.5 * DT * a1


def newmark_step(accel, q, qd, u, beta=0.25, gamma=0.5, iterations=8):
    a0 = accel(q, qd, u)
    q_pred = q + DT * qd + (0.5 - beta) * DT**2 * a0
    qd_pred = qd + (1 - gamma) * DT * a0

    def one(qp, qdp, ui, a):
        def res(a1):
            return (
                a1
                - accel((qp + beta * DT**2 * a1)[None], (qdp + gamma * DT * a1)[None], ui[None])[0]
            )

        for _ in range(iterations):
            a = a - jnp.linalg.solve(jax.jacfwd(res)(a), res(a))
        return a

    a1 = jax.vmap(one)(q_pred, qd_pred, u, a0)
    return q_pred + beta * DT**2 * a1, qd_pred + gamma * DT * a1


def main():
    p = parser(__doc__)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--steps", type=int, default=1000)
    args = p.parse_args()
    if args.quick:
        args.batch, args.steps, args.repeats = 256, 200, 3
    load_before = load()
    model = make_model(jnp.float32)
    q0, qd0, us = map(jnp.asarray, make_inputs(args.batch, args.steps))
    pairs = {
        "leapfrog": (lagnet_fn(Leapfrog(implicit_kick=False)), scan_fn(verlet_step)),
        "newmark": (lagnet_fn(Newmark()), scan_fn(newmark_step)),
    }
    results, checks = {}, {}
    for method, (lag, ref) in pairs.items():
        calls = {
            "lagnet": lambda lag=lag: block(lag(model, q0, qd0, us)),
            "hand-written scan": lambda ref=ref: block(ref(model, q0, qd0, us)),
        }
        compile_s, out = {}, {}
        for name, call in calls.items():
            compile_s[name], out[name] = first_call(call)
        # Checked on the first 100 steps, as in rollout_rk4.py: over 1000 float32 steps rounding differences
        # of the same arithmetic (the order of a 2×2 solve, Newton's stopping point) grow on this chaotic model.
        checks[method] = max(
            max_abs_diff(np.asarray(a)[:, :101], np.asarray(b)[:, :101])
            for a, b in zip(out["lagnet"], out["hand-written scan"], strict=True)
        )
        if checks[method] > 1e-3:
            raise SystemExit(f"cross-check failed for {method}: {checks[method]}")
        median, _ = time_interleaved(calls, args.repeats)
        work = args.batch * args.steps
        results[method] = versus_scan(
            median, compile_s, "sample_steps_per_s", lambda s, work=work: work / s
        )
        print(method, results[method], flush=True)
    write(
        args.json,
        "rollout_other",
        {
            "batch": args.batch,
            "steps": args.steps,
            "repeats": args.repeats,
            "load_before": load_before,
            "load_after": load(),
            "max_abs_difference": checks,
            "results": results,
        },
    )


if __name__ == "__main__":
    main()

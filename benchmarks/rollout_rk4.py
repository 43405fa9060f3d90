"""Throughput of `lagnet.rollout` with RK4 against a hand-written `lax.scan` RK4 and diffrax, in one run.

A batch of 1024 cart-poles whose acceleration includes a 2×64 tanh MLP force Q(q, q̇, u), 1000 steps of
h = 0.02 with zero-order-hold inputs. Prints sample-steps per second and the ratios to the hand-written scan
(target: lagnet ≥ 0.95×). Timings are the best of several interleaved repeats after compilation.

    .venv/bin/python benchmarks/rollout_rk4.py [--batch 1024] [--steps 1000] [--repeats 5] [--x64]
"""

import argparse
import time

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np


def build(batch: int, steps: int):
    from lagnet.integrators import RK4
    from lagnet.rollout import rollout
    from lagnet.systems import CartPole

    class LearnedCartPole(eqx.Module):
        """The cart-pole's known M, C, G plus a learned force: M q̈ + C q̇ + G = B u + MLP(q, q̇, u)."""

        system: CartPole
        force: eqx.nn.MLP

        def acceleration(self, q, qd, u):
            # Scaled like a small learned correction, so the untrained network keeps the rollout finite.
            force = 1e-3 * self.force(jnp.concatenate([q, qd, u]))
            return self.system.acceleration(q, qd, u, Q=force)

    model = LearnedCartPole(
        CartPole(), eqx.nn.MLP(5, 2, 64, 2, activation=jnp.tanh, key=jax.random.key(0))
    )
    dt = 0.02
    rng = np.random.default_rng(0)
    q0 = jnp.asarray(rng.normal(size=(batch, 2)) * 0.5)
    qd0 = jnp.asarray(rng.normal(size=(batch, 2)) * 0.5)
    us = jnp.asarray(rng.uniform(-1, 1, (batch, steps, 1)))
    dtype = jnp.result_type(float)
    q0, qd0, us = q0.astype(dtype), qd0.astype(dtype), us.astype(dtype)

    @eqx.filter_jit
    def lagnet_rollout(model, q0, qd0, us):
        return jax.vmap(lambda a, b, c: rollout(model, RK4(), a, b, c, dt))(q0, qd0, us)

    @eqx.filter_jit
    def scan_rollout(model, q0, qd0, us):
        accel = jax.vmap(model.acceleration)

        def body(carry, u):
            q, qd = carry
            half = 0.5 * dt
            a1 = accel(q, qd, u)
            v2 = qd + half * a1
            a2 = accel(q + half * qd, v2, u)
            v3 = qd + half * a2
            a3 = accel(q + half * v2, v3, u)
            v4 = qd + dt * a3
            a4 = accel(q + dt * v3, v4, u)
            q1 = q + dt / 6 * (qd + 2 * v2 + 2 * v3 + v4)
            qd1 = qd + dt / 6 * (a1 + 2 * a2 + 2 * a3 + a4)
            return (q1, qd1), (q1, qd1)

        _, (qs, qds) = jax.lax.scan(body, (q0, qd0), jnp.swapaxes(us, 0, 1))
        qs = jnp.concatenate([q0[None], qs])
        qds = jnp.concatenate([qd0[None], qds])
        return jnp.swapaxes(qs, 0, 1), jnp.swapaxes(qds, 0, 1)

    class ClassicalRK4(diffrax.AbstractERK):
        tableau = diffrax.ButcherTableau(
            c=np.array([0.5, 0.5, 1.0]),
            b_sol=np.array([1 / 6, 1 / 3, 1 / 3, 1 / 6]),
            b_error=np.zeros(4),
            a_lower=(np.array([0.5]), np.array([0.0, 0.5]), np.array([0.0, 0.0, 1.0])),
        )
        interpolation_cls = diffrax.ThirdOrderHermitePolynomialInterpolation.from_k

        def order(self, terms):
            return 4

    @eqx.filter_jit
    def diffrax_rollout(model, q0, qd0, us):
        def one(q0, qd0, us):
            def field(t, y, args):
                # Zero-order hold by the step index (the last stage of a step reads the next input: cost is the
                # same, the semantics differ slightly at the breakpoints).
                k = jnp.clip(jnp.floor(t / dt).astype(jnp.int32), 0, steps - 1)
                return y[1], model.acceleration(y[0], y[1], us[k])

            sol = diffrax.diffeqsolve(
                diffrax.ODETerm(field),
                ClassicalRK4(),
                t0=0.0,
                t1=steps * dt,
                dt0=dt,
                y0=(q0, qd0),
                saveat=diffrax.SaveAt(t0=True, steps=True),
                stepsize_controller=diffrax.ConstantStepSize(),
                max_steps=steps,
            )
            return sol.ys

        return jax.vmap(one)(q0, qd0, us)

    return (
        model,
        (q0, qd0, us),
        {
            "lagnet.rollout": lagnet_rollout,
            "hand-written scan": scan_rollout,
            "diffrax (fixed step)": diffrax_rollout,
        },
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--x64", action="store_true", help="run in float64 (default float32)")
    args = parser.parse_args()
    jax.config.update("jax_enable_x64", args.x64)

    model, inputs, fns = build(args.batch, args.steps)
    out = {}
    for name, fn in fns.items():  # compile, and check they agree
        out[name] = jax.block_until_ready(fn(model, *inputs))
    lag, ref = out["lagnet.rollout"], out["hand-written scan"]
    agree = max(float(jnp.max(jnp.abs(a - b))) for a, b in zip(lag, ref, strict=True))

    best = dict.fromkeys(fns, np.inf)
    for _ in range(args.repeats):  # interleaved, so load changes hit all three alike
        for name, fn in fns.items():
            t = time.perf_counter()
            jax.block_until_ready(fn(model, *inputs))
            best[name] = min(best[name], time.perf_counter() - t)

    work = args.batch * args.steps
    print(
        f"RK4, {args.batch} cart-poles with a 2x64 tanh MLP force, {args.steps} steps, "
        f"{jnp.dtype(jnp.result_type(float)).name}"
        f", {jax.devices()[0].platform}; best of {args.repeats}"
    )
    print(f"lagnet vs hand-written scan: max |difference| = {agree:.2e}")
    for name, seconds in best.items():
        ratio = best["hand-written scan"] / seconds
        print(
            f"  {name:22s} {work / seconds:12.4g} sample-steps/s   {ratio:5.3f}x hand-written scan"
        )


if __name__ == "__main__":
    main()

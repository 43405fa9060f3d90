"""RK4 rollout throughput: `lagnet.rollout` against a hand-written `lax.scan`, diffrax, torchdiffeq and numpy.

A batch of cart-poles whose acceleration includes a 2×64 tanh MLP force (benchmarks/_common.py), `--steps`
RK4 steps of h = 0.02 with zero-order-hold inputs, float32. All implementations start from the same states with
the same weights and inputs; their trajectories are cross-checked before anything is timed. Reported: sample-steps
per second (median of interleaved repeats, warm-up excluded), the ratio to the hand-written scan, and the compile
time (first call minus a steady-state call).

    .venv/bin/python benchmarks/rollout_rk4.py [--batch 1024] [--steps 1000] [--repeats 5] [--json out.json]

Cross-checks: lagnet, the scan and numpy run the same arithmetic and must agree to float32 rounding. diffrax and
torchdiffeq read the input by the stage time (the last stage of a step sees the next input; torchdiffeq's 'rk4'
is Kutta's 3/8 rule), so they are checked on a time-constant input, where all methods solve the same ODE.
"""

import os

# OpenBLAS's thread pool spins against XLA's on a small machine (a 1024×64 matmul in numpy took 12 ms instead
# of 0.02 ms next to a loaded JAX); numpy's small matmuls gain nothing from threads. Set before numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _common import (  # noqa: E402
    CORES,
    DT,
    FORCE_SCALE,
    block,
    first_call,
    handwritten_rk4_step,
    load,
    make_inputs,
    make_model,
    max_abs_diff,
    mlp_flops_per_eval,
    mlp_weights,
    parser,
    time_interleaved,
    torch_or_none,
    versus_scan,
    write,
)

from lagnet.parallel import batch_mesh, shard_batch  # noqa: E402

PEAK, PEAK_N = "float32 matmul peak", 2048


def jax_implementations(steps: int):
    import diffrax
    import equinox as eqx

    from lagnet.integrators import RK4
    from lagnet.rollout import rollout

    @eqx.filter_jit
    def lagnet_rollout(model, q0, qd0, us):
        return jax.vmap(lambda a, b, c: rollout(model, RK4(), a, b, c, DT))(q0, qd0, us)

    @eqx.filter_jit
    def scan_rollout(model, q0, qd0, us):
        accel = jax.vmap(model.acceleration)

        def body(carry, u):
            q1, qd1 = handwritten_rk4_step(accel, *carry, u, DT)
            return (q1, qd1), (q1, qd1)

        _, (qs, qds) = jax.lax.scan(body, (q0, qd0), jnp.swapaxes(us, 0, 1))
        qs = jnp.concatenate([q0[None], qs])
        qds = jnp.concatenate([qd0[None], qds])
        return jnp.swapaxes(qs, 0, 1), jnp.swapaxes(qds, 0, 1)

    class ClassicalRK4(diffrax.AbstractERK):
        """diffrax has no classical RK4 built in: its Butcher tableau."""

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
                k = jnp.clip(jnp.floor(t / DT).astype(jnp.int32), 0, steps - 1)
                return y[1], model.acceleration(y[0], y[1], us[k])

            sol = diffrax.diffeqsolve(
                diffrax.ODETerm(field),
                ClassicalRK4(),
                t0=0.0,
                t1=steps * DT,
                dt0=DT,
                y0=(q0, qd0),
                saveat=diffrax.SaveAt(t0=True, steps=True),
                stepsize_controller=diffrax.ConstantStepSize(),
                max_steps=steps,
            )
            return sol.ys

        return jax.vmap(one)(q0, qd0, us)

    return {"lagnet": lagnet_rollout, "hand-written scan": scan_rollout, "diffrax": diffrax_rollout}


def numpy_rollout(weights, params, q0, qd0, us):
    """Vectorised numpy RK4 over the batch: the same model, M⁻¹ by the closed-form 2×2 inverse."""
    total, a_c, inertia, g = params

    def accel(q, qd, u):
        h = np.concatenate([q, qd, u], axis=1)
        for i, (w, b) in enumerate(weights):
            h = h @ w.T + b
            if i < len(weights) - 1:
                h = np.tanh(h)
        force = np.float32(1e-3) * h
        c, s = np.cos(q[:, 1]), np.sin(q[:, 1])
        off = a_c * c
        r0 = force[:, 0] + u[:, 0] + a_c * s * qd[:, 1] ** 2
        r1 = force[:, 1] - g * a_c * s
        det = total * inertia - off * off
        return np.stack([inertia * r0 - off * r1, total * r1 - off * r0], 1) / det[:, None]

    q, qd = q0, qd0
    qs, qds = [q], [qd]
    for k in range(us.shape[1]):
        q, qd = handwritten_rk4_step(accel, q, qd, us[:, k], np.float32(DT))
        qs.append(q)
        qds.append(qd)
    return np.stack(qs, 1), np.stack(qds, 1)


def torch_field(torch, layers, params, us, steps):
    """dy/dt of y = (q, q̇) for torchdiffeq: the same model written in torch (M⁻¹ in closed form, the fastest
    batched 2×2 solve in torch, as in numpy), the input held over each step of `us` (batch, steps, 1)."""
    total, a_c, inertia, g = (float(p) for p in params)

    def field(time, y):
        k = min(max(int(float(time) / DT), 0), steps - 1)
        q, qd, u = y[:, :2], y[:, 2:], us[:, k]
        h = torch.cat([q, qd, u], dim=1)
        for i, (w, b) in enumerate(layers):
            h = torch.nn.functional.linear(h, w, b)
            if i < len(layers) - 1:
                h = torch.tanh(h)
        force = FORCE_SCALE * h
        c, s = torch.cos(q[:, 1]), torch.sin(q[:, 1])
        off = a_c * c
        r0 = force[:, 0] + u[:, 0] + a_c * s * qd[:, 1] ** 2
        r1 = force[:, 1] - g * a_c * s
        det = total * inertia - off * off
        qdd = torch.stack([inertia * r0 - off * r1, total * r1 - off * r0], 1) / det[:, None]
        return torch.cat([qd, qdd], dim=1)

    return field


def torch_rollout_fn(torch, torchdiffeq, weights, params, steps):
    """torchdiffeq.odeint(method='rk4') on y = (q, q̇) with the model of `torch_field`."""
    layers = [(torch.from_numpy(w.copy()), torch.from_numpy(b.copy())) for w, b in weights]
    t = torch.arange(steps + 1, dtype=torch.float32) * DT

    def make_field(us):
        return torch_field(torch, layers, params, us, steps)

    def run(q0, qd0, us):
        with torch.no_grad():
            ys = torchdiffeq.odeint(
                make_field(us), torch.cat([q0, qd0], 1), t, method="rk4"
            )  # (steps + 1, batch, 4)
        ys = ys.transpose(0, 1)
        return ys[..., :2], ys[..., 2:]

    return run, make_field


def cartpole_params(model):
    s = model.system
    total = s.cart_mass + s.rod_mass + s.tip_mass
    return tuple(np.float32(x) for x in (total, s._a, s._inertia, s.g))


def diff(a, b, steps=100):
    """max |a − b| over the first `steps` steps of two (qs, qds) trajectories of shape (batch, steps + 1, n)."""
    return max(
        max_abs_diff(np.asarray(x)[:, : steps + 1], np.asarray(y)[:, : steps + 1])
        for x, y in zip(a, b, strict=True)
    )


def main():
    p = parser(__doc__)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument(
        "--no-numpy", action="store_true", help="skip numpy (minutes at a GPU's batch sizes)"
    )
    args = p.parse_args()
    if args.quick:
        args.batch, args.steps, args.repeats = min(args.batch, 256), min(args.steps, 200), 3
    load_before = load()
    model = make_model(jnp.float32)
    q0n, qd0n, usn = make_inputs(args.batch, args.steps)
    q0, qd0, us = jnp.asarray(q0n), jnp.asarray(qd0n), jnp.asarray(usn)
    us_const = jnp.broadcast_to(us[:, :1], us.shape)
    weights, params = mlp_weights(model), cartpole_params(model)

    fns = jax_implementations(args.steps)
    calls = {name: (lambda f=f: f(model, q0, qd0, us)) for name, f in fns.items()}
    # "lagnet" is lagnet as `lagnet train` and lagnet.parallel run it: the batch split over one device per
    # core. The same split of the hand-written scan is its like-for-like peer; the one-device rows are the
    # scan as one writes it by default and lagnet on the same footing.
    mesh = batch_mesh("auto", args.batch)
    split = shard_batch((q0, qd0, us), mesh)
    calls = {
        "lagnet": lambda: fns["lagnet"](model, *split),
        "lagnet, 1 device": calls.pop("lagnet"),
        "hand-written scan": calls.pop("hand-written scan"),
        f"hand-written scan, {CORES} devices": lambda: fns["hand-written scan"](model, *split),
        **calls,
    }
    compile_s, outputs = {}, {}
    for name, call in calls.items():
        compile_s[name], outputs[name] = first_call(call)
    ref = outputs["lagnet"]
    checks = {}
    for name in calls:
        if name.startswith(("lagnet,", "hand-written scan")):
            checks[name] = diff(ref, outputs[name])
    const_ref = block(fns["lagnet"](model, q0, qd0, us_const))
    checks["diffrax (constant u)"] = diff(const_ref, fns["diffrax"](model, q0, qd0, us_const))

    full_length = {}
    if not args.no_numpy:
        calls["numpy"] = lambda: numpy_rollout(weights, params, q0n, qd0n, usn)
        outputs["numpy"] = calls["numpy"]()
        checks["numpy"] = diff(ref, outputs["numpy"])
        full_length["numpy"] = diff(ref, outputs["numpy"], args.steps)

    torch_threads = None
    torch_mods = torch_or_none(args.no_torch)
    if torch_mods is not None:
        torch, torchdiffeq = torch_mods
        run, _ = torch_rollout_fn(torch, torchdiffeq, weights, params, args.steps)
        tq0, tqd0 = torch.from_numpy(q0n), torch.from_numpy(qd0n)
        tus, tus_const = torch.from_numpy(usn), torch.from_numpy(np.array(us_const))
        calls["torchdiffeq"] = lambda: run(tq0, tqd0, tus)
        # torch's intra-op threads spin against the rest of a small machine (2 threads were 9× slower than 1
        # here under load): time both settings once and keep the faster, the fair setting for torch.
        trial = {}
        for threads in sorted({1, os.cpu_count() or 1}):
            torch.set_num_threads(threads)
            trial[threads], _ = first_call(calls["torchdiffeq"])
        torch_threads = min(trial, key=trial.get)
        torch.set_num_threads(torch_threads)
        checks["torchdiffeq (constant u)"] = diff(
            const_ref, [x.numpy() for x in run(tq0, tqd0, tus_const)]
        )
    # Checked on the first 100 steps: over 1000 float32 steps of a forced pendulum, rounding differences of
    # the same arithmetic grow (to ~1e-2 in φ̇ for numpy), which says nothing about the implementations.
    # Tolerances: the same arithmetic to float32 rounding; Kutta's 3/8 rule (torchdiffeq) to its truncation error.
    failed = [k for k, v in checks.items() if v > 1e-3]
    if failed:
        raise SystemExit(f"cross-check failed: {failed}: {checks}")

    # The hardware bound, timed in the same interleaved rounds: the machine's speed drifts between runs.
    square = jax.jit(lambda a: a @ a)
    big = jnp.asarray(np.random.default_rng(0).normal(size=(PEAK_N, PEAK_N)), jnp.float32)
    calls[PEAK] = lambda: block(square(big))
    calls[PEAK]()
    median, all_times = time_interleaved(calls, args.repeats)
    peak_gflops = 2 * PEAK_N**3 / median.pop(PEAK) / 1e9
    work = args.batch * args.steps
    results = versus_scan(median, compile_s, "sample_steps_per_s", lambda s: work / s)
    write(
        args.json,
        "rollout_rk4",
        {
            "batch": args.batch,
            "steps": args.steps,
            "dtype": "float32",
            "repeats": args.repeats,
            "load_before": load_before,
            "load_after": load(),
            "torch_threads": torch_threads,
            "flops_per_sample_step": 4 * mlp_flops_per_eval(),
            "peak_gflops": peak_gflops,
            "max_abs_difference": checks,
            "max_abs_difference_full_length": full_length,
            "results": results,
            "times": all_times,
        },
    )


if __name__ == "__main__":
    main()

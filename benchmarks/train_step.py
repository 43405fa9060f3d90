"""Training steps: a 30-step RK4 rollout loss on a batch of 128 windows, value-and-grad, Adam; time per step.

The model and weights are the rollout benchmark's (benchmarks/_common.py); the windows are cut from one recorded
trajectory of the known cart-pole, and the loss is lagnet's `StateLoss` (squared errors, 2 − 2 cos for φ).
Compared, in one run and interleaved:
- lagnet: `lagnet.train.fit.make_epoch_fn` on an epoch of exactly one mini-batch (the real training path:
  window gather, value-and-grad through `lagnet.rollout`, optax Adam, the non-finite-step guard);
- a hand-written `lax.scan` RK4 loss with `jax.value_and_grad` and optax Adam;
- diffrax `diffeqsolve` (fixed step, its default `RecursiveCheckpointAdjoint`);
- torchdiffeq `odeint(method='rk4')` with backprop through the solver and `torch.optim.Adam`.
The losses and gradients are cross-checked at the initial weights before timing. Each timed call runs
`--steps` steps (10) on as many different batches, each implementation in its own natural loop: lagnet's epoch
is one compiled scan over the batches, the others call their compiled step from Python; the time per step is
the call's divided by the steps.

    .venv/bin/python benchmarks/train_step.py [--batch 128] [--horizon 30] [--steps 10] [--repeats 10] [--json out.json]
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import time  # noqa: E402

import equinox as eqx  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from _common import (  # noqa: E402
    CORES,
    DT,
    block,
    first_call,
    handwritten_rk4_step,
    load,
    make_model,
    max_abs_diff,
    mlp_weights,
    parser,
    time_interleaved,
    torch_or_none,
    versus_scan,
    write,
)

from lagnet.parallel import batch_mesh, replicate, shard_batch  # noqa: E402

LR = 1e-3


def make_data(batch: int, horizon: int, batches: int = 1):
    """A recorded trajectory of the known cart-pole under random forcing, and `batch × batches` of its sliding
    windows: the dataset and the windows' (q0, q̇0, us, q_true, q̇_true) stacked."""
    from lagnet.data.windows import WindowDataset
    from lagnet.integrators import RK4
    from lagnet.rollout import rollout
    from lagnet.systems import CartPole

    rows = batch * batches + horizon
    rng = np.random.default_rng(1)
    us = jnp.asarray(rng.uniform(-1, 1, (rows - 1, 1)), jnp.float32)
    q0 = jnp.asarray([0.0, 0.5], jnp.float32)
    qs, qds = rollout(CartPole(), RK4(), q0, jnp.zeros(2, jnp.float32), us, DT)
    u = jnp.concatenate([us, us[-1:]])
    dt = jnp.full((rows,), DT, jnp.float32)
    data = WindowDataset(qs, qds, u, dt, jnp.arange(batch * batches), horizon, (False, True))
    w = data.batch(data.starts)
    arrays = (w.q[:, 0], w.qd[:, 0], w.u, w.q[:, 1:], w.qd[:, 1:])
    return data, arrays


def state_loss(q_pred, qd_pred, q_true, qd_true, xp):
    """lagnet's StateLoss with unit weights and scales: x squared, φ by 2 − 2 cos, velocities squared."""
    dx = q_pred[..., 0] - q_true[..., 0]
    dphi = q_pred[..., 1] - q_true[..., 1]
    dv = qd_pred - qd_true
    per = dx**2 + (2.0 - 2.0 * xp.cos(dphi)) + (dv**2).sum(-1)
    return per.mean()


def jax_steps(model, data, horizon: int, batch: int):
    import diffrax

    from lagnet.integrators import RK4
    from lagnet.train import init_optimizer
    from lagnet.train.fit import make_epoch_fn
    from lagnet.train.loss import StateLoss

    params, static = eqx.partition(model, eqx.is_inexact_array)
    optimizer = optax.adam(LR)
    ones = jnp.ones(2, jnp.float32)
    loss = StateLoss((False, True), ones, ones, ones, ones)
    key = jax.random.key(0)

    def lagnet_step_on(mesh):
        # As `lagnet train` runs it: the data and parameters replicated on the mesh, each batch split over it.
        epoch = make_epoch_fn(static, RK4(), loss, optimizer, batch, mesh)
        on_mesh = replicate(data, mesh)

        def lagnet_steps(params, opt_state, batches):
            params, opt_state, value, _ = epoch(params, opt_state, on_mesh, key)
            return params, opt_state, value

        return lagnet_steps

    def make(loss_of, prepare=lambda arrays: arrays):
        @jax.jit
        def step(params, opt_state, arrays):
            value, grads = jax.value_and_grad(loss_of)(params, arrays)
            updates, opt_state = optimizer.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state, value

        def steps(params, opt_state, batches):
            for arrays in batches:
                params, opt_state, value = step(params, opt_state, prepare(arrays))
            return params, opt_state, value

        return steps

    def scan_loss(params, arrays):
        q0, qd0, us, q_true, qd_true = arrays
        accel = jax.vmap(eqx.combine(params, static).acceleration)

        def body(carry, u):
            q1, qd1 = handwritten_rk4_step(accel, *carry, u, DT)
            return (q1, qd1), (q1, qd1)

        _, (qs, qds) = jax.lax.scan(body, (q0, qd0), jnp.swapaxes(us, 0, 1))
        return state_loss(jnp.swapaxes(qs, 0, 1), jnp.swapaxes(qds, 0, 1), q_true, qd_true, jnp)

    from rollout_rk4 import jax_implementations  # the same diffrax solver as the rollout benchmark

    diffrax_rollout = jax_implementations(horizon)["diffrax"]
    del diffrax

    def diffrax_loss(params, arrays):
        q0, qd0, us, q_true, qd_true = arrays
        qs, qds = diffrax_rollout(eqx.combine(params, static), q0, qd0, us)
        return state_loss(qs[:, 1:], qds[:, 1:], q_true, qd_true, jnp)

    mesh = batch_mesh("auto", batch)
    steps = {
        "lagnet": lagnet_step_on(mesh),
        "lagnet, 1 device": lagnet_step_on(None),
        "hand-written scan": make(scan_loss),
        # The scan's batch split over the same devices, partitioned by jit (GSPMD) as one would write it.
        f"hand-written scan, {CORES} devices": make(scan_loss, lambda a: shard_batch(a, mesh)),
        "diffrax": make(diffrax_loss),
    }
    losses = {"hand-written scan": scan_loss, "diffrax": diffrax_loss}
    # lagnet's optimiser updates the raveled parameters (`lagnet.train.init_optimizer`), the others the tree.
    opt_states = {
        name: init_optimizer(optimizer, params)
        if name.startswith("lagnet")
        else optimizer.init(params)
        for name in steps
    }
    return params, opt_states, steps, losses


def torch_step_fn(torch, torchdiffeq, model, horizon):
    """A torch training step: torchdiffeq RK4 (3/8 rule) rollout, the same loss, backward, Adam."""
    from rollout_rk4 import cartpole_params, torch_field

    layers = [
        (torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True))
        for w, b in mlp_weights(model)
    ]
    optimizer = torch.optim.Adam([p for layer in layers for p in layer], lr=LR)
    t = torch.arange(horizon + 1, dtype=torch.float32) * DT
    params = cartpole_params(model)

    def loss_fn(q0, qd0, us, q_true, qd_true):
        field = torch_field(torch, layers, params, us, horizon)
        ys = torchdiffeq.odeint(field, torch.cat([q0, qd0], 1), t, method="rk4").transpose(0, 1)
        return state_loss(ys[:, 1:, :2], ys[:, 1:, 2:], q_true, qd_true, torch)

    def step(q0, qd0, us, q_true, qd_true):
        optimizer.zero_grad()
        value = loss_fn(q0, qd0, us, q_true, qd_true)
        value.backward()
        optimizer.step()
        return value.detach()

    return step, loss_fn, layers


def lagnet_loss_and_grad(model, arrays):
    from lagnet.integrators import RK4
    from lagnet.train.loss import StateLoss, batch_loss

    ones = jnp.ones(2, jnp.float32)
    loss = StateLoss((False, True), ones, ones, ones, ones)
    q0, qd0, us, q_true, qd_true = arrays
    dts = jnp.full(us.shape[:2], DT, jnp.float32)
    params, static = eqx.partition(model, eqx.is_inexact_array)

    def of(p):
        return batch_loss(eqx.combine(p, static), RK4(), loss, (q0, qd0, us, dts, q_true, qd_true))

    return jax.jit(jax.value_and_grad(of))(params)


def main():
    p = parser(__doc__)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--horizon", type=int, default=30)
    p.add_argument("--steps", type=int, default=10, help="training steps (batches) per timed call")
    args = p.parse_args()
    args.repeats = args.repeats if args.repeats != 5 else 10
    if args.quick:
        args.repeats = 5
    load_before = load()
    model = make_model(jnp.float32)
    data, stacked = make_data(args.batch, args.horizon, args.steps)
    batches = [
        tuple(a[k * args.batch : (k + 1) * args.batch] for a in stacked) for k in range(args.steps)
    ]
    arrays = batches[0]
    params, opt_states, steps, losses = jax_steps(model, data, args.horizon, args.batch)

    # Cross-check loss and gradient at the initial weights (lagnet's unit-weight StateLoss is the sum over
    # coordinates; the hand-written loss is the same sum).
    # diffrax and torchdiffeq read the input by stage time (the last stage of a step sees the next input), so
    # they are checked on windows with a time-constant input, where all solve the same ODE.
    const = (*arrays[:2], jnp.broadcast_to(arrays[2][:, :1], arrays[2].shape), *arrays[3:])
    ref_value, ref_grad = lagnet_loss_and_grad(model, arrays)
    ref_const = lagnet_loss_and_grad(model, const)
    checks = {}
    for name, loss_of in losses.items():
        inputs, (r_value, r_grad) = (
            (arrays, (ref_value, ref_grad)) if name == "hand-written scan" else (const, ref_const)
        )
        value, grad = jax.jit(jax.value_and_grad(loss_of))(params, inputs)
        g_err = max(
            max_abs_diff(a, b)
            for a, b in zip(jax.tree.leaves(r_grad), jax.tree.leaves(grad), strict=True)
        )
        checks[name] = {"loss": abs(float(value) - float(r_value)), "grad": g_err}

    state = {name: (params, opt_states[name]) for name in steps}
    calls = {}
    for name, step in steps.items():

        def call(name=name, step=step):
            # Every repeat steps from the initial weights, so each does identical work.
            return block(step(*state[name], batches))

        calls[name] = call
    compile_s, stepped = {}, {}
    for name, call in calls.items():
        compile_s[name], stepped[name] = first_call(call)
    # The split steps against their one-device selves: the same Adam update up to summation order.
    for split, whole in ((k, k.split(",")[0]) for k in stepped if "," in k):
        checks[split] = {
            "loss": abs(float(stepped[split][2]) - float(stepped[whole][2])),
            "params": max(
                max_abs_diff(a, b)
                for a, b in zip(
                    jax.tree.leaves(stepped[split][0]),
                    jax.tree.leaves(stepped[whole][0]),
                    strict=True,
                )
            ),
        }

    torch_threads = None
    torch_mods = torch_or_none(args.no_torch)
    if torch_mods is not None:
        torch, torchdiffeq = torch_mods
        step, loss_fn, layers = torch_step_fn(torch, torchdiffeq, model, args.horizon)
        t_batches = [[torch.from_numpy(np.array(a)) for a in b] for b in batches]
        value = loss_fn(*[torch.from_numpy(np.array(a)) for a in const])
        value.backward()
        t_grads = [x.grad.numpy().copy() for layer in layers for x in layer]
        for layer in layers:
            for x in layer:
                x.grad = None
        j_grads = [
            np.asarray(x) for layer in ref_const[1].force.layers for x in (layer.weight, layer.bias)
        ]
        checks["torchdiffeq"] = {
            "loss": abs(float(value.detach()) - float(ref_const[0])),
            "grad": max(max_abs_diff(a, b) for a, b in zip(j_grads, t_grads, strict=True)),
        }
        # torch's intra-op threads spin against the rest of the machine on small ops: use the faster setting.
        # Three interleaved trials of every thread count, the best of each (a noisy machine).
        best = {}
        for _ in range(3):
            for threads in sorted({1, os.cpu_count() or 1}):
                torch.set_num_threads(threads)
                step(*t_batches[0])
                t = time.perf_counter()
                for b in t_batches[:5]:
                    step(*b)
                best[threads] = min(best.get(threads, np.inf), time.perf_counter() - t)
        torch_threads = min(best, key=best.get)
        torch.set_num_threads(torch_threads)
        calls["torchdiffeq"] = lambda: [step(*b) for b in t_batches]

    scale = max(float(np.max(np.abs(x))) for x in jax.tree.leaves(ref_grad))
    rel = {k: v["grad"] / scale for k, v in checks.items() if "grad" in v}
    failed = [k for k, v in checks.items() if v["loss"] > 1e-3 * abs(float(ref_value)) + 1e-6]
    if failed:
        raise SystemExit(f"cross-check failed: {failed}: {checks}")

    median, all_times = time_interleaved(calls, args.repeats)
    results = versus_scan(median, compile_s, "ms_per_step", lambda s: 1e3 * s / args.steps)
    write(
        args.json,
        "train_step",
        {
            "batch": args.batch,
            "horizon": args.horizon,
            "steps_per_call": args.steps,
            "dtype": "float32",
            "repeats": args.repeats,
            "load_before": load_before,
            "load_after": load(),
            "torch_threads": torch_threads,
            "loss": float(ref_value),
            "cross_check": checks,
            "cross_check_grad_relative": rel,
            "results": results,
            "times": all_times,
        },
    )


if __name__ == "__main__":
    main()

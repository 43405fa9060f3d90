"""Balance the cart-pole upright with LQR designed on a model, in closed loop on the simulated rig.

For each model — the PINODE and the pure ODE model trained on the rig's 8 min recording, and the known
Table 2 model alone — the upright trim point (x*, u*) is found on the model, the model's step is linearised
there by autodiff (A_d, B_d) and a discrete LQR gain (50 Hz, the rig's sample rate) designed; the continuous
(A, B) give a second, continuous-Riccati gain for comparison. Each gain then runs u = u* − K (x − x*) on the
rig's true plant (heavier cart, Stribeck friction, end stops) through its actuator (10 ms dead time, 8 ms lag,
10 N limit), from several initial tilts, for 6 s.

Success: the pole ends within 0.05 rad of upright (the last second), the cart never reaches the end stops'
zone (|x| < 0.3 m), the state stays finite. Cost: J = Σ (δxᵀ Q δx + R u²) dt about the true upright.

    python experiments/cartpole_lqr.py [--retrain]

Trains (if absent) runs/control/cartpole_{pinode,pure_ode}; writes experiments/out/cartpole_lqr.{json,png}.
"""

import argparse
import json
import os
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import matplotlib
import numpy as np
import scipy.linalg

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from lagnet.config import load_config  # noqa: E402
from lagnet.control import (  # noqa: E402
    Dynamics,
    closed_loop_stable,
    dlqr,
    linearise,
    linearise_averaged,
    load,
    lqr,
    trim,
)
from lagnet.data.angles import wrap  # noqa: E402
from lagnet.integrators import RK4  # noqa: E402
from lagnet.run.training import train_run as train  # noqa: E402
from lagnet.simulate import CartPoleRig, closed_loop  # noqa: E402

jax.config.update("jax_enable_x64", True)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(HERE, "out")
RUNS = {
    "PINODE": ("cartpole_pinode.yaml", "runs/control/cartpole_pinode"),
    "pure ODE": ("cartpole_pure_ode.yaml", "runs/control/cartpole_pure_ode"),
    # The PINODE whose network does not see the cart's position (x, the cart-pole's cyclic coordinate).
    "PINODE, x hidden": (
        "cartpole_pinode.yaml",
        "runs/control/cartpole_pinode_x_hidden",
        ["model.hide_position=cyclic"],
    ),
}
COLOURS = {
    "PINODE": "#1f77b4",
    "PINODE, x hidden": "#2ca02c",
    "pure ODE": "#d68910",
    "known model": "#7f7f7f",
}
UPRIGHT = np.array([0.0, np.pi, 0.0, 0.0])
Q = np.diag([50.0, 50.0, 1.0, 1.0])
R = np.array([[0.1]])
TILTS = np.array([-0.6, -0.5, -0.4, -0.3, -0.2, -0.1, -0.05, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
SETTLE_WINDOW, SETTLE_TOLERANCE = 2.0, 0.1
DURATION = 6.0
X_SAFE = 0.3
U_MAX = CartPoleRig().force_limit
# The spread of the states the balancing loop visits (m, rad, m/s, rad/s), for the averaged linearisation.
SPREAD = np.array([0.05, 0.05, 0.2, 0.5])
# The trim point: the pole's angle and the input are solved for, the cart stays at x = 0, at rest.
UPRIGHT_FREE = np.array([False, True, False, False])
H_MAX = 2  # the longest input history of the models (the PINODE's)


def model_dynamics(retrain: bool) -> dict[str, Dynamics]:
    models = {}
    for label, (file, run_dir, *overrides) in RUNS.items():
        run_dir = os.path.join(ROOT, run_dir)
        if retrain or not os.path.exists(os.path.join(run_dir, "summary.json")):
            t0 = time.perf_counter()
            config = load_config(os.path.join(ROOT, "configs", file), *overrides)
            train(config, run_dir, progress=False, overwrite=True)
            print(f"trained {label} in {time.perf_counter() - t0:.0f} s → {run_dir}")
        models[label] = load(run_dir)
    rig = CartPoleRig()
    models["known model"] = Dynamics(rig.known_system(), RK4(), rig.dt)
    # The reference no model reaches: the rig's own equations (heavier cart, friction, end stops), no drive.
    models["true plant"] = Dynamics(rig.plant(), RK4(), rig.dt)
    return models


def history(dyn: Dynamics) -> int:
    return getattr(dyn.model, "input_history", 0)


def augmented_step(dyn: Dynamics):
    """z⁺ = F(z, u) for z = (x, u_{k−1}, …, u_{k−h}): a model that sees its last h inputs is Markov in z.

    Designing the discrete LQR on z lets the controller use what the PINODE learned about the drive's lag
    (the controller knows the commands it sent); for h = 0, z = x and F is the model's step.
    """
    n2, m, h = 2 * dyn.n_dof, dyn.n_inputs, history(dyn)

    def step(z, u):
        x, past = z[:n2], z[n2:]
        x_next = dyn.step(x, jnp.concatenate([u, past]))
        return jnp.concatenate([x_next, jnp.concatenate([u, past])[: h * m]])

    return step


def design(dyn: Dynamics, own_trim: bool = False) -> dict:
    """Discrete and continuous LQR gains (each from the Jacobians at the operating point and averaged around
    it), padded to act on z = (x, the last H_MAX commands).

    The operating point is the upright at rest with no input — an equilibrium of any cart-pole by symmetry —
    or, with `own_trim`, the model's own equilibrium near it.
    """
    x_eq, u_eq, res = (
        jnp.asarray(UPRIGHT),
        jnp.zeros(1),
        jnp.linalg.norm(dyn.f(UPRIGHT, jnp.zeros(1))),
    )
    if own_trim:
        x_eq, u_eq, res = trim(dyn, x_eq, u_eq, UPRIGHT_FREE)
    h, m = history(dyn), dyn.n_inputs
    z_eq = jnp.concatenate([x_eq, jnp.tile(u_eq, h)])
    q_z = scipy.linalg.block_diag(Q, np.zeros((h * m, h * m)))
    spread_z = np.concatenate([SPREAD, np.zeros(h * m)])
    step = augmented_step(dyn)
    key = jax.random.key(0)  # the same sample of states for every model
    jacobians = {
        "at trim": (
            linearise(dyn.f, x_eq, u_eq),
            linearise(step, z_eq, u_eq),
            linearise(dyn.step, x_eq, u_eq),
        ),
        "averaged": (
            linearise_averaged(dyn.f, x_eq, u_eq, SPREAD, key=key),
            linearise_averaged(step, z_eq, u_eq, spread_z, key=key),
            linearise_averaged(dyn.step, x_eq, u_eq, SPREAD, key=key),
        ),
    }
    gains, stable = {}, {}
    for lin, ((a, b), (ad, bd), (ah, bh)) in jacobians.items():
        # Discrete, on x alone with the input held over the history (`step(x, u)` repeats u): the design sees
        # only the sum of the lags' effects, as the continuous one does, not how the model splits it between them.
        k_h, _ = dlqr(ah, bh, Q * dyn.dt, R * dyn.dt)
        stable[(lin, "held input")] = closed_loop_stable(ah, bh, k_h, discrete=True)
        gains[(lin, "held input")] = np.concatenate([k_h, np.zeros((m, H_MAX * m))], axis=1)
        # The sampled cost Σ (xᵀQx + uᵀRu) dt: the discrete weights are the continuous ones times dt.
        k_d, _ = dlqr(ad, bd, q_z * dyn.dt, R * dyn.dt)
        # Continuous time has no input history: f holds the current input over it (the steady state).
        k_c, _ = lqr(a, b, Q, R)
        stable[(lin, "discrete")] = closed_loop_stable(ad, bd, k_d, discrete=True)
        stable[(lin, "continuous")] = closed_loop_stable(a, b, k_c, discrete=False)
        pad = np.zeros((m, (H_MAX - h) * m))
        gains[(lin, "discrete")] = np.concatenate([k_d, pad], axis=1)
        gains[(lin, "continuous")] = np.concatenate([k_c, np.zeros((m, H_MAX * m))], axis=1)
    # How the model splits an input's effect on the next velocities between u_k, u_k−1, … (averaged Jacobian of
    # the step on z): with inputs as smooth as the recording's, only the sum is well determined by the data.
    a_z, b_z = (np.asarray(j) for j in jacobians["averaged"][1])
    lag_split = np.concatenate(
        [b_z[2:4], a_z[2:4, 4:]], axis=1
    )  # columns u_k, then z's past inputs
    return {
        "x_eq": np.asarray(x_eq),
        "u_eq": np.asarray(u_eq),
        "velocity_gain_per_lag": lag_split,
        "trim_residual": float(res),
        "input_history": h,
        "gains": gains,
        "stable_on_model": stable,
        "open_loop_poles": np.linalg.eigvals(np.asarray(jacobians["at trim"][0][0])),
    }


def lqr_controller(k, x_eq, u_eq):
    """u = u* − K (z − z*) with z = (x, the last H_MAX commands); the memory holds those commands."""

    def controller(x, past, _):
        dx = (x - x_eq).at[1].set(wrap(x[1] - x_eq[1]))
        dz = jnp.concatenate([dx, past - jnp.tile(u_eq, H_MAX)])
        # The controller knows the drive's limit: the command stays within it.
        u = jnp.clip(u_eq - k @ dz, -U_MAX, U_MAX)
        return u, jnp.concatenate([u, past[:-1]]), None

    return controller


def run_all(rig, designs, samples):
    """Every (model, design, tilt) on the rig at once: one vmapped, jit-compiled closed loop."""
    cases = [(m, g) for m in designs for g in designs[m]["gains"]]
    ks = jnp.asarray(np.stack([designs[m]["gains"][g] for m, g in cases]))
    x_eqs = jnp.asarray(np.stack([designs[m]["x_eq"] for m, _ in cases]))
    u_eqs = jnp.asarray(np.stack([designs[m]["u_eq"] for m, _ in cases]))
    x0s = jnp.asarray(UPRIGHT + np.outer(TILTS, [0.0, 1.0, 0.0, 0.0]))
    plant, actuator = rig.plant(), rig.actuator()

    def one(k, x_eq, u_eq, x0):
        # Before the loop starts the drive has been sent the trim input.
        past = jnp.tile(u_eq, H_MAX)
        controller = lqr_controller(k, x_eq, u_eq)
        sol = closed_loop(
            plant,
            actuator,
            controller,
            past,
            x0,
            samples=samples,
            dt=rig.dt,
            substeps=rig.substeps,
            throw=False,  # a failed balance is scored, not raised
        )
        return sol.xs, sol.us

    per_tilt = jax.vmap(one, in_axes=(None, None, None, 0))
    xs, us = jax.jit(jax.vmap(per_tilt, in_axes=(0, 0, 0, None)))(ks, x_eqs, u_eqs, x0s)
    return cases, np.asarray(xs), np.asarray(us)


def check_against_simulate(rig, design, samples):
    """The loop with a controller memory is the data generators' run (`lagnet.simulate.closed_loop` with a
    memoryless hand and a schedule, jitted as `simulate_rig` calls it), to rounding: a memoryless gain in both."""
    k = jnp.asarray(design["gains"][("averaged", "discrete")])
    x_eq, u_eq = jnp.asarray(design["x_eq"]), jnp.asarray(design["u_eq"])
    past = jnp.tile(u_eq, H_MAX)
    ctrl = lqr_controller(k, x_eq, u_eq)
    x0 = jnp.asarray(UPRIGHT + np.array([0.0, 0.2, 0.0, 0.0]))
    plant, actuator = rig.plant(), rig.actuator()
    ref = eqx.filter_jit(closed_loop)(
        plant,
        actuator,
        lambda x, memory, s: (ctrl(x, past, s)[0], memory, None),
        None,
        x0,
        jnp.zeros(samples),
        dt=rig.dt,
        substeps=rig.substeps,
    )
    sol = closed_loop(
        plant, actuator, ctrl, past, x0, samples=samples, dt=rig.dt, substeps=rig.substeps
    )
    return float(np.max(np.abs(np.asarray(sol.xs) - np.asarray(ref.xs))))


def score(xs, us, dt):
    """Success flags and costs of closed-loop runs xs (..., T + 1, 4), us (..., T, 1)."""
    dx = xs - UPRIGHT
    dx[..., 1] = wrap(dx[..., 1])
    finite = np.all(np.isfinite(xs), axis=(-2, -1))
    dx = np.where(np.isfinite(dx), dx, 1e3)
    last = int(round(SETTLE_WINDOW / dt))
    upright = np.max(np.abs(dx[..., -last:, 1]), axis=-1) < SETTLE_TOLERANCE
    on_rail = np.max(np.abs(xs[..., 0]), axis=-1) < X_SAFE
    stage = np.einsum("...i,ij,...j->...", dx[..., :-1, :], Q, dx[..., :-1, :])
    stage = stage + R[0, 0] * us[..., 0] ** 2
    return finite & upright & on_rail, np.sum(stage, axis=-1) * dt


def plot(cases, xs, us, ok, dt, path, shown=("averaged", "discrete")):
    t = dt * np.arange(xs.shape[-2])
    models = list(dict.fromkeys(m for m, _ in cases))
    fig, axes = plt.subplots(3, len(models), figsize=(4 * len(models), 8), sharex=True)
    for col, model in enumerate(models):
        i = cases.index((model, shown))
        for j in range(len(TILTS)):
            style = dict(lw=0.9, ls="-" if ok[i, j] else ":")
            c = plt.cm.coolwarm(j / (len(TILTS) - 1))
            axes[0, col].plot(t, wrap(xs[i, j, :, 1] - np.pi), color=c, **style)
            axes[1, col].plot(t, xs[i, j, :, 0], color=c, **style)
            axes[2, col].plot(t[:-1], us[i, j, :, 0], color=c, **style)
        axes[0, col].set_title(f"{model}: {ok[i].sum()}/{len(TILTS)} balanced", fontsize=10)
        axes[0, col].set_ylim(-0.7, 0.7)
        axes[1, col].set_ylim(-0.4, 0.4)
        axes[2, col].set_ylim(-U_MAX * 1.05, U_MAX * 1.05)
        for y in (-X_SAFE, X_SAFE):
            axes[1, col].axhline(y, color="k", lw=0.5, ls="--")
        axes[2, col].set_xlabel("t (s)")
    axes[0, 0].set_ylabel("φ − π (rad)")
    axes[1, 0].set_ylabel("cart x (m)")
    axes[2, 0].set_ylabel("command (N)")
    fig.suptitle(
        f"The cart-pole rig (true plant + drive) under {shown[1]} LQR designed on each model "
        f"({shown[0]} Jacobians); tilts ±{TILTS[TILTS > 0].min()}…{TILTS.max()} rad, dotted: failed",
        fontsize=11,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {os.path.relpath(path)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--retrain", action="store_true", help="train the models even if runs exist"
    )
    args = parser.parse_args()
    t_start = time.perf_counter()
    rig = CartPoleRig()
    models = model_dynamics(args.retrain)
    t0 = time.perf_counter()
    designs = {label: design(dyn) for label, dyn in models.items()}
    designs["PINODE, own trim"] = design(models["PINODE"], own_trim=True)
    t_design = time.perf_counter() - t0
    samples = int(round(DURATION / rig.dt))
    t0 = time.perf_counter()
    cases, xs, us = run_all(rig, designs, samples)
    t_loop = time.perf_counter() - t0
    gap = check_against_simulate(rig, designs["pure ODE"], 100)
    ok, cost = score(xs, us, rig.dt)
    # Costs are compared over the tilts that every design balancing any tilt at all balanced.
    working = ok.any(axis=1)
    all_ok = np.all(ok[working], axis=0)

    results = {
        "tilts_rad": TILTS.tolist(),
        "duration_s": DURATION,
        "Q": np.diag(Q).tolist(),
        "R": float(R[0, 0]),
        "success": f"|φ − π| < {SETTLE_TOLERANCE} rad over the last {SETTLE_WINDOW} s, |x| < {X_SAFE} m",
        "averaging_spread": SPREAD.tolist(),
        "tilts_all_working_designs_balance": TILTS[all_ok].tolist(),
        "loop_vs_simulate_max_abs_diff": gap,
        "models": {},
    }
    print(f"\nbatched closed loop vs the data generators' run: max |Δx| = {gap:.2e}")
    head = (
        f"{'model':<16} {'Jacobians':<9} {'Riccati':<11} {'balanced':>9} {'cost*':>7} {'cost':>7}"
    )
    print(f"\n{head}   K (x, φ, ẋ, φ̇, u_k−1, u_k−2)")
    for i, (model, (lin, riccati)) in enumerate(cases):
        d = designs[model]
        entry = results["models"].setdefault(
            model,
            {
                "x_eq": d["x_eq"].tolist(),
                "u_eq": d["u_eq"].tolist(),
                "trim_residual": d["trim_residual"],
                "input_history": d["input_history"],
                "velocity_gain_per_lag": d["velocity_gain_per_lag"].tolist(),
                "open_loop_poles": [repr(complex(p)) for p in d["open_loop_poles"]],
                "designs": {},
            },
        )
        common = float(np.mean(cost[i][all_ok])) if all_ok.any() and ok[i][all_ok].all() else None
        own = float(np.mean(cost[i][ok[i]])) if ok[i].any() else None
        gain = np.asarray(d["gains"][(lin, riccati)]).ravel()
        entry["designs"][f"{lin}, {riccati}"] = {
            "K": gain.tolist(),
            "stable_on_model": d["stable_on_model"][(lin, riccati)],
            "success": ok[i].tolist(),
            "success_rate": float(np.mean(ok[i])),
            "cost": cost[i].tolist(),
            "mean_cost_where_all_succeed": common,
            "mean_cost_where_it_succeeds": own,
        }
        fmt = lambda c: "—" if c is None else f"{c:.2f}"  # noqa: E731
        print(
            f"{model:<16} {lin:<9} {riccati:<11} {ok[i].sum():>4}/{len(TILTS):<4} {fmt(common):>7} "
            f"{fmt(own):>7}   {np.round(gain, 1)}"
        )
    print(f"* mean over the {all_ok.sum()} tilts that every design balancing any tilt balanced")
    print(
        "\n∂(ẋ, φ̇)⁺ / ∂(u_k, u_k−1, u_k−2), averaged (the split of an input's effect between the lags):"
    )
    for model, d in designs.items():
        print(f"  {model:<16} {np.round(d['velocity_gain_per_lag'], 4).tolist()}")
    results["seconds"] = {
        "design": t_design,
        "closed_loops": t_loop,
        "total": time.perf_counter() - t_start,
    }
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "cartpole_lqr.json"), "w") as f:
        json.dump(results, f, indent=1)
    plot(cases, xs, us, ok, rig.dt, os.path.join(OUT, "cartpole_lqr.png"))
    print(f"total {time.perf_counter() - t_start:.0f} s (closed loops {t_loop:.0f} s)")


if __name__ == "__main__":
    main()

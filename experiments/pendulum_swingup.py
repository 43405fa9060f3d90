"""Swing the pendulum rig up with MPC through a learned PINODE, torque-limited below m g l.

The PINODE of configs/pendulum_pinode.yaml is trained on the pendulum rig's 3 min recording. A gradient-based
shooting MPC (`lagnet.control.ShootingMPC`: Adam on u = u_max tanh(v) through the model's RK4 rollout) plans
`HORIZON` steps of `DT` ahead and runs in closed loop on the rig's true plant (Stribeck friction, torque
offset, cogging) through its actuator (5 ms dead time, 3 ms lag) with the limit lowered to `U_MAX` < m g l
= 1.23 N m, so that the pendulum cannot be lifted straight up and the controller has to pump energy. The loop
is one `lax.scan` over control steps carrying the rig's state and the MPC's warm start (the previous plan,
shifted by one step). The same MPC on the known model alone (no friction, no offset) is the baseline.

    python experiments/pendulum_swingup.py [--retrain]

Trains (if absent) runs/control/pendulum_pinode; writes experiments/out/pendulum_swingup.{json,png}.
"""

import argparse
import dataclasses
import json
import os
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from lagnet.config import load_config  # noqa: E402
from lagnet.control import Dynamics, ShootingMPC, load  # noqa: E402
from lagnet.data.angles import wrap  # noqa: E402
from lagnet.run.training import train_run as train  # noqa: E402
from lagnet.simulate import PendulumRig, closed_loop  # noqa: E402

jax.config.update("jax_enable_x64", True)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(HERE, "out")
CONFIG = os.path.join(ROOT, "configs", "pendulum_pinode.yaml")
RUN = os.path.join(ROOT, "runs", "control", "pendulum_pinode")

U_MAX = 0.6  # N m, below m g l = 1.23 N m
DT = 0.04  # s, the control period and the MPC's model step
HORIZON = 40  # steps: 1.6 s, about one swing period (1.42 s)
ITERATIONS = 40  # Adam steps per control step, from the warm start
FIRST_ITERATIONS, RESTARTS = 300, 8  # the first plan, from rest: random restarts, the best kept
LEARNING_RATE = 0.1
DURATION = 8.0
SUBSTEPS = 80  # the rig's 0.5 ms integration step
UPRIGHT_TOLERANCE = 0.2  # rad
V_CLIP = 3.0  # |v| of the warm start
CANDIDATES = 4  # initial plans optimised at every control step (vmapped)
SEEDS = 3  # closed loops per model, differing in the MPC's random plans


MGL = PendulumRig().mass * PendulumRig().g * PendulumRig().length
INERTIA = PendulumRig().mass * PendulumRig().length ** 2


def energy_error(x):
    """(E − E_upright) / m g l with E = ½ m l² θ̇² − m g l cos θ: zero on the upright's homoclinic orbit."""
    return (0.5 * INERTIA * x[1] ** 2 - MGL * jnp.cos(x[0]) - MGL) / MGL


def stage_cost(x, u):
    """Angle from upright (θ = π), the energy still missing (so that pumping pays within the horizon), a
    little torque."""
    return 0.5 * (1 + jnp.cos(x[0])) + energy_error(x) ** 2 + 0.05 * (u[0] / U_MAX) ** 2


def terminal_cost(x):
    return 5 * (1 + jnp.cos(x[0])) + 2 * energy_error(x) ** 2 + 0.05 * x[1] ** 2


def ensure_run(retrain: bool) -> float:
    if retrain or not os.path.exists(os.path.join(RUN, "summary.json")):
        t0 = time.perf_counter()
        train(load_config(CONFIG), RUN, progress=False, overwrite=True)
        return time.perf_counter() - t0
    return 0.0


def swing_up(dyn: Dynamics, plant, actuator, samples: int, key):
    """The closed loop on the rig's plant and actuator: (xs (samples + 1, 2), us (samples, 1), planned costs
    (samples,)). The plant and actuator are built outside: their parameter checks need concrete values."""

    def make(iterations):
        return ShootingMPC(
            dyn,
            stage_cost,
            terminal_cost,
            horizon=HORIZON,
            iterations=iterations,
            learning_rate=LEARNING_RATE,
            u_max=U_MAX,
        )

    mpc, first = make(ITERATIONS), make(FIRST_ITERATIONS)
    key_first, key_loop = jax.random.split(key)
    x0 = jnp.zeros(2)
    best = jax.vmap(first.solve, in_axes=(None, 0))
    vs, costs = best(x0, 0.5 * jax.random.normal(key_first, (RESTARTS, HORIZON, 1)))
    v_init = vs[jnp.argmin(costs)]

    def controller(x, memory, _):
        v_prev, key = memory
        key, sub = jax.random.split(key)
        # Gradient descent through the rollout finds the nearest local optimum: a swing that will stall short
        # of the top keeps pushing. The warm start, its mirror image and random plans compete every step.
        noise = jax.random.normal(sub, (CANDIDATES - 2, HORIZON, 1))
        starts = jnp.concatenate([v_prev[None], -v_prev[None], noise])
        vs, costs = jax.vmap(mpc.solve, in_axes=(None, 0))(x, starts)
        v = vs[jnp.argmin(costs)]
        u = U_MAX * jnp.tanh(v[0])
        # Shift the plan by one step; keep it where tanh still has a gradient (tanh(3) = 0.995).
        v_next = jnp.clip(jnp.concatenate([v[1:], v[-1:]]), -V_CLIP, V_CLIP)
        return u, (v_next, key), jnp.min(costs)

    sol = closed_loop(
        plant,
        actuator,
        controller,
        (v_init, key_loop),
        x0,
        samples=samples,
        dt=DT,
        substeps=SUBSTEPS,
        throw=False,  # a failed swing-up is scored, not raised
    )
    return sol.xs, sol.us, sol.aux


def summarise(xs, us) -> dict:
    err = np.abs(wrap(np.asarray(xs[:, 0]) - np.pi))
    t = DT * np.arange(len(xs))
    outside = np.flatnonzero(err > UPRIGHT_TOLERANCE)
    last_out = outside[-1] if outside.size else -1
    up = last_out + 1 < len(xs) and t[-1] - t[last_out + 1] >= 2.0
    return {
        "success": bool(up),
        "time_to_upright_s": float(t[last_out + 1]) if up else None,
        "final_angle_error_rad": float(err[-1]),
        "mean_abs_error_last_2s_rad": float(np.mean(err[t >= t[-1] - 2.0])),
        "max_abs_torque": float(np.max(np.abs(us))),
        "energy_of_torque": float(np.sum(us**2) * DT),
    }


def plot(runs, results, path):
    fig, axes = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    colours = {"PINODE": "#1f77b4", "known model": "#7f7f7f"}
    for label, (xs, us, _) in runs.items():
        t = DT * np.arange(xs.shape[1])
        c = colours[label]
        r = results[label]
        name = f"MPC on the {label} ({r['successes']}/{r['seeds']} swung up)"
        for s in range(xs.shape[0]):
            style = dict(color=c, lw=1.6 if s == 0 else 0.7, alpha=1.0 if s == 0 else 0.5)
            axes[0].plot(t, xs[s, :, 0], label=name if s == 0 else None, **style)
            axes[1].plot(t, xs[s, :, 1], **style)
            axes[2].step(t[:-1], us[s, :, 0], where="post", **style)
    for k in (-1, 1):
        axes[0].axhline(k * np.pi, color="k", lw=0.5, ls="--")
    axes[0].set_ylim(-1.3 * np.pi, 1.3 * np.pi)
    axes[0].set_yticks([-np.pi, -np.pi / 2, 0, np.pi / 2, np.pi], ["−π", "−π/2", "0", "π/2", "π"])
    axes[0].set_ylabel("θ (rad), 0 hanging")
    axes[1].set_ylabel("θ̇ (rad/s)")
    axes[2].set_ylabel("torque command (N m)")
    for y in (-U_MAX, U_MAX):
        axes[2].axhline(y, color="k", lw=0.5, ls=":")
    axes[2].set_xlabel("t (s)")
    axes[0].legend(loc="lower right", fontsize=9)
    axes[0].set_title(
        f"MPC swing-up on the pendulum rig (true plant + actuator), |u| ≤ {U_MAX} N m < m g l = 1.23 N m\n"
        f"shooting MPC: {HORIZON} × {DT} s horizon, {CANDIDATES} plans × {ITERATIONS} Adam steps per "
        f"control step, warm-started; {SEEDS} seeds (bold: the first)",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {os.path.relpath(path)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--retrain", action="store_true", help="train the PINODE even if the run exists"
    )
    args = parser.parse_args()
    t_start = time.perf_counter()
    train_s = ensure_run(args.retrain)
    learned = load(RUN)
    rig = dataclasses.replace(PendulumRig(), torque_limit=U_MAX)
    models = {
        # The MPC plans with the model's own integrator at its own step size DT (not the 10 ms of the data).
        "PINODE": Dynamics(learned.model, learned.integrator, DT),
        "known model": Dynamics(rig.known_system(), learned.integrator, DT),
    }
    samples = int(round(DURATION / DT))
    runs, results, seconds = {}, {}, {}
    for label, dyn in models.items():
        t0 = time.perf_counter()
        keys = jax.random.split(jax.random.key(0), SEEDS)
        batched = eqx.filter_vmap(swing_up, in_axes=(None, None, None, None, 0))
        xs, us, costs = eqx.filter_jit(batched)(dyn, rig.plant(), rig.actuator(), samples, keys)
        xs, us, costs = np.asarray(xs), np.asarray(us), np.asarray(costs)
        seconds[label] = time.perf_counter() - t0
        runs[label] = (xs, us, costs)
        per_seed = [summarise(x, u) for x, u in zip(xs, us, strict=True)]
        times = [r["time_to_upright_s"] for r in per_seed if r["success"]]
        results[label] = {
            "successes": sum(r["success"] for r in per_seed),
            "seeds": SEEDS,
            "median_time_to_upright_s": float(np.median(times)) if times else None,
            "per_seed": per_seed,
        }
        print(
            f"{label:<12} swung up and held in {results[label]['successes']}/{SEEDS} seeds, "
            f"median time to upright {results[label]['median_time_to_upright_s']} s "
            f"({seconds[label]:.0f} s)"
        )
        for r in per_seed:
            print(f"    {r}")
    out = {
        "u_max": U_MAX,
        "dt": DT,
        "horizon": HORIZON,
        "iterations": ITERATIONS,
        "candidates": CANDIDATES,
        "duration_s": DURATION,
        "upright_tolerance_rad": UPRIGHT_TOLERANCE,
        "results": results,
        "seconds": {"train": train_s, **seconds, "total": time.perf_counter() - t_start},
    }
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "pendulum_swingup.json"), "w") as f:
        json.dump(out, f, indent=1)
    plot(runs, results, os.path.join(OUT, "pendulum_swingup.png"))
    print(f"total {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()

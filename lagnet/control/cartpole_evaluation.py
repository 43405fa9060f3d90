"""A model judged by the controllers built on it, on the simulated true rig (`lagnet evaluate RUN --control`).

For a cart-pole model (its known system `CartPole`), against `CartPoleRig` (heavier cart, Stribeck friction,
end stops, actuator lag and dead time):

- LQR: the discrete LQR of the model linearised at upright (after `trim`: a learned model's residual need not
  vanish there), from starts up to ±0.4 rad from upright, on the rig;
- MPC: the swing-up from hanging (`ProjectedMPC`, L-BFGS projected onto |u| ≤ u_max, a fixed budget of cost
  evaluations per solve), called from Python per 20 ms sample, with its solve times;
  success: within 0.1 rad of upright over the last 2 s, the cart inside the rail throughout;
- sanity at the operating points: q̈ at rest upright and hanging with no force (zero for the rig), and the
  linearisation's entries ∂q̈/∂(q, q̇, u) beside the rig's, averaged over small velocities (the rig's smoothed
  Coulomb friction has a slope of hundreds of N s/m exactly at rest, which no closed loop sees).

Both closed loops are the `cartpole-swingup` task run by `run_task` on `RigPlant(rig, sensors=False)`: the
controllers see the rig's true state, as every result on the control pages was measured.
"""

import dataclasses
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from .._errors import LagnetError
from ..config.bounded import read_json
from ..integrators import RK4
from ..simulate import CartPoleRig
from ..systems import CartPole
from .controllers import LQRController, MemoryController
from .dynamics import Dynamics, linearise_averaged, trim
from .lqr import dlqr
from .mpc import ProjectedMPC
from .plant import RigPlant
from .task_evaluation import write_control
from .task_loop import run_task
from .tasks import Task, cartpole_swingup

UPRIGHT = np.array([0.0, np.pi, 0.0, 0.0])
RAIL = (
    0.3  # m: success keeps the cart this far from the middle (the rig's end stops are at ±0.36 m)
)
HOLD_TOLERANCE = 0.1  # rad
HOLD_TIME = 2.0  # s
# The swing-up hands over to the model's LQR within these of upright (rad, rad/s).
CATCH_ANGLE, CATCH_RATE = 0.3, 3.0
LQR_Q = np.diag([300.0, 1000.0, 30.0, 10.0])
LQR_R = np.eye(1)
# The velocities over which the linearisation's slopes are averaged (m/s, rad/s): a balancing loop's.
SPREAD = np.array([0.0, 0.0, 0.1, 0.5])


def _tilt(phi):
    """φ − π wrapped to [−π, π)."""
    return jnp.mod(phi, 2 * jnp.pi) - jnp.pi


def cartpole_task(rig: CartPoleRig, seconds: float = 5.0, hold: float = HOLD_TIME) -> Task:
    """The `cartpole-swingup` task on `rig`: its force limit, `seconds` long, held for the last `hold` s (the
    whole run when shorter)."""
    return dataclasses.replace(
        cartpole_swingup(), u_max=rig.force_limit, seconds=seconds, hold=min(hold, seconds)
    )


def held(xs: np.ndarray, dt: float, hold: float = HOLD_TIME) -> np.ndarray | np.bool_:
    """Success per run (xs (..., N + 1, 4)): within HOLD_TOLERANCE of upright for the last `hold` seconds, the
    cart inside ±RAIL throughout, everything finite (the `cartpole-swingup` task's test)."""
    return dataclasses.replace(cartpole_swingup(), hold=hold).success(xs, dt)


def upright_lqr(dyn: Dynamics, spread=SPREAD) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(K, x*, u*): the discrete LQR (Q = LQR_Q, R = LQR_R) of the model's step linearised at its upright trim,
    averaged over the velocities a balancing loop visits (`spread`; None: the exact Jacobian at rest).

    Why averaged: a model's smoothed Coulomb friction (or a residual that learned the rig's) has a slope of
    hundreds of s⁻¹ exactly at rest; the step's exact Jacobian there has eigenvalues of 16–48, dynamics the rig
    never shows in motion, and an LQR designed on it holds nothing (0/14 for every learned cart-pole model
    measured; the physics models hold 14/14 either way)."""
    free = np.array([False, True, False, False])
    x_eq, u_eq, _ = trim(dyn, jnp.asarray(UPRIGHT), jnp.zeros(1), free)
    if spread is None:
        a, b = jax.jacfwd(dyn.step, argnums=(0, 1))(x_eq, u_eq)
    else:
        a, b = linearise_averaged(dyn.step, x_eq, u_eq, jnp.asarray(spread), key=jax.random.key(0))
    try:
        k, _ = dlqr(a, b, LQR_Q, LQR_R)
    except (np.linalg.LinAlgError, ValueError) as e:
        raise NoLQR(
            f"no LQR can be designed on the model at upright (its linearisation there: {e}); a model that "
            "does not know the upright's dynamics (a black box trained without upright states) cannot balance"
        ) from None
    return k, np.asarray(x_eq), np.asarray(u_eq)


class NoLQR(LagnetError, ValueError):
    """The model's linearisation at upright admits no LQR (the Riccati equation has no stabilising solution)."""


def lqr_starts(count: int) -> np.ndarray:
    """`count` starts at rest, upright tilted by ±0.4 rad at most (evenly, both sides), the cart in the middle."""
    half = np.linspace(0.4, 0.4 / ((count + 1) // 2), (count + 1) // 2)
    tilts = np.concatenate([half, -half])[:count]
    return np.stack([np.zeros(count), np.pi + tilts, np.zeros(count), np.zeros(count)], axis=1)


def evaluate_lqr(dyn: Dynamics, rig: CartPoleRig, *, starts: int = 14, seconds: float = 5.0):
    """LQR designed on the model, run on the rig from `lqr_starts(starts)`: (successes, the runs' states); (0,
    None) when no LQR can be designed on the model (`NoLQR`)."""
    try:
        k, x_eq, u_eq = upright_lqr(dyn)
    except NoLQR:
        return 0, None
    task = cartpole_task(rig, seconds)
    # The true state, as the results so far were measured (`RigPlant(rig)` reads the rig's sensors instead).
    run = run_task(
        LQRController(k, task, x_eq, u_eq), RigPlant(rig, sensors=False), task, lqr_starts(starts)
    )
    return run.successes, run.xs


def swing_up_cost(rig: CartPoleRig):
    """(stage, terminal) costs of the swing-up: the pole's energy towards upright's, the pole up, the cart near
    the middle with a stiff soft rail beyond ±0.15 m.

    The rail: success keeps the cart within ±RAIL = 0.3 m. A model that misjudges the cart's travel at speed (a
    learned cart-pole's friction at 1 m/s was twice the rig's) overran a rail at ±0.2 m of weight 200 (the
    cost of benchmarks/mpc.py) to 0.35–0.39 m in most swing-ups; at ±0.15 m and 2000 the known model still
    swings up and holds from all 6 starts."""
    a = rig.length * (0.5 * rig.rod_mass + rig.tip_mass)
    inertia = rig.length**2 * (rig.rod_mass / 3 + rig.tip_mass)
    g, u_max = rig.g, rig.force_limit

    def stage(x, u):
        e = (0.5 * inertia * x[3] ** 2 - g * a * jnp.cos(x[1])) / (g * a) - 1.0
        rail = jnp.maximum(jnp.abs(x[0]) - 0.15, 0.0)
        return (
            (1 + jnp.cos(x[1]))
            + 0.5 * e**2
            + 2 * x[0] ** 2
            + 0.05 * x[2] ** 2
            + 0.002 * x[3] ** 2
            + 0.05 * (u[0] / u_max) ** 2
            + 2000 * rail**2
        )

    def terminal(x):
        return 10 * (1 + jnp.cos(x[1])) + 2 * x[0] ** 2 + 0.1 * x[2] ** 2 + 0.01 * x[3] ** 2

    return stage, terminal


def swing_up_starts(count: int) -> np.ndarray:
    """Hanging near rest: cart positions spread over ±0.1 m, tilts of ±0.1 rad alternating."""
    x = np.linspace(-0.1, 0.1, count) if count > 1 else np.zeros(1)
    tilts = np.where(np.arange(count) % 2 == 0, 0.1, -0.1)
    return np.stack([x, tilts, np.zeros(count), np.zeros(count)], axis=1)


class SwingUp(eqx.Module):
    """The swing-up MPC of a model, as a controller for `run_controller`: `controller(y, memory) -> (u, memory,
    cost)`, starting from `memory0`; `compile(x0)` builds its two programs (the cold and the warm solve) before
    anything is timed.

    The MPC (`ProjectedMPC`, L-BFGS projected onto |u| ≤ u_max, a fixed budget of cost evaluations per solve)
    minimises `swing_up_cost` over `horizon` samples of the model's step. With `handover`, the model's upright
    LQR (`upright_lqr`) takes over within CATCH_ANGLE and CATCH_RATE of upright, the usual swing-up architecture:
    the swing-up MPC's energy-shaped cost is flat near upright, and on the rig it holds the known model's pole to
    about 0.1 rad (0.103–0.107 rad over the last 2 s), at the success tolerance."""

    mpc: ProjectedMPC
    first: ProjectedMPC
    k_lqr: jax.Array
    x_eq: jax.Array
    u_eq: jax.Array
    plan0: jax.Array
    past0: jax.Array
    u_max: float = eqx.field(static=True)
    lags: int = eqx.field(static=True)
    handover: bool = eqx.field(static=True)

    def __init__(
        self,
        dyn: Dynamics,
        rig: CartPoleRig,
        *,
        horizon: int = 30,
        iterations: int = 10,
        max_evaluations: int = 16,
        first_iterations: int = 100,
        handover: bool = True,
    ):
        dyn = Dynamics(dyn.model, dyn.integrator, rig.dt)
        stage, terminal = swing_up_cost(rig)
        try:
            self.k_lqr, self.x_eq, self.u_eq = (jnp.asarray(v) for v in upright_lqr(dyn))
        except NoLQR:
            # No LQR on this model: the MPC balances too.
            handover = False
            self.k_lqr = jnp.zeros((dyn.n_inputs, 2 * dyn.n_dof))
            self.x_eq, self.u_eq = jnp.asarray(UPRIGHT), jnp.zeros(dyn.n_inputs)
        self.u_max = float(rig.force_limit)
        lbfgs = optax.lbfgs(
            linesearch=optax.scale_by_zoom_linesearch(
                max_linesearch_steps=6, initial_guess_strategy="one"
            )
        )
        common = dict(u_min=-self.u_max, u_max=self.u_max, optimiser=lbfgs)
        self.mpc = ProjectedMPC(
            dyn,
            stage,
            terminal,
            horizon=horizon,
            iterations=iterations,
            max_evaluations=max_evaluations,
            **common,
        )
        # The first solve of a run: from a push at the pole's swing frequency (at rest hanging the cost's
        # gradient vanishes), more iterations and no budget.
        self.first = ProjectedMPC(
            dyn, stage, terminal, horizon=horizon, iterations=first_iterations, **common
        )
        self.lags = dyn.history.lags
        self.handover = handover
        t = rig.dt * np.arange(horizon)
        self.plan0 = jnp.asarray((0.3 * self.u_max * np.sin(2 * np.pi * t / 0.78))[:, None])
        # Unused without an input history.
        self.past0 = jnp.zeros((max(self.lags, 1), dyn.n_inputs))

    @property
    def memory0(self):
        return (self.plan0, self.past0, True)

    def compile(self, x0) -> None:
        for m in (self.first, self.mpc):
            jax.block_until_ready(_solve(m, jnp.asarray(x0), self.plan0, self.past0, self.lags))

    def controller(self, y, memory):
        plan, past, cold = memory
        y = jnp.asarray(y)
        u, plan, cost = _solve(self.first if cold else self.mpc, y, plan, past, self.lags)
        if (
            self.handover
            and abs(float(_tilt(y[1]))) < CATCH_ANGLE
            and abs(float(y[3])) < CATCH_RATE
        ):
            # Near upright the model's LQR balances (the MPC still solves every sample, warm and timed).
            err = (y - self.x_eq).at[1].set(_tilt(y[1]))
            u = self.u_eq - self.k_lqr @ err
        u = jnp.clip(u, -self.u_max, self.u_max)
        past = jnp.concatenate([u[None], past[:-1]]) if self.lags else past
        return u, (plan, past, False), cost


@eqx.filter_jit
def _solve(mpc, x, plan, past, lags):
    u, plan, sol = mpc.control(x, plan, past if lags else None)
    return u, plan, sol.cost


def evaluate_mpc(
    dyn: Dynamics,
    rig: CartPoleRig,
    *,
    starts: int = 6,
    seconds: float = 5.0,
    x0s: np.ndarray | None = None,
    **options,
):
    """The swing-up MPC (`SwingUp(dyn, rig, **options)`) on the rig from `swing_up_starts(starts)` (or from the
    states `x0s`, shape (starts, 4)); returns a dict
    (success, starts, median_ms and p99_ms of the warm solves, cost: the mean closed-loop Σ l dt, balance: who
    holds the pole up) and the runs' states."""
    swing = SwingUp(dyn, rig, **options)
    stage, _ = swing_up_cost(rig)
    x0s = swing_up_starts(starts) if x0s is None else np.asarray(x0s)
    task = cartpole_task(rig, seconds)
    controller = MemoryController(swing.controller, swing.memory0, prepare=swing.compile)
    run = run_task(controller, RigPlant(rig, sensors=False), task, x0s)
    costs = [
        float(np.sum(np.asarray(jax.vmap(stage)(jnp.asarray(xs[:-1]), jnp.asarray(us)))) * rig.dt)
        for xs, us in zip(run.xs, run.us, strict=True)
    ]
    median, p99 = run.solve_ms()
    result = {
        "balance": "lqr" if swing.handover else "mpc",
        "success": run.successes,
        "starts": len(x0s),
        "median_ms": median,
        "p99_ms": p99,
        "cost": float(np.mean(costs)),
    }
    return result, run.xs


ENTRY_NAMES = ("x", "phi")


def operating_points(dyn: Dynamics, rig: CartPoleRig, *, key=None) -> tuple[dict, dict]:
    """(equilibrium, linearisation): q̈ at rest upright and hanging with u = 0, the model's and the rig's; and
    the entries of ∂q̈/∂(q, q̇, u) at upright, the model's beside the rig's (averaged over `SPREAD`)."""
    key = jax.random.key(0) if key is None else key
    true = Dynamics(rig.plant(), RK4(), rig.dt)
    zero = jnp.zeros(1)
    equilibrium = {}
    for label, x in (("upright", UPRIGHT), ("hanging", np.zeros(4))):
        qdd = np.asarray(dyn.f(jnp.asarray(x), zero))[2:]
        equilibrium[label] = {
            "qdd": [float(v) for v in qdd],
            "qdd_rig": [float(v) for v in np.asarray(true.f(jnp.asarray(x), zero))[2:]],
            "norm": float(np.linalg.norm(qdd)),
        }
    x_up = jnp.asarray(UPRIGHT)
    model_ab = linearise_averaged(dyn.f, x_up, zero, jnp.asarray(SPREAD), key=key)
    rig_ab = linearise_averaged(true.f, x_up, zero, jnp.asarray(SPREAD), key=key)
    columns = [f"{n}" for n in ENTRY_NAMES] + [f"{n}_dot" for n in ENTRY_NAMES] + ["force"]
    model_m = np.concatenate([np.asarray(model_ab[0])[2:], np.asarray(model_ab[1])[2:]], axis=1)
    rig_m = np.concatenate([np.asarray(rig_ab[0])[2:], np.asarray(rig_ab[1])[2:]], axis=1)
    scale = np.max(np.abs(rig_m), axis=1, keepdims=True)
    entries = []
    for i, row in enumerate(ENTRY_NAMES):
        for j, col in enumerate(columns):
            m, r = float(model_m[i, j]), float(rig_m[i, j])
            small = 1e-6 * float(scale[i, 0])
            # Entries within rounding of zero (relative to the row's largest) count as zero: a sign only
            # where both are clearly nonzero.
            zero_m, zero_r = abs(m) <= small, abs(r) <= small
            same = (zero_m and zero_r) or (not zero_m and not zero_r and np.sign(m) == np.sign(r))
            entries.append(
                {
                    "entry": f"d{row}_ddot/d{col}",
                    "model": m,
                    "rig": r,
                    "same_sign": bool(same),
                    "ratio": m / r if abs(r) > small else None,
                }
            )
    agree = sum(e["same_sign"] for e in entries)
    return equilibrium, {"entries": entries, "same_sign": agree, "total": len(entries)}


def evaluate_control(
    dyn: Dynamics,
    rig: CartPoleRig | None = None,
    *,
    lqr_starts_count: int = 14,
    mpc_starts: int = 6,
    seconds: float = 5.0,
    mpc: bool = True,
    mpc_options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """metrics["control"]: {"lqr": {"success", "starts"}, "mpc": {"success", "starts", "median_ms", "p99_ms",
    "cost", "balance"}, "equilibrium": ..., "linearisation": ...} of a cart-pole model on the rig.
    `mpc_options`: `evaluate_mpc`'s (horizon, iterations, ...)."""
    if not isinstance(dyn.system, CartPole):
        raise ValueError(
            "evaluate --control: closed-loop evaluation needs a cart-pole model (its rig: "
            f"lagnet.simulate.CartPoleRig), got a {type(dyn.system).__name__} system"
        )
    rig = CartPoleRig() if rig is None else rig
    success, _ = evaluate_lqr(dyn, rig, starts=lqr_starts_count, seconds=seconds)
    out: dict[str, Any] = {"lqr": {"success": success, "starts": lqr_starts_count}}
    if mpc:
        out["mpc"], _ = evaluate_mpc(
            dyn, rig, starts=mpc_starts, seconds=seconds, **(mpc_options or {})
        )
    out["equilibrium"], out["linearisation"] = operating_points(dyn, rig)
    return out


def control_section(metrics: dict[str, Any]) -> str:
    """The report.md section of metrics["control"] (markdown)."""
    c = metrics["control"]
    lines = ["## Control on the simulated rig", ""]
    lqr = c["lqr"]
    lines.append(
        f"- LQR (designed on the model at upright): {lqr['success']}/{lqr['starts']} starts up to ±0.4 rad "
        f"held within {HOLD_TOLERANCE} rad for the last {HOLD_TIME:g} s, cart within ±{RAIL} m"
    )
    if "mpc" in c:
        m = c["mpc"]
        lines.append(
            f"- MPC swing-up (balanced by the {m['balance'].upper()} near upright): {m['success']}/{m['starts']} "
            f"starts; solve time median {m['median_ms']:.1f} ms, "
            f"p99 {m['p99_ms']:.1f} ms; closed-loop cost {m['cost']:.2f}"
        )
    for label, e in c["equilibrium"].items():
        qdd = ", ".join(f"{v:.3g}" for v in e["qdd"])
        lines.append(f"- q̈ at rest {label}, no force: ({qdd}) (rig: 0); |q̈| = {e['norm']:.3g}")
    lin = c["linearisation"]
    lines += [
        "",
        f"Linearisation at upright, averaged over small velocities: {lin['same_sign']}/{lin['total']} "
        "entries with the rig's sign.",
        "",
        "| entry | model | rig | same sign |",
        "|---|---|---|---|",
    ]
    for e in lin["entries"]:
        lines.append(
            f"| {e['entry']} | {e['model']:.4g} | {e['rig']:.4g} | {'yes' if e['same_sign'] else 'NO'} |"
        )
    return "\n".join(lines) + "\n"


def evaluate_run_control(run_dir: str, out: str | None = None, **kwargs) -> dict[str, Any]:
    """`evaluate_control` of a run's model (`lagnet.load`), merged into OUT/metrics.json under "control" and
    appended to OUT/report.md (OUT: `out` or RUN_DIR/evaluation); returns the control metrics."""
    from .load import load

    control = evaluate_control(load(run_dir), **kwargs)
    write_control(run_dir, out, control, control_section({"control": control}))
    return control


def read_control(run_dir: str, out: str | None) -> dict[str, Any] | None:
    """OUT/metrics.json's "control" (OUT: `out` or RUN_DIR/evaluation), or None."""
    path = Path(out or Path(run_dir) / "evaluation") / "metrics.json"
    metrics = read_json(path, "an evaluation's metrics") if path.exists() else {}
    return metrics.get("control") if isinstance(metrics, dict) else None


def over_seeds(per_seed: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The closed-loop counts summed over seeds, the worst seed's, and the MPC's mean cost."""
    out: dict[str, Any] = {"seeds": [int(k) for k in per_seed]}
    for part in ("lqr", "mpc"):
        runs = [c[part] for c in per_seed.values() if part in c]
        if runs:
            out[part] = {
                "success": sum(r["success"] for r in runs),
                "starts": sum(r["starts"] for r in runs),
                "worst": min(r["success"] for r in runs),
            }
            if part == "mpc":
                out[part]["cost"] = float(np.mean([r["cost"] for r in runs]))
    return out


def seeds_section(control: dict[str, Any]) -> str:
    """The report.md table of control["seeds"] and control["over_seeds"] (markdown)."""
    lines = [
        "## Control over training seeds",
        "",
        "| seed | LQR held | MPC swing-up held | MPC cost | solve median / p99 (ms) | ‖q̈‖ at rest upright |",
        "|---|---|---|---|---|---|",
    ]
    for seed, c in control["seeds"].items():
        cells = [seed, f"{c['lqr']['success']}/{c['lqr']['starts']}"]
        if "mpc" in c:
            m = c["mpc"]
            cells += [f"{m['success']}/{m['starts']}", f"{m['cost']:.2f}"]
            cells.append(f"{m['median_ms']:.1f} / {m['p99_ms']:.1f}")
        else:
            cells += ["", "", ""]
        cells.append(f"{c['equilibrium']['upright']['norm']:.3g}")
        lines.append("| " + " | ".join(cells) + " |")
    total = control["over_seeds"]
    cells = [
        "all",
        f"{total['lqr']['success']}/{total['lqr']['starts']} (worst {total['lqr']['worst']})",
    ]
    if "mpc" in total:
        m = total["mpc"]
        cells += [f"{m['success']}/{m['starts']} (worst {m['worst']})", f"{m['cost']:.2f}"]
    else:
        cells += ["", ""]
    lines.append("| " + " | ".join(cells + ["", ""]) + " |")
    return "\n".join(lines) + "\n"

"""Box-constrained iterative LQR through a model's step, as a receding-horizon controller for a task.

Each iteration linearises the step and expands the cost to second order along the current plan, solves the
Riccati recursion backwards for an update δu_t = k_t + K_t δx_t, and rolls it forward with a line search over a few
step sizes at once (vmapped; the best that lowers the cost is kept). The cost's curvature in x keeps only its
positive part (Gauss–Newton's), and V_xx is regularised by an adaptive μ. Inputs stay within u_min ≤ u ≤ u_max:
where the updated input would leave the box it is clamped there and its feedback row zeroed (Tassa, Mansard and
Todorov's clamping, exact for one input). `ILQRController` solves once per control period warm-started from the
previous plan shifted by one step, optionally handing over to the task's LQR near the goal.
"""

import functools
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .controllers import AbstractController, LQRController
from .dynamics import Dynamics, linearise_averaged
from .lqr import dlqr
from .mpc import shift
from .tasks import Task

STEP_SIZES = (1.0, 0.5, 0.25, 0.1, 0.03, 0.01)
# The regularisation μ of V_xx: divided or multiplied by MU_FACTOR per iteration, kept in [MU_MIN, MU_MAX].
MU_FACTOR, MU_MIN, MU_MAX = 4.0, 1e-6, 1e6


class ILQR(eqx.Module):
    """min Σ_t l(x_t, u_t) + l_f(x_H) over u_{0..H−1} in the box, x_{t+1} = step(x_t, u_t); `solve(x0, plan)`.

    The backward pass is regularised on the value's curvature, V_xx + μ I (Tassa, Erez and Todorov's choice: it
    keeps the update's feedback consistent with the dynamics, unlike a damping of Q_uu alone). μ adapts: an
    iteration that lowers the cost divides it by `MU_FACTOR`, one that fails multiplies it, from `regularisation`
    within [`MU_MIN`, `MU_MAX`]."""

    step: Callable = eqx.field(static=True)
    stage: Callable = eqx.field(static=True)
    terminal: Callable = eqx.field(static=True)
    u_min: jax.Array
    u_max: jax.Array
    iterations: int = eqx.field(static=True, default=5)
    regularisation: float = eqx.field(static=True, default=1e-3)

    def rollout(self, x0, us):
        def body(x, u):
            x_next = self.step(x, u)
            return x_next, x_next

        _, xs = jax.lax.scan(body, x0, us)
        return jnp.concatenate([x0[None], xs])

    def total(self, xs, us):
        return jnp.sum(jax.vmap(self.stage)(xs[:-1], us)) + self.terminal(xs[-1])

    def backward(self, xs, us, mu=None):
        """(k, K, ok) of the update δu_t = k_t + K_t δx_t, clamped to the box, with V_xx regularised by μ
        (default: `regularisation`); ok is False where some Q_uu was not positive definite."""
        mu = self.regularisation if mu is None else mu
        fx, fu = jax.vmap(jax.jacfwd(self.step, argnums=(0, 1)))(xs[:-1], us)
        lx, lu = jax.vmap(jax.grad(self.stage, argnums=(0, 1)))(xs[:-1], us)
        (lxx, lxu), (_, luu) = jax.vmap(jax.hessian(self.stage, argnums=(0, 1)))(xs[:-1], us)
        # A cost that is not convex in x (a wrapped angle's 1 − cos) has an indefinite Hessian, and through
        # unstable dynamics V_xx then grows indefinite beyond any μ: keep its positive part (Gauss–Newton's).
        lxx = jax.vmap(_positive_part)(lxx)
        vx, vxx = (
            jax.grad(self.terminal)(xs[-1]),
            _positive_part(jax.hessian(self.terminal)(xs[-1])),
        )
        shift_x = mu * jnp.eye(xs.shape[1])

        def body(carry, t):
            vx, vxx = carry
            a, b, u = fx[t], fu[t], us[t]
            qx, qu = lx[t] + a.T @ vx, lu[t] + b.T @ vx
            qxx = lxx[t] + a.T @ vxx @ a
            quu = luu[t] + b.T @ (vxx + shift_x) @ b
            qux = lxu[t].T + b.T @ (vxx + shift_x) @ a
            definite = jnp.min(jnp.linalg.eigvalsh(0.5 * (quu + quu.T))) > 0
            k_free = -jnp.linalg.solve(quu, qu)
            gain = -jnp.linalg.solve(quu, qux)
            # Clamp: an input pushed out of the box stays on it, and its feedback is cut.
            target = u + k_free
            clamped = (target < self.u_min) | (target > self.u_max)
            k = jnp.clip(target, self.u_min, self.u_max) - u
            gain = jnp.where(clamped[:, None], 0.0, gain)
            vx = qx + gain.T @ quu @ k + gain.T @ qu + qux.T @ k
            vxx = qxx + gain.T @ quu @ gain + gain.T @ qux + qux.T @ gain
            return (vx, 0.5 * (vxx + vxx.T)), (k, gain, definite)

        steps = jnp.arange(us.shape[0])
        _, (k, gain, definite) = jax.lax.scan(body, (vx, vxx), steps, reverse=True)
        ok = jnp.all(definite) & jnp.all(jnp.isfinite(k)) & jnp.all(jnp.isfinite(gain))
        return jnp.nan_to_num(k), jnp.nan_to_num(gain), ok

    def forward(self, x0, xs, us, k, gain, alpha):
        def body(x, inputs):
            x_ref, u, k_t, g_t = inputs
            u_new = jnp.clip(u + alpha * k_t + g_t @ (x - x_ref), self.u_min, self.u_max)
            return self.step(x, u_new), (x, u_new)

        x_last, (xs_new, us_new) = jax.lax.scan(body, x0, (xs[:-1], us, k, gain))
        xs_new = jnp.concatenate([xs_new, x_last[None]])
        return xs_new, us_new, self.total(xs_new, us_new)

    def solve(self, x0, plan):
        """(the plan (H, m), its cost): `iterations` iLQR steps from `plan` (clipped into the box)."""
        us = jnp.clip(plan, self.u_min, self.u_max)
        xs = self.rollout(x0, us)

        def iteration(carry, _):
            xs, us, cost, mu = carry
            k, gain, ok = self.backward(xs, us, mu)
            tries = jax.vmap(lambda a: self.forward(x0, xs, us, k, gain, a))(
                jnp.asarray(STEP_SIZES)
            )
            best = jnp.argmin(jnp.where(jnp.isfinite(tries[2]), tries[2], jnp.inf))
            better = ok & (tries[2][best] < cost)
            pick = jax.tree.map(
                lambda new, old: jnp.where(better, new[best], old), tries, (xs, us, cost)
            )
            mu = jnp.clip(jnp.where(better, mu / MU_FACTOR, mu * MU_FACTOR), MU_MIN, MU_MAX)
            return (*pick, mu), None

        start = (xs, us, self.total(xs, us), jnp.asarray(self.regularisation, xs.dtype))
        (xs, us, cost, _), _ = jax.lax.scan(iteration, start, None, self.iterations)
        return us, cost


# RK4 is stable for h·|λ| up to about 2.8 on the negative real axis; keep the fastest mode well inside.
STABLE_STEP = 1.5
MAX_SUBSTEPS = 8


def stable_substeps(dyn: Dynamics, task: Task, dt: float) -> int:
    """The model steps per control period that keep RK4 stable at the goal: ⌈dt ρ(∂f/∂x) / STABLE_STEP⌉ (at
    most MAX_SUBSTEPS), ρ the spectral radius of the model's Jacobian at the goal and its holding input. A
    friction law's steep slope at rest (a Coulomb term's c/ε) is such a fast mode, found exactly where a
    balancing controller works."""
    jac = jax.jacfwd(dyn.f)(jnp.asarray(task.goal), jnp.asarray(task.u_goal))
    rho = float(np.max(np.abs(np.linalg.eigvals(np.asarray(jac, float)))))
    return int(min(max(np.ceil(dt * rho / STABLE_STEP), 1), MAX_SUBSTEPS))


def _positive_part(h):
    """The symmetric matrix h with its negative eigenvalues set to zero."""
    w, v = jnp.linalg.eigh(0.5 * (h + h.T))
    return (v * jnp.maximum(w, 0.0)) @ v.T


def _period(solver: ILQR, x0, plan):
    """(the first input, the next period's warm start, the cost): one control period's work, compiled whole (at
    100 Hz each eager operation outside it, a shift or an index, costs a dispatch the period cannot spare)."""
    us, cost = solver.solve(x0, plan)
    return us[0], shift(us), cost


def _planned_step(dyn: Dynamics, step: Callable, n2: int, dt: float, substeps: int, history: bool):
    """(the plan's step, k, h): `step` itself, or with `history` for a model with an input history of k the step
    of z = (x, the last k commands, newest first), what the drive is still working through (an actuator's lag),
    which the held reading forgets; h model steps make one period."""
    lags, m = (dyn.history.lags if history else 0), dyn.n_inputs
    if not lags:
        return step, 0, 1
    try:
        h = dyn.history_steps(dt)
    except ValueError as e:
        raise ValueError(f"ILQRController(history=True): {e}") from None
    per_model_step = -(-substeps // h)

    def plan_step(z, u):
        past = z[n2:].reshape(lags, m)
        x, past = dyn.hold_with_history(z[:n2], u, past, dt, per_model_step)
        return jnp.concatenate([x, past.reshape(-1)])

    return plan_step, lags, h


def smooth_cost(task: Task, running: float = 1.0) -> tuple[Callable, Callable]:
    """(stage, error): the task's cost with each angle error d replaced by 2 sin(d / 2) (d² by 2 (1 − cos d):
    the same to second order at the goal, smooth and bounded all the way round), its state term scaled by
    `running`, and that error."""
    angles = jnp.asarray(task.angles)
    goal, u_goal = jnp.asarray(task.goal), jnp.asarray(task.u_goal)
    q, r = running * jnp.asarray(task.q), jnp.asarray(task.r)

    def error(x):
        d = x - goal
        return jnp.where(angles, 2 * jnp.sin(d / 2), d)

    def stage(x, u):
        e, du = error(x), u - u_goal
        return e @ q @ e + du @ r @ du

    return stage, error


def _with_energy(stage: Callable, dyn: Dynamics, task: Task, weight: float) -> Callable:
    """`stage` plus weight·((E(x) − E*) / ΔE)², E the model's system's energy."""
    system, n = dyn.system, task.goal.size // 2

    def energy(x):
        return system.energy(x[:n], x[n:])

    goal = energy(jnp.asarray(task.goal))
    gap = jnp.abs(goal - energy(jnp.asarray(task.start)))
    if not gap > 0:
        raise ValueError(
            f"{task.name}: an energy cost needs a goal whose energy differs from the start's"
        )

    def stage_with_energy(x, u):
        return stage(x, u) + weight * ((energy(x) - goal) / gap) ** 2

    return stage_with_energy


def _with_wall(stage: Callable, task: Task, weight: float) -> Callable:
    """`stage` plus weight·Σᵢ max(|xᵢ − cᵢ| − hᵢ/2, 0)² over the task's finite state bounds (centre c, half-width
    h): a soft wall from half-way to each bound."""
    n2 = task.goal.size
    low = np.full(n2, -np.inf) if task.state_low is None else np.asarray(task.state_low, float)
    high = np.full(n2, np.inf) if task.state_high is None else np.asarray(task.state_high, float)
    bounded = np.isfinite(low) & np.isfinite(high)
    if not bounded.any():
        raise ValueError(
            f"{task.name}: a wall cost needs a state bound on both sides of some coordinate"
        )
    index = np.flatnonzero(bounded)
    centre = jnp.asarray((low[index] + high[index]) / 2)
    free = jnp.asarray((high[index] - low[index]) / 4)

    def stage_with_wall(x, u):
        beyond = jnp.maximum(jnp.abs(x[index] - centre) - free, 0.0)
        return stage(x, u) + weight * beyond @ beyond

    return stage_with_wall


# Per task, the iLQR's options (horizon in seconds; the rest as `ILQRController` takes them), chosen on validation
# starts by benchmarks/control_tasks.py. The double pendulum's plan is mostly its terminal cost (the running state
# cost a hundredth of the task's, the terminal ten times Q): a plan that must hurry to the top through a
# cheap-torque running cost finds the swing-up; and no LQR takes over at the top, where the joints' Coulomb
# friction is stronger than gravity's pull at small tilts, which a linearisation at rest misreads. The pendulum's
# plan pays for its energy error: with the quadratic cost alone the rig's friction and torque limit leave the
# plan pushing against gravity part-way up (the known model's 0 of 4 validation starts on the rig, 4 of 4 with it).
# The cart-pole's plan pumps energy too, inside a soft wall at half its rail: with neither, the frictionless
# cart-pole's plan from hanging held none of its starts.
TASK_OPTIONS = {
    "pendulum-swingup": dict(
        horizon_s=1.6, first_iterations=50, energy=300.0, running=0.01, terminal=1.0
    ),
    "cartpole-swingup": dict(energy=100.0, wall=2000.0, running=0.01, terminal=1.0),
    "pendubot-swingup": dict(
        horizon_s=1.5, first_iterations=100, running=0.01, terminal=10.0, catch=0.0
    ),
    "acrobot-swingup": dict(
        horizon_s=1.5, first_iterations=100, running=0.01, terminal=10.0, catch=0.0
    ),
}


class ILQRController(AbstractController):
    """Receding-horizon iLQR of `dyn` at period dt for `task`: each call solves `iterations` steps warm-started
    from the previous plan shifted by one step (`first_iterations` on the first call of a run) and applies its
    first input; `substeps` model steps make one period. Within `catch` of the goal (the task's wrapped error,
    per state entry; 0: never) the task's LQR takes over.

    The running cost is the task's with its state term scaled by `running`, plus `energy`·((E − E*) / ΔE)² when
    `energy` > 0 (E = T + V of the model's system, E* the goal's, ΔE the goal's above the task's start): a
    quadratic cost alone has a local minimum where the input holds the system part-way up, and the energy term
    pays for pumping past it. `wall` > 0 adds a soft wall from half-way to each finite state bound of the task
    (`_with_wall`), where the task's success requires the state inside its bounds. The terminal cost is the
    LQR's cost-to-go eᵀPe (so the plan aims for where the LQR holds), or `terminal`·eᵀQe when given. The LQR is
    linearised at the goal, or with `spread` (per state entry) averaged over states about it
    (`linearise_averaged`): a stiff Coulomb friction's slope at rest is a damping the loop never sees. With
    `history`, a model with an input history (a drive's lag) plans from (x, the controller's last commands): the
    period must be a whole number h of the model's steps, each command filling h places (`hold_with_history`).
    Without it the model reads the last input held, the steady state, which forgets what the drive still applies.
    `ILQRController.for_task` takes a named task's chosen options (`TASK_OPTIONS`)."""

    def __init__(
        self,
        dyn: Dynamics,
        task: Task,
        dt: float,
        *,
        horizon: int = 100,
        iterations: int = 3,
        first_iterations: int = 60,
        substeps: int = 1,
        catch=None,
        running: float = 1.0,
        terminal: float | None = None,
        energy: float = 0.0,
        wall: float = 0.0,
        spread=None,
        history: bool = False,
        seed: int = 0,
    ):
        def step(x, u):
            # In `substeps` steps of the model: stiff terms (friction) need a finer step than the control period.
            # A model's past inputs read as u held (the steady state), as the LQR's linearisation needs.
            for _ in range(substeps):
                x = dyn.step(x, u, dt / substeps)
            return x

        n2 = task.goal.size
        plan_step, lags, self.history_steps = _planned_step(dyn, step, n2, dt, substeps, history)

        x, u = jnp.asarray(task.goal), jnp.asarray(task.u_goal)
        # Plans and states in the model's own precision (a float32 reading into a float64 model, or the
        # reverse, would change the solver's carried types).
        self.dtype = jax.eval_shape(step, x, u).dtype
        if spread is None:
            a, b = jax.jacfwd(step, argnums=(0, 1))(x, u)
        else:
            a, b = linearise_averaged(
                step, x, u, jnp.asarray(spread, self.dtype), key=jax.random.key(seed)
            )
        k, p = dlqr(a, b, task.q, task.r)
        self.lqr = LQRController(k, task)
        stage, error = smooth_cost(task, running)
        if energy:
            stage = _with_energy(stage, dyn, task, energy)
        if wall:
            stage = _with_wall(stage, task, wall)
        p = jnp.asarray(p) if terminal is None else terminal * jnp.asarray(task.q)

        def terminal(z):
            e = error(z[:n2])
            return e @ p @ e

        def plan_stage(z, u):
            return stage(z[:n2], u)

        lo, hi = jnp.asarray(-task.u_max), jnp.asarray(task.u_max)
        common = dict(step=plan_step, stage=plan_stage, terminal=terminal, u_min=lo, u_max=hi)
        self.warm = ILQR(**common, iterations=iterations)
        self.cold = ILQR(**common, iterations=first_iterations)
        # jax.jit of the solver closed over: a call dispatches faster than through eqx.filter_jit's filtering.
        self._solve_warm = jax.jit(functools.partial(_period, self.warm))
        self._solve_cold = jax.jit(functools.partial(_period, self.cold))
        self.task = task
        # Default: within 0.3 of the goal's coordinates and 3 of its velocities.
        n = task.goal.size // 2
        default = np.concatenate([np.full(n, 0.3), np.full(n, 3.0)])
        self.catch = default if catch is None else np.asarray(catch, float)
        # A small random first plan: from rest at an equilibrium every gradient may vanish.
        rng = np.random.default_rng(seed)
        plan0 = 0.3 * task.u_max * rng.standard_normal((horizon, task.u_max.size))
        self.plan0 = jnp.asarray(plan0, self.dtype)
        self.plan, self.cold_next = self.plan0, True
        self.past = self.no_past = jnp.zeros((lags, dyn.n_inputs), self.dtype)

    @classmethod
    def for_task(cls, dyn: Dynamics, task: Task, dt: float, **options) -> "ILQRController":
        """The controller with the task's `TASK_OPTIONS` (what `options` does not override); the horizon in
        seconds (`horizon_s`) becomes periods of dt, and the model's sub-steps are `stable_substeps` unless
        given."""
        chosen = TASK_OPTIONS.get(task.name, {}) | options
        horizon_s = chosen.pop("horizon_s", None)
        if horizon_s is not None and "horizon" not in chosen:
            chosen["horizon"] = max(int(round(horizon_s / dt)), 1)
        chosen.setdefault("substeps", stable_substeps(dyn, task, dt))
        return cls(dyn, task, dt, **chosen)

    def reset(self, x0) -> None:
        """A run's start at x0, the drive at rest (no past commands)."""
        x0 = jnp.asarray(x0, self.dtype)
        for solve in (self._solve_cold, self._solve_warm):
            jax.block_until_ready(solve(self.planned_state(x0, self.no_past), self.plan0))
        self.lqr(x0, 0.0)
        self.plan, self.cold_next, self.past = self.plan0, True, self.no_past

    def planned_state(self, x, past=None):
        """The state the plan starts from: x, and with `history` the past commands (default: the controller's
        own, those it gave) after it."""
        past = self.past if past is None else past
        return jnp.concatenate([jnp.asarray(x, self.dtype), past.reshape(-1)]) if past.size else x

    def applied(self, u) -> None:
        """Record u as the period's command given: with `history` it fills the period's h places of the past
        commands the plan starts from. `__call__` records its own; a wrapper that commands instead calls this."""
        if self.past.size:
            held = jnp.broadcast_to(
                jnp.asarray(u, self.dtype), (self.history_steps, self.past.shape[-1])
            )
            self.past = jnp.concatenate([held, self.past])[: self.past.shape[0]]

    def __call__(self, x, t: float):
        x = jnp.asarray(x, self.dtype)
        solve = self._solve_cold if self.cold_next else self._solve_warm
        u, self.plan, _ = solve(self.planned_state(x), self.plan)
        self.cold_next = False
        if self.caught(x):
            u = self.lqr(x, t)
        self.applied(u)
        return u

    def caught(self, x) -> bool:
        """Whether x is within `catch` of the goal (the task's wrapped error, per state entry): the LQR's region."""
        return bool(np.all(np.abs(np.asarray(self.task.error(np.asarray(x)))) < self.catch))

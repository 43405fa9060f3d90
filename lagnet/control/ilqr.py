"""Box-constrained iterative LQR through a model's step, as a receding-horizon controller for a task.

Each iteration linearises the step and expands the cost to second order along the current plan, solves the
Riccati recursion backwards for an update δu_t = k_t + K_t δx_t, and rolls it forward with a line search over a few
step sizes at once (vmapped; the best that lowers the cost is kept). Inputs stay within u_min ≤ u ≤ u_max: where the
updated input would leave the box it is clamped there and its feedback row zeroed (Tassa, Mansard and Todorov's
clamping, exact for one input). `ILQRController` solves once per control period warm-started from the previous plan
shifted by one step, and hands over to the task's LQR near the goal.
"""

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .controllers import AbstractController, LQRController
from .dynamics import Dynamics
from .lqr import dlqr
from .mpc import shift
from .tasks import Task

STEP_SIZES = (1.0, 0.5, 0.25, 0.1, 0.03)


class ILQR(eqx.Module):
    """min Σ_t l(x_t, u_t) + l_f(x_H) over u_{0..H−1} in the box, x_{t+1} = step(x_t, u_t); `solve(x0, plan)`."""

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

    def backward(self, xs, us):
        """(k, K) of the update δu_t = k_t + K_t δx_t, clamped to the box."""
        fx, fu = jax.vmap(jax.jacfwd(self.step, argnums=(0, 1)))(xs[:-1], us)
        lx, lu = jax.vmap(jax.grad(self.stage, argnums=(0, 1)))(xs[:-1], us)
        (lxx, lxu), (_, luu) = jax.vmap(jax.hessian(self.stage, argnums=(0, 1)))(xs[:-1], us)
        vx, vxx = jax.grad(self.terminal)(xs[-1]), jax.hessian(self.terminal)(xs[-1])
        eye = self.regularisation * jnp.eye(us.shape[1])

        def body(carry, t):
            vx, vxx = carry
            a, b, u = fx[t], fu[t], us[t]
            qx, qu = lx[t] + a.T @ vx, lu[t] + b.T @ vx
            qxx = lxx[t] + a.T @ vxx @ a
            quu = luu[t] + b.T @ vxx @ b + eye
            qux = lxu[t].T + b.T @ vxx @ a
            k_free = -jnp.linalg.solve(quu, qu)
            gain = -jnp.linalg.solve(quu, qux)
            # Clamp: an input pushed out of the box stays on it, and its feedback is cut.
            target = u + k_free
            clamped = (target < self.u_min) | (target > self.u_max)
            k = jnp.clip(target, self.u_min, self.u_max) - u
            gain = jnp.where(clamped[:, None], 0.0, gain)
            vx = qx + gain.T @ quu @ k + gain.T @ qu + qux.T @ k
            vxx = qxx + gain.T @ quu @ gain + gain.T @ qux + qux.T @ gain
            return (vx, 0.5 * (vxx + vxx.T)), (k, gain)

        _, (k, gain) = jax.lax.scan(body, (vx, vxx), jnp.arange(us.shape[0]), reverse=True)
        return k, gain

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
            xs, us, cost = carry
            k, gain = self.backward(xs, us)
            tries = jax.vmap(lambda a: self.forward(x0, xs, us, k, gain, a))(
                jnp.asarray(STEP_SIZES)
            )
            best = jnp.argmin(jnp.where(jnp.isfinite(tries[2]), tries[2], jnp.inf))
            better = tries[2][best] < cost
            pick = jax.tree.map(
                lambda new, old: jnp.where(better, new[best], old), tries, (xs, us, cost)
            )
            return pick, None

        (xs, us, cost), _ = jax.lax.scan(
            iteration, (xs, us, self.total(xs, us)), None, self.iterations
        )
        return us, cost


@eqx.filter_jit
def _solve(solver: ILQR, x0, plan):
    return solver.solve(x0, plan)


def smooth_cost(task: Task) -> tuple[Callable, Callable]:
    """(stage, error): the task's cost with each angle error d replaced by 2 sin(d / 2) (d² by 2 (1 − cos d):
    the same to second order at the goal, smooth and bounded all the way round), and that error."""
    angles = jnp.asarray(task.angles)
    goal, u_goal = jnp.asarray(task.goal), jnp.asarray(task.u_goal)
    q, r = jnp.asarray(task.q), jnp.asarray(task.r)

    def error(x):
        d = x - goal
        return jnp.where(angles, 2 * jnp.sin(d / 2), d)

    def stage(x, u):
        e, du = error(x), u - u_goal
        return e @ q @ e + du @ r @ du

    return stage, error


class ILQRController(AbstractController):
    """Receding-horizon iLQR of `dyn` at period dt for `task`: each call solves `iterations` steps warm-started
    from the previous plan shifted by one step (`first_iterations` on the first call of a run) and applies its
    first input; `substeps` model steps make one period. Within `catch` of the goal (the task's wrapped error,
    per state entry) the task's LQR takes over.

    The terminal cost is the LQR's cost-to-go eᵀPe, so the plan aims for where the LQR holds."""

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
        seed: int = 0,
    ):
        def step(x, u):
            # In `substeps` steps of the model: stiff terms (friction) need a finer step than the control period.
            for _ in range(substeps):
                x = dyn.step(x, u, dt / substeps)
            return x

        x, u = jnp.asarray(task.goal), jnp.asarray(task.u_goal)
        a, b = jax.jacfwd(step, argnums=(0, 1))(x, u)
        k, p = dlqr(a, b, task.q, task.r)
        self.lqr = LQRController(k, task)
        stage, error = smooth_cost(task)
        p = jnp.asarray(p)

        def terminal(x):
            e = error(x)
            return e @ p @ e

        lo, hi = jnp.asarray(-task.u_max), jnp.asarray(task.u_max)
        common = dict(step=step, stage=stage, terminal=terminal, u_min=lo, u_max=hi)
        self.warm = ILQR(**common, iterations=iterations)
        self.cold = ILQR(**common, iterations=first_iterations)
        self._solve_warm = lambda x, plan: _solve(self.warm, x, plan)
        self._solve_cold = lambda x, plan: _solve(self.cold, x, plan)
        self.task = task
        # Default: within 0.3 of the goal's coordinates and 3 of its velocities.
        n = task.goal.size // 2
        default = np.concatenate([np.full(n, 0.3), np.full(n, 3.0)])
        self.catch = default if catch is None else np.asarray(catch, float)
        # A small random first plan: from rest at an equilibrium every gradient may vanish.
        rng = np.random.default_rng(seed)
        self.plan0 = jnp.asarray(0.3 * task.u_max * rng.standard_normal((horizon, task.u_max.size)))
        self.plan, self.cold_next = self.plan0, True

    def reset(self, x0) -> None:
        x0 = jnp.asarray(x0)
        for solve in (self._solve_cold, self._solve_warm):
            jax.block_until_ready(solve(x0, self.plan0))
        self.lqr(x0, 0.0)
        self.plan, self.cold_next = self.plan0, True

    def __call__(self, x, t: float):
        x = jnp.asarray(x)
        solve = self._solve_cold if self.cold_next else self._solve_warm
        plan, _ = solve(x, self.plan)
        self.plan, self.cold_next = shift(plan), False
        if np.all(np.abs(np.asarray(self.task.error(np.asarray(x)))) < self.catch):
            return self.lqr(x, t)
        return plan[0]

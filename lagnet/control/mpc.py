"""Model-predictive control through the differentiable model: gradient-based shooting with optax.

Two solvers of the same finite-horizon problem, both with a fixed iteration budget (a bounded solve time;
`ProjectedMPC` also a budget of cost evaluations, for line searches) and a warm start from the previous plan
shifted by one step (`shift`):

- `ShootingMPC`: unconstrained Adam on v with u = u_max · tanh(v) (the bound by a change of variables);
- `ProjectedMPC`: any optax optimiser on u itself, each step projected back onto the box u_min ≤ u ≤ u_max,
  returning the best iterate (its cost never exceeds the warm start's). `solve_batch` solves many initial states
  at once (vmap).
"""

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

from .._types import Array, ArrayLike, Float, Int, Scalar
from .dynamics import Dynamics

Plan = Float[Array, "horizon m"]


def shift(plan: Float[ArrayLike, "horizon m"]) -> Plan:
    """The warm start for the next control step: (u_1, …, u_{H−1}, u_{H−1}), the plan advanced by one step with
    its last input repeated."""
    plan = jnp.asarray(plan)
    return jnp.concatenate([plan[1:], plan[-1:]])


class ShootingMPC(eqx.Module):
    """Optimise an input sequence u_{0..H−1} by gradient descent through the model's rollout.

        J(u) = Σ_k stage_cost(x_k, u_k) + terminal_cost(x_H),   u_k = u_max · tanh(v_k)   (bounded inputs),

    with Adam on v for `iterations` steps, warm-started from the previous solution shifted by one step. `solve`
    is for one initial state; vmap it over a batch of states (or of random restarts).
    """

    dynamics: Dynamics
    stage_cost: Callable = eqx.field(static=True)
    terminal_cost: Callable = eqx.field(static=True)
    horizon: int = eqx.field(static=True, default=40)
    iterations: int = eqx.field(static=True, default=100)
    learning_rate: float = eqx.field(static=True, default=0.1)
    u_max: float = eqx.field(static=True, default=1.0)

    def cost(self, v, x0, u_past=None):
        us = self.u_max * jnp.tanh(v)
        xs = self.dynamics.rollout(x0, us, u_past=u_past)
        stage = jax.vmap(self.stage_cost)(xs[:-1], us)
        return jnp.sum(stage) + self.terminal_cost(xs[-1])

    def solve(self, x0, v_init, u_past=None):
        """The optimised unconstrained sequence v (H, m) and its cost; apply u_max · tanh(v[0]).

        `u_past` (k, m), newest first: the inputs already applied, for a model with an input history of k.
        """
        opt = optax.adam(self.learning_rate)

        def body(carry, _):
            v, state = carry
            c, g = jax.value_and_grad(self.cost)(v, x0, u_past)
            updates, state = opt.update(g, state, v)
            return (optax.apply_updates(v, updates), state), c

        (v, _), costs = jax.lax.scan(body, (v_init, opt.init(v_init)), None, length=self.iterations)
        return v, self.cost(v, x0, u_past)

    def control(self, x0, v_prev, u_past=None):
        """One receding-horizon step: (u to apply now, the shifted warm start for the next call, the cost)."""
        v, cost = self.solve(x0, v_prev, u_past)
        return self.u_max * jnp.tanh(v[0]), shift(v), cost


class MPCSolution(eqx.Module):
    """A solve of `ProjectedMPC`.

    Attributes:
        us: (H, m) the best plan found, within the bounds; apply us[0].
        cost: J(us).
        costs: (iterations,) J at each iterate before its step (costs[0] is the warm start's, projected);
            an iteration skipped for want of budget repeats the last.
        evaluations: how many times the solve evaluated J (with ∇J), its line searches' included.
    """

    us: Plan
    cost: Scalar
    costs: Float[Array, " iterations"]
    evaluations: Int[Array, ""]


def _line_search_steps(state) -> Int[Array, ""]:
    """The evaluations of J the last update's line search made (0 for an optimiser without one)."""
    try:
        return jnp.asarray(optax.tree.get(state, "num_linesearch_steps"), jnp.int32)
    except (KeyError, ValueError):
        return jnp.zeros((), jnp.int32)


def _stored_value_and_grad(state):
    """`state ↦ (J, ∇J)` at the point a line search in `state` accepted, or None for an optimiser without one."""
    try:
        if optax.tree.get(state, "value") is None or optax.tree.get(state, "grad") is None:
            return None
    except (KeyError, ValueError):
        return None
    return lambda s: (optax.tree.get(s, "value"), optax.tree.get(s, "grad"))


class ProjectedMPC(eqx.Module):
    """Optimise the inputs directly within their bounds by projected first-order steps through the rollout:

        min J(u) = Σ_{k<H} stage_cost(x_k, u_k) + terminal_cost(x_H)   s.t.  u_min ≤ u_k ≤ u_max,
        u ← Π(u + Δ),   Δ = optimiser update from ∇J(u),   Π(u) = clip(u, u_min, u_max),

    for exactly `iterations` steps (one `lax.scan`: the solve time is fixed, whatever the state). Unlike
    `ShootingMPC`'s u = u_max tanh(v), the gradient does not vanish at the bound, so a bang-bang plan (a
    swing-up) is reached and left freely. The returned plan is the cheapest iterate seen, so J never exceeds the
    warm start's (projected first-order steps need not decrease J monotonically).

    `optimiser` is any optax transformation (default Adam at `learning_rate`); one that needs the objective, such as
    `optax.lbfgs()` with its line search, gets `value`, `grad` and `value_fn` as extra arguments; the J and ∇J its
    line search leaves in its state are reused for the next iterate (when the projection does not move it).

    A line search's step count varies. For a bounded solve time bound it too, e.g. `optax.lbfgs(linesearch=
    optax.scale_by_zoom_linesearch(max_linesearch_steps=6))`, and/or give the solve a budget: no iteration starts
    once `max_evaluations` evaluations of J (each one rollout and its gradient) are spent, so a solve makes at
    most max_evaluations + max_linesearch_steps of them whatever the state (under `vmap`, as in `solve_batch`,
    a skipped iteration is computed and discarded: the count is bounded, the batch's time is not). `u_past`
    (k, m), newest first, are the inputs already applied, for a model with an input history of k.
    """

    dynamics: Dynamics
    stage_cost: Callable = eqx.field(static=True)
    terminal_cost: Callable = eqx.field(static=True)
    horizon: int = eqx.field(static=True, default=40)
    iterations: int = eqx.field(static=True, default=20)
    u_min: Float[Array, "*m"] = eqx.field(default=-1.0, converter=jnp.asarray)
    u_max: Float[Array, "*m"] = eqx.field(default=1.0, converter=jnp.asarray)
    learning_rate: float = eqx.field(static=True, default=0.1)
    optimiser: optax.GradientTransformation | None = eqx.field(static=True, default=None)
    max_evaluations: int | None = eqx.field(static=True, default=None)

    def __check_init__(self):
        if self.horizon < 1 or self.iterations < 1:
            raise ValueError(
                f"ProjectedMPC: horizon and iterations must be >= 1, got {self.horizon}, {self.iterations}"
            )
        if self.max_evaluations is not None and self.max_evaluations < 2:
            raise ValueError(
                "ProjectedMPC: max_evaluations must be >= 2 (the warm start's evaluation and one step's), "
                f"got {self.max_evaluations}"
            )
        if not isinstance(self.u_min, jax.core.Tracer) and jnp.any(self.u_min > self.u_max):
            raise ValueError(
                f"ProjectedMPC: u_min must be <= u_max, got u_min={self.u_min}, u_max={self.u_max}"
            )

    def project(self, us: Float[ArrayLike, "horizon m"]) -> Plan:
        """Π(u) = clip(u, u_min, u_max), the nearest plan within the bounds."""
        return optax.projections.projection_box(jnp.asarray(us), self.u_min, self.u_max)

    def cost(self, us: Plan, x0, u_past=None) -> Scalar:
        """J(u) = Σ_k stage_cost(x_k, u_k) + terminal_cost(x_H), x the model's rollout from x0."""
        xs = self.dynamics.rollout(x0, us, u_past=u_past)
        stage = jax.vmap(self.stage_cost)(xs[:-1], us)
        return jnp.sum(stage) + self.terminal_cost(xs[-1])

    def solve(self, x0, us_init: Float[ArrayLike, "horizon m"], u_past=None) -> MPCSolution:
        """The best plan within the bounds after `iterations` projected steps from Π(us_init)."""
        opt = self.optimiser or optax.adam(self.learning_rate)

        def objective(us):
            return self.cost(us, x0, u_past)

        us0 = self.project(us_init)
        state0 = opt.init(us0)
        # A line search (optax.lbfgs's zoom) leaves J and ∇J at the point it accepted in its state: when the
        # projection leaves that point where it is, they are the next iterate's, and need not be computed again.
        stored = _stored_value_and_grad(state0)
        value_and_grad = jax.value_and_grad(objective)

        def iterate(us, state, c, g):
            updates, state = opt.update(g, state, us, value=c, grad=g, value_fn=objective)
            candidate = optax.apply_updates(us, updates)
            new = self.project(candidate)
            spent = _line_search_steps(state)
            if stored is None:
                return new, state, *value_and_grad(new), spent + 1
            value, grad = stored(state)
            reuse = jnp.all(new == candidate) & jnp.isfinite(value)
            c_new, g_new = jax.lax.cond(
                reuse, lambda u: (value.astype(c.dtype), grad), value_and_grad, new
            )
            return new, state, c_new, g_new, spent + jnp.where(reuse, 0, 1)

        def skip(us, state, c, g):
            return us, state, c, g, jnp.zeros((), jnp.int32)

        def body(carry, _):
            us, state, best, best_cost, c, g, used = carry
            # The iterate's cost comes with its gradient: keeping the cheapest costs nothing extra.
            better = c < best_cost
            best = jnp.where(better, us, best)
            best_cost = jnp.where(better, c, best_cost)
            if self.max_evaluations is None:
                us, state, c_new, g, spent = iterate(us, state, c, g)
            else:
                go = used < self.max_evaluations
                us, state, c_new, g, spent = jax.lax.cond(go, iterate, skip, us, state, c, g)
            return (us, state, best, best_cost, c_new, g, used + spent), c

        c0, g0 = value_and_grad(us0)
        init = (us0, state0, us0, jnp.asarray(jnp.inf, c0.dtype), c0, g0, jnp.ones((), jnp.int32))
        (us, _, best, best_cost, c, _, used), costs = jax.lax.scan(
            body, init, None, length=self.iterations
        )
        # The last iterate is scored (its cost came with it) but not yet compared.
        better = c < best_cost
        return MPCSolution(
            jnp.where(better, us, best), jnp.where(better, c, best_cost), costs, used
        )

    def solve_batch(
        self, x0s: Float[ArrayLike, "batch state"], us_init, u_past=None
    ) -> MPCSolution:
        """`solve` for many initial states at once (vmap): us_init (batch, H, m) or one (H, m) for all; u_past
        (batch, k, m), one (k, m) for all, or None. The solution's fields gain a leading batch axis."""
        us_init, x0s = jnp.asarray(us_init), jnp.asarray(x0s)
        plan_axis = 0 if us_init.ndim == 3 else None
        past_axis = None if u_past is None or jnp.ndim(u_past) == 2 else 0
        return jax.vmap(self.solve, in_axes=(0, plan_axis, past_axis))(x0s, us_init, u_past)

    def control(self, x0, us_prev: Float[ArrayLike, "horizon m"], u_past=None):
        """One receding-horizon step: (u_0 to apply now, the shifted plan to warm-start the next call, the
        solution)."""
        sol = self.solve(x0, us_prev, u_past)
        return sol.us[0], shift(sol.us), sol

"""Model-predictive control through the differentiable model: gradient-based shooting with optax.

Two solvers of the same finite-horizon problem, both with a fixed iteration budget (a bounded solve time;
`ProjectedMPC` also a budget of cost evaluations, for line searches) and a warm start from the previous plan
shifted by one step (`shift`):

- `ShootingMPC`: unconstrained Adam on v with u = u_max · tanh(v) (the bound by a change of variables);
- `ProjectedMPC`: any optax optimiser on u itself, each step projected back onto the box u_min ≤ u ≤ u_max,
  returning the best iterate (its cost never exceeds the warm start's). `solve_batch` solves many initial states
  at once (vmap);
- `ConstrainedMPC`: hard state bounds (augmented Lagrangian), input bounds and input rate limits (kept exactly),
  e.g. with the LQR's cost-to-go as its terminal cost (`lqr_terminal_cost`).
"""

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

from .._types import Array, ArrayLike, Float, Int, Scalar
from .dynamics import Dynamics, linearise
from .lqr import dlqr

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


class ConstrainedSolution(eqx.Module):
    """A solve of `ConstrainedMPC`.

    Attributes:
        us: (H, m) the plan, within the input box and the rate limits; apply us[0].
        multipliers: (H, 2 · 2n) the state bounds' multipliers λ (the upper bounds' 2n, then the lower
            bounds'), to warm-start the next solve (shifted).
        cost: J(us) without the constraint terms.
        violation: max over the horizon of how far the predicted states leave their bounds (0 when feasible).
    """

    us: Plan
    multipliers: Float[Array, "horizon bounds"]
    cost: Scalar
    violation: Scalar


class ConstrainedMPC(eqx.Module):
    """MPC with hard state bounds, input bounds and input rate limits, through the model's rollout:

        min J(u) = Σ_{k<H} l(x_k, u_k) + V_f(x_H)
        s.t. x_min ≤ x_k ≤ x_max (k = 1 … H),  u_min ≤ u_k ≤ u_max,  |u_k − u_{k−1}| ≤ du_max  (u_{−1} given).

    The inputs' constraints are kept exactly: after every step the plan is mapped back forward in time,
    u_k ← clip(u_k, max(u_min, u_{k−1} − du_max), min(u_max, u_{k−1} + du_max)), a feasible plan by construction
    (not the Euclidean projection onto the chained set, which has no closed form, but the same where only the box
    binds). The state bounds are handled by an augmented Lagrangian: g(u) = (x_{1..H} − x_max, x_min − x_{1..H}),

        L_ρ(u, λ) = J(u) + (1 / 2ρ) Σ (max(0, λ + ρ g)² − λ²),   λ ← max(0, λ + ρ g(u)) after each round,

    with `rounds` rounds of `iterations` projected Adam steps. Why not the alternatives: the states of single
    shooting are functions of u, so they cannot be projected; a log barrier needs a strictly feasible plan to start
    from, which a disturbance or a model error can take away between two samples; a fixed quadratic penalty
    allows a violation that shrinks only as its weight grows without bound (and the problem's conditioning with
    it). The augmented Lagrangian starts from infeasible plans, reaches the bound with a finite ρ, and its
    multipliers, shifted, warm-start the next sample's solve. The solve's work is fixed: rounds × iterations.
    """

    dynamics: Dynamics
    stage_cost: Callable = eqx.field(static=True)
    terminal_cost: Callable = eqx.field(static=True)
    horizon: int = eqx.field(static=True, default=30)
    iterations: int = eqx.field(static=True, default=15)
    rounds: int = eqx.field(static=True, default=3)
    u_min: Float[Array, "*m"] = eqx.field(default=-1.0, converter=jnp.asarray)
    u_max: Float[Array, "*m"] = eqx.field(default=1.0, converter=jnp.asarray)
    du_max: Float[Array, "*m"] = eqx.field(default=jnp.inf, converter=jnp.asarray)
    x_min: Float[Array, "*state"] = eqx.field(default=-jnp.inf, converter=jnp.asarray)
    x_max: Float[Array, "*state"] = eqx.field(default=jnp.inf, converter=jnp.asarray)
    penalty: float = eqx.field(static=True, default=100.0)
    penalty_growth: float = eqx.field(static=True, default=4.0)
    learning_rate: float = eqx.field(static=True, default=0.3)

    def __check_init__(self):
        if self.horizon < 1 or self.iterations < 1 or self.rounds < 1:
            raise ValueError(
                "ConstrainedMPC: horizon, iterations and rounds must be >= 1, got "
                f"{self.horizon}, {self.iterations}, {self.rounds}"
            )
        if self.penalty <= 0 or self.penalty_growth < 1:
            raise ValueError(
                f"ConstrainedMPC: penalty must be > 0 and penalty_growth >= 1, got {self.penalty}, "
                f"{self.penalty_growth}"
            )
        arrays = (self.u_min, self.u_max, self.du_max, self.x_min, self.x_max)
        if not any(isinstance(a, jax.core.Tracer) for a in arrays):
            if jnp.any(self.u_min > self.u_max) or jnp.any(self.x_min > self.x_max):
                raise ValueError(
                    "ConstrainedMPC: need u_min <= u_max and x_min <= x_max, got "
                    f"u: [{self.u_min}, {self.u_max}], x: [{self.x_min}, {self.x_max}]"
                )
            if jnp.any(self.du_max <= 0):
                raise ValueError(f"ConstrainedMPC: du_max must be > 0, got {self.du_max}")

    def feasible(self, us: Float[ArrayLike, "horizon m"], u_prev: Float[ArrayLike, " m"]) -> Plan:
        """The plan mapped into the input box and the rate limits from u_{−1} = `u_prev`, forward in time."""
        u_prev = jnp.clip(jnp.asarray(u_prev), self.u_min, self.u_max)

        def clip(prev, u):
            lo = jnp.maximum(self.u_min, prev - self.du_max)
            hi = jnp.minimum(self.u_max, prev + self.du_max)
            u = jnp.clip(u, lo, hi)
            return u, u

        return jax.lax.scan(clip, u_prev, jnp.asarray(us))[1]

    def bounds_residual(self, xs: Float[Array, "states state"]) -> Float[Array, "horizon bounds"]:
        """g = (x_k − x_max, x_min − x_k) for k = 1 … H, (H, 2 · 2n); g ≤ 0 is feasible (infinite bounds: −inf
        replaced by a large negative number, so the Lagrangian's max(0, ·) stays finite)."""
        g = jnp.concatenate([xs[1:] - self.x_max, self.x_min - xs[1:]], axis=-1)
        return jnp.maximum(g, -1e6)

    def objective(self, us: Plan, x0, u_past=None) -> tuple[Scalar, Float[Array, "horizon bounds"]]:
        """(J(u), g(u)): the cost and the state bounds' residuals of a plan."""
        xs = self.dynamics.rollout(x0, us, u_past=u_past)
        stage = jax.vmap(self.stage_cost)(xs[:-1], us)
        return jnp.sum(stage) + self.terminal_cost(xs[-1]), self.bounds_residual(xs)

    def solve(
        self, x0, us_init: Float[ArrayLike, "horizon m"], u_prev, multipliers=None, u_past=None
    ) -> ConstrainedSolution:
        """`rounds` × `iterations` projected Adam steps on L_ρ, the multipliers updated after each round."""
        opt = optax.adam(self.learning_rate)
        us0 = self.feasible(us_init, u_prev)
        x0 = jnp.asarray(x0)
        lam0 = (
            jnp.zeros((self.horizon, 2 * x0.shape[0]), us0.dtype)
            if multipliers is None
            else jnp.asarray(multipliers, us0.dtype)
        )

        def lagrangian(us, lam, rho):
            cost, g = self.objective(us, x0, u_past)
            return cost + jnp.sum(jnp.maximum(0.0, lam + rho * g) ** 2 - lam**2) / (2 * rho)

        def round_(carry, _):
            us, lam, rho = carry

            def step(inner, _):
                us, state = inner
                grad = jax.grad(lagrangian)(us, lam, rho)
                updates, state = opt.update(grad, state, us)
                return (self.feasible(optax.apply_updates(us, updates), u_prev), state), None

            (us, _), _ = jax.lax.scan(step, (us, opt.init(us)), None, length=self.iterations)
            _, g = self.objective(us, x0, u_past)
            lam = jnp.maximum(0.0, lam + rho * g)
            return (us, lam, rho * self.penalty_growth), None

        rho0 = jnp.asarray(self.penalty, us0.dtype)
        (us, lam, _), _ = jax.lax.scan(round_, (us0, lam0, rho0), None, length=self.rounds)
        cost, g = self.objective(us, x0, u_past)
        return ConstrainedSolution(us, lam, cost, jnp.maximum(jnp.max(g), 0.0))

    def control(self, x0, us_prev, u_prev, multipliers=None, u_past=None):
        """One receding-horizon step: (u_0, the shifted plan and multipliers for the next call, the solution)."""
        sol = self.solve(x0, us_prev, u_prev, multipliers, u_past)
        return sol.us[0], shift(sol.us), shift(sol.multipliers), sol


def lqr_terminal_cost(
    dynamics: Dynamics,
    x_target: Float[ArrayLike, " state"],
    u_target: Float[ArrayLike, " m"],
    q: Float[ArrayLike, "state state"],
    r: Float[ArrayLike, "m m"],
    *,
    dt: float | None = None,
):
    """V_f(x) = δxᵀ P δx with P the discrete Riccati solution of the model's linearisation at the target:

        (A_d, B_d) = ∂step/∂(x, u) at (x*, u*),   P = A_dᵀPA_d − A_dᵀPB_d (R + B_dᵀPB_d)⁻¹B_dᵀPA_d + Q,

    the cost-to-go of the LQR (its gain K also returned) from x near x*: with it a short horizon behaves like an
    infinite one near the target. δx = x − x* with the system's angle coordinates wrapped to [−π, π).
    Returns (V_f, P, K).
    """
    x_target, u_target = jnp.asarray(x_target), jnp.asarray(u_target)

    def step(x, u):
        return dynamics.step(x, u, dt)

    a, b = linearise(step, x_target, u_target)
    k, p = dlqr(a, b, q, r)
    n = dynamics.n_dof
    angles = jnp.concatenate([jnp.asarray(dynamics.system.angles, bool), jnp.zeros(n, bool)])
    p_arr = jnp.asarray(p, x_target.dtype)

    def terminal_cost(x):
        d = x - x_target
        d = jnp.where(angles, jnp.mod(d + jnp.pi, 2 * jnp.pi) - jnp.pi, d)
        return d @ p_arr @ d

    return terminal_cost, p, k

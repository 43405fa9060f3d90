"""Leapfrog / Störmer–Verlet: kick, drift, kick."""

import equinox as eqx

from .base import (
    AbstractImplicitIntegrator,
    AbstractRootFinder,
    explicit_info,
    zero_order_hold_acceleration,
)
from .newton import Newton


class Leapfrog(AbstractImplicitIntegrator):
    """Störmer–Verlet (velocity Verlet), half kick, drift, half kick:

        q̇_{k+½} = q̇_k + h/2 a_k,   q_{k+1} = q_k + h q̇_{k+½},   q̇_{k+1} = q̇_{k+½} + h/2 a_{k+1},

    with a_k = a(q_k, q̇_k, u_k). Order 2, symmetric, symplectic for q-only forces; eliminating q̇ gives the
    central difference q_{k+1} − 2q_k + q_{k−1} = h² a(q_k), i.e. Newmark(0, ½). Stable for ωh < 2; the
    numerical frequency satisfies sin(ω̃h/2) = ωh/2 (plays sharp).

    q-only forces (`model.velocity_dependent` False): explicit, because a_{k+1} is carried to the next step's
    first half kick. Unforced (u = None), that is one acceleration per step. Under a zero-order hold the carried
    value is only valid while the input is unchanged, so a forced step also evaluates a(q_k, u_k) and selects
    (`jnp.where`; a `lax.cond` would skip it only unbatched and is much slower under `vmap`).

    Velocity-dependent forces (friction, Coriolis terms, a learned Q(q, q̇, u)):
    - `implicit_kick=True` (default): the last half kick q̇_{k+1} = q̇_{k+½} + h/2 a(q_{k+1}, q̇_{k+1}, u_k) is
      solved for a_{k+1} by the `root_finder` (default `Newton()`; J = I − h/2 ∂a/∂q̇, by autodiff). The map stays
      symmetric (time reversible) and of order 2, at the price of an n×n solve per iteration; convergence is
      reported in `StepInfo.converged`.
    - `implicit_kick=False`: the velocity in the last kick is predicted, q̇* = q̇_k + h a_k (an O(h²) error in
      q̇ that costs only O(h³) in the step). Explicit, one acceleration per step, still order 2, but neither
      symmetric nor symplectic.
    """

    implicit_kick: bool = eqx.field(static=True, default=True)
    root_finder: AbstractRootFinder = Newton()

    def init(self, model, q, qd, u):
        return model.acceleration(q, qd, u).astype(q.dtype), u

    def step(self, model, q, qd, u, dt, state):
        a_prev, u_prev = state
        a0 = zero_order_hold_acceleration(model, q, qd, u, a_prev, u_prev)
        half = 0.5 * dt
        qd_half = qd + half * a0
        q1 = q + dt * qd_half
        if not model.velocity_dependent:
            a1 = model.acceleration(q1, qd_half, u).astype(q.dtype)
            info = explicit_info(q.dtype)
        elif not self.implicit_kick:
            a1 = model.acceleration(q1, qd + dt * a0, u).astype(q.dtype)
            info = explicit_info(q.dtype)
        else:

            def residual(a1):
                return a1 - model.acceleration(q1, qd_half + half * a1, u)

            a1, info = self.root_finder.solve(residual, a0)
        return q1, qd_half + half * a1, (a1, u), info

    # The method's properties (see AbstractIntegrator), constant for this class.
    order = 2
    explicit = True
    symplectic = True
    symmetric = True

"""The Newmark β-γ family."""

import equinox as eqx

from .base import (
    AbstractImplicitIntegrator,
    AbstractRootFinder,
    explicit_info,
    zero_order_hold_acceleration,
)
from .newton import Newton


class Newmark(AbstractImplicitIntegrator):
    """Newmark's method: blend the accelerations at both ends of the step,

        q_{k+1} = q_k + h q̇_k + h² [(½ − β) a_k + β a_{k+1}],
        q̇_{k+1} = q̇_k + h [(1 − γ) a_k + γ a_{k+1}],      a_{k+1} = a(q_{k+1}, q̇_{k+1}, u_k).

    | (β, γ)         | name                              | stability                 |
    | (0, ½)         | central difference (= leapfrog)   | ωh < 2                    |
    | (¼, ½)         | average acceleration (trapezoid)  | any h, keeps the amplitude |
    | (β, γ > ½)     | damped                            | any h if 2β ≥ γ ≥ ½       |

    Order 2 for γ = ½, else 1; symmetric (time reversible) exactly when γ = ½. On linear systems every γ = ½
    member preserves phase-space area (determinant 1); for nonlinear forces the central difference β = 0 is
    canonically symplectic, and β > 0 preserves a nearby non-canonical symplectic form (Kane, Marsden, Ortiz &
    West 2000), which is why its energy error stays bounded too. Average acceleration plays flat:
    tan(ω̃h/2) = ωh/2.

    The step solves for the new acceleration: with the predictors q* = q_k + h q̇_k + (½ − β) h² a_k and
    q̇* = q̇_k + (1 − γ) h a_k,

        a_{k+1} = a(q* + β h² a_{k+1}, q̇* + γ h a_{k+1}, u_k),

    by the `root_finder` (default `Newton()`) from a_k (J = I − βh² ∂a/∂q − γh ∂a/∂q̇ by autodiff; convergence in
    `StepInfo.converged`). It is explicit (one acceleration per step, a_{k+1} carried to the next step) when
    β = 0 and the force depends on q only. Velocity-dependent forces (friction, Coriolis terms, a learned
    Q(q, q̇, u)) enter the same Newton solve (also for β = 0 unless γ = 0): order, symmetry and stability are
    those of the method on the full equation, at the cost of an n×n solve per iteration.

    Under a zero-order hold, a_k carried from the previous step was computed with u_{k−1}; a forced step also
    evaluates a(q_k, q̇_k, u_k) and uses it where the input changed.
    """

    beta: float = eqx.field(static=True, default=0.25)
    gamma: float = eqx.field(static=True, default=0.5)
    root_finder: AbstractRootFinder = Newton()

    def __check_init__(self):
        if not self.beta >= 0:
            raise ValueError(f"Newmark.beta must be >= 0, got {self.beta}")
        if not self.gamma >= 0:
            raise ValueError(f"Newmark.gamma must be >= 0, got {self.gamma}")

    def init(self, model, q, qd, u):
        return model.acceleration(q, qd, u).astype(q.dtype), u

    def step(self, model, q, qd, u, dt, state):
        a_prev, u_prev = state
        a0 = zero_order_hold_acceleration(model, q, qd, u, a_prev, u_prev)
        bh2 = self.beta * dt**2
        gh = self.gamma * dt
        q_pred = q + dt * qd + (0.5 - self.beta) * dt**2 * a0
        qd_pred = qd + (1 - self.gamma) * dt * a0
        vd = model.velocity_dependent
        if self.beta == 0 and (not vd or self.gamma == 0):
            a1 = model.acceleration(q_pred, qd_pred, u).astype(q.dtype)
            info = explicit_info(q.dtype)
        else:

            def residual(a1):
                return a1 - model.acceleration(q_pred + bh2 * a1, qd_pred + gh * a1, u)

            a1, info = self.root_finder.solve(residual, a0)
        return q_pred + bh2 * a1, qd_pred + gh * a1, (a1, u), info

    @property
    def order(self) -> int:
        return 2 if self.gamma == 0.5 else 1

    @property
    def explicit(self) -> bool:
        return self.beta == 0

    @property
    def symplectic(self) -> bool:
        # Canonically symplectic for β = 0; β > 0 with γ = ½ preserves a non-canonical form (see docstring).
        return self.gamma == 0.5

    @property
    def symmetric(self) -> bool:
        return self.gamma == 0.5

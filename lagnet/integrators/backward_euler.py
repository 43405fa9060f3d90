"""Backward (implicit) Euler."""

import equinox as eqx

from ._newton import newton
from .base import AbstractIntegrator, StepInfo


class BackwardEuler(AbstractIntegrator):
    """q_{k+1} = q_k + h q̇_{k+1},   q̇_{k+1} = q̇_k + h a(q_{k+1}, q̇_{k+1}, u_k).

    Solved for the new acceleration a_{k+1} (q̇_{k+1} = q̇_k + h a_{k+1}, q_{k+1} = q_k + h q̇_k + h² a_{k+1})
    by `newton_iterations` Newton steps, J = I − h² ∂a/∂q − h ∂a/∂q̇ by autodiff, warm-started from the last
    step's acceleration (the carried state); convergence in `StepInfo.converged`. Order 1, L-stable, strongly
    damping: on q̈ = −ω²q each step multiplies phase-space area by 1/(1 + ω²h²). Velocity-dependent forces are
    implicit like the rest, with no change in order or cost.
    """

    newton_iterations: int = eqx.field(static=True, default=8)
    rtol: float | None = eqx.field(static=True, default=None)
    atol: float | None = eqx.field(static=True, default=None)

    def __check_init__(self):
        if self.newton_iterations < 1:
            raise ValueError(
                f"BackwardEuler.newton_iterations must be >= 1, got {self.newton_iterations}"
            )

    def init(self, model, q, qd, u):
        return model.acceleration(q, qd, u).astype(q.dtype)

    def step(self, model, q, qd, u, dt, state):
        q_pred = q + dt * qd

        def residual(a1):
            return a1 - model.acceleration(q_pred + dt**2 * a1, qd + dt * a1, u)

        a1, converged, error = newton(
            residual, state, iterations=self.newton_iterations, rtol=self.rtol, atol=self.atol
        )
        return q_pred + dt**2 * a1, qd + dt * a1, a1, StepInfo(converged=converged, error=error)

    # The method's properties (see AbstractIntegrator), constant for this class.
    order = 1
    explicit = False
    symplectic = False
    symmetric = False

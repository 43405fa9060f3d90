"""Backward Euler with one Newton step and a matrix-free conjugate-gradient solve (Baraff–Witkin cloth)."""

import equinox as eqx
import jax.numpy as jnp
import lineax as lx

from ..systems.springs import AbstractSpringNetwork
from .base import AbstractIntegrator, StepInfo


class LinearlyImplicitEuler(AbstractIntegrator):
    """Backward Euler linearised once about the current state (one Newton step), solved by CG:

        (M + h c I + h² K̃) Δv = h (f(x, v) − h K̃ v),   v⁺ = v + Δv,   x⁺ = x + h v⁺,

    with f the total force (springs, gravity, drag −c v), K̃ the SPD part of the stiffness −∂f/∂x and M = m I
    (the lecture's (M − h² ∂f/∂x) Δv = h (f + h ∂f/∂x v), drag included). The matrix is symmetric positive
    definite and applied matrix-free in O(springs), so CG (lineax) solves it without assembling anything.

    The model must be an `AbstractSpringNetwork` (`mass`, `drag`, `generalised_force(q, qd)`,
    `stiffness_matvec(q, p)`), as `lagnet.systems.Cloth` is. Order 1; strongly damping, stable at steps far beyond
    the explicit limit. A CG failure is reported in `StepInfo.converged` (and by `lagnet.rollout`'s `throw`);
    `StepInfo.error` is the max-norm of the linear residual.
    """

    rtol: float = eqx.field(static=True, default=1e-8)
    atol: float = eqx.field(static=True, default=1e-12)
    max_steps: int = eqx.field(static=True, default=200)

    def __check_init__(self):
        if self.max_steps < 1:
            raise ValueError(f"LinearlyImplicitEuler.max_steps must be >= 1, got {self.max_steps}")

    def init(self, model, q, qd, u):
        if not isinstance(model, AbstractSpringNetwork):
            raise TypeError(
                f"LinearlyImplicitEuler needs an AbstractSpringNetwork (`mass`, `drag`, `generalised_force`, "
                f"`stiffness_matvec`), got {type(model).__name__}"
            )
        return None

    def step(self, model, q, qd, u, dt, state):
        diagonal = model.mass + dt * model.drag

        def matvec(p):
            return diagonal * p + dt**2 * model.stiffness_matvec(q, p)

        operator = lx.FunctionLinearOperator(
            matvec, jnp.zeros_like(qd), tags=(lx.symmetric_tag, lx.positive_semidefinite_tag)
        )
        rhs = dt * (model.generalised_force(q, qd) - dt * model.stiffness_matvec(q, qd))
        solver = lx.CG(rtol=self.rtol, atol=self.atol, max_steps=self.max_steps)
        sol = lx.linear_solve(operator, rhs, solver, throw=False)
        qd1 = qd + sol.value
        converged = (sol.result == lx.RESULTS.successful) & jnp.all(jnp.isfinite(qd1))
        residual = jnp.max(jnp.abs(matvec(sol.value) - rhs))
        info = StepInfo(converged=converged, error=residual.astype(q.dtype))
        return q + dt * qd1, qd1, None, info

    # The method's properties (see AbstractIntegrator), constant for this class.
    order = 1
    explicit = False
    symplectic = False
    symmetric = False

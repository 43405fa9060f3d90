"""The centred implicit scheme for velocity-dependent forces, with a warm-started Newton solve per step.

Its Newton loop is its own, not the `AbstractRootFinder` of the other implicit methods: it reports the iteration
count (`NewtonSolution.iterations`, to show what the warm start saves) and differentiates through its iterations.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from .._types import Q, QDot, RealScalar, U
from .base import AbstractIntegrator, StepInfo


class NewtonSolution(eqx.Module):
    """The centred velocity v solving g(v) = 0, the Newton iterations it took, and its status."""

    v: Float[Array, " n"]
    iterations: Int[Array, ""]
    converged: Array
    error: Float[Array, ""]


class CentredImplicit(AbstractIntegrator):
    """δ_tt q^n = a(q^n, δ_t· q^n, u_n): positions explicit, the velocity-dependent force at the centred velocity.

    The lecture's bowed-string scheme δ_tt u = −ω0² u − F_B φ(δ_t· u − v_B), for any model. The carried velocity
    is the backward difference q̇^n = δ_t− q^n = (q^n − q^{n−1})/k, so (q, q̇) determines (q^n, q^{n−1}). Each step
    solves for the centred velocity v = δ_t· q^n = (q^{n+1} − q^{n−1})/2k,

        g(v) = 2 (v − q̇^n)/k − a(q^n, v, u_n) = 0,

    by Newton (J = 2I/k − ∂a/∂q̇ by autodiff), warm-started from the previous step's v (the carried state), stopping
    once |Δv| ≤ atol + rtol |v| or after `max_iterations`; then q^{n+1} = q^n + k(2v − q̇^n), q̇^{n+1} = 2v − q̇^n.

    For the bow, g is strictly increasing, so the solution is unique, when k ≤ 2/(F_B max(−φ')) (see
    `BowedOscillator.max_step`), and with v_rel = v − v_B the energy 𝔥 = ½(δ_t+ u)² + ½ω0² u^n u^{n+1} balances
    exactly: 𝔥^{n+½} − 𝔥^{n−½} = −k F_B φ(v_rel)(v_rel + v_B) — passive friction only dissipates.

    For q-only forces the step is explicit and equals symplectic Euler in (q, δ_t− q), i.e. the central
    difference (Störmer–Verlet) for q: order 2, symplectic. The Newton loop has a static bound and freezes once
    converged, so the step is reverse-mode differentiable (for training through the scheme).
    """

    max_iterations: int = eqx.field(static=True, default=20)
    rtol: float = eqx.field(static=True, default=1e-12)
    atol: float = eqx.field(static=True, default=1e-12)
    warm_start: bool = eqx.field(static=True, default=True)

    def __check_init__(self):
        if self.max_iterations < 1:
            raise ValueError(
                f"CentredImplicit.max_iterations must be >= 1, got {self.max_iterations}"
            )
        if not (self.rtol >= 0 and self.atol >= 0):
            raise ValueError(
                f"CentredImplicit tolerances must be >= 0, got rtol={self.rtol}, atol={self.atol}"
            )

    def init(self, model, q, qd, u):
        return qd

    def solve(self, model, q: Q, qd: QDot, u: U | None, dt: RealScalar, v0: QDot) -> NewtonSolution:
        """Newton on g(v) = 2 (v − q̇)/k − a(q, v, u) from v0."""

        def g(v):
            r = 2.0 * (v - qd) / dt - model.acceleration(q, v, u)
            return r, r

        def body(_, carry):
            v, dv, iterations, done = carry
            jac, r = jax.jacfwd(g, has_aux=True)(v)
            step = jnp.linalg.solve(jac, r).astype(v.dtype)
            step = jnp.where(done, jnp.zeros_like(step), step)
            v1 = v - step
            small = jnp.all(jnp.abs(step) <= self.atol + self.rtol * jnp.abs(v1))
            iterations = iterations + jnp.where(done, 0, 1)
            return v1, jnp.where(done, dv, step), iterations, done | small

        init = (v0, jnp.zeros_like(v0), jnp.zeros((), jnp.int32), jnp.array(False))
        v, dv, iterations, done = jax.lax.fori_loop(0, self.max_iterations, body, init)
        finite = jnp.all(jnp.isfinite(v))
        error = jnp.where(finite, jnp.max(jnp.abs(dv), initial=0.0), jnp.inf).astype(v.dtype)
        return NewtonSolution(v=v, iterations=iterations, converged=done & finite, error=error)

    def step(self, model, q, qd, u, dt, state):
        v0 = state if self.warm_start else qd
        sol = self.solve(model, q, qd, u, dt, v0.astype(qd.dtype))
        qd1 = 2.0 * sol.v - qd
        return q + dt * qd1, qd1, sol.v, StepInfo(converged=sol.converged, error=sol.error)

    # The method's properties (see AbstractIntegrator), constant for this class.
    order = 2
    explicit = False
    symplectic = True
    symmetric = False


def centred_velocities(qds: Float[Array, "states n"]) -> Float[Array, "states-1 n"]:
    """δ_t· q^n = (δ_t− q^n + δ_t− q^{n+1})/2 from a `CentredImplicit` rollout's carried velocities."""
    return 0.5 * (qds[:-1] + qds[1:])

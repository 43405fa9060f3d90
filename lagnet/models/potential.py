"""A learned potential V_θ(q) with known or learned inertia, and optional passive learned dissipation."""

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl

from .._types import Q, QDDot, QDot, U
from ..systems.base import AbstractLagrangianDynamics, AbstractSystem
from .base import AbstractModel, frozen_known_parts, output_scale_summary
from .features import StateFeatures
from .pinode import PINODE


class LearnedPotential(AbstractModel, AbstractLagrangianDynamics):
    """M(q) q̈ + C(q, q̇) q̇ + ∂V_θ/∂q = B(q) u − ∂D_θ/∂q̇.

    - V_θ(q) = `potential(φ(q))` is an MLP with a scalar output; forces by autodiff.
    - Inertia: the known system's M(q) (and its C), or when `learn_mass` a constant SPD matrix L Lᵀ with L lower
      triangular, diagonal kept positive.
    - Dissipation (optional): Rayleigh D_θ = ½ q̇ᵀ R(q) R(q)ᵀ q̇ with R(q) from an MLP, so the dissipated power
      q̇ᵀ ∂D/∂q̇ = |Rᵀ q̇|² ≥ 0: without input the learned energy T + V_θ can never grow.
    """

    system: AbstractSystem
    potential: eqx.Module
    features: StateFeatures
    mass_factor: jax.Array | None
    dissipation: eqx.Module | None
    input_history = 0
    input_limit = None

    def trainable(self):
        return frozen_known_parts(self)

    def physics_prior(self) -> None:
        return None

    def with_physics_trainable(self, trainable: bool) -> "LearnedPotential":
        return self

    def with_physics_from(self, source: AbstractModel) -> "LearnedPotential":
        raise ValueError(
            "a LearnedPotential has no physics to start; a PINODE (pinode, pure_ode) has"
        )

    def known_mechanics(self, input_history: int | None = None) -> PINODE:
        return PINODE(self.system, input_history=0 if input_history is None else input_history)

    def learned_parts(self) -> tuple[str, ...]:
        return ("potential",) + (("force",) if self.dissipation is not None else ())

    def learned_force(self, q: Q, qd: QDot, u: U) -> QDot:
        return self.dissipation_force(q, qd)

    def summary(self) -> dict:
        return output_scale_summary(self)

    def potential_energy(self, q: Q):
        return self.learned_potential(q)

    def mass_matrix(self, q):
        if self.mass_factor is None:
            return self.system.mass_matrix(q)
        lower = jnp.tril(self.mass_factor, -1) + jnp.diag(jnp.exp(jnp.diag(self.mass_factor)))
        return lower @ lower.T

    def learned_potential(self, q: Q):
        u0 = jnp.zeros(self.features.u_scale.shape, q.dtype)
        return self.potential(self.features(q, jnp.zeros_like(q), u0))[0]

    def dissipation_factor(self, q: Q):
        n = q.shape[0]
        u0 = jnp.zeros(self.features.u_scale.shape, q.dtype)
        return self.dissipation(self.features(q, jnp.zeros_like(q), u0)).reshape(n, n)

    def dissipation_force(self, q: Q, qd: QDot) -> QDot:
        """−∂D/∂q̇ = −R Rᵀ q̇."""
        if self.dissipation is None:
            return jnp.zeros_like(qd)
        r = self.dissipation_factor(q)
        return -r @ (r.T @ qd)

    @property
    def velocity_dependent(self) -> bool:
        known = self.mass_factor is None and self.system.velocity_dependent
        return known or self.dissipation is not None

    def acceleration(self, q: Q, qd: QDot, u: U | None = None) -> QDDot:
        u = self.history.read(u, q.dtype)
        force = -jax.grad(self.learned_potential)(q) + self.dissipation_force(q, qd)
        if self.system.n_inputs > 0:
            force = force + self.system.input_matrix(q) @ u[: self.system.n_inputs]
        if self.mass_factor is None:
            force = force - self.system.coriolis(q, qd) @ qd
            return self.system.solve_mass(q, force)
        return jsl.cho_solve(jsl.cho_factor(self.mass_matrix(q), lower=True), force)

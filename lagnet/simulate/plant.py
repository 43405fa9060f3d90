"""A rig's "true plant": a known system plus the forces it leaves out."""

import equinox as eqx
import jax.scipy.linalg as jsl

from .._types import Q, QDDot, QDot, U
from ..systems.base import AbstractLagrangianDynamics, AbstractSystem


class Plant(AbstractLagrangianDynamics):
    """q̈ = M(q)⁻¹ (B u + Σ_j Q_j(q, q̇) − C q̇ − G): `system` with the extra generalised forces `forces`.

    Dynamics with the system's Lagrangian and nothing learned; the forces depend on q̇, so `velocity_dependent`
    is True and integrators must not assume otherwise.
    """

    system: AbstractSystem
    forces: tuple[eqx.Module, ...]
    velocity_dependent = True

    @property
    def n_dof(self) -> int:
        return self.system.n_dof

    @property
    def n_inputs(self) -> int:
        return self.system.n_inputs

    def mass_matrix(self, q: Q):
        return self.system.mass_matrix(q)

    def potential_energy(self, q: Q):
        return self.system.potential_energy(q)

    def unmodelled_force(self, q: Q, qd: QDot) -> QDot:
        """Σ_j Q_j(q, q̇): everything the known system does not have."""
        total = 0.0 * qd
        for force in self.forces:
            total = total + force(q, qd)
        return total

    def acceleration(self, q: Q, qd: QDot, u: U | None = None) -> QDDot:
        # Always by Cholesky, not the systems' small-n closed form: the generator's arithmetic is pinned to
        # the one that wrote the shipped recordings, so `lagnet data verify` regenerates them bit for bit.
        force = self.system.generalised_force(q, qd, u, self.unmodelled_force(q, qd))
        return jsl.cho_solve(jsl.cho_factor(self.system.mass_matrix(q), lower=True), force)

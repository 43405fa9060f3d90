"""Symplectic Euler: kick, then drift."""

from .base import AbstractIntegrator, explicit_info


class SymplecticEuler(AbstractIntegrator):
    """q̇_{k+1} = q̇_k + h a(q_k, q̇_k, u_k),   q_{k+1} = q_k + h q̇_{k+1}.

    One acceleration per step; order 1. For q-only forces the map is symplectic (area-preserving, determinant 1
    on q̈ = −ω²q), so the energy error stays bounded, but it is not symmetric: stepping back with −h does not
    return. Velocity-dependent forces (friction, Coriolis terms, a learned Q(q, q̇, u)) are evaluated at the old
    velocity, which keeps the step explicit and of order 1; with Coriolis terms the map is then no longer exactly
    symplectic (that would need an implicit kick).
    """

    def init(self, model, q, qd, u):
        return None

    def step(self, model, q, qd, u, dt, state):
        qd1 = qd + dt * model.acceleration(q, qd, u)
        return q + dt * qd1, qd1, None, explicit_info(q.dtype)

    # The method's properties (see AbstractIntegrator), constant for this class.
    order = 1
    explicit = True
    symplectic = True
    symmetric = False

"""Forward (explicit) Euler on the first-order form."""

from .base import AbstractIntegrator, explicit_info


class ForwardEuler(AbstractIntegrator):
    """q_{k+1} = q_k + h q̇_k,   q̇_{k+1} = q̇_k + h a(q_k, q̇_k, u_k).

    One acceleration per step; order 1. Velocity-dependent forces are evaluated at the old velocity, like
    everything else, at no extra cost. Not symplectic: on q̈ = −ω²q each step multiplies phase-space area by
    1 + ω²h², so the energy grows.
    """

    def init(self, model, q, qd, u):
        return None

    def step(self, model, q, qd, u, dt, state):
        a = model.acceleration(q, qd, u)
        return q + dt * qd, qd + dt * a, None, explicit_info(q.dtype)

    # The method's properties (see AbstractIntegrator), constant for this class.
    order = 1
    explicit = True
    symplectic = False
    symmetric = False

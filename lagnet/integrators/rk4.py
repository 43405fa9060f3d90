"""The classical fourth-order Runge–Kutta method on the first-order form."""

from .base import AbstractIntegrator, explicit_info


class RK4(AbstractIntegrator):
    """Classical RK4 on y = (q, q̇), y' = F(y) = (q̇, a(q, q̇, u)) with u held over the step:

        k1 = F(y),  k2 = F(y + h/2 k1),  k3 = F(y + h/2 k2),  k4 = F(y + h k3),
        y_{k+1} = y_k + h/6 (k1 + 2 k2 + 2 k3 + k4).

    Four accelerations per step; order 4. Velocity-dependent forces need nothing special (the first-order form
    treats q and q̇ alike). Neither symplectic nor symmetric: on q̈ = −ω²q the area factor per step is
    1 − (ωh)⁶/72 + (ωh)⁸/576 < 1, so over thousands of periods the energy drifts down.
    """

    def init(self, model, q, qd, u):
        return None

    def step(self, model, q, qd, u, dt, state):
        half = 0.5 * dt
        a1 = model.acceleration(q, qd, u)
        v2 = qd + half * a1
        a2 = model.acceleration(q + half * qd, v2, u)
        v3 = qd + half * a2
        a3 = model.acceleration(q + half * v2, v3, u)
        v4 = qd + dt * a3
        a4 = model.acceleration(q + dt * v3, v4, u)
        sixth = dt / 6
        q1 = q + sixth * (qd + 2 * v2 + 2 * v3 + v4)
        qd1 = qd + sixth * (a1 + 2 * a2 + 2 * a3 + a4)
        return q1, qd1, None, explicit_info(q.dtype)

    # The method's properties (see AbstractIntegrator), constant for this class.
    order = 4
    explicit = True
    symplectic = False
    symmetric = False

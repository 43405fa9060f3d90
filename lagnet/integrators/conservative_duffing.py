"""The lecture's energy-conserving scheme for the Duffing oscillator (the cubic term as u² μ_t· u)."""

from .._types import Array, Float
from ..systems.duffing import Duffing
from .base import AbstractIntegrator, explicit_info


class ConservativeDuffing(AbstractIntegrator):
    """δ_tt u = −ω0² u − ω1⁴ u² μ_t· u + f for `Duffing` (μ_t· u = (u^{n+1} + u^{n−1})/2), which stays explicit:

        u^{n+1} = ((2 − ω0²h²) u^n + h² f) / (1 + ω1⁴h²(u^n)²/2) − u^{n−1},

    on the state (q, q̇) = (u^n, δ_t− u^n), so u^{n−1} = q − h q̇. Explicit, second order, symmetric; conserves
    𝔥 = ½ q̇² + ½ ω0² u^n u^{n−1} + ¼ ω1⁴ (u^n u^{n−1})² ≥ 0 (unforced, `discrete_energy`), so it is stable for
    every h. Start it from (u0, 0) for the lecture's u^{−1} = u^0.
    """

    def init(self, model, q, qd, u):
        if not isinstance(model, Duffing):
            raise TypeError(
                f"ConservativeDuffing needs a lagnet Duffing system, got {type(model).__name__}"
            )
        return None

    def step(self, model, q, qd, u, dt, state):
        q_prev = q - dt * qd
        rhs = (2 - (model.omega0 * dt) ** 2) * q
        if u is not None:
            rhs = rhs + dt**2 * u
        q1 = rhs / (1 + 0.5 * model.omega1**4 * dt**2 * q**2) - q_prev
        return q1, (q1 - q) / dt, None, explicit_info(q.dtype)

    @staticmethod
    def discrete_energy(
        model: Duffing, qs: Float[Array, "steps 1"], qds: Float[Array, "steps 1"], dt
    ) -> Float[Array, " steps"]:
        """𝔥 along a trajectory of states (q, δ_t− q), shape (steps,)."""
        q, q_prev = qs[:, 0], qs[:, 0] - dt * qds[:, 0]
        return (
            0.5 * qds[:, 0] ** 2
            + 0.5 * model.omega0**2 * q * q_prev
            + 0.25 * model.omega1**4 * (q * q_prev) ** 2
        )

    # The method's properties (see AbstractIntegrator), constant for this class.
    order = 2
    explicit = True
    symplectic = False
    symmetric = True

"""A bowed oscillator: a linear oscillator driven by passive friction against a moving bow."""

import equinox as eqx
import jax
import jax.numpy as jnp

from ..._types import Array, Float, Q, QDot, Scalar, U
from .._params import as_param, check_positive
from ._oscillator import AbstractUnitOscillator


class SoftFriction(eqx.Module):
    """The lecture's soft friction curve φ(η) = A η exp(−σ η²), A = √(2σ) e^{½} (so max φ = 1 at η = 1/√(2σ)).

    Passive: φ(η) η = A η² exp(−σ η²) ≥ 0. Its steepest descent is max_η(−φ'(η)) = 2 √(2σ) e^{−1}, at
    η² = 3/(2σ); that slope sets the step bound of the centred scheme (`BowedOscillator.max_step`).
    """

    sigma: jax.Array

    def __init__(self, sigma=100.0):
        self.sigma = as_param(sigma)

    def __check_init__(self):
        check_positive("SoftFriction", "sigma", self.sigma)

    @property
    def amplitude(self):
        return jnp.sqrt(2.0 * self.sigma) * jnp.exp(0.5)

    def __call__(self, eta: Float[Array, "..."]) -> Float[Array, "..."]:
        return self.amplitude * eta * jnp.exp(-self.sigma * eta**2)

    def derivative(self, eta: Float[Array, "..."]) -> Float[Array, "..."]:
        """φ'(η) = A (1 − 2σ η²) exp(−σ η²)."""
        return self.amplitude * (1.0 - 2.0 * self.sigma * eta**2) * jnp.exp(-self.sigma * eta**2)

    def max_negative_slope(self) -> Scalar:
        """max_η (−φ'(η)) = 2 √(2σ) e^{−1}."""
        return 2.0 * jnp.sqrt(2.0 * self.sigma) * jnp.exp(-1.0)


# The default friction: the lecture's curve (σ = 100), made per instance, since an array built at import time
# would start JAX's backend before `lagnet.parallel.use_cpu_cores` can set the number of CPU devices.
_LECTURE_FRICTION = "lecture"


class BowedOscillator(AbstractUnitOscillator):
    """u'' = −ω0² u − F_B φ(v_rel),   v_rel = u' − v_B   (unit mass; the lecture's bowed string, one mode).

    The inputs are the player's controls u = (v_B, F_B): bow speed and bow force (per unit mass). They enter
    through the friction law, not linearly, so `input_matrix` is zero and the friction force is the system's
    `nonconservative_force` (the non-conservative force is part of the system).

    Energy E = ½ u'² + ½ ω0² u² changes at the rate dE/dt = −F_B φ(v_rel) u' = −F_B φ(v_rel) v_rel − F_B φ(v_rel) v_B:
    a passive law (φ(η) η ≥ 0) only dissipates, so energy enters only through the bow speed.

    `friction=None` leaves the linear oscillator (the bow has no effect): the known part when φ is learned.
    The lecture's scheme is `lagnet.integrators.CentredImplicit`; it solves uniquely for steps
    k ≤ `max_step(F_B)` = 2 / (F_B max(−φ')).
    """

    omega0: jax.Array
    friction: SoftFriction | None

    def __init__(
        self, omega0=2 * jnp.pi * 200.0, friction: SoftFriction | None = _LECTURE_FRICTION
    ):
        self.omega0 = as_param(omega0)
        self.friction = SoftFriction(100.0) if friction is _LECTURE_FRICTION else friction

    def __check_init__(self):
        check_positive("BowedOscillator", "omega0", self.omega0, allow_zero=True)

    @property
    def input_names(self):
        return ("bow_velocity", "bow_force")

    @property
    def velocity_dependent(self):
        return self.friction is not None

    @staticmethod
    def relative_velocity(qd: QDot, u: U) -> QDot:
        """v_rel = u' − v_B."""
        return qd - u[0]

    def friction_force(self, qd: QDot, u: U | None) -> QDot:
        """Q = −F_B φ(u' − v_B); zero without a bow (u is None) or without a friction law."""
        if u is None or self.friction is None:
            return jnp.zeros_like(qd)
        u = jnp.asarray(u)
        return -u[1] * self.friction(self.relative_velocity(qd, u))

    def nonconservative_force(self, q: Q, qd: QDot, u: U | None = None) -> QDot:
        return self.friction_force(qd, u)

    def max_step(self, bow_force) -> Scalar | float:  # float: inf without friction
        """k_max = 2 / (F_B max_η(−φ'(η))): below it g(v) = 2v/k + F_B φ(v) + b is strictly increasing."""
        if self.friction is None:
            return jnp.inf
        return 2.0 / (bow_force * self.friction.max_negative_slope())

    def discrete_energy(self, q0: Q, q1: Q, dt) -> Scalar:
        """𝔥^{n+½} = ½ (δ_t+ u)² + ½ ω0² u^n u^{n+1}, the energy the centred scheme balances exactly:

            𝔥^{n+½} − 𝔥^{n−½} = −k F_B φ(η^n) (η^n + v_B),   η^n = δ_t· u^n − v_B.

        Non-negative for ω0 k < 2.
        """
        d = (q1 - q0) / dt
        return 0.5 * d @ d + 0.5 * self.omega0**2 * q0 @ q1

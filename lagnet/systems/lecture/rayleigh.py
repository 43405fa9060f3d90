"""Rayleigh's bowed or blown oscillator (1877): negative friction pumps energy in, a cubic term limits it."""

import jax
import jax.numpy as jnp

from ..._types import Q, QDot, Scalar
from .._params import as_param, check_positive
from ._oscillator import AbstractUnitOscillator


class Rayleigh(AbstractUnitOscillator):
    """u'' = (μ − u'²) u' − ω0² u   (unit mass; the lecture has ω0 = 1).

    V = ½ ω0² u²; the non-conservative force Q = (μ − u'²) u' is part of the system (so `acceleration`, `power`
    and every integrator see it). μ may be negative. For μ < 0 the rest state is stable; at μ = 0 a Hopf
    bifurcation creates a limit cycle of amplitude ≈ √(4μ/3) (ω0 = 1, small μ), from the energy balance
    ⟨(μ − u'²) u'²⟩ = 0 over a period of u = a cos t. No inputs.
    """

    velocity_dependent = True

    mu: jax.Array
    omega0: jax.Array

    def __init__(self, mu=0.1, omega0=1.0):
        self.mu = as_param(mu)
        self.omega0 = as_param(omega0)

    def __check_init__(self):
        check_positive("Rayleigh", "omega0", self.omega0)
        if jnp.shape(self.mu) != ():
            raise ValueError(f"Rayleigh.mu must be a scalar, got shape {jnp.shape(self.mu)}")

    @property
    def input_names(self):
        return ()

    def friction_force(self, qd: QDot) -> QDot:
        """Q = (μ − u'²) u': negative friction for small speeds (μ > 0), positive for large ones."""
        return (self.mu - qd**2) * qd

    def nonconservative_force(self, q: Q, qd: QDot, u=None) -> QDot:
        return self.friction_force(qd)

    def amplitude_estimate(self) -> Scalar:
        """√(4μ/3) / ω0: the small-μ amplitude of the limit cycle (0 below the onset)."""
        return jnp.sqrt(jnp.maximum(4.0 * self.mu / 3.0, 0.0)) / self.omega0

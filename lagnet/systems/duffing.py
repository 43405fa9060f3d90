"""The Duffing oscillator with a stiffening spring, from the lecture."""

import jax
import jax.numpy as jnp

from .._types import InputMatrix, MassMatrix, Q, QDot, Scalar
from ._params import as_param, check_positive
from .base import AbstractSystem


class Duffing(AbstractSystem):
    """ü = −ω0² u − ω1⁴ u³ + f  (unit mass, a stiffening spring, an external force f).

    V = ½ ω0² u² + ¼ ω1⁴ u⁴.
    """

    omega0: jax.Array
    omega1: jax.Array

    def __init__(self, omega0=1.0, omega1=1.0):
        self.omega0 = as_param(omega0)
        self.omega1 = as_param(omega1)

    def __check_init__(self):
        check_positive("Duffing", "omega0", self.omega0, allow_zero=True)
        check_positive("Duffing", "omega1", self.omega1, allow_zero=True)

    @property
    def coordinate_names(self):
        return ("u",)

    @property
    def input_names(self):
        return ("force",)

    @property
    def angles(self):
        return (False,)

    @property
    def velocity_dependent(self):
        return False

    def mass_matrix(self, q: Q) -> MassMatrix:
        return jnp.ones((1, 1), jnp.result_type(q))

    def coriolis(self, q: Q, qd: QDot) -> MassMatrix:
        return jnp.zeros((1, 1), jnp.result_type(q, qd))

    def gravity(self, q: Q):
        return self.omega0**2 * q + self.omega1**4 * q**3

    def potential_energy(self, q: Q) -> Scalar:
        return 0.5 * self.omega0**2 * q[0] ** 2 + 0.25 * self.omega1**4 * q[0] ** 4

    def input_matrix(self, q: Q) -> InputMatrix:
        return jnp.ones((1, 1), jnp.result_type(q))

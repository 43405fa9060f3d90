"""The linear part shared by the lecture's self-excited oscillators (Rayleigh's, the bowed string's mode)."""

import equinox as eqx
import jax
import jax.numpy as jnp

from ..._types import InputMatrix, MassMatrix, Q, QDot, Scalar
from ..base import AbstractSystem


class AbstractUnitOscillator(AbstractSystem):
    """One coordinate u of unit mass on a linear spring: M = 1, C = 0, G = ω0² u, V = ½ ω0² u².

    The inputs, if any, act through the concrete system's `nonconservative_force`, never linearly: B = 0.
    """

    omega0: eqx.AbstractVar[jax.Array]

    @property
    def coordinate_names(self):
        return ("u",)

    @property
    def angles(self):
        return (False,)

    def mass_matrix(self, q: Q) -> MassMatrix:
        return jnp.ones((1, 1), jnp.result_type(q))

    def solve_mass(self, q: Q, rhs):
        return rhs

    def coriolis(self, q: Q, qd: QDot) -> MassMatrix:
        return jnp.zeros((1, 1), jnp.result_type(q, qd))

    def gravity(self, q: Q):
        return self.omega0**2 * q

    def potential_energy(self, q: Q) -> Scalar:
        return 0.5 * self.omega0**2 * q[0] ** 2

    def input_matrix(self, q: Q) -> InputMatrix:
        return jnp.zeros((1, self.n_inputs), jnp.result_type(q))

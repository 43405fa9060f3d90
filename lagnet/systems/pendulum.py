"""A point-mass pendulum: m l² θ̈ + m g l sin θ = u."""

import jax
import jax.numpy as jnp

from .._types import InputMatrix, MassMatrix, Q, QDot, Scalar
from ._params import as_param, check_positive
from .base import AbstractSystem


class Pendulum(AbstractSystem):
    """Point mass `mass` on a massless rod of `length`; θ = 0 hangs down; u = torque at the pivot.

        m l² θ̈ + m g l sin θ = u,    V = −m g l cos θ.

    With the defaults θ̈ = −sin θ, the lecture's pendulum.
    """

    mass: jax.Array
    length: jax.Array
    g: jax.Array

    def __init__(self, mass=1.0, length=1.0, g=1.0):
        self.mass = as_param(mass)
        self.length = as_param(length)
        self.g = as_param(g)

    def __check_init__(self):
        check_positive("Pendulum", "mass", self.mass)
        check_positive("Pendulum", "length", self.length)
        check_positive("Pendulum", "g", self.g, allow_zero=True)

    @property
    def coordinate_names(self):
        return ("theta",)

    @property
    def input_names(self):
        return ("torque",)

    @property
    def angles(self):
        return (True,)

    @property
    def velocity_dependent(self):
        return False

    def mass_matrix(self, q: Q) -> MassMatrix:
        return jnp.reshape(self.mass * self.length**2, (1, 1))

    def coriolis(self, q: Q, qd: QDot) -> MassMatrix:
        return jnp.zeros((1, 1), jnp.result_type(q, qd))

    def gravity(self, q: Q):
        return self.mass * self.g * self.length * jnp.sin(q)

    def potential_energy(self, q: Q) -> Scalar:
        return -self.mass * self.g * self.length * jnp.cos(q[0])

    def input_matrix(self, q: Q) -> InputMatrix:
        return jnp.ones((1, 1), jnp.result_type(q))

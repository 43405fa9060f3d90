"""The PINODE paper's cart-pole (Roehrl et al., Table 2)."""

from typing import ClassVar

import jax
import jax.numpy as jnp

from .._types import InputMatrix, MassMatrix, Q, QDot, Scalar
from ._params import as_param, check_positive
from .base import AbstractSystem


class CartPole(AbstractSystem):
    """A cart on a rail with a pole: a uniform rod pivoted at one end plus a point mass at its tip.

    q = (x, φ); φ = 0 hangs down and the tip is at (x + l sin φ, −l cos φ); u = force on the cart along +x.
    With m_tot = m_c + m_r + m_t, a = l (m_r/2 + m_t), J = l² (m_r/3 + m_t):

        M(q) = [[m_tot, a cos φ], [a cos φ, J]],   C(q, q̇) = [[0, −a φ̇ sin φ], [0, 0]],
        G(q) = (0, g a sin φ),   B = (1, 0)ᵀ,   V = −g a cos φ.

    Defaults are the paper's Table 2 (masses in kg, length in m).
    """

    velocity_dependent = True
    # M ≻ 0 whenever the cart's mass is > 0 (det M ≥ l² m_c (m_r/3 + m_t)): bounds keep it physical.
    parameter_kinds: ClassVar[dict[str, str]] = {"cart_mass": "mass", "length": "length"}

    cart_mass: jax.Array
    rod_mass: jax.Array
    tip_mass: jax.Array
    length: jax.Array
    g: jax.Array

    def __init__(self, cart_mass=0.466, rod_mass=0.06, tip_mass=0.012, length=0.201, g=9.81):
        self.cart_mass = as_param(cart_mass)
        self.rod_mass = as_param(rod_mass)
        self.tip_mass = as_param(tip_mass)
        self.length = as_param(length)
        self.g = as_param(g)

    def __check_init__(self):
        check_positive("CartPole", "cart_mass", self.cart_mass)
        check_positive("CartPole", "rod_mass", self.rod_mass, allow_zero=True)
        check_positive("CartPole", "tip_mass", self.tip_mass, allow_zero=True)
        check_positive("CartPole", "length", self.length)
        check_positive("CartPole", "g", self.g, allow_zero=True)

    @property
    def coordinate_names(self):
        return ("x", "phi")

    @property
    def input_names(self):
        return ("force",)

    @property
    def cyclic_coordinates(self):
        # A level rail: nothing in M, V or B depends on where the cart is.
        return ("x",)

    @property
    def angles(self):
        return (False, True)

    @property
    def _a(self):
        # First moment of the pole about the pivot, per unit length: the coupling term of M.
        return self.length * (0.5 * self.rod_mass + self.tip_mass)

    @property
    def _inertia(self):
        # Pole inertia about the pivot: rod m_r l²/3 plus tip m_t l².
        return self.length**2 * (self.rod_mass / 3 + self.tip_mass)

    def mass_matrix(self, q: Q) -> MassMatrix:
        total = self.cart_mass + self.rod_mass + self.tip_mass
        off = self._a * jnp.cos(q[1])
        return jnp.stack([jnp.stack([total, off]), jnp.stack([off, self._inertia])])

    def coriolis(self, q: Q, qd: QDot) -> MassMatrix:
        c12 = -self._a * qd[1] * jnp.sin(q[1])
        z = jnp.zeros_like(c12)
        return jnp.stack([jnp.stack([z, c12]), jnp.stack([z, z])])

    def gravity(self, q: Q):
        s = self.g * self._a * jnp.sin(q[1])
        return jnp.stack([jnp.zeros_like(s), s])

    def potential_energy(self, q: Q) -> Scalar:
        return -self.g * self._a * jnp.cos(q[1])

    def input_matrix(self, q: Q) -> InputMatrix:
        return jnp.array([[1.0], [0.0]], dtype=jnp.result_type(q))

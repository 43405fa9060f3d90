"""A hammer or mallet striking an oscillator: one-sided power-law contact (felt stiffens as it is compressed)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..._types import Array, Float, InputMatrix, MassMatrix, Q, QDot, Scalar
from .._params import as_param, check_positive, concrete
from ..base import AbstractSystem


def contact_force(compression: Float[Array, "..."], omega_h, alpha) -> Float[Array, "..."]:
    """F = ω_H^{α+1} [δ]_+^α: the felt pushes only while compressed (δ = u_H − u > 0)."""
    return omega_h ** (alpha + 1) * jnp.maximum(compression, 0.0) ** alpha


def contact_potential(compression: Float[Array, "..."], omega_h, alpha) -> Float[Array, "..."]:
    """V_c = ω_H^{α+1} [δ]_+^{α+1} / (α + 1), so that dV_c/dδ = F."""
    return omega_h ** (alpha + 1) * jnp.maximum(compression, 0.0) ** (alpha + 1) / (alpha + 1)


class Hammer(AbstractSystem):
    """A target oscillator u struck by a hammer u_H (the lecture's hammer/mallet model):

        u'' = −ω0² u + M_r F,   u_H'' = −F,   F = ω_H^{α+1} [u_H − u]_+^α.

    As an Euler–Lagrange system in q = (u, u_H) with the hammer's mass as the unit, so the target's mass is 1/M_r:

        M = diag(1/M_r, 1),   V = ω0² u² / (2 M_r) + ω_H^{α+1} [u_H − u]_+^{α+1} / (α + 1).

    The contact is conservative (a one-sided potential), so E = T + V is exactly conserved by the flow; `Leapfrog`
    is the lecture's explicit scheme, and `discrete_energy` is the energy it keeps up to a small jump at contact
    and release. With `contact=False` only the free hammer and the linear oscillator remain: the known part when
    the contact law is learned. No inputs (roll out with `us` of shape (steps, 0)).
    """

    omega0: jax.Array
    mass_ratio: jax.Array
    omega_h: jax.Array
    alpha: jax.Array
    contact: bool = eqx.field(static=True)

    def __init__(
        self, omega0=2 * jnp.pi * 400, mass_ratio=0.2, omega_h=3000.0, alpha=3.0, *, contact=True
    ):
        self.omega0 = as_param(omega0)
        self.mass_ratio = as_param(mass_ratio)
        self.omega_h = as_param(omega_h)
        self.alpha = as_param(alpha)
        self.contact = bool(contact)

    def __check_init__(self):
        check_positive("Hammer", "omega0", self.omega0, allow_zero=True)
        check_positive("Hammer", "mass_ratio", self.mass_ratio)
        check_positive("Hammer", "omega_h", self.omega_h)
        # α ≥ 1 keeps the force Lipschitz at first touch (α < 1 has an infinite stiffness at δ = 0).
        check_positive("Hammer", "alpha", self.alpha)
        alpha = concrete(self.alpha)
        if alpha is not None and np.any(alpha < 1.0):
            raise ValueError(f"Hammer.alpha must be >= 1, got {alpha}")

    @property
    def coordinate_names(self):
        return ("u", "u_hammer")

    @property
    def input_names(self):
        return ()

    @property
    def angles(self):
        return (False, False)

    @property
    def velocity_dependent(self):
        return False

    def compression(self, q: Q) -> Scalar:
        """δ = u_H − u (positive while in contact)."""
        return q[1] - q[0]

    def force(self, q: Q) -> Scalar:
        """The contact force F (per unit hammer mass); zero with `contact=False`."""
        if not self.contact:
            return jnp.zeros((), jnp.result_type(q))
        return contact_force(self.compression(q), self.omega_h, self.alpha)

    def mass_matrix(self, q: Q) -> MassMatrix:
        return jnp.diag(jnp.stack([1.0 / self.mass_ratio, jnp.ones_like(self.mass_ratio)])).astype(
            jnp.result_type(q, self.mass_ratio)
        )

    def solve_mass(self, q: Q, rhs):
        return rhs * jnp.stack([self.mass_ratio, jnp.ones_like(self.mass_ratio)])

    def coriolis(self, q: Q, qd: QDot) -> MassMatrix:
        return jnp.zeros((2, 2), jnp.result_type(q, qd))

    def gravity(self, q: Q):
        f = self.force(q)
        return jnp.stack([self.omega0**2 * q[0] / self.mass_ratio - f, f])

    def potential_energy(self, q: Q) -> Scalar:
        v = 0.5 * self.omega0**2 * q[0] ** 2 / self.mass_ratio
        if self.contact:
            v = v + contact_potential(self.compression(q), self.omega_h, self.alpha)
        return v

    def input_matrix(self, q: Q) -> InputMatrix:
        return jnp.zeros((2, 0), jnp.result_type(q))

    def discrete_energy(self, q0: Q, q1: Q, dt) -> Scalar:
        """𝔥^{n+½} = ½ δ_t+qᵀ M δ_t+q + ω0² u⁰u¹ / (2 M_r) + ½ (V_c(q⁰) + V_c(q¹)) between steps n and n + 1.

        Without contact the central difference q^{n+1} − 2q^n + q^{n−1} = k² a(q^n) conserves it to rounding; the
        contact term changes it by a small jump at contact and release.
        """
        d = (q1 - q0) / dt
        h = (
            0.5 * d @ self.mass_matrix(q0) @ d
            + 0.5 * self.omega0**2 * q0[0] * q1[0] / self.mass_ratio
        )
        if self.contact:
            vc0 = contact_potential(self.compression(q0), self.omega_h, self.alpha)
            vc1 = contact_potential(self.compression(q1), self.omega_h, self.alpha)
            h = h + 0.5 * (vc0 + vc1)
        return h

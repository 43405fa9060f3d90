"""N masses in a row joined by springs, both ends fixed: M ü = −K u."""

import equinox as eqx
import jax
import jax.numpy as jnp

from .._types import Float, InputMatrix, MassMatrix, Q, QDot, Scalar
from ._params import as_param, check_positive
from .base import AbstractSystem


class MassSpringChain(AbstractSystem):
    """`n` masses between two walls with `n + 1` springs; u_i is the displacement of mass i.

        m_i ü_i = k_i (u_{i-1} − u_i) + k_{i+1} (u_{i+1} − u_i) + f_i,   u_0 = u_{n+1} = 0,
        V = ½ Σ_i k_i (u_i − u_{i−1})²,   B = I (an external force on every mass).

    `mass` is a scalar or shape (n,), `stiffness` a scalar or shape (n + 1,). The stiffest mode sets the explicit
    step limit h ≤ 2/ω_max (the lecture's "the stiffest spring sets the step").
    """

    n: int = eqx.field(static=True)
    mass: jax.Array
    stiffness: jax.Array

    def __init__(self, n: int = 8, mass=1.0, stiffness=1.0):
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"MassSpringChain.n must be a positive integer, got {n!r}")
        self.n = n
        self.mass = (
            jnp.broadcast_to(as_param(mass), (n,)) if jnp.ndim(mass) == 0 else as_param(mass)
        )
        self.stiffness = (
            jnp.broadcast_to(as_param(stiffness), (n + 1,))
            if jnp.ndim(stiffness) == 0
            else as_param(stiffness)
        )

    def __check_init__(self):
        check_positive("MassSpringChain", "mass", self.mass, shape=(self.n,))
        check_positive("MassSpringChain", "stiffness", self.stiffness, shape=(self.n + 1,))

    @property
    def coordinate_names(self):
        return tuple(f"u{i + 1}" for i in range(self.n))

    @property
    def input_names(self):
        return tuple(f"f{i + 1}" for i in range(self.n))

    @property
    def angles(self):
        return (False,) * self.n

    @property
    def velocity_dependent(self):
        return False

    def mass_matrix(self, q: Q) -> MassMatrix:
        return jnp.diag(self.mass).astype(jnp.result_type(q, self.mass))

    def stiffness_matrix(self) -> Float[jax.Array, "n n"]:
        """K, tridiagonal: K_ii = k_i + k_{i+1}, K_{i,i+1} = −k_{i+1}."""
        k = self.stiffness
        return jnp.diag(k[:-1] + k[1:]) - jnp.diag(k[1:-1], 1) - jnp.diag(k[1:-1], -1)

    def coriolis(self, q: Q, qd: QDot) -> MassMatrix:
        return jnp.zeros((self.n, self.n), jnp.result_type(q, qd))

    def gravity(self, q: Q):
        # K u without forming K: the spring forces on each mass from its two neighbours.
        padded = jnp.pad(q, 1)
        stretch = padded[1:] - padded[:-1]  # (n + 1,) elongation of each spring
        tension = self.stiffness * stretch
        return tension[:-1] - tension[1:]

    def potential_energy(self, q: Q) -> Scalar:
        padded = jnp.pad(q, 1)
        return 0.5 * jnp.sum(self.stiffness * (padded[1:] - padded[:-1]) ** 2)

    def input_matrix(self, q: Q) -> InputMatrix:
        return jnp.eye(self.n, dtype=jnp.result_type(q))

    def solve_mass(self, q: Q, rhs):
        # M is diagonal: O(n) instead of a dense Cholesky, so chains of thousands of masses stay cheap.
        return rhs / self.mass

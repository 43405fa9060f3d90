"""Cloth as a mass-spring network: a square grid with structural and shear springs, pinned corners, gravity, drag."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..._types import Array, Float, InputMatrix, Int, MassMatrix, Q, QDot, Scalar
from .._params import as_param, check_positive
from ..springs import AbstractSpringNetwork


def cloth_grid(n: int, size: float):
    """The lecture's flat n × n sheet (y up) and its springs.

    Returns rest positions (n², 3), springs (S, 2) as node pairs (structural first: rows, then columns; then the
    two shear diagonals), rest lengths (S,), and the two pinned corners (nodes 0 and n − 1).
    """
    g = np.linspace(0.0, size, n)
    x, z = np.meshgrid(g, g)
    positions = np.stack([x.ravel(), np.zeros(n * n), z.ravel()], axis=1)
    idx = np.arange(n * n).reshape(n, n)
    pairs = [
        (idx[:, :-1], idx[:, 1:]),  # structural
        (idx[:-1, :], idx[1:, :]),
        (idx[:-1, :-1], idx[1:, 1:]),  # shear
        (idx[:-1, 1:], idx[1:, :-1]),
    ]
    springs = np.vstack([np.stack([a.ravel(), b.ravel()], axis=1) for a, b in pairs])
    rest = np.linalg.norm(positions[springs[:, 1]] - positions[springs[:, 0]], axis=1)
    return positions, springs, rest, np.array([idx[0, 0], idx[0, -1]])


class Cloth(AbstractSpringNetwork):
    """A grid of point masses joined by springs; the coordinates q are the free nodes' positions (3 per node).

        m ẍ_i = Σ_springs K_s (‖d‖ − L) d/‖d‖ − m g ŷ − c ẋ_i,   d = x_j − x_i,
        V = Σ_springs ½ K_s (‖d‖ − L)² + Σ_i m g y_i,   M = m I,   Q = −c q̇ (air drag, part of the system).

    Pinned nodes are not coordinates (they stay at their rest positions), which is the lecture's "V[pin] = 0"
    written as a constraint. `positions(q)` gives all nodes, shape (n², 3). `stiffness_matvec` is the SPD part of
    −∂f/∂x used by `lagnet.integrators.LinearlyImplicitEuler`. No inputs.
    """

    velocity_dependent = True

    n: int = eqx.field(static=True)
    mass: jax.Array
    drag: jax.Array
    stiffness: jax.Array
    g: jax.Array
    springs: Int[Array, "S 2"]
    rest_lengths: Float[Array, " S"]
    free_nodes: Int[Array, " F"]
    pinned_nodes: Int[Array, " P"]
    pinned_positions: Float[Array, "P 3"]
    rest_positions: Float[Array, "N 3"]

    def __init__(self, n=12, size=1.0, mass=0.01, drag=0.002, stiffness=2000.0, g=9.8):
        if not isinstance(n, int) or isinstance(n, bool) or n < 2:
            raise ValueError(f"Cloth.n must be an integer >= 2, got {n!r}")
        positions, springs, rest, pinned = cloth_grid(n, float(size))
        self.n = n
        self.mass = as_param(mass)
        self.drag = as_param(drag)
        self.stiffness = as_param(stiffness)
        self.g = as_param(g)
        self.springs = jnp.asarray(springs)
        self.rest_lengths = jnp.asarray(rest)
        self.free_nodes = jnp.asarray(np.setdiff1d(np.arange(n * n), pinned))
        self.pinned_nodes = jnp.asarray(pinned)
        self.pinned_positions = jnp.asarray(positions[pinned])
        self.rest_positions = jnp.asarray(positions)

    def __check_init__(self):
        check_positive("Cloth", "mass", self.mass)
        check_positive("Cloth", "drag", self.drag, allow_zero=True)
        check_positive("Cloth", "stiffness", self.stiffness)
        check_positive("Cloth", "g", self.g, allow_zero=True)

    @property
    def n_nodes(self) -> int:
        return self.n * self.n

    @property
    def n_structural(self) -> int:
        """The first 2 n (n − 1) springs are structural, the rest shear."""
        return 2 * self.n * (self.n - 1)

    @property
    def coordinate_names(self):
        nodes = np.setdiff1d(np.arange(self.n * self.n), [0, self.n - 1])
        return tuple(f"{c}{i}" for i in nodes for c in "xyz")

    @property
    def input_names(self):
        return ()

    @property
    def angles(self):
        return (False,) * (3 * (self.n * self.n - 2))

    def initial_state(self) -> tuple[Q, QDot]:
        """The flat sheet at rest (springs unstretched)."""
        q0 = self.rest_positions[self.free_nodes].ravel()
        return q0, jnp.zeros_like(q0)

    def positions(self, q: Q) -> Float[Array, "N 3"]:
        """All node positions, pinned ones included."""
        full = jnp.zeros((self.n_nodes, 3), jnp.result_type(q, self.pinned_positions))
        full = full.at[self.free_nodes].set(q.reshape(-1, 3))
        return full.at[self.pinned_nodes].set(self.pinned_positions.astype(full.dtype))

    def _scatter(self, per_spring: Float[Array, "S 3"]) -> Float[Array, "N 3"]:
        """Σ over springs of +f at node i and −f at node j (segment sums: O(springs))."""
        i, j = self.springs[:, 0], self.springs[:, 1]
        out = jax.ops.segment_sum(per_spring, i, self.n_nodes)
        return out - jax.ops.segment_sum(per_spring, j, self.n_nodes)

    def spring_forces(self, q: Q) -> Float[Array, "N 3"]:
        """Σ K_s (‖d‖ − L) d/‖d‖ on every node."""
        x = self.positions(q)
        d = x[self.springs[:, 1]] - x[self.springs[:, 0]]
        length = jnp.linalg.norm(d, axis=1)
        return self._scatter((self.stiffness * (length - self.rest_lengths) / length)[:, None] * d)

    def mass_matrix(self, q: Q) -> MassMatrix:
        return self.mass * jnp.eye(q.shape[0], dtype=jnp.result_type(q))

    def solve_mass(self, q: Q, rhs):
        return rhs / self.mass

    def coriolis(self, q: Q, qd: QDot) -> MassMatrix:
        return jnp.zeros((q.shape[0], q.shape[0]), jnp.result_type(q, qd))

    def gravity(self, q: Q):
        weight = jnp.zeros((self.n_nodes, 3), jnp.result_type(q)).at[:, 1].set(self.mass * self.g)
        return (weight - self.spring_forces(q))[self.free_nodes].ravel()

    def potential_energy(self, q: Q) -> Scalar:
        x = self.positions(q)
        length = jnp.linalg.norm(x[self.springs[:, 1]] - x[self.springs[:, 0]], axis=1)
        elastic = 0.5 * self.stiffness * jnp.sum((length - self.rest_lengths) ** 2)
        return elastic + self.mass * self.g * jnp.sum(x[:, 1])

    def input_matrix(self, q: Q) -> InputMatrix:
        return jnp.zeros((q.shape[0], 0), jnp.result_type(q))

    def nonconservative_force(self, q: Q, qd: QDot, u=None) -> QDot:
        """−d q̇: the air's linear drag."""
        return -self.drag * qd

    def stiffness_matvec(self, q: Q, p: Float[Array, " n"]) -> Float[Array, " n"]:
        """K̃ p with K̃ the SPD part of the stiffness −∂f/∂x, one 3 × 3 block per spring:

            K_b = K_s (n̂ n̂ᵀ + max(0, 1 − L/‖d‖) (I − n̂ n̂ᵀ)),   n̂ = d/‖d‖,

        (the exact Hessian has 1 − L/‖d‖ < 0 for compressed springs, which would make the matrix indefinite
        and break CG). Matrix-free: assembled nowhere, applied in O(springs); pinned nodes have p = 0.
        """
        x = self.positions(q)
        d = x[self.springs[:, 1]] - x[self.springs[:, 0]]
        length = jnp.linalg.norm(d, axis=1, keepdims=True)
        nhat = d / length
        full = (
            jnp.zeros((self.n_nodes, 3), jnp.result_type(q, p))
            .at[self.free_nodes]
            .set(p.reshape(-1, 3))
        )
        dp = full[self.springs[:, 0]] - full[self.springs[:, 1]]  # p_i − p_j
        along = jnp.sum(nhat * dp, axis=1, keepdims=True) * nhat
        lateral = jnp.maximum(0.0, 1.0 - self.rest_lengths[:, None] / length) * (dp - along)
        block = self.stiffness * (along + lateral)
        return self._scatter(block)[self.free_nodes].ravel()

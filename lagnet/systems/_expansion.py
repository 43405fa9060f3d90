"""A small tree's equations of motion as trigonometric polynomials, read off the recursive algorithms once.

For a tree of hinge (angle θ) and slide (position x) joints, M(q) and V(q) are linear in the bodies' inertial
parameters π (per body, in its own frame: m, h = m c, and Ī about the frame's origin: ten numbers) and V in g:

    M(q) = Σ_k φ_k(q) Σ_p Φᴹ_kp π_p,        V(q) = Σ_k φ_k(q) Σ_{p,a} Φⱽ_kpa π_p g_a,

with φ_k products over the joints of 1, cos θ, sin θ, cos 2θ, sin 2θ for a hinge (M is at most quadratic in each
joint's rotation, V linear) and 1, x, x² for a slide. Φ comes from the recursive algorithms on a grid of 5 angles
or 3 positions per joint, by one exact transform per joint (the discrete Fourier transform of a second-degree
trigonometric polynomial, a Vandermonde solve for a polynomial); terms that vanish are dropped. Then

    C(q, q̇) q̇ = Ṁ q̇ − ½ ∂_q (q̇ᵀ M q̇) = Σ_k (∂φ_k · q̇) Mₖ q̇ − ½ Σ_k ∂φ_k (q̇ᵀ Mₖ q̇),   G = Σ_k ∂φ_k Vₖ,

a few multiply-adds per term, as a hand-written closed form computes them. The grid grows as 5ⁿ, so this is for
trees of a few joints (`MAX_GRID`); the kinematics (placements, axes, anchors, references) are fixed in Φ.
"""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np

MAX_GRID = 125  # the largest grid (5 per hinge, 3 per slide) expanded by default: three hinges
TOLERANCE = 1e-10  # relative agreement with the recursive algorithms that the expansion must reach
# A term is dropped when every coefficient is below this, relative to its probe's largest.
_PRUNE = 1e-12


class Expansion:
    """The polynomials' terms (an index per joint, (K, n)) and coefficients, Φᴹ (K, n, n, P) and Φⱽ (K, P_V, 3),
    in float64 numpy. Compared and hashed by identity: it is a static field of its tree."""

    def __init__(self, joint_types, mass_index, mass_coef, potential_index, potential_coef):
        self.joint_types = tuple(joint_types)
        self.mass_index, self.mass_coef = mass_index, mass_coef
        self.potential_index, self.potential_coef = potential_index, potential_coef

    def __repr__(self) -> str:
        return (
            f"Expansion({len(self.mass_index)} terms in M, {len(self.potential_index)} in V, "
            f"{len(self.joint_types)} joints)"
        )


def grid_size(joint_types) -> int:
    return math.prod(5 if t == "hinge" else 3 for t in joint_types)


def _samples(kind: str) -> np.ndarray:
    return 2 * np.pi * np.arange(5) / 5 if kind == "hinge" else np.array([-1.0, 0.0, 1.0])


def _basis(kind: str, x):
    """The joint's five basis functions at x and their derivatives (lists): hinge 1, cos, sin, cos 2x, sin 2x;
    slide 1, x, x² (and two zeros)."""
    if kind == "hinge":
        c, s = jnp.cos(x), jnp.sin(x)
        c2, s2 = 2 * c * c - 1, 2 * s * c
        one, zero = jnp.ones_like(x), jnp.zeros_like(x)
        return [one, c, s, c2, s2], [zero, -s, c, -2 * s2, 2 * c2]
    one, zero = jnp.ones_like(x), jnp.zeros_like(x)
    return [one, x, x * x, zero, zero], [zero, one, 2 * x, zero, zero]


def _coefficients(values: np.ndarray, joint_types) -> tuple[np.ndarray, np.ndarray]:
    """The exact per-joint transform of `values` (the grid's points first, one axis per joint, then any
    trailing axes, the last one the probes) into the polynomials' coefficients; returns the kept terms' indices
    (K, n) and coefficients (K, ...): a term is dropped when all its coefficients vanish against the largest
    coefficient of each probe."""
    n = len(joint_types)
    coef = values
    for j, kind in enumerate(joint_types):
        x = _samples(kind)
        basis = np.array(jnp.stack(_basis(kind, jnp.asarray(x))[0])).T[:, : len(x)]
        coef = np.moveaxis(np.tensordot(np.linalg.inv(basis), coef, axes=(1, j)), 0, j)
    sizes = coef.shape[:n]
    probes = coef.shape[-1]
    flat = np.abs(coef.reshape(math.prod(sizes), -1, probes))
    scale = np.max(flat, axis=(0, 1))
    keep = np.any(flat > _PRUNE * np.where(scale > 0, scale, np.inf), axis=(1, 2))
    index = np.array(list(itertools.product(*(range(s) for s in sizes))), dtype=int)
    return index[keep], coef.reshape(math.prod(sizes), *coef.shape[n:])[keep]


def _probes(nb: int, dtype):
    """Unit inertial parameters: P = 10 nb sets (m, h, Ī) with one of a body's ten numbers 1 (Ī symmetric)."""
    pairs = [(0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)]
    m, h, ibar = np.zeros((10 * nb, nb)), np.zeros((10 * nb, nb, 3)), np.zeros((10 * nb, nb, 3, 3))
    for b in range(nb):
        m[10 * b, b] = 1.0
        for a in range(3):
            h[10 * b + 1 + a, b, a] = 1.0
        for i, (x, y) in enumerate(pairs):
            ibar[10 * b + 4 + i, b, x, y] = ibar[10 * b + 4 + i, b, y, x] = 1.0
    return tuple(jnp.asarray(a, dtype) for a in (m, h, ibar))


def parameters(inertial) -> jax.Array:
    """π (10 nb,) from (m (nb,), h (nb, 3), Ī (nb, 3, 3)), in `_probes`' order."""
    m, h, ibar = inertial
    upper = jnp.stack(
        [ibar[:, 0, 0], ibar[:, 1, 1], ibar[:, 2, 2], ibar[:, 0, 1], ibar[:, 0, 2], ibar[:, 1, 2]],
        -1,
    )
    return jnp.concatenate([m[:, None], h, upper], -1).reshape(-1)


def expand(joint_types, nb: int, mass_fn, potential_fn) -> Expansion:
    """Φᴹ and Φⱽ from `mass_fn(q, (m, h, Ī))` (the recursive M of the rigid bodies) and `potential_fn(q, (m, h),
    g)` (their V), both linear in their parameters, on the grid; computed in float64."""
    with jax.enable_x64(True):
        axes = [_samples(t) for t in joint_types]
        grid = jnp.asarray(np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, len(axes)))
        m, h, ibar = _probes(nb, jnp.float64)
        rows = np.array([10 * b + i for b in range(nb) for i in range(4)])  # the (m, h) probes
        eye = jnp.eye(3, dtype=jnp.float64)

        # One compiled program per grid (operation by operation, JAX would compile each primitive on its own).
        @jax.jit
        def on_grid(grid):
            mass = jax.vmap(lambda q: jax.vmap(mass_fn, (None, 0))(q, (m, h, ibar)))(grid)
            per_g = jax.vmap(potential_fn, (None, None, 0))
            per_mh = jax.vmap(lambda q, mh: per_g(q, mh, eye), (None, 0))
            return mass, jax.vmap(lambda q: per_mh(q, (m[rows], h[rows])))(grid)

        mass, potential = (np.asarray(x) for x in on_grid(grid))  # (G, P, n, n), (G, 4 nb, 3)
        mass = np.moveaxis(mass, 1, -1)
        mass = mass.reshape(*(len(a) for a in axes), *mass.shape[1:])
        potential = potential.reshape(*(len(a) for a in axes), 4 * nb, 3)
        mass_index, mass_coef = _coefficients(mass, joint_types)
        potential_index, potential_coef = _coefficients(np.swapaxes(potential, -1, -2), joint_types)
    potential_coef = np.swapaxes(potential_coef, -1, -2)
    return Expansion(joint_types, mass_index, mass_coef, potential_index, potential_coef)


def _terms(index: np.ndarray, columns, dcolumns):
    """φ (K,) and ∂φ (K, n) of the terms `index` from each joint's basis functions and derivatives (lists of
    arrays); written out term by term (the indices are static), so that no gather, and in reverse mode no
    scatter, is left for the compiler."""
    n = index.shape[1]

    def product(k, derivative=None):
        if derivative is not None and index[k, derivative] == 0:
            return jnp.zeros_like(columns[0][0])  # the term does not depend on this joint
        out = None
        for j in range(n):
            d = int(index[k, j])
            factor = (dcolumns if j == derivative else columns)[j][d]
            if j != derivative and d == 0:
                continue  # the constant 1
            out = factor if out is None else out * factor
        return out if out is not None else jnp.ones_like(columns[0][0])

    phi = jnp.stack([product(k) for k in range(len(index))])
    grad = jnp.stack([jnp.stack([product(k, i) for i in range(n)]) for k in range(len(index))])
    return phi, grad


def _tables(e: Expansion, q):
    pairs = [_basis(kind, q[j]) for j, kind in enumerate(e.joint_types)]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def mass_and_bias(e: Expansion, q, qd, inertial, g):
    """M(q) of the rigid bodies and C(q, q̇) q̇ + G(q) (`qd` None: G only), from π = `inertial` (m, h, Ī)."""
    dt = q.dtype
    table, dtable = _tables(e, q)
    coef = jnp.einsum("kijp,p->kij", jnp.asarray(e.mass_coef, dt), parameters(inertial))
    phi, grad = _terms(e.mass_index, table, dtable)
    mass = jnp.einsum("k,kij->ij", phi, coef)
    m, h, _ = inertial
    mh = jnp.concatenate([m[:, None], h], -1).reshape(-1)
    potential = jnp.einsum("kpa,p,a->k", jnp.asarray(e.potential_coef, dt), mh, g)
    _, vgrad = _terms(e.potential_index, table, dtable)
    bias = vgrad.T @ potential
    if qd is not None:
        coef_qd = jnp.einsum("kij,j->ki", coef, qd)  # Mₖ q̇
        bias = bias + (grad @ qd) @ coef_qd - 0.5 * grad.T @ (coef_qd @ qd)
    return mass, bias

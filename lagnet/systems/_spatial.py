"""Rigid-body dynamics of a kinematic tree written for JAX's compiler: RNEA and CRBA as a few array operations.

Everything is in the world frame with spatial vectors about the world origin (Plücker coordinates, Featherstone's
conventions): a motion vector is (ω, v) with v the velocity of the material point at the origin, a force vector
(n, f) with n the moment about the origin. Then the tree's recursions become sums over its static structure,

    v_b = Σ_{j ⪯ b} s_j q̇_j,  a_b = −g + Σ_{j ⪯ b} (s_j q̈_j + (v_j × s_j) q̇_j),  τ_j = s_jᵀ Σ_{b ⪰ j} f_b,
    f_b = I_b a_b + v_b ×* I_b v_b,  M_ij = s_iᵀ (Σ_{b ⪰ j} I_b) s_j  (i ⪯ j),

each one `einsum` with a 0/1 matrix of the tree (j ⪯ b: joint j is on body b's path from the world), so only
forward kinematics is a loop (over the tree's nodes, unrolled while tracing). On a CPU, where a small batch's
operations cost their launch more than their arithmetic, this few-operations form is what is fast; a hinge's
world motion subspace is s = (k, p × k) for its world axis k through the world point p, a slide's (0, k).

Measured against the alternative of unrolling everything to scalars while tracing (each 3-vector three scalars, a
few thousand elementwise operations per state): XLA's CPU fusion then copies shared subexpressions into every
consumer, so the double pendulum's rollout ran about 4.6× slower than in this form; packed behind optimisation
barriers it matched this form's forward pass but not its gradient, and the 7-joint arm's gradient did not finish
compiling in minutes.
"""

import functools
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np


@dataclass(frozen=True)
class Node:
    """One joint of the tree, or a body without joints: a body with k joints is k nodes in a chain (MuJoCo applies
    a body's joints one after the other), the first carrying the body's placement in its parent, the last its
    inertia. `parent` is a node index or -1 (the world)."""

    parent: int
    body: int
    placed: bool
    joint: int | None
    inertia: bool


@dataclass(frozen=True)
class Plan:
    """The tree's static structure: its moving nodes (parents first) and the 0/1 matrices of who moves whom."""

    nodes: tuple[Node, ...]
    joint_node: tuple[int, ...]  # joint j's node
    inertia_nodes: tuple[int, ...]  # the nodes carrying a body's inertia
    inertia_bodies: tuple[int, ...]  # ... and those bodies
    support: np.ndarray  # (nb', n): joint j moves inertia-node b
    precedes: np.ndarray  # (n, n): joint i is joint j or moves it


@functools.lru_cache(maxsize=64)
def plan(parents: tuple[int, ...], body_joints: tuple[tuple[int, ...], ...], n: int) -> Plan:
    """The nodes that move (those with a joint on their path from the world), parents first; bodies welded to
    the world have no dynamics and are left out."""
    nodes: list[Node] = []
    last = {}  # body -> its last node
    for b, p in enumerate(parents):
        parent = last.get(p, -1) if p >= 0 else -1
        joints = body_joints[b] or (None,)
        if joints == (None,) and parent < 0:
            continue  # welded to the world (directly or through other welded bodies)
        for i, j in enumerate(joints):
            nodes.append(Node(parent, b, i == 0, j, i == len(joints) - 1))
            parent = len(nodes) - 1
        last[b] = parent
    ancestors = []  # per node, the set of nodes on its path (itself included)
    for node in nodes:
        ancestors.append(
            (ancestors[node.parent] if node.parent >= 0 else frozenset()) | {len(ancestors)}
        )
    joint_node = [0] * n
    for i, node in enumerate(nodes):
        if node.joint is not None:
            joint_node[node.joint] = i
    inertia_nodes = tuple(i for i, node in enumerate(nodes) if node.inertia)
    support = np.array(
        [[joint_node[j] in ancestors[i] for j in range(n)] for i in inertia_nodes], dtype=float
    ).reshape(len(inertia_nodes), n)
    precedes = np.array(
        [[joint_node[i] in ancestors[joint_node[j]] for j in range(n)] for i in range(n)],
        dtype=float,
    )
    return Plan(
        tuple(nodes),
        tuple(joint_node),
        inertia_nodes,
        tuple(nodes[i].body for i in inertia_nodes),
        support,
        precedes,
    )


def cross(a, b):
    """a × b over the last axis."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return jnp.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], -1)


def forward_kinematics(nodes, rotation, translation):
    """World rotations (N, 3, 3) and positions (N, 3) of the nodes' frames from each node's transform in its
    parent's frame, x_parent = E x + r: R = R_λ E, p = p_λ + R_λ r (a loop over the static tree)."""
    rs, ps = [], []
    for i, node in enumerate(nodes):
        e, r = rotation[i], translation[i]
        if node.parent < 0:
            rs.append(e)
            ps.append(r)
        else:
            rp, pp = rs[node.parent], ps[node.parent]
            rs.append(rp @ e)
            ps.append(pp + rp @ r)
    return jnp.stack(rs), jnp.stack(ps)


def inertia_times(inertia, w, v):
    """The momentum I (ω, v) = (Ī ω + h × v, m v + ω × h) of spatial inertias (m, h = m c, Ī about the origin)."""
    m, h, ibar = inertia
    return jnp.einsum("...ij,...j->...i", ibar, w) + cross(h, v), m[..., None] * v + cross(w, h)


def rnea(p: Plan, subspace, inertia, qd, qdd, minus_g):
    """Recursive Newton–Euler as sums over the tree: τ = M(q) q̈ + C(q, q̇) q̇ + G(q) (rigid bodies only), the
    world accelerating by −g in place of gravity. `qd`, `qdd` may be None (zero)."""
    sw, sv = subspace  # (n, 3) each
    n = sw.shape[0]
    aw = jnp.zeros((n, 3), sw.dtype)
    av = jnp.zeros((n, 3), sw.dtype)
    if qdd is not None:
        aw, av = aw + sw * qdd[:, None], av + sv * qdd[:, None]
    support = jnp.asarray(p.support, sw.dtype)
    if qd is not None:
        jw, jv = sw * qd[:, None], sv * qd[:, None]
        # The velocity that carries joint j's axis (joints before it, its own adds nothing: s × s = 0).
        ww = jnp.einsum("ij,ix->jx", jnp.asarray(p.precedes, sw.dtype), jw)
        wv = jnp.einsum("ij,ix->jx", jnp.asarray(p.precedes, sw.dtype), jv)
        aw = aw + cross(ww, jw)
        av = av + cross(ww, jv) + cross(wv, jw)
        bw, bv = support @ jw, support @ jv
    body_aw = support @ aw
    body_av = support @ av + minus_g
    fn, ff = inertia_times(inertia, body_aw, body_av)
    if qd is not None:
        hw, hv = inertia_times(inertia, bw, bv)
        fn = fn + cross(bw, hw) + cross(bv, hv)
        ff = ff + cross(bw, hv)
    # Each joint carries the forces of all the bodies it moves.
    return jnp.sum(sw * (support.T @ fn) + sv * (support.T @ ff), -1)


def crba(p: Plan, subspace, inertia):
    """Composite-rigid-body algorithm as sums: M_ij = s_iᵀ I^c_j s_j for joint i on joint j's path (and its
    transpose), I^c_j = Σ_{b ⪰ j} I_b the inertia of all that joint j moves."""
    sw, sv = subspace
    m, h, ibar = inertia
    support = jnp.asarray(p.support, sw.dtype)
    composite = (support.T @ m, support.T @ h, jnp.einsum("bj,bxy->jxy", support, ibar))
    fn, ff = inertia_times(composite, sw, sv)
    full = sw @ fn.T + sv @ ff.T  # s_i · (I^c_j s_j)
    precedes = jnp.asarray(p.precedes, bool)
    return jnp.where(precedes, full, jnp.where(precedes.T, full.T, 0.0))


def ldl_factor(m):
    """The unrolled LDLᵀ factorisation (no square roots) of a symmetric positive definite M given as nested lists
    of scalars: D_i = M_ii − Σ_k L_ik² D_k, L_ji = (M_ji − Σ_k L_jk L_ik D_k) / D_i. Returns (L, D) as lists."""
    n = len(m)
    low = [[None] * n for _ in range(n)]
    d = [None] * n
    for i in range(n):
        for j in range(i):
            s = m[i][j]
            for k in range(j):
                s = s - low[i][k] * low[j][k] * d[k]
            low[i][j] = s / d[j]
        s = m[i][i]
        for k in range(i):
            s = s - low[i][k] * low[i][k] * d[k]
        d[i] = s
    return low, d


def ldl_solve(factor, b):
    """x = M⁻¹ b from M's `ldl_factor`: forward substitution with L, division by D, back substitution with Lᵀ."""
    low, d = factor
    n = len(b)
    y = list(b)
    for i in range(n):
        for k in range(i):
            y[i] = y[i] - low[i][k] * y[k]
    x = [None] * n
    for i in reversed(range(n)):
        s = y[i] / d[i]
        for k in range(i + 1, n):
            s = s - low[k][i] * x[k]
        x[i] = s
    return x

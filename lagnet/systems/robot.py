"""Mechanical systems read from robot descriptions (URDF, MJCF): a tree of rigid bodies on hinge and slide joints.

MuJoCo's own parser and compiler read the description (`mujoco` is imported only by the `from_*` constructors);
lagnet then keeps the compiled model's kinematic tree and inertias as arrays and writes the dynamics in JAX
(`_spatial`: world-frame spatial algebra, the tree's recursions as sums over its static structure):

    M(q) q̈ + C(q, q̇) q̇ + G(q) = B u + Q_friction(q̇) + Q,
    M = CRBA(q) + diag(armature) + inertia_offset,  C q̇ + G = RNEA(q, q̇, q̈ = 0) + K (q − q_spring),
    Q_friction = −b q̇ − c σ(q̇)   (the description's joint damping b and friction loss c, see `JointFriction`),

q̈ by an unrolled LDLᵀ factorisation of M, and its derivatives through inverse dynamics (dq̈ = M⁻¹ (dτ − ∂ID),
one RNEA's worth instead of differentiating CRBA and the factorisation). A tree of a few joints is expanded
instead (`_expansion`): M and V as trigonometric polynomials in q, linear in the inertial parameters. V(q)
(energies) and the body Jacobians come from forward kinematics. Contacts, joint limits, equality constraints
and actuator dynamics are not modelled.
"""

import functools
import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._types import Array, Float, Force, InputMatrix, MassMatrix, Q, QDDot, QDot, Scalar, U
from . import _expansion, _spatial
from ._params import as_param
from .base import AbstractSystem
from .friction import SHAPES, JointFriction

# MuJoCo's compiler refuses moving bodies without mass or inertia (point masses, massless intermediate URDF
# links); when the description sets no bound itself, these bounds let it compile and the values are set back to
# exactly 0 afterwards (a value equal to the bound is taken as one the bound raised, see `_compile`).
_BOUND = 1e-13
# What an expansion fixes (`_expansion`): the tree's placements, joint axes, anchors and references.
_KINEMATICS = ("body_pos", "body_quat", "joint_axis", "joint_pos", "joint_ref")
_EXPANSIONS: dict = {}
_JOINT_KINDS = {2: "slide", 3: "hinge"}  # mjtJoint values
_OTHER_JOINTS = {0: "free", 1: "ball"}


class RigidBodyTree(AbstractSystem):
    """A tree of rigid bodies on hinge (angle) and slide (position) joints, one coordinate per joint.

    Build it from a description with `from_urdf`, `from_mjcf`, `from_xml_string` or from a compiled
    `mujoco.MjModel` with `from_mujoco`; all take the options

    - `actuated`: joint names given a unit torque/force input each (replacing the description's actuators);
      without it the inputs are the description's joint actuators (B column = gear × gain); URDF `<transmission>`
      elements are not read, so a URDF has no inputs unless `actuated` is given;
    - `armature`: reflected rotor inertia added to M's diagonal (e.g. gr²·I_r), a number for all joints, one
      per joint, or a {joint name: value} mapping overriding the description's armature of those joints;
    - `inertia_offset`: a constant symmetric (n, n) matrix added to M (any constant inertial coupling, e.g. a
      rotor driven through a belt from another joint);
    - `friction_shape`, `friction_epsilon`: the smooth sign used for the description's Coulomb friction
      (MuJoCo's frictionloss is a hard constraint; here it is `JointFriction`'s smooth σ);
    - `expand`: evaluate M and V as trigonometric polynomials read off the recursive algorithms once
      (`_expansion`: closed-form speed, checked against them to 1e-10); None (default) expands trees of up to
      three hinges, True any tree that passes the check (or a ValueError), False never. An expanded tree's
      kinematics (body_pos, body_quat, joint_axis, joint_pos, joint_ref) are fixed: its inertial parameters,
      armature, offset, springs and g stay learnable.

    Bodies are indexed as in the compiled model without the world body; `parents[b]` is −1 for a body on the
    world. Coordinates are the joints' positions relative to their reference (MuJoCo's qpos0).
    """

    velocity_dependent = True
    parameter_kinds: ClassVar[dict[str, str]] = {
        "body_mass": "mass",
        "body_inertia": "inertia",
        "armature": "inertia",
    }

    body_pos: Float[Array, "nb 3"]
    body_quat: Float[Array, "nb 4"]
    body_ipos: Float[Array, "nb 3"]
    body_iquat: Float[Array, "nb 4"]
    body_mass: Float[Array, " nb"]
    body_inertia: Float[Array, "nb 3"]
    joint_axis: Float[Array, "n 3"]
    joint_pos: Float[Array, "n 3"]
    joint_ref: Float[Array, " n"]
    armature: Float[Array, " n"]
    stiffness: Float[Array, " n"]
    spring_ref: Float[Array, " n"]
    inertia_offset: Float[Array, "n n"]
    actuation: Float[Array, "n m"]
    g: Float[Array, " 3"]
    friction: JointFriction | None

    parents: tuple[int, ...] = eqx.field(static=True)
    body_joints: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    joint_types: tuple[str, ...] = eqx.field(static=True)
    body_names: tuple[str, ...] = eqx.field(static=True)
    coordinate_names: tuple[str, ...] = eqx.field(static=True)
    input_names: tuple[str, ...] = eqx.field(static=True)
    expansion: _expansion.Expansion | None = eqx.field(static=True)

    def __init__(
        self,
        *,
        parents: Sequence[int],
        body_joints: Sequence[Sequence[int]],
        joint_types: Sequence[str],
        body_pos,
        body_quat,
        body_ipos,
        body_iquat,
        body_mass,
        body_inertia,
        joint_axis,
        joint_pos,
        coordinate_names: Sequence[str],
        joint_ref=None,
        armature=None,
        stiffness=None,
        spring_ref=None,
        inertia_offset=None,
        actuation=None,
        input_names: Sequence[str] | None = None,
        g=(0.0, 0.0, -9.81),
        friction: JointFriction | None = None,
        body_names: Sequence[str] | None = None,
        expand: bool | None = None,
    ):
        self.parents = tuple(int(p) for p in parents)
        self.body_joints = tuple(tuple(int(j) for j in js) for js in body_joints)
        self.joint_types = tuple(str(t) for t in joint_types)
        self.coordinate_names = tuple(str(c) for c in coordinate_names)
        nb, n = len(self.parents), len(self.joint_types)
        self.body_names = (
            tuple(str(b) for b in body_names)
            if body_names is not None
            else tuple(f"body{i + 1}" for i in range(nb))
        )
        self.body_pos, self.body_quat = as_param(body_pos), as_param(body_quat)
        self.body_ipos, self.body_iquat = as_param(body_ipos), as_param(body_iquat)
        self.body_mass, self.body_inertia = as_param(body_mass), as_param(body_inertia)
        self.joint_axis, self.joint_pos = as_param(joint_axis), as_param(joint_pos)
        self.joint_ref = as_param(np.zeros(n) if joint_ref is None else joint_ref)
        self.armature = as_param(np.zeros(n) if armature is None else armature)
        self.stiffness = as_param(np.zeros(n) if stiffness is None else stiffness)
        self.spring_ref = as_param(np.zeros(n) if spring_ref is None else spring_ref)
        self.inertia_offset = as_param(
            np.zeros((n, n)) if inertia_offset is None else inertia_offset
        )
        self.actuation = as_param(np.zeros((n, 0)) if actuation is None else actuation)
        m = self.actuation.shape[1] if self.actuation.ndim == 2 else -1
        self.input_names = (
            tuple(str(u) for u in input_names)
            if input_names is not None
            else tuple(f"u{i + 1}" for i in range(max(m, 0)))
        )
        self.g = as_param(g)
        self.friction = friction
        self.expansion = None
        if expand is not None and not isinstance(expand, bool):
            # "yes" or 1 would have read as "never expand" (expand is True fails), silently.
            raise ValueError(
                f"expand must be true, false or null (the default: trees of up to three hinges), got "
                f"{expand!r} (system.params.expand in a config)"
            )
        if expand is True or (
            expand is None and _expansion.grid_size(self.joint_types) <= _expansion.MAX_GRID
        ):
            self.expansion = self._cached_expansion(required=bool(expand))

    def __check_init__(self):
        nb, n, m = len(self.parents), len(self.joint_types), len(self.input_names)
        name = "RigidBodyTree"
        if n == 0:
            raise ValueError(f"{name}: the description has no hinge or slide joint")
        for field, shape in (
            ("body_pos", (nb, 3)),
            ("body_quat", (nb, 4)),
            ("body_ipos", (nb, 3)),
            ("body_iquat", (nb, 4)),
            ("body_mass", (nb,)),
            ("body_inertia", (nb, 3)),
            ("joint_axis", (n, 3)),
            ("joint_pos", (n, 3)),
            ("joint_ref", (n,)),
            ("armature", (n,)),
            ("stiffness", (n,)),
            ("spring_ref", (n,)),
            ("inertia_offset", (n, n)),
            ("actuation", (n, m)),
            ("g", (3,)),
        ):
            if jnp.shape(getattr(self, field)) != shape:
                raise ValueError(
                    f"{name}.{field} must have shape {shape}, got {jnp.shape(getattr(self, field))}"
                )
        if len(self.body_joints) != nb or len(self.body_names) != nb:
            raise ValueError(f"{name}: body_joints and body_names need one entry per body ({nb})")
        if len(self.coordinate_names) != n:
            raise ValueError(f"{name}: coordinate_names needs one entry per joint ({n})")
        for b, p in enumerate(self.parents):
            if not -1 <= p < b:
                raise ValueError(
                    f"{name}.parents: body {b}'s parent {p} must precede it (or be -1, the world)"
                )
        if sorted(j for js in self.body_joints for j in js) != list(range(n)):
            raise ValueError(f"{name}.body_joints must list each joint 0..{n - 1} exactly once")
        for j, t in enumerate(self.joint_types):
            if t not in ("hinge", "slide"):
                raise ValueError(f"{name}: joint {j} has type {t!r}; only 'hinge' and 'slide'")
        if self.friction is not None and self.friction.n != n:
            raise ValueError(f"{name}.friction must act on n={n} coordinates")

    # --- constructors from descriptions ---------------------------------------------------------------------

    @classmethod
    def from_urdf(cls, path: str | os.PathLike, **options) -> "RigidBodyTree":
        """Read a URDF file; its meshes need not exist (visual and collision elements are dropped)."""
        return cls._build(*_compile_file(path, "robot"), **options)

    @classmethod
    def from_mjcf(cls, path: str | os.PathLike, **options) -> "RigidBodyTree":
        """Read an MJCF file (assets and includes resolved relative to it, as MuJoCo does)."""
        return cls._build(*_compile_file(path, "mujoco"), **options)

    @classmethod
    def from_xml_string(cls, xml: str, **options) -> "RigidBodyTree":
        """Read a URDF (root element `<robot>`) or MJCF (root `<mujoco>`) description given as a string."""
        return cls._build(*_compile_string(xml), **options)

    @classmethod
    def from_mujoco(cls, model, **options) -> "RigidBodyTree":
        """The system of a compiled `mujoco.MjModel` (see the class docstring for the options)."""
        return cls._build(model, False, **options)

    @classmethod
    def _build(
        cls,
        model,
        restore: bool,
        *,
        actuated: Sequence[str] | None = None,
        armature: float | Sequence[float] | Mapping[str, float] | None = None,
        inertia_offset=None,
        friction_shape: str = "tanh",
        friction_epsilon: float = 1e-2,
        expand: bool | None = None,
    ) -> "RigidBodyTree":
        import mujoco

        if friction_shape not in SHAPES or friction_shape == "stribeck":
            raise ValueError(
                f"RigidBodyTree.friction_shape must be 'tanh' or 'atan', got {friction_shape!r}"
            )
        n = model.njnt
        names = tuple(
            mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j) or f"joint{j}" for j in range(n)
        )
        _check_supported(model, names)
        dof = np.asarray(model.jnt_dofadr)
        qadr = np.asarray(model.jnt_qposadr)
        bodies = range(1, model.nbody)
        mass, inertia = _body_masses_and_inertias(model, restore)
        body_joints = [[] for _ in bodies]
        for j in range(n):
            body_joints[int(model.jnt_bodyid[j]) - 1].append(j)
        arm = np.array(model.dof_armature[dof], dtype=float)
        arm = _armature(arm, armature, names)
        stiffness, friction = _springs_and_friction(model, friction_shape, friction_epsilon)
        actuation, input_names = _actuation(model, names, actuated)
        g = np.array(model.opt.gravity, dtype=float)
        if _disabled(model, mujoco.mjtDisableBit.mjDSBL_GRAVITY):
            g[:] = 0.0
        system = cls(
            parents=tuple(int(model.body_parentid[b]) - 1 for b in bodies),
            body_joints=body_joints,
            joint_types=tuple(_JOINT_KINDS[int(t)] for t in model.jnt_type),
            body_pos=np.array(model.body_pos[1:], dtype=float),
            body_quat=np.array(model.body_quat[1:], dtype=float),
            body_ipos=np.array(model.body_ipos[1:], dtype=float),
            body_iquat=np.array(model.body_iquat[1:], dtype=float),
            body_mass=mass,
            body_inertia=inertia,
            joint_axis=np.array(model.jnt_axis, dtype=float),
            joint_pos=np.array(model.jnt_pos, dtype=float),
            joint_ref=np.array(model.qpos0[qadr], dtype=float),
            armature=arm,
            stiffness=stiffness,
            spring_ref=np.array(model.qpos_spring[qadr], dtype=float),
            inertia_offset=_inertia_offset(inertia_offset, n),
            actuation=actuation,
            input_names=input_names,
            g=g,
            friction=friction,
            expand=expand,
            coordinate_names=names,
            body_names=tuple(
                mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, b) or f"body{b}" for b in bodies
            ),
        )
        m0 = _reference_mass_matrix(model, arm)
        _check_positive_definite(m0 + np.asarray(system.inertia_offset), names)
        return system

    # --- dynamics --------------------------------------------------------------------------------------------

    @property
    def angles(self) -> tuple[bool, ...]:
        return tuple(t == "hinge" for t in self.joint_types)

    def _support(self) -> np.ndarray:
        """(nb, n) booleans: joint j moves body b (j is on b or on one of its ancestors). Static."""
        nb, n = len(self.parents), len(self.joint_types)
        s = np.zeros((nb, n), dtype=bool)
        for b, p in enumerate(self.parents):
            if p >= 0:
                s[b] = s[p]
            s[b, list(self.body_joints[b])] = True
        return s

    def _kinematics(self, q: Q):
        """Per body: centre of mass (nb, 3), principal-axis rotation (nb, 3, 3), frame position and rotation;
        per joint: world axis (n, 3) and anchor (n, 3)."""
        dt = _float_dtype(q)
        c = lambda x: x.astype(dt)  # noqa: E731  (parameters follow the state's dtype)
        body_pos, body_ipos = c(self.body_pos), c(self.body_ipos)
        body_rot, inertial_rot = (
            _quat_to_matrix(c(self.body_quat)),
            _quat_to_matrix(c(self.body_iquat)),
        )
        axis_local = c(self.joint_axis)
        axis_local = axis_local / jnp.linalg.norm(axis_local, axis=-1, keepdims=True)
        anchor_local = c(self.joint_pos)
        angle = q.astype(dt) - c(self.joint_ref)
        eye = jnp.eye(3, dtype=dt)
        frame_p, frame_r = [], []
        axes, anchors = [None] * self.n_dof, [None] * self.n_dof
        for b, parent in enumerate(self.parents):
            if parent < 0:
                p, r = body_pos[b], body_rot[b]
            else:
                p = frame_p[parent] + frame_r[parent] @ body_pos[b]
                r = frame_r[parent] @ body_rot[b]
            for j in self.body_joints[b]:
                a = r @ axis_local[j]
                anchor = p + r @ anchor_local[j]
                if self.joint_types[j] == "hinge":
                    r = r @ _rotation(axis_local[j], angle[j], eye)
                    p = anchor - r @ anchor_local[j]
                else:
                    p = p + a * angle[j]
                axes[j], anchors[j] = a, anchor
            frame_p.append(p)
            frame_r.append(r)
        frame_p, frame_r = jnp.stack(frame_p), jnp.stack(frame_r)
        com = frame_p + jnp.einsum("bij,bj->bi", frame_r, body_ipos)
        principal = frame_r @ inertial_rot
        return com, principal, frame_p, frame_r, jnp.stack(axes), jnp.stack(anchors)

    def forward_kinematics(self, q: Q) -> tuple[Float[Array, "nb 3"], Float[Array, "nb 3 3"]]:
        """World positions and rotation matrices of the body frames (body b's frame: `body_names[b]`)."""
        _, _, p, r, _, _ = self._kinematics(q)
        return p, r

    def com_positions(self, q: Q) -> Float[Array, "nb 3"]:
        """World positions of the bodies' centres of mass."""
        return self._kinematics(q)[0]

    def jacobians(self, q: Q) -> tuple[Float[Array, "nb 3 n"], Float[Array, "nb 3 n"]]:
        """Per body, the linear (of the centre of mass) and angular velocity Jacobians, world frame."""
        jv, jw = self._jacobians(self._kinematics(q))
        return jnp.swapaxes(jv, 1, 2), jnp.swapaxes(jw, 1, 2)

    def _jacobians(self, kinematics):
        """(nb, n, 3) linear and angular Jacobians: a hinge moves a body by axis × (com − anchor) and turns it
        about the axis, a slide moves it along the axis; only the joints on its path from the world count."""
        com, _, _, _, axes, anchors = kinematics
        dt = com.dtype
        support = jnp.asarray(self._support(), dtype=dt)[:, :, None]
        hinge = jnp.asarray([t == "hinge" for t in self.joint_types], dtype=dt)[None, :, None]
        lever = jnp.cross(axes[None], com[:, None] - anchors[None])
        return support * (hinge * lever + (1 - hinge) * axes[None]), support * hinge * axes[None]

    # The equations of motion by the recursive Newton–Euler and composite-rigid-body algorithms (`_spatial`),
    # unrolled over the tree while tracing; `_kinematics` above stays for positions, rotations and Jacobians.

    def _frames(self, q: Q):
        """The tree's plan, its nodes' world rotations (N, 3, 3) and positions (N, 3), and the joints' unit axes
        and anchors in their bodies' frames, in q's dtype."""
        dt = _float_dtype(q)
        c = lambda x: x.astype(dt)  # noqa: E731  (parameters follow the state's dtype)
        p = _spatial.plan(self.parents, self.body_joints, self.n_dof)
        axis = c(self.joint_axis)
        axis = axis / jnp.linalg.norm(axis, axis=-1, keepdims=True)
        anchor = c(self.joint_pos)
        angle = q.astype(dt) - c(self.joint_ref)
        rotation, translation = self._node_transforms(p.nodes, angle, axis, anchor, dt)
        world_r, world_p = _spatial.forward_kinematics(p.nodes, rotation, translation)
        return p, world_r, world_p, axis, anchor

    def _tree(self, q: Q, inertial=None) -> dict:
        """The world motion subspaces s_j = (s_ω, s_v) (n, 3) and the bodies' spatial inertias about the world
        origin (m, h = m c, Ī), with −g, the armature and the inertia offset, in q's dtype; `inertial` replaces
        the bodies' own (m, h, Ī) in their frames (see `_inertial`)."""
        dt = _float_dtype(q)
        c = lambda x: x.astype(dt)  # noqa: E731  (parameters follow the state's dtype)
        p, world_r, world_p, axis, anchor = self._frames(q)
        inertial = self._inertial(dt) if inertial is None else inertial
        return dict(
            plan=p,
            subspace=self._motion_subspaces(p, world_r, world_p, axis, anchor),
            inertia=_world_inertias(p, world_r, world_p, inertial),
            minus_g=-c(self.g),
            armature=c(self.armature),
            offset=self._offset(dt),
        )

    def _inertial(self, dt):
        """Each body's inertial parameters in its own frame, what M and V are linear in: the mass m, h = m c
        with c the centre of mass, and Ī = R I Rᵀ + m (|c|² 1 − c cᵀ) about the frame's origin (R: the
        principal axes, I: the principal moments)."""
        c = lambda x: x.astype(dt)  # noqa: E731  (parameters follow the state's dtype)
        mass, com = c(self.body_mass), c(self.body_ipos)
        principal = _quat_to_matrix(c(self.body_iquat))
        about_com = jnp.einsum("bik,bk,bjk->bij", principal, c(self.body_inertia), principal)
        shift = (
            jnp.sum(com**2, -1)[:, None, None] * jnp.eye(3, dtype=dt)
            - com[:, :, None] * com[:, None, :]
        )
        return mass, mass[:, None] * com, about_com + mass[:, None, None] * shift

    def _rigid_potential(self, q: Q, mh, g) -> Scalar:
        """V(q) = −Σ_b g · (m_b p_b + R_b h_b) of the moving bodies, for masses and h = m c `mh` (in the bodies'
        frames) and gravity g: linear in both (the expansion's probes)."""
        p, world_r, world_p, _, _ = self._frames(q)
        ib, nodes = np.array(p.inertia_bodies, dtype=int), np.array(p.inertia_nodes, dtype=int)
        mass, h = mh[0][ib], mh[1][ib]
        weight = mass[:, None] * world_p[nodes] + jnp.einsum("bij,bj->bi", world_r[nodes], h)
        return -jnp.sum(weight @ g)

    def _node_transforms(self, nodes, joint_angle, axis, anchor, dt):
        """Each node's rotation (N, 3, 3) and translation (N, 3) in its parent's frame, from the joint angles
        and the joints' unit axes k and anchors a (n, 3) in their bodies' frames.

        A hinge node's transform in its parent is affine in (cos θ, sin θ): with Rodrigues' R = c (1 − k kᵀ) +
        s K + k kᵀ and the body's placement (E₀, r₀),

            E = E₀ R = c E₀ (1 − k kᵀ) + s E₀ K + E₀ k kᵀ,
            r = r₀ + E₀ (a − R a) = c E₀ k×(k×a) − s E₀ (k×a) + r₀ − E₀ k×(k×a),

        so all nodes' transforms are a few array operations on precomputed parts; a slide's is E = E₀,
        r = r₀ + θ E₀ k, a welded body's (E₀, r₀).
        """
        n = self.n_dof
        eye = jnp.eye(3, dtype=dt)
        placement = _quat_to_matrix(self.body_quat.astype(dt))
        body_pos = self.body_pos.astype(dt)
        k_cross_a = jnp.cross(axis, anchor)
        k_cross_k_cross_a = jnp.cross(axis, k_cross_a)
        kk = axis[:, :, None] * axis[:, None, :]
        skew = jnp.swapaxes(
            jnp.cross(axis[:, None, :], eye[None]), 1, 2
        )  # K x = k × x: columns k × e_i
        # Per node, its placement (the body's on the body's first node, else none) and its joint's parts.
        body = np.array([node.body for node in nodes])
        placed = np.array([node.placed for node in nodes])[:, None]
        e0 = jnp.where(placed[:, :, None], placement[body], eye)
        r0 = jnp.where(placed, body_pos[body], 0.0)
        joint = np.array([n if node.joint is None else node.joint for node in nodes])
        kind = np.array(
            [
                0 if node.joint is None else 1 + (self.joint_types[node.joint] == "hinge")
                for node in nodes
            ]
        )
        hinge, slide = (kind == 2)[:, None], (kind == 1)[:, None]
        pad = lambda x: jnp.concatenate([x, jnp.zeros_like(x[:1])])[joint]  # noqa: E731  (0 for welded nodes)
        mv = lambda m, x: jnp.einsum("nab,nb->na", m, x)  # noqa: E731
        angle = pad(joint_angle)
        cos, sin = jnp.cos(angle), jnp.sin(angle)
        cos_e = jnp.where(hinge[:, :, None], e0 @ (eye - pad(kk)), 0.0)
        sin_e = jnp.where(hinge[:, :, None], e0 @ pad(skew), 0.0)
        const_e = jnp.where(hinge[:, :, None], e0 @ pad(kk), e0)
        rotation = cos[:, None, None] * cos_e + sin[:, None, None] * sin_e + const_e
        kka = mv(e0, pad(k_cross_k_cross_a))
        translation = (
            r0
            + jnp.where(
                hinge, (cos - 1)[:, None] * kka - sin[:, None] * mv(e0, pad(k_cross_a)), 0.0
            )
            + jnp.where(slide, angle[:, None] * mv(e0, pad(axis)), 0.0)
        )
        return rotation, translation

    def _motion_subspaces(self, plan, world_r, world_p, axis, anchor):
        """Per joint, its world motion subspace (s_ω, s_v) (n, 3) each: a hinge turns about its world axis k
        through its world anchor a (s_ω = k, s_v = a × k), a slide moves along k (s_ω = 0, s_v = k)."""
        # Joint j's axis and anchor are fixed in its node's frame (the rotation keeps them).
        jr, jp = world_r[np.array(plan.joint_node)], world_p[np.array(plan.joint_node)]
        k_world = jnp.einsum("jab,jb->ja", jr, axis)
        a_world = jp + jnp.einsum("jab,jb->ja", jr, anchor)
        is_hinge = np.array([t == "hinge" for t in self.joint_types])[:, None]
        return (
            jnp.where(is_hinge, k_world, 0.0),
            jnp.where(is_hinge, _spatial.cross(a_world, k_world), k_world),
        )

    def _rigid_mass(self, tree) -> jax.Array:
        """M: the CRBA's, plus armature and inertia_offset."""
        m = _spatial.crba(tree["plan"], tree["subspace"], tree["inertia"])
        return m + jnp.diag(tree["armature"]) + tree["offset"]

    def _bias(self, tree, q: Q, qd: QDot | None, qdd=None) -> jax.Array:
        """C(q, q̇) q̇ + G(q) (+ the rigid bodies' M q̈ given `qdd`) by RNEA, with the springs' forces."""
        dt = _float_dtype(q)
        tau = _spatial.rnea(
            tree["plan"],
            tree["subspace"],
            tree["inertia"],
            None if qd is None else qd.astype(dt),
            None if qdd is None else qdd.astype(dt),
            tree["minus_g"],
        )
        return tau + self._spring_force(q)

    def _rigid_inverse(self, tree, q: Q, qd: QDot, qdd: QDDot) -> jax.Array:
        """M(q) q̈ + C(q, q̇) q̇ + G(q) with the armature, the inertia offset and the springs."""
        return self._bias(tree, q, qd, qdd) + tree["armature"] * qdd + tree["offset"] @ qdd

    def consistent(self) -> "RigidBodyTree":
        """The tree with each body's principal moments of inertia about its centre of mass brought within the
        triangle inequalities (a moment above the sum of the other two is lowered to it): with masses > 0 and
        moments ≥ 0 (their bounds), every body's inertia is then a rigid body's, and M(q) = Σ Jᵀ I J +
        armature is positive semi-definite whatever values are learned."""
        moments = jnp.maximum(self.body_inertia, 0.0)
        total = jnp.sum(moments, axis=-1, keepdims=True)
        return eqx.tree_at(lambda t: t.body_inertia, self, jnp.minimum(moments, total - moments))

    def parameter(self, name: str) -> jax.Array:
        """The array field `name`; an expanded tree's kinematics (`_KINEMATICS`) are fixed in its expansion, so
        asking to learn one is a ValueError that says how to build the tree without it."""
        if self.expansion is not None and name in _KINEMATICS:
            raise ValueError(
                f"RigidBodyTree.{name} is fixed in this tree's expanded dynamics (trees of up to three joints "
                "are expanded into trigonometric polynomials); build it with expand=False (in a config: "
                "system.params.expand: false) to learn it"
            )
        return super().parameter(name)

    def _cached_expansion(self, required: bool) -> _expansion.Expansion | None:
        """`_expand`, once per kinematics: Φ does not depend on the inertial parameters or g (M and V are linear
        in them), so a tree rebuilt with other masses (a checkpoint, a config's other run) reuses it."""
        key = (
            self.parents,
            self.body_joints,
            self.joint_types,
            *(np.asarray(getattr(self, k), np.float64).tobytes() for k in sorted(_KINEMATICS)),
        )
        if key not in _EXPANSIONS or (_EXPANSIONS[key] is None and required):
            if len(_EXPANSIONS) >= 64:
                _EXPANSIONS.clear()
            _EXPANSIONS[key] = self._expand(required)
        return _EXPANSIONS[key]

    def _expand(self, required: bool) -> _expansion.Expansion | None:
        """M and V as trigonometric polynomials (`_expansion`), read off the recursive algorithms and checked."""

        def mass(q, inertial):
            tree = self._tree(q, inertial)
            return _spatial.crba(tree["plan"], tree["subspace"], tree["inertia"])

        e = _expansion.expand(self.joint_types, len(self.parents), mass, self._rigid_potential)
        return self._checked(e, required)

    def _checked(self, e: _expansion.Expansion, required: bool) -> _expansion.Expansion | None:
        """`e` if it agrees with the recursive algorithms at random states (M and C q̇ + G, relative
        `_expansion.TOLERANCE`); else None or, when `required`, a ValueError."""

        @jax.jit
        def disagreement(q, qd):
            tree = self._tree(q)
            reference = (self._rigid_mass(tree), self._bias(tree, q, qd))
            return [
                jnp.max(jnp.abs(a - b)) / (1.0 + jnp.max(jnp.abs(b)))
                for a, b in zip(self._expanded(q, qd, e), reference, strict=True)
            ]

        rng = np.random.default_rng(0)
        with jax.enable_x64(True):
            states = rng.uniform(-np.pi, np.pi, (2, 4, self.n_dof))
            worst = max(float(jnp.max(x)) for x in jax.vmap(disagreement)(*states))
        if worst <= _expansion.TOLERANCE:
            return e
        if required:
            raise ValueError(
                f"RigidBodyTree: the expanded dynamics disagree with the recursive ones by {worst:.3g} "
                "(relative); build it with expand=False"
            )
        return None

    def _expanded(self, q: Q, qd: QDot | None, e=None):
        """M(q) and C(q, q̇) q̇ + G(q) (`qd` None: G) from the expansion, with the armature, the inertia offset
        and the springs."""
        dt = _float_dtype(q)
        q = q.astype(dt)
        mass, bias = _expansion.mass_and_bias(
            self.expansion if e is None else e,
            q,
            None if qd is None else qd.astype(dt),
            self._inertial(dt),
            self.g.astype(dt),
        )
        mass = mass + jnp.diag(self.armature.astype(dt)) + self._offset(dt)
        return mass, bias + self._spring_force(q)

    def _offset(self, dt):
        # Used as ½ (O + Oᵀ): the solve reads M's lower triangle only, so without this a gradient step would
        # move O's lower triangle alone and leave M unsymmetric.
        offset = self.inertia_offset.astype(dt)
        return 0.5 * (offset + offset.T)

    def _spring_force(self, q: Q) -> Force:
        dt = _float_dtype(q)
        return self.stiffness.astype(dt) * (q.astype(dt) - self.spring_ref.astype(dt))

    def mass_matrix(self, q: Q) -> MassMatrix:
        """M(q) by the composite-rigid-body algorithm (or the expansion), + diag(armature) + inertia_offset."""
        if self.expansion is not None:
            return self._expanded(q, None)[0]
        return self._rigid_mass(self._tree(q))

    def gravity(self, q: Q) -> Force:
        """G(q) = ∂V/∂q: RNEA at rest with the world accelerating by −g (or the expansion), plus the springs."""
        if self.expansion is not None:
            return self._expanded(q, None)[1]
        return self._bias(self._tree(q), q, None)

    def bias_force(self, q: Q, qd: QDot) -> Force:
        """C(q, q̇) q̇ + G(q) by the recursive Newton–Euler algorithm (one pass, no C matrix) or the expansion."""
        if self.expansion is not None:
            return self._expanded(q, qd)[1]
        return self._bias(self._tree(q), q, qd)

    def inverse_dynamics(self, q: Q, qd: QDot, qdd: QDDot) -> Force:
        """M(q) q̈ + C(q, q̇) q̇ + G(q): the generalised force that gives q̈ (without the joint friction)."""
        dt = _float_dtype(q)
        if self.expansion is not None:
            mass, bias = self._expanded(q, qd)
            return mass @ qdd.astype(dt) + bias
        return self._rigid_inverse(self._tree(q), q, qd, qdd.astype(dt))

    def solve_mass(self, q: Q, rhs: Force) -> Force:
        """M(q)⁻¹ rhs by an unrolled LDLᵀ factorisation of M."""
        factor = _spatial.ldl_factor(_entries(self.mass_matrix(q)))
        return jnp.stack(_spatial.ldl_solve(factor, _scalars(rhs)))

    def generalised_force(self, q: Q, qd: QDot, u: U | None = None, Q: QDot | None = None) -> Force:
        """B(q) u + Q_friction(q̇) + Q − C(q, q̇) q̇ − G(q), the bias by RNEA."""
        return self._applied(q, qd, u, Q) - self.bias_force(q, qd)

    def _applied(self, q: Q, qd: QDot, u: U | None, Q: QDot | None) -> Force:
        dt = _float_dtype(q)
        rhs = jnp.zeros(self.n_dof, dt)
        if u is not None and self.n_inputs > 0:
            rhs = rhs + self.input_matrix(q) @ jnp.asarray(u)
        if self.friction is not None:
            rhs = rhs + self.friction(qd)
        if Q is not None:
            rhs = rhs + Q
        return rhs

    def acceleration(self, q: Q, qd: QDot, u: U | None = None, Q: QDot | None = None) -> QDDot:
        """q̈ = M(q)⁻¹ (B u + Q_friction + Q − C q̇ − G): one pass of kinematics, RNEA for the bias (q̈ = 0),
        CRBA for M, an unrolled LDLᵀ solve; differentiated by `_forward_dynamics`' rule, recomputed in reverse mode
        (`_remat_forward_dynamics`). An expanded tree evaluates its polynomials instead (`_expanded_dynamics`),
        differentiated as they are and recomputed in reverse mode too."""
        dt = _float_dtype(q)
        tau = self._applied(q, qd, u, Q)
        params, static = eqx.partition(self, eqx.is_inexact_array)
        forward = _remat_forward_dynamics if self.expansion is None else _remat_expanded_dynamics
        return forward(static, params, q.astype(dt), qd.astype(dt), tau.astype(dt))

    def _solve_forward(self, q: Q, qd: QDot, tau: Force):
        """q̈ = M⁻¹ (τ − C q̇ − G) and M's LDLᵀ factors."""
        tree = self._tree(q)
        factor = _spatial.ldl_factor(_entries(self._rigid_mass(tree)))
        qdd = _spatial.ldl_solve(factor, _scalars(tau - self._bias(tree, q, qd)))
        return jnp.stack(qdd), factor

    def potential_energy(self, q: Q) -> Scalar:
        com = self.com_positions(q)
        dt = com.dtype
        gravity = -jnp.sum(self.body_mass.astype(dt) * (com @ self.g.astype(dt)))
        stretch = q.astype(dt) - self.spring_ref.astype(dt)
        return gravity + 0.5 * jnp.sum(self.stiffness.astype(dt) * stretch**2)

    def input_matrix(self, q: Q) -> InputMatrix:
        return self.actuation.astype(_float_dtype(q))

    def friction_force(self, qd: QDot) -> Force:
        """The description's joint friction Q_f(q̇) (zero when it has none)."""
        if self.friction is None:
            return jnp.zeros_like(qd)
        return self.friction(qd)

    def nonconservative_force(self, q: Q, qd: QDot, u: U | None = None) -> Force | None:
        """The description's joint friction Q_friction(q̇) (its power q̇ᵀ Q_friction ≤ 0); None without."""
        return None if self.friction is None else self.friction(qd)


# --- helpers ---------------------------------------------------------------------------------------------------


def _check_positive_definite(m: np.ndarray, names: tuple[str, ...]) -> None:
    if not np.all(np.isfinite(m)):
        raise ValueError("RigidBodyTree: the mass matrix is not finite")
    if np.linalg.eigvalsh(m).min() <= 1e-12 * max(1.0, float(np.abs(m).max())):
        light = [c for c, d in zip(names, np.diag(m), strict=True) if d <= 1e-12]
        raise ValueError(
            "RigidBodyTree: the mass matrix is singular: some joint moves no mass or inertia "
            f"{light or ''} (give it an `armature`, or masses to the links it moves)"
        )


def _check_supported(model, names: tuple[str, ...]) -> None:
    """A `ValueError` for what the tree does not model: joints other than hinges and slides, equality
    constraints, gravity compensation."""
    for j in range(model.njnt):
        kind = int(model.jnt_type[j])
        if kind not in _JOINT_KINDS:
            raise ValueError(
                f"RigidBodyTree: joint {names[j]!r} is a {_OTHER_JOINTS.get(kind, kind)} joint; only "
                "hinge (revolute, continuous) and slide (prismatic) joints are supported"
            )
    if model.neq > 0:
        raise ValueError(
            "RigidBodyTree: the description has equality constraints (closed chains, coupled joints), "
            "which are not supported"
        )
    if np.any(np.asarray(model.body_gravcomp) != 0):
        raise ValueError("RigidBodyTree: gravity compensation (body gravcomp) is not supported")


def _disabled(model, flag) -> bool:
    """Whether the description's options disable `flag` (a `mujoco.mjtDisableBit`)."""
    return bool(int(model.opt.disableflags) & int(flag))


def _body_masses_and_inertias(model, restore: bool) -> tuple[np.ndarray, np.ndarray]:
    """The bodies' masses (nb,) and principal inertias (nb, 3), the world body left out; with `restore`, the
    values equal to `_BOUND` are the ones the compile bound raised, and are set back to 0."""
    mass = np.array(model.body_mass[1:], dtype=float)
    inertia = np.array(model.body_inertia[1:], dtype=float)
    if restore:
        mass[mass == _BOUND] = 0.0
        inertia[inertia == _BOUND] = 0.0
    return mass, inertia


def _springs_and_friction(model, shape: str, epsilon: float):
    """The joints' spring stiffness (n,) and their damping and friction loss as a `JointFriction` (None
    when neither is set), each zero where the description's options disable it."""
    import mujoco

    n = model.njnt
    dof = np.asarray(model.jnt_dofadr)
    bits = mujoco.mjtDisableBit
    stiffness = np.array(model.jnt_stiffness, dtype=float)
    if _disabled(model, bits.mjDSBL_SPRING):
        stiffness[:] = 0.0
    damping = np.array(model.dof_damping[dof], dtype=float)
    if _disabled(model, bits.mjDSBL_DAMPER):
        damping[:] = 0.0
    loss = np.array(model.dof_frictionloss[dof], dtype=float)
    # MuJoCo's friction loss is a constraint: disabling constraints removes it too.
    if _disabled(model, bits.mjDSBL_FRICTIONLOSS) or _disabled(model, bits.mjDSBL_CONSTRAINT):
        loss[:] = 0.0
    if not (np.any(damping != 0) or np.any(loss != 0)):
        return stiffness, None
    friction = JointFriction(
        n,
        viscous={j: float(damping[j]) for j in range(n) if damping[j] != 0},
        coulomb={j: float(loss[j]) for j in range(n) if loss[j] != 0},
        shape=shape,
        epsilon=epsilon,
    )
    return stiffness, friction


def _reference_mass_matrix(model, arm: np.ndarray) -> np.ndarray:
    """M(q0) from MuJoCo (cheap, no tracing), in joint order, with the armature `arm` in place of the
    description's."""
    import mujoco

    dof = np.asarray(model.jnt_dofadr)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    m0 = np.zeros((model.nv, model.nv))
    mujoco.mj_fullM(model, data, m0)
    return m0[np.ix_(dof, dof)] - np.diag(model.dof_armature[dof]) + np.diag(arm)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _forward_dynamics(static, params, q, qd, tau):
    """q̈ = FD(q, q̇, τ) of the tree `eqx.combine(params, static)`."""
    return eqx.combine(params, static)._solve_forward(q, qd, tau)[0]


@_forward_dynamics.defjvp
def _forward_dynamics_jvp(static, primals, tangents):
    """The derivative of forward dynamics through inverse dynamics, ID(q, q̇, q̈) = M(q) q̈ + C(q, q̇) q̇ + G(q) = τ:

        dq̈ = M⁻¹ (dτ − ∂ID/∂(θ, q, q̇) · (dθ, dq, dq̇))   at the q̈ found,

    so the derivative costs one RNEA's and a solve with M's factors from the forward pass, instead of the
    derivative of CRBA, RNEA and the factorisation (which also under reverse mode hold far more residuals)."""
    params, q, qd, tau = primals
    dparams, dq, dqd, dtau = tangents
    qdd, factor = eqx.combine(params, static)._solve_forward(q, qd, tau)

    def inverse(p, q, qd):
        system = eqx.combine(p, static)
        return system._rigid_inverse(system._tree(q), q, qd, qdd)

    _, d_id = jax.jvp(inverse, (params, q, qd), (dparams, dq, dqd))
    dqdd = _spatial.ldl_solve(factor, _scalars(dtau - d_id))
    return qdd, jnp.stack(dqdd)


# Reverse mode through a rollout stores every residual of every step (under `lax.scan`, one stacking and one
# reading operation per residual and step, each a separate kernel: about a hundred for this rule). Keeping only
# the inputs and recomputing q̈, M's factors and the linearised inverse dynamics in the backward pass costs less
# than those: the rollout gradient took 0.6-0.75× the time (batch 256, float64, 2-core CPU; see
# benchmarks/robot_dynamics.py). Forward mode is unchanged.
_remat_forward_dynamics = jax.checkpoint(_forward_dynamics, static_argnums=(0,))


def _expanded_dynamics(static, params, q, qd, tau):
    """q̈ = M⁻¹ (τ − C q̇ − G) from an expanded tree's polynomials and an unrolled LDLᵀ."""
    mass, bias = eqx.combine(params, static)._expanded(q, qd)
    factor = _spatial.ldl_factor(_entries(mass))
    return jnp.stack(_spatial.ldl_solve(factor, _scalars(tau - bias)))


# The same trade for the expansion: the DFKI pendubot's rollout gradient took 0.7-0.75× the time and a quarter of
# the memory (4.5 → 1.0 MiB of XLA buffers; batch 256, float64, 2-core CPU, benchmarks/robot_dynamics.py).
_remat_expanded_dynamics = jax.checkpoint(_expanded_dynamics, static_argnums=(0,))


def _world_inertias(plan, world_r, world_p, inertial):
    """The moving bodies' spatial inertias about the world origin (m, h_w, Ī_w) from their own (m, h, Ī) in
    their frames (R, p): with h' = R h, h_w = m p + h' and

        Ī_w = R Ī Rᵀ + (m |p|² + 2 p·h') 1 − m p pᵀ − p h'ᵀ − h' pᵀ   (linear in m, h, Ī)."""
    ib, nodes = np.array(plan.inertia_bodies, dtype=int), np.array(plan.inertia_nodes, dtype=int)
    r, p = world_r[nodes], world_p[nodes]
    mass, h, ibar = (x[ib] for x in inertial)
    h = jnp.einsum("bij,bj->bi", r, h)
    eye = jnp.eye(3, dtype=p.dtype)
    scalar = mass * jnp.sum(p**2, -1) + 2 * jnp.sum(p * h, -1)
    outer = lambda a, b: a[:, :, None] * b[:, None, :]  # noqa: E731
    rotated = r @ ibar @ jnp.swapaxes(r, 1, 2)
    ibar_w = rotated + scalar[:, None, None] * eye - mass[:, None, None] * outer(p, p)
    return mass, mass[:, None] * p + h, ibar_w - outer(p, h) - outer(h, p)


def _entries(m) -> list[list]:
    """The entries of a square matrix as nested lists of scalars."""
    return [_scalars(row) for row in _scalars_rows(m)]


def _scalars_rows(m) -> list:
    return [piece.reshape(m.shape[1:]) for piece in jax.lax.split(m, (1,) * m.shape[0])]


def _scalars(x) -> list:
    """The entries of a vector as scalars, by one split (whose transpose is one concatenation)."""
    return [piece.reshape(()) for piece in jax.lax.split(x, (1,) * x.shape[0])]


def _float_dtype(q):
    dt = jnp.result_type(q)
    return dt if jnp.issubdtype(dt, jnp.floating) else jnp.result_type(float)


def _quat_to_matrix(quat):
    """Rotation matrices of quaternions (w, x, y, z), normalised: shape (..., 3, 3)."""
    w, x, y, z = (quat[..., i] for i in range(4))
    s = 2.0 / jnp.sum(quat**2, axis=-1)
    rows = [
        [1 - s * (y * y + z * z), s * (x * y - w * z), s * (x * z + w * y)],
        [s * (x * y + w * z), 1 - s * (x * x + z * z), s * (y * z - w * x)],
        [s * (x * z - w * y), s * (y * z + w * x), 1 - s * (x * x + y * y)],
    ]
    return jnp.stack([jnp.stack(r, axis=-1) for r in rows], axis=-2)


def _rotation(axis, angle, eye):
    """Rodrigues: the rotation by `angle` about the unit `axis`."""
    k = jnp.array(
        [[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]],
        dtype=eye.dtype,
    )
    return eye + jnp.sin(angle) * k + (1 - jnp.cos(angle)) * (k @ k)


def mujoco_model(source: str | os.PathLike, *, string: bool = False):
    """The `mujoco.MjModel` that `RigidBodyTree` reads from a URDF or MJCF file (or XML string with `string`):
    a URDF without its visual and collision elements; where MuJoCo refuses zero masses or inertias of moving
    bodies, compiled with a 1e-13 bound (which `RigidBodyTree` sets back to 0). For comparisons with MuJoCo."""
    return (_compile_string(source) if string else _compile_file(source, None))[0]


def _parse_xml(source: str, *, string: bool = False) -> ET.Element:
    """The root element of an XML document (a file, or the text itself with `string`); a malformed one is a
    `ValueError` naming the file, the line and column, and the parser's message."""
    where = "the XML string" if string else source
    try:
        return ET.fromstring(source) if string else ET.parse(source).getroot()
    except ET.ParseError as e:
        line, column = e.position
        problem = str(e).split(":")[0]
        raise ValueError(
            f"RigidBodyTree: {where} is not well-formed XML: {problem} at line {line}, column {column + 1}"
        ) from None


def _compile_string(xml: str):
    import mujoco

    root = _parse_xml(xml, string=True)
    if root.tag == "robot":
        xml = _urdf_for_dynamics(root)
    elif root.tag != "mujoco":
        raise ValueError(
            f"RigidBodyTree: expected a URDF <robot> or an MJCF <mujoco> document, got <{root.tag}>"
        )
    return _compile(mujoco.MjSpec.from_string(xml))


def _compile_file(path, expected: str | None):
    import mujoco

    path = os.fspath(path)
    tag = _parse_xml(path).tag
    if expected is not None and tag != expected:
        kind = {"robot": "URDF <robot>", "mujoco": "MJCF <mujoco>"}[expected]
        raise ValueError(f"RigidBodyTree: {path} is not a {kind} document (root <{tag}>)")
    if tag == "robot":
        with open(path, encoding="utf-8") as f:
            return _compile_string(f.read())
    if tag != "mujoco":
        raise ValueError(f"RigidBodyTree: {path}: expected <robot> or <mujoco>, got <{tag}>")
    return _compile(mujoco.MjSpec.from_file(path))


def _compile(spec):
    """Compile a parsed description; if MuJoCo refuses a moving body without mass or inertia (a point mass, a
    massless link between two joints) and the description sets no bounds itself, compile it again with tiny
    bounds, whose values `RigidBodyTree` sets back to 0. Returns the model and whether the bounds were set."""
    own_bounds = spec.compiler.boundmass > 0 or spec.compiler.boundinertia > 0
    try:
        return spec.compile(), False
    except ValueError as e:
        if own_bounds or "mjMINVAL" not in str(e):
            raise ValueError(f"RigidBodyTree: MuJoCo could not compile the description: {e}") from e
    # The failed compilation has fused the static bodies already, so no massless welded body gets the bound.
    spec.compiler.boundmass = _BOUND
    spec.compiler.boundinertia = _BOUND
    try:
        return spec.compile(), True
    except ValueError as e:
        raise ValueError(f"RigidBodyTree: MuJoCo could not compile the description: {e}") from e


def _urdf_for_dynamics(root: ET.Element) -> str:
    """The URDF with what dynamics does not need (visual, collision, gazebo: meshes) removed, and a declared
    `world` link when joints refer to one (the ROS convention MuJoCo's URDF reader does not follow)."""
    for joint in root.iter("joint"):
        if joint.find("mimic") is not None:
            raise ValueError(
                f"RigidBodyTree: URDF joint {joint.get('name')!r} mimics another joint; MuJoCo's URDF "
                "reader would drop that coupling silently, so mimic joints are not supported"
            )
    for link in root.findall("link"):
        for tag in ("visual", "collision"):
            for child in link.findall(tag):
                link.remove(child)
    for child in root.findall("gazebo"):
        root.remove(child)
    links = {link.get("name") for link in root.findall("link")}
    referenced = {
        el.get("link")
        for joint in root.findall("joint")
        for el in (joint.find("parent"), joint.find("child"))
        if el is not None
    }
    if "world" in referenced and "world" not in links:
        root.insert(0, ET.Element("link", {"name": "world"}))
    return ET.tostring(root, encoding="unicode")


def _armature(arm: np.ndarray, given, names: tuple[str, ...]) -> np.ndarray:
    if given is None:
        return arm
    if isinstance(given, Mapping):
        unknown = set(given) - set(names)
        if unknown:
            raise ValueError(
                f"RigidBodyTree.armature: unknown joints {sorted(unknown)}; joints: {list(names)}"
            )
        arm = arm.copy()
        for name, value in given.items():
            arm[names.index(name)] = float(value)
    else:
        arm = np.broadcast_to(np.asarray(given, dtype=float), arm.shape).copy()
    if not np.all(np.isfinite(arm) & (arm >= 0)):
        raise ValueError(f"RigidBodyTree.armature must be finite and >= 0, got {arm}")
    return arm


def _inertia_offset(given, n: int) -> np.ndarray:
    if given is None:
        return np.zeros((n, n))
    offset = np.asarray(given, dtype=float)
    if offset.shape != (n, n):
        raise ValueError(
            f"RigidBodyTree.inertia_offset must have shape ({n}, {n}), got {offset.shape}"
        )
    if not np.all(np.isfinite(offset)) or not np.allclose(offset, offset.T, rtol=0, atol=1e-12):
        raise ValueError("RigidBodyTree.inertia_offset must be a finite symmetric matrix")
    return 0.5 * (offset + offset.T)


def _actuation(model, names: tuple[str, ...], actuated) -> tuple[np.ndarray, tuple[str, ...]]:
    """B (n, m) and the input names: unit inputs on the `actuated` joints, else the description's actuators."""
    import mujoco

    n = len(names)
    if actuated is not None:
        if isinstance(actuated, str):
            actuated = (actuated,)
        unknown = [a for a in actuated if a not in names]
        if unknown or len(set(actuated)) != len(actuated):
            raise ValueError(
                f"RigidBodyTree.actuated: {list(actuated)} must be distinct joint names of {list(names)}"
            )
        b = np.zeros((n, len(actuated)))
        for i, a in enumerate(actuated):
            b[names.index(a), i] = 1.0
        return b, tuple(
            f"{a}_{'torque' if int(model.jnt_type[names.index(a)]) == 3 else 'force'}"
            for a in actuated
        )
    b = np.zeros((n, model.nu))
    inputs = []
    joint_trn = (int(mujoco.mjtTrn.mjTRN_JOINT), int(mujoco.mjtTrn.mjTRN_JOINTINPARENT))
    for a in range(model.nu):
        name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_ACTUATOR, a) or f"actuator{a}"
        plain = (
            int(model.actuator_trntype[a]) in joint_trn
            and int(model.actuator_gaintype[a]) == int(mujoco.mjtGain.mjGAIN_FIXED)
            and int(model.actuator_biastype[a]) == int(mujoco.mjtBias.mjBIAS_NONE)
            and int(model.actuator_dyntype[a]) == int(mujoco.mjtDyn.mjDYN_NONE)
        )
        if not plain:
            raise ValueError(
                f"RigidBodyTree: actuator {name!r} is not a plain joint motor (joint transmission, fixed "
                "gain, no bias, no dynamics); pass `actuated=` joint names instead"
            )
        j = int(model.actuator_trnid[a, 0])
        b[int(model.jnt_dofadr[j]), a] = model.actuator_gear[a, 0] * model.actuator_gainprm[a, 0]
        inputs.append(name)
    return b, tuple(inputs)

"""A double pendulum (two links, revolute joints); acrobot and pendubot are its under-actuated versions."""

import dataclasses
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._types import InputMatrix, MassMatrix, Q, QDot, Scalar
from ._params import (
    CONSISTENCY_MARGIN,
    as_param,
    check_conventions,
    check_inertia,
    check_positive,
    concrete,
    joint_inertia,
)
from .base import AbstractSystem

_ACTUATION = {
    "both": ((1.0, 0.0), (0.0, 1.0)),
    "shoulder": ((1.0,), (0.0,)),  # pendubot
    "elbow": ((0.0,), (1.0,)),  # acrobot
}
_KINDS = {"m1": "mass", "m2": "mass", "l1": "length", "r1": "com", "r2": "com"} | dict.fromkeys(
    ("I1", "I2", "Ir"), "inertia"
)
_INPUT_NAMES = {"both": ("tau1", "tau2"), "shoulder": ("tau1",), "elbow": ("tau2",)}


class DoublePendulum(AbstractSystem):
    """Two links; q1 is absolute from hanging down, q2 is relative to link 1; u = joint torques.

    Link i has mass m_i, its centre of mass at distance r_i from its joint and inertia I_i, about the centre of mass
    (`inertia_about="com"`, the default) or about the joint axis ("joint", what identified robot models give;
    J_i = I_i or I_i + m_i r_i²). l1 is the distance between the joints. With h = m2 l1 r2 and c2 = cos q2:

        M11 = J1 + J2 + m2 l1² + 2 h c2 + (gr² + 1) Ir,   M12 = J2 + h c2 − gr Ir,   M22 = J2 + gr² Ir,
        C = [[−h sin q2 q̇2, −h sin q2 (q̇1 + q̇2)], [h sin q2 q̇1, 0]]   (Christoffel form),
        G = (g (m1 r1 + m2 l1) sin q1 + g m2 r2 sin(q1 + q2),  g m2 r2 sin(q1 + q2)),

    plus a constant symmetric `inertia_offset` (2, 2) added to M for any other constant inertia coupling.
    Ir and gr are motor rotor inertia and gear ratio in the form of the DFKI rig's identified model: motor 1 on the
    base (rotor angle gr q1), motor 2 on link 1 (rotor angle q1 − gr q2). By default point masses at the link
    ends: r1 = l1, r2 = `l2`, I = 0, no rotor. `l2` only gives that default: with r2 given it plays no role.

    `parameter_set="identified"` takes a lab's identified (lumped, base) parameter set as it is: identification
    determines only the combinations in M, C and G, so e.g. I2 about the joint may come out below m2 r2², which
    no rigid link has. Instead of J_i ≥ m_i r_i² it checks what the equations of motion need, M(q) positive
    definite for every q. Writing M = A + cos q2 · H with H = [[2h, h], [h, 0]], det M = det A + cos q2 · (…) −
    h² cos² q2 is concave in cos q2, so over cos q2 ∈ [−1, 1] it is smallest at q2 = 0 or π, and

        M(q) ≻ 0 for all q   ⇔   M22 > 0,  det M(q2 = 0) > 0  and  det M(q2 = π) > 0.

    `actuated` is "both" (B = I), "elbow" (the acrobot) or "shoulder" (the pendubot).
    """

    velocity_dependent = True
    # What each parameter is, for the default bounds of learning it (`parameters.learned_bounds`).
    parameter_kinds: ClassVar[dict[str, str]] = _KINDS

    m1: jax.Array
    m2: jax.Array
    l1: jax.Array
    r1: jax.Array
    r2: jax.Array
    I1: jax.Array
    I2: jax.Array
    Ir: jax.Array
    gr: jax.Array
    inertia_offset: jax.Array
    g: jax.Array
    actuated: str = eqx.field(static=True, default="both")
    inertia_about: str = eqx.field(static=True, default="com")
    parameter_set: str = eqx.field(static=True, default="physical")

    def __init__(
        self,
        m1=1.0,
        m2=1.0,
        l1=1.0,
        l2=None,
        r1=None,
        r2=None,
        I1=0.0,
        I2=0.0,
        g=9.81,
        actuated: str = "both",
        *,
        inertia_about: str = "com",
        Ir=0.0,
        gr=0.0,
        inertia_offset=None,
        parameter_set: str = "physical",
    ):
        if actuated not in _ACTUATION:
            raise ValueError(
                f"DoublePendulum.actuated must be one of {sorted(_ACTUATION)}, got {actuated!r}"
            )
        if r2 is None:
            l2 = 1.0 if l2 is None else l2
            check_positive("DoublePendulum", "l2", as_param(l2))
            r2 = l2
        self.m1, self.m2 = as_param(m1), as_param(m2)
        self.l1 = as_param(l1)
        self.r1 = self.l1 if r1 is None else as_param(r1)
        self.r2 = as_param(r2)
        self.I1, self.I2 = as_param(I1), as_param(I2)
        self.Ir, self.gr = as_param(Ir), as_param(gr)
        offset = jnp.zeros((2, 2)) if inertia_offset is None else as_param(inertia_offset)
        self.inertia_offset = offset
        self.g = as_param(g)
        self.actuated = actuated
        self.inertia_about = inertia_about
        self.parameter_set = parameter_set

    def __check_init__(self):
        for name in ("m1", "m2", "l1"):
            check_positive("DoublePendulum", name, getattr(self, name))
        for name in ("r1", "r2", "I1", "I2", "Ir", "gr", "g"):
            check_positive("DoublePendulum", name, getattr(self, name), allow_zero=True)
        check_conventions("DoublePendulum", self.inertia_about, self.parameter_set)
        if self.parameter_set == "physical":
            for i, (m, r, inertia) in enumerate(
                ((self.m1, self.r1, self.I1), (self.m2, self.r2, self.I2)), start=1
            ):
                check_inertia("DoublePendulum", str(i), m, r, inertia, self.inertia_about)
        offset = concrete(self.inertia_offset)
        if jnp.shape(self.inertia_offset) != (2, 2) or (
            offset is not None and not np.allclose(offset, offset.T)
        ):
            raise ValueError(
                f"DoublePendulum.inertia_offset must be a symmetric 2 × 2 matrix, got {offset}"
            )
        if self.parameter_set == "identified":
            self._check_positive_definite()

    def _check_positive_definite(self) -> None:
        """M(q) ≻ 0 for every q, from M at q2 = 0 and π (see the class docstring); skipped under tracing."""
        ends = [concrete(self.mass_matrix(jnp.asarray([0.0, q2]))) for q2 in (0.0, np.pi)]
        if any(m is None for m in ends):
            return
        dets = [float(m[0, 0] * m[1, 1] - m[0, 1] * m[1, 0]) for m in ends]
        m22 = float(ends[0][1, 1])
        if m22 > 0 and min(dets) > 0:
            return
        raise ValueError(
            "DoublePendulum (parameter_set: identified): M(q) must be positive definite for every q, "
            f"but M22 = {m22:.6g}, det M = {dets[0]:.6g} at q2 = 0 and {dets[1]:.6g} at q2 = π "
            "(det M is concave in cos q2, so these are its smallest values; all three must be > 0). "
            "These lumped parameters are not dynamically consistent: check I1, I2 (and their convention "
            "inertia_about), m2 l1 r2, Ir, gr and inertia_offset"
        )

    def consistent(self) -> "DoublePendulum":
        """This system with I1 and I2 raised, where needed, to the least values that keep M(q) ≻ 0 for every q.

        A physical set: J_i ≥ m_i r_i² (parallel axis). An identified set: M22 ≥ ε s (s the sum of the inertias)
        by raising I2, then det M ≥ ε M11 M22 at q2 = 0 and π (the determinant's smallest values) by raising I1,
        which enters M11 alone, so det M grows with it: with M12(c) = B + h c, M11(c) = A + 2 h c,

            ΔJ1 = max(0, max_{c = ±1} M12(c)² / ((1 − ε) M22) − M11(c)).

        Other parameters are not moved, and a system already inside the region is returned unchanged in value.
        """
        j1 = joint_inertia(self.m1, self.r1, self.I1, self.inertia_about)
        j2 = joint_inertia(self.m2, self.r2, self.I2, self.inertia_about)
        if self.parameter_set == "physical":
            raise1 = jnp.maximum(self.m1 * self.r1**2 - j1, 0.0)
            raise2 = jnp.maximum(self.m2 * self.r2**2 - j2, 0.0)
            return eqx.tree_at(lambda s: (s.I1, s.I2), self, (self.I1 + raise1, self.I2 + raise2))
        eps = CONSISTENCY_MARGIN
        off = self.inertia_offset
        rotor = self.Ir * self.gr
        scale = (
            jnp.abs(j1)
            + jnp.abs(j2)
            + self.m2 * (self.l1**2 + self.r2**2)
            + self.Ir * (1 + self.gr**2)
        )
        m22 = j2 + self.gr * rotor + off[1, 1]
        raise2 = jnp.maximum(eps * scale - m22, 0.0)
        j2, m22 = j2 + raise2, m22 + raise2
        h = self.m2 * self.l1 * self.r2
        a = j1 + j2 + self.m2 * self.l1**2 + self.gr * rotor + self.Ir + off[0, 0]
        b = j2 - rotor + off[0, 1]
        need = jnp.stack(
            [(b + h * c) ** 2 / ((1 - eps) * m22) - (a + 2 * h * c) for c in (1.0, -1.0)]
        )
        raise1 = jnp.maximum(jnp.max(need), 0.0)
        return eqx.tree_at(lambda s: (s.I1, s.I2), self, (self.I1 + raise1, self.I2 + raise2))

    def with_actuation(self, actuated: str) -> "DoublePendulum":
        """The same links driven at `actuated` ("both", "elbow" or "shoulder")."""
        if actuated not in _ACTUATION:
            raise ValueError(
                f"DoublePendulum.actuated must be one of {sorted(_ACTUATION)}, got {actuated!r}"
            )
        return dataclasses.replace(self, actuated=actuated)

    @classmethod
    def acrobot(cls, **params) -> "DoublePendulum":
        """Only the elbow (joint 2) is actuated."""
        return cls(**params, actuated="elbow")

    @classmethod
    def pendubot(cls, **params) -> "DoublePendulum":
        """Only the shoulder (joint 1) is actuated."""
        return cls(**params, actuated="shoulder")

    @property
    def coordinate_names(self):
        return ("q1", "q2")

    @property
    def input_names(self):
        return _INPUT_NAMES[self.actuated]

    @property
    def angles(self):
        return (True, True)

    def mass_matrix(self, q: Q) -> MassMatrix:
        c2 = jnp.cos(q[1])
        j1 = joint_inertia(self.m1, self.r1, self.I1, self.inertia_about)
        j2 = joint_inertia(self.m2, self.r2, self.I2, self.inertia_about)
        h = self.m2 * self.l1 * self.r2 * c2
        rotor = self.Ir * self.gr
        m11 = j1 + j2 + self.m2 * self.l1**2 + 2 * h + (self.gr * rotor + self.Ir)
        m12 = j2 + h - rotor
        m22 = j2 + self.gr * rotor
        return jnp.stack([jnp.stack([m11, m12]), jnp.stack([m12, m22])]) + self.inertia_offset

    def coriolis(self, q: Q, qd: QDot) -> MassMatrix:
        hs = self.m2 * self.l1 * self.r2 * jnp.sin(q[1])
        return jnp.stack(
            [
                jnp.stack([-hs * qd[1], -hs * (qd[0] + qd[1])]),
                jnp.stack([hs * qd[0], jnp.zeros_like(hs * qd[0])]),
            ]
        )

    def gravity(self, q: Q):
        s12 = self.g * self.m2 * self.r2 * jnp.sin(q[0] + q[1])
        s1 = self.g * (self.m1 * self.r1 + self.m2 * self.l1) * jnp.sin(q[0])
        return jnp.stack([s1 + s12, s12])

    def potential_energy(self, q: Q) -> Scalar:
        return -self.g * (
            (self.m1 * self.r1 + self.m2 * self.l1) * jnp.cos(q[0])
            + self.m2 * self.r2 * jnp.cos(q[0] + q[1])
        )

    def input_matrix(self, q: Q) -> InputMatrix:
        return jnp.asarray(_ACTUATION[self.actuated], dtype=jnp.result_type(q))

"""A double pendulum (two links, revolute joints); acrobot and pendubot are its under-actuated versions."""

import equinox as eqx
import jax
import jax.numpy as jnp

from .._types import InputMatrix, MassMatrix, Q, QDot, Scalar
from ._params import as_param, check_positive
from .base import AbstractSystem

_ACTUATION = {
    "both": ((1.0, 0.0), (0.0, 1.0)),
    "shoulder": ((1.0,), (0.0,)),  # pendubot
    "elbow": ((0.0,), (1.0,)),  # acrobot
}
_INPUT_NAMES = {"both": ("tau1", "tau2"), "shoulder": ("tau1",), "elbow": ("tau2",)}


class DoublePendulum(AbstractSystem):
    """Two links; q1 is absolute from hanging down, q2 is relative to link 1; u = joint torques.

    r_i is the joint-to-centre-of-mass distance and I_i the inertia of link i about its centre of mass (defaults:
    point masses at the link ends, r_i = l_i, I_i = 0). With h = m2 l1 r2:

        M11 = I1 + I2 + m1 r1² + m2 (l1² + r2² + 2 l1 r2 cos q2),  M12 = I2 + m2 (r2² + l1 r2 cos q2),
        M22 = I2 + m2 r2²,
        C = [[−h sin q2 q̇2, −h sin q2 (q̇1 + q̇2)], [h sin q2 q̇1, 0]]   (Christoffel form),
        G = (g (m1 r1 + m2 l1) sin q1 + g m2 r2 sin(q1 + q2),  g m2 r2 sin(q1 + q2)).

    `actuated` is "both" (B = I), "elbow" (the acrobot) or "shoulder" (the pendubot).
    """

    velocity_dependent = True

    m1: jax.Array
    m2: jax.Array
    l1: jax.Array
    l2: jax.Array
    r1: jax.Array
    r2: jax.Array
    I1: jax.Array
    I2: jax.Array
    g: jax.Array
    actuated: str = eqx.field(static=True, default="both")

    def __init__(
        self,
        m1=1.0,
        m2=1.0,
        l1=1.0,
        l2=1.0,
        r1=None,
        r2=None,
        I1=0.0,
        I2=0.0,
        g=9.81,
        actuated: str = "both",
    ):
        if actuated not in _ACTUATION:
            raise ValueError(
                f"DoublePendulum.actuated must be one of {sorted(_ACTUATION)}, got {actuated!r}"
            )
        self.m1, self.m2 = as_param(m1), as_param(m2)
        self.l1, self.l2 = as_param(l1), as_param(l2)
        self.r1 = self.l1 if r1 is None else as_param(r1)
        self.r2 = self.l2 if r2 is None else as_param(r2)
        self.I1, self.I2 = as_param(I1), as_param(I2)
        self.g = as_param(g)
        self.actuated = actuated

    def __check_init__(self):
        for name in ("m1", "m2", "l1", "l2"):
            check_positive("DoublePendulum", name, getattr(self, name))
        for name in ("r1", "r2", "I1", "I2", "g"):
            check_positive("DoublePendulum", name, getattr(self, name), allow_zero=True)

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
        m22 = self.I2 + self.m2 * self.r2**2
        m12 = m22 + self.m2 * self.l1 * self.r2 * c2
        m11 = (
            self.I1
            + self.m1 * self.r1**2
            + m22
            + self.m2 * (self.l1**2 + 2 * self.l1 * self.r2 * c2)
        )
        return jnp.stack([jnp.stack([m11, m12]), jnp.stack([m12, m22])])

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

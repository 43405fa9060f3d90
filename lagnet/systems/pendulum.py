"""A pendulum: one rigid link on a revolute joint, J θ̈ + m g r sin θ = u."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._types import InputMatrix, MassMatrix, Q, QDot, Scalar
from ._params import as_param, check_positive, concrete
from .base import AbstractSystem

INERTIA_ABOUT = ("com", "joint")


def joint_inertia(mass, com, inertia, about: str):
    """J = I + m r² (I about the centre of mass, `about="com"`) or J = I (about the joint axis)."""
    return inertia + mass * com**2 if about == "com" else inertia


def check_inertia(system: str, suffix: str, mass, com, inertia, about: str) -> None:
    """Refuse an unknown convention, and a joint-axis inertia below m r² (parallel axis: J = I_com + m r² ≥ m r²),
    with both conventions spelled out."""
    if about not in INERTIA_ABOUT:
        raise ValueError(
            f"{system}.inertia_about must be one of {list(INERTIA_ABOUT)}, got {about!r}"
        )
    values = [concrete(v) for v in (inertia, mass, com)]
    if about == "joint" and all(v is not None for v in values):
        i, m, r = values
        if np.any(i < m * r**2 * (1 - 1e-9)):
            raise ValueError(
                f"{system}.I{suffix} = {i} about the joint axis must be >= m{suffix} r{suffix}² = "
                f"{m * r**2} (parallel axis: J = I_com + m r²); if {i} is the inertia about the centre "
                "of mass, set inertia_about: com"
            )


class Pendulum(AbstractSystem):
    """A link of `mass` m with its centre of mass at distance r = `com` from the joint and inertia I; θ = 0 hangs
    down; u = torque at the joint:

        J θ̈ + m g r sin θ = u,    V = −m g r cos θ,    J = I + m r² (`inertia_about="com"`) or I ("joint").

    `Pendulum(mass, length)` is a point mass at `length` (r = length, I = 0); with the defaults θ̈ = −sin θ, the
    lecture's pendulum. A real arm: `Pendulum(mass=m, com=r, inertia=J, inertia_about="joint")` with its
    identified values.
    """

    mass: jax.Array
    com: jax.Array
    inertia: jax.Array
    g: jax.Array
    inertia_about: str = eqx.field(static=True)

    def __init__(
        self, mass=1.0, length=None, g=1.0, *, com=None, inertia=0.0, inertia_about: str = "com"
    ):
        if length is not None and com is not None:
            raise ValueError(
                "Pendulum: give `length` (a point mass at the end of a massless rod) or `com` (the centre "
                "of mass distance of a real link), not both"
            )
        if length is not None:
            check_positive("Pendulum", "length", as_param(length))
        self.mass = as_param(mass)
        self.com = as_param(
            1.0 if length is None and com is None else length if com is None else com
        )
        self.inertia = as_param(inertia)
        self.g = as_param(g)
        self.inertia_about = inertia_about

    def __check_init__(self):
        check_positive("Pendulum", "mass", self.mass)
        check_positive("Pendulum", "com", self.com)
        check_positive("Pendulum", "inertia", self.inertia, allow_zero=True)
        check_positive("Pendulum", "g", self.g, allow_zero=True)
        check_inertia("Pendulum", "", self.mass, self.com, self.inertia, self.inertia_about)

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
        j = joint_inertia(self.mass, self.com, self.inertia, self.inertia_about)
        return jnp.reshape(j, (1, 1))

    def coriolis(self, q: Q, qd: QDot) -> MassMatrix:
        return jnp.zeros((1, 1), jnp.result_type(q, qd))

    def gravity(self, q: Q):
        return self.mass * self.g * self.com * jnp.sin(q)

    def potential_energy(self, q: Q) -> Scalar:
        return -self.mass * self.g * self.com * jnp.cos(q[0])

    def input_matrix(self, q: Q) -> InputMatrix:
        return jnp.ones((1, 1), jnp.result_type(q))

"""A pendulum: one rigid link on a revolute joint, J θ̈ + m g r sin θ = u."""

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp

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
from ._params import INERTIA_ABOUT as INERTIA_ABOUT  # also importable from here
from .base import AbstractSystem


class Pendulum(AbstractSystem):
    """A link of `mass` m with its centre of mass at distance r = `com` from the joint and inertia I; θ = 0 hangs
    down; u = torque at the joint:

        J θ̈ + m g r sin θ = u,    V = −m g r cos θ,    J = I + m r² (`inertia_about="com"`) or I ("joint").

    `Pendulum(mass, length)` is a point mass at `length` (r = length, I = 0); with the defaults θ̈ = −sin θ, the
    lecture's pendulum. A real arm: `Pendulum(mass=m, com=r, inertia=J, inertia_about="joint")` with its
    identified values. Only J and m r enter the dynamics, so an identified J may lie below m r² for the m and r
    given: `parameter_set="identified"` takes it as it is and checks J > 0 instead of J ≥ m r².
    """

    parameter_kinds: ClassVar[dict[str, str]] = {"mass": "mass", "com": "com", "inertia": "inertia"}

    mass: jax.Array
    com: jax.Array
    inertia: jax.Array
    g: jax.Array
    inertia_about: str = eqx.field(static=True)
    parameter_set: str = eqx.field(static=True)

    def __init__(
        self,
        mass=1.0,
        length=None,
        g=1.0,
        *,
        com=None,
        inertia=0.0,
        inertia_about: str = "com",
        parameter_set: str = "physical",
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
        self.parameter_set = parameter_set

    def __check_init__(self):
        check_positive("Pendulum", "mass", self.mass)
        check_positive("Pendulum", "com", self.com)
        check_positive("Pendulum", "inertia", self.inertia, allow_zero=True)
        check_positive("Pendulum", "g", self.g, allow_zero=True)
        check_conventions("Pendulum", self.inertia_about, self.parameter_set)
        if self.parameter_set == "physical":
            check_inertia("Pendulum", "", self.mass, self.com, self.inertia, self.inertia_about)
            return
        j = concrete(joint_inertia(self.mass, self.com, self.inertia, self.inertia_about))
        if j is not None and not j > 0:
            raise ValueError(
                f"Pendulum (parameter_set: identified): the inertia about the joint J = {j} must be > 0 "
                "(M = J); identified parameters are checked for M positive definite, not J >= m r²"
            )

    def consistent(self) -> "Pendulum":
        """This pendulum with its inertia raised, where needed, to J ≥ m r² (a physical set) or J ≥ ε m r² (an
        identified one): M = J > 0."""
        j = joint_inertia(self.mass, self.com, self.inertia, self.inertia_about)
        floor = (
            self.mass
            * self.com**2
            * (1.0 if self.parameter_set == "physical" else CONSISTENCY_MARGIN)
        )
        return eqx.tree_at(lambda s: s.inertia, self, self.inertia + jnp.maximum(floor - j, 0.0))

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

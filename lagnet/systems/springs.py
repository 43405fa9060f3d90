"""Point masses on springs: the interface `lagnet.integrators.LinearlyImplicitEuler` solves matrix-free."""

import abc

import equinox as eqx
import jax

from .._types import Array, Float, Q
from .base import AbstractSystem


class AbstractSpringNetwork(AbstractSystem):
    """Point masses on springs, what `lagnet.integrators.LinearlyImplicitEuler` solves matrix-free:

        m q̈ = f(q, q̇) = −∇V(q) − c q̇ (+ Q),   M = m I,   K̃(q) ≈ −∂f/∂q symmetric positive semidefinite,

    with the scalars m = `mass` and c = `drag`, f = `generalised_force(q, q̇)` and K̃ p = `stiffness_matvec(q, p)`.
    """

    mass: eqx.AbstractVar[jax.Array]
    drag: eqx.AbstractVar[jax.Array]

    @abc.abstractmethod
    def stiffness_matvec(self, q: Q, p: Float[Array, " n"]) -> Float[Array, " n"]:
        """K̃(q) p, the SPD part of the stiffness −∂f/∂q applied to p, without assembling K̃."""

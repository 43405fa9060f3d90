"""Learned models: anything `lagnet.rollout` can step, q̈ = f(q, q̇, u)."""

import abc

import equinox as eqx
import jax
import jax.numpy as jnp

from .._types import Q, QDDot, QDot, U
from ..systems import AbstractSystem
from .features import OutputScale, StateFeatures


class AbstractModel(eqx.Module):
    """A model of q̈ = f(q, q̇, u) for one sample, built around a known `system` (its coordinates, angles and inputs).

    `trainable()` says which leaves an optimiser may change (a pytree of bools shaped like the model): the known
    system's parameters are frozen unless a model marks them learnable.
    """

    system: eqx.AbstractVar[AbstractSystem]

    @abc.abstractmethod
    def acceleration(self, q: Q, qd: QDot, u: U | None = None) -> QDDot: ...

    @property
    def velocity_dependent(self) -> bool:
        return True

    @property
    def n_dof(self) -> int:
        return self.system.n_dof

    @property
    def coordinate_names(self):
        return self.system.coordinate_names

    @property
    def angles(self):
        return self.system.angles

    @property
    def input_names(self):
        return self.system.input_names

    @property
    def n_inputs(self) -> int:
        """Inputs the model takes per step: the system's, times (1 + input history) where a model has one."""
        return self.system.n_inputs * (1 + getattr(self, "input_history", 0))

    def _inputs(self, u: U | None, q: Q) -> U:
        # An unforced rollout passes u = None: the inputs are then zero.
        return jnp.zeros(self.n_inputs, q.dtype) if u is None else u

    # The model's Lagrangian L = T − V: the known system's unless a model learns its own. `Variational` steps
    # with it (the rest of q̈ counts as non-conservative force), and evaluation measures energy with it.
    def mass_matrix(self, q: Q):
        return self._known_system().mass_matrix(q)

    def kinetic_energy(self, q: Q, qd: QDot):
        return 0.5 * qd @ self.mass_matrix(q) @ qd

    def potential_energy(self, q: Q):
        return self._known_system().potential_energy(q)

    def energy(self, q: Q, qd: QDot):
        """E = T + V of the model."""
        return self.kinetic_energy(q, qd) + self.potential_energy(q)

    def _known_system(self) -> AbstractSystem:
        return self.system

    def trainable(self):
        """A filter spec for `eqx.partition`: True for the inexact arrays an optimiser updates.

        The known system, the feature statistics and output scales are frozen (a `False` prefix over each).
        """

        def frozen(x):
            return isinstance(x, AbstractSystem | StateFeatures | OutputScale)

        return jax.tree_util.tree_map(
            lambda x: False if frozen(x) else eqx.is_inexact_array(x), self, is_leaf=frozen
        )

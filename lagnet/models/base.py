"""The learned-model interface: known mechanics composed with learned parts, q̈ = f(q, q̇, u)."""

import abc

import equinox as eqx
import jax

from ..systems.base import AbstractDynamics, AbstractSystem
from ..systems.parameters import Bounded
from .features import OutputScale, StateFeatures
from .history import InputHistory
from .region import TrainingRegion


class AbstractModel(AbstractDynamics):
    """A model of q̈ = f(q, q̇, u) for one sample, built around a known `system` (its coordinates, angles,
    inputs, and whatever physics the model keeps).

    The model reads the stacked input ū = (u_t, u_{t−1}, …, u_{t−k}) of its `history` (k = `input_history`),
    so `n_inputs` is m (k + 1). `trainable()` says which leaves an optimiser may change (a pytree of bools
    shaped like the model); `frozen_known_parts` is the usual answer.
    """

    system: eqx.AbstractVar[AbstractSystem]
    input_history: eqx.AbstractVar[int]

    @abc.abstractmethod
    def trainable(self):
        """A filter spec for `eqx.partition`: True for the inexact arrays an optimiser updates."""

    def physics_prior(self) -> "AbstractModel | None":
        """The model's physics alone, without its learned parts: what the learned parts are measured against
        (the identified physics of a PINODE). None for a model with no physics of its own (a black box)."""
        return None

    def with_physics_trainable(self, trainable: bool) -> "AbstractModel":
        """This model with its physical parameters trainable or frozen; a model without any: itself."""
        return self

    @property
    def history(self) -> InputHistory:
        return InputHistory(self.system.n_inputs, self.input_history)

    @property
    def n_dof(self) -> int:
        return self.system.n_dof

    @property
    def n_inputs(self) -> int:
        return self.history.size

    @property
    def coordinate_names(self) -> tuple[str, ...]:
        return self.system.coordinate_names

    @property
    def angles(self) -> tuple[bool, ...]:
        return self.system.angles

    @property
    def input_names(self) -> tuple[str, ...]:
        return self.system.input_names

    @property
    def state_names(self) -> tuple[str, ...]:
        return self.system.state_names


def frozen_known_parts(model: eqx.Module):
    """The default `trainable()`: every inexact array, except the known system's parameters, the feature
    statistics, the training region and the output scales (each frozen by a `False` prefix) and the scales of
    bounded parameters."""

    def frozen(x):
        return isinstance(x, AbstractSystem | StateFeatures | OutputScale | TrainingRegion)

    def spec(x):
        if frozen(x):
            return False
        if isinstance(x, Bounded):
            return x.trainable()
        return eqx.is_inexact_array(x)

    return jax.tree_util.tree_map(
        spec, model, is_leaf=lambda x: frozen(x) or isinstance(x, Bounded)
    )

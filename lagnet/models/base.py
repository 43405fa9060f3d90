"""The learned-model interface: known mechanics composed with learned parts, q̈ = f(q, q̇, u)."""

import abc

import equinox as eqx
import jax
import numpy as np

from .._types import Q, QDot, Scalar, U
from ..systems.base import AbstractDynamics, AbstractSystem
from ..systems.parameters import Bounded
from .actuator import Actuator
from .features import OutputScale, StateFeatures
from .history import InputHistory
from .region import TrainingRegion


class AbstractModel(AbstractDynamics):
    """A model of q̈ = f(q, q̇, u) for one sample, built around a known `system` (its coordinates, angles,
    inputs, and whatever physics the model keeps).

    The model reads the stacked input ū = (u_t, u_{t−1}, …, u_{t−k}) of its `history` (k = `input_history`),
    so `n_inputs` is m (k + 1), each input saturated at the actuator's `input_limit` (None: unlimited).
    `trainable()` says which leaves an optimiser may change (a pytree of bools shaped like the model);
    `frozen_known_parts` is the usual answer.
    """

    system: eqx.AbstractVar[AbstractSystem]
    input_history: eqx.AbstractVar[int]
    input_limit: eqx.AbstractVar[tuple[float, ...] | None]

    @abc.abstractmethod
    def trainable(self):
        """A filter spec for `eqx.partition`: True for the inexact arrays an optimiser updates."""

    @abc.abstractmethod
    def physics_prior(self) -> "AbstractModel | None":
        """The model's physics alone, without its learned parts: what the learned parts are measured against
        (the identified physics of a PINODE). None for a model with no physics of its own (a black box)."""

    @abc.abstractmethod
    def with_physics_trainable(self, trainable: bool) -> "AbstractModel":
        """This model with its physical parameters trainable or frozen; a model without any: itself."""

    @abc.abstractmethod
    def with_physics_from(self, source: "AbstractModel") -> "AbstractModel":
        """This model with the physics `source` ended with (a two-stage fit, `model.start_from`); raises
        `ValueError` when either has no physics to start from."""

    @abc.abstractmethod
    def known_mechanics(self, input_history: int | None = None) -> "AbstractModel":
        """The known system alone, q̈ = M(q)⁻¹ [B(q) u − C(q, q̇) q̇ − G(q)], as a model reading the stacked
        inputs of `input_history` past steps (None: this model's): the physics a model without physics of its
        own is measured against."""

    @abc.abstractmethod
    def learned_parts(self) -> tuple[str, ...]:
        """What the model learns beyond the known mechanics: "force" (a generalised force Q(q, q̇, u),
        `learned_force`), "potential" (V_θ(q), `learned_potential`), "acceleration" (q̈ itself)."""

    def learned_force(self, q: Q, qd: QDot, u: U) -> QDot:
        """The learned generalised force Q(q, q̇, u) (friction and network), when "force" is a learned part."""
        raise NotImplementedError(f"a {type(self).__name__} learns no generalised force")

    def learned_potential(self, q: Q) -> Scalar:
        """The learned potential V_θ(q), when "potential" is a learned part."""
        raise NotImplementedError(f"a {type(self).__name__} learns no potential")

    @abc.abstractmethod
    def summary(self) -> dict:
        """What the model's physics came out as, by name (friction, learned parameters, output scales), for
        reports: plain numbers and lists."""

    @property
    def history(self) -> InputHistory:
        return InputHistory(self.system.n_inputs, self.input_history, self.input_limit)

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


def physics_prior(model: AbstractModel) -> AbstractModel | None:
    """The model's own physics without its learned parts, or None when it has no physics of its own.

    For a PINODE, q̈ = M(q)⁻¹ [B(q) u + Q_f(q̇) − C(q, q̇) q̇ − G(q)]: the known mechanics with the learned
    physical parameters and the (given, identified or trained) friction Q_f kept, only s · Q_θ removed. This is
    the baseline a residual network has to beat: the prior the user gave, as identified on the training data.
    A learned potential or a black box has no separate physics (its dynamics are the network): None.
    """
    return model.physics_prior()


def frozen_known_parts(model: eqx.Module):
    """The default `trainable()`: every inexact array, except the known system's parameters, the feature
    statistics, the training region and the output scales (each frozen by a `False` prefix) and the scales of
    bounded parameters."""

    def frozen(x):
        return isinstance(x, AbstractSystem | StateFeatures | OutputScale | TrainingRegion)

    def spec(x):
        if frozen(x):
            return False
        if isinstance(x, Bounded | Actuator):
            return x.trainable()
        return eqx.is_inexact_array(x)

    return jax.tree_util.tree_map(
        spec, model, is_leaf=lambda x: frozen(x) or isinstance(x, Bounded | Actuator)
    )


def output_scale_summary(model: eqx.Module) -> dict:
    """The network output scale s of `model`'s first `OutputScale`, as `summary()` reports it (empty: none)."""
    leaves = jax.tree_util.tree_leaves(model, is_leaf=lambda x: isinstance(x, OutputScale))
    scales = [x for x in leaves if isinstance(x, OutputScale)]
    return {"output_scale": np.asarray(scales[0].value).tolist()} if scales else {}

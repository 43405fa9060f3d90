"""The black-box neural ODE baseline: q̈ = f_θ(q, q̇, u) with no physics."""

import equinox as eqx
import jax.numpy as jnp

from .._types import Q, QDDot, QDot, U
from ..systems.base import AbstractSystem
from .base import AbstractModel, frozen_known_parts, output_scale_summary
from .features import OutputScale, StateFeatures
from .history import as_limit
from .pinode import PINODE


class BlackBox(AbstractModel):
    """q̈ = s ⊙ f_θ(φ(q, q̇, u)). The `system` only names the coordinates and says which are angles.

    It has no Lagrangian of its own: energy diagnostics use the known system's.
    """

    velocity_dependent = True

    system: AbstractSystem
    network: eqx.Module
    features: StateFeatures
    output_scale: OutputScale
    input_history: int = eqx.field(static=True)
    input_limit: tuple[float, ...] | None = eqx.field(static=True)

    def __init__(
        self, system, network, features, output_scale=1.0, input_history: int = 0, input_limit=None
    ):
        self.system, self.network, self.features = system, network, features
        self.output_scale = OutputScale(
            jnp.broadcast_to(jnp.asarray(output_scale, float), (system.n_dof,))
        )
        self.input_history = int(input_history)
        self.input_limit = as_limit(input_limit)

    def trainable(self):
        return frozen_known_parts(self)

    def physics_prior(self) -> None:
        return None

    def with_physics_trainable(self, trainable: bool) -> "BlackBox":
        return self

    def with_physics_from(self, source: AbstractModel) -> "BlackBox":
        raise ValueError("a BlackBox has no physics to start; a PINODE (pinode, pure_ode) has")

    def known_mechanics(self, input_history: int | None = None) -> PINODE:
        history = self.input_history if input_history is None else input_history
        return PINODE(self.system, input_history=history, input_limit=self.input_limit)

    def learned_parts(self) -> tuple[str, ...]:
        return ("acceleration",)

    def summary(self) -> dict:
        return output_scale_summary(self)

    def acceleration(self, q: Q, qd: QDot, u: U | None = None) -> QDDot:
        u = self.history.read(u, q.dtype)
        return self.output_scale(self.network(self.features(q, qd, u)))

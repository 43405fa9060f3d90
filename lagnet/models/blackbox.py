"""The black-box neural ODE baseline: q̈ = f_θ(q, q̇, u) with no physics."""

import equinox as eqx

from .._types import Q, QDDot, QDot, U
from ..systems import AbstractSystem
from .base import AbstractModel
from .features import StateFeatures


class BlackBox(AbstractModel):
    """q̈ = s · f_θ(φ(q, q̇, u)). The `system` only names the coordinates and says which are angles."""

    system: AbstractSystem
    network: eqx.Module
    features: StateFeatures
    output_scale: float = eqx.field(static=True, default=1.0)
    input_history: int = eqx.field(static=True, default=0)

    def acceleration(self, q: Q, qd: QDot, u: U) -> QDDot:
        return self.output_scale * self.network(self.features(q, qd, u))

"""The physics prior of a model: what it predicts with its learned residual forces taken out."""

import equinox as eqx

from .base import AbstractModel
from .pinode import PINODE


def physics_prior(model: AbstractModel) -> AbstractModel | None:
    """The model's own physics without its network, or None when the model has no physics of its own.

    For a PINODE, q̈ = M(q)⁻¹ [B(q) u + Q_f(q̇) − C(q, q̇) q̇ − G(q)]: the known mechanics with the learned
    physical parameters and the (given, fitted or trained) friction Q_f kept, only s · Q_θ removed. This is the
    baseline a residual network has to beat: the prior the user gave, as identified on the training data.

    A learned potential or a black box has no separate physics (their dynamics are the network): None.
    """
    own = getattr(model, "physics_prior", None)
    if callable(own):
        # A model that says what its physics is (`AbstractModel.physics_prior`) is asked.
        return own()
    if not isinstance(model, PINODE):
        return None
    if model.network is None:
        return model
    # `is_leaf` lets tree_at write None over the fields that the network's absence leaves unused.
    return eqx.tree_at(
        lambda m: (m.network, m.features, m.output_scale),
        model,
        (None, None, None),
        is_leaf=lambda x: x is None,
    )

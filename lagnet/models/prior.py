"""The physics prior of a model: what it predicts with its learned residual forces taken out."""

from .base import AbstractModel


def physics_prior(model: AbstractModel) -> AbstractModel | None:
    """The model's own physics without its learned parts, or None when it has no physics of its own.

    For a PINODE, q̈ = M(q)⁻¹ [B(q) u + Q_f(q̇) − C(q, q̇) q̇ − G(q)]: the known mechanics with the learned
    physical parameters and the (given, identified or trained) friction Q_f kept, only s · Q_θ removed. This is
    the baseline a residual network has to beat: the prior the user gave, as identified on the training data.
    A learned potential or a black box has no separate physics (its dynamics are the network): None.
    """
    return model.physics_prior()

"""What a trained model's physics came out as: friction, learned parameters, output scales (for reports)."""

import warnings

import equinox as eqx
import numpy as np

from ..systems.parameters import bounded_leaves
from .base import AbstractModel


def physics_summary(model: AbstractModel) -> dict:
    """Friction coefficients and shape, learned physical parameters and network output scales, by name
    (`model.summary()`)."""
    return model.summary()


def unchanged_parameters(before: AbstractModel, after: AbstractModel) -> list[str]:
    """The trainable bounded physical parameters (paths, with the entry for arrays) that training left exactly as
    they started: their gradient stayed zero (the parameter plays no role in the loss) or a bound held them."""
    spec = before.trainable()
    start = bounded_leaves(eqx.filter(before, spec))
    end = dict(bounded_leaves(eqx.filter(after, spec)))
    stuck = []
    for path, p in start:
        if p.raw is None:
            continue
        a, b = np.asarray(p.raw), np.asarray(end[path].raw)
        for i in zip(*np.nonzero(np.atleast_1d(a == b)), strict=False):
            stuck.append(path + (f"[{i[0]}]" if a.ndim else ""))
    return stuck


def warn_unchanged(names: list[str], what: str) -> None:
    if names:
        warnings.warn(
            f"{what}: trainable parameter(s) {names} did not change in training: their gradient stayed zero "
            "(they play no role in the loss, e.g. a parameter of an unexcited term) or a bound held them",
            stacklevel=2,
        )

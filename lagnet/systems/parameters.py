"""Physical parameters that training may change but that must keep the sign (or range) physics requires.

A `Bounded` parameter holds `raw` with value = scale · raw clipped to [lower, upper]. Two things keep it in range:
the value is clipped where it is used (so any raw is safe), and `project` clips `raw` itself after each optimiser
step (projected gradient descent), so a parameter pushed against its bound stays on it and can leave it again.
Unlike a log or softplus parametrisation it may start exactly at a bound (an inertia or friction term
starting at 0), and its gradient there is the physical one.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._types import Array, Float


class Bounded(eqx.Module):
    """value = clip(scale · raw, lower, upper); `scale` (> 0) sets the size of an optimiser's step.

    With Adam a step changes `raw` by about the learning rate whatever the gradient's size, so `scale` is the
    parameter's natural size (its starting magnitude, or 1 from 0): steps are then relative. `scale` is an array
    leaf (saved with the model, since it may come from data) that optimisers must not train: see `trainable`.
    """

    raw: Float[Array, "*shape"]
    scale: Float[Array, ""]
    lower: float | None = eqx.field(static=True)
    upper: float | None = eqx.field(static=True)

    def __init__(self, value, *, lower: float | None = 0.0, upper: float | None = None, scale=None):
        value = np.asarray(value, dtype=float)
        if lower is not None and upper is not None and not lower <= upper:
            raise ValueError(f"Bounded: lower {lower} > upper {upper}")
        low = -np.inf if lower is None else lower
        high = np.inf if upper is None else upper
        if np.any(value < low) or np.any(value > high):
            raise ValueError(f"Bounded: value {value} outside [{low}, {high}]")
        if scale is None:
            size = float(np.max(np.abs(value))) if value.size else 0.0
            scale = size if size > 0 else 1.0
        if not scale > 0:
            raise ValueError(f"Bounded: scale must be > 0, got {scale}")
        self.lower, self.upper = lower, upper
        self.scale = jnp.asarray(float(scale))
        self.raw = jnp.asarray(value / float(scale))

    def trainable(self) -> "Bounded":
        """The filter spec of an optimiser: `raw` only."""
        return eqx.tree_at(lambda b: b.raw, jax.tree.map(lambda _: False, self), True)

    @property
    def value(self) -> Float[Array, "*shape"]:
        return _clip(self.scale * self.raw, self.lower, self.upper)


def _clip(x, lower, upper):
    # `where`, not `clip`: at the bound itself the gradient is 1 (clip's max/min would halve it), so a parameter
    # starting at 0 receives its full physical gradient.
    if lower is not None:
        x = jnp.where(x < lower, lower, x)
    if upper is not None:
        x = jnp.where(x > upper, upper, x)
    return x


def _is_bounded(x) -> bool:
    return isinstance(x, Bounded)


def project(tree, rest=None):
    """`tree` with every `Bounded` parameter's raw value clipped into its bounds (after an optimiser step).

    `tree` may be the trainable half of an `eqx.partition`, whose `Bounded` nodes lack their (frozen) scale: pass
    the other half as `rest` to supply it.
    """

    def one(p, other=None):
        if not isinstance(p, Bounded) or p.raw is None:  # None: frozen, partitioned out
            return p
        scale = p.scale if p.scale is not None else other.scale
        raw = p.raw
        if p.lower is not None:
            raw = jnp.maximum(raw, p.lower / scale)
        if p.upper is not None:
            raw = jnp.minimum(raw, p.upper / scale)
        return eqx.tree_at(lambda b: b.raw, p, raw)

    if rest is None:
        return jax.tree.map(one, tree, is_leaf=_is_bounded)
    return jax.tree.map(one, tree, rest, is_leaf=lambda x: x is None or _is_bounded(x))


def bounded_leaves(tree) -> list[tuple[str, Bounded]]:
    """Every `Bounded` in `tree` with its path, e.g. [(".friction.coulomb", Bounded(...)), ...]."""
    leaves = jax.tree_util.tree_flatten_with_path(tree, is_leaf=_is_bounded)[0]
    return [(jax.tree_util.keystr(path), p) for path, p in leaves if isinstance(p, Bounded)]


from ._params import learned_bounds as learned_bounds  # noqa: E402  (the default bounds of a learned parameter)

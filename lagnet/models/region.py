"""Where a model has seen data: a gate that keeps a learned residual quiet off the training states."""

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .._types import Array, Float, Q, QDot


def _wrapped(q, angles):
    # Angles compare as wrapped to [−π, π): a turn more is the same state.
    return jnp.where(jnp.asarray(angles), jnp.mod(q + jnp.pi, 2 * jnp.pi) - jnp.pi, q)


class TrainingRegion(eqx.Module):
    """g(q, q̇) = exp(−Σ_i (d_i / (δ r_i))²): 1 on the box of the training states, falling to 0 off it.

    d_i is how far coordinate i of the state x = (q, q̇) (angles wrapped to [−π, π)) lies outside [lo_i, hi_i],
    the range of the training samples, r_i = hi_i − lo_i the range's width and δ the `margin`. A residual s ⊙ Q_θ
    multiplied by g equals the network on every training state (training is unchanged) and fades to the physics
    beyond the data, where nothing constrained it: a network fitted on large swings does not act on states faster
    than any it saw, one fitted without upright states stays out of the upright.
    """

    angles: tuple[bool, ...] = eqx.field(static=True)
    margin: float = eqx.field(static=True)
    lower: Float[Array, " state"]
    upper: Float[Array, " state"]

    def __init__(self, angles, lower=None, upper=None, *, margin: float = 0.1):
        n = len(angles)
        if not margin > 0:
            raise ValueError(f"TrainingRegion.margin must be > 0, got {margin}")
        self.angles, self.margin = tuple(bool(a) for a in angles), float(margin)
        self.lower = jnp.zeros(2 * n) if lower is None else jnp.asarray(lower, float)
        self.upper = jnp.ones(2 * n) if upper is None else jnp.asarray(upper, float)

    @classmethod
    def from_data(cls, angles, q, qd, *, margin: float = 0.1) -> "TrainingRegion":
        """The box of the samples q (T, n), q̇ (T, n)."""
        x = np.concatenate([np.asarray(_wrapped(np.asarray(q), angles)), np.asarray(qd)], axis=1)
        return cls(angles, np.min(x, axis=0), np.max(x, axis=0), margin=margin)

    def __call__(self, q: Q, qd: QDot) -> Float[Array, ""]:
        x = jnp.concatenate([_wrapped(q, self.angles), qd])
        width = jnp.maximum(self.upper - self.lower, 1e-12)
        outside = jnp.maximum(self.lower - x, 0.0) + jnp.maximum(x - self.upper, 0.0)
        return jnp.exp(-jnp.sum((outside / (self.margin * width)) ** 2))

    def outside_share(self, q, qd) -> Float[Array, " state"]:
        """Per coordinate of (q, q̇), the share of the samples q (T, n), q̇ (T, n) outside the box."""
        x = jnp.concatenate([_wrapped(jnp.asarray(q), self.angles), jnp.asarray(qd)], axis=1)
        return jnp.mean((x < self.lower) | (x > self.upper), axis=0)

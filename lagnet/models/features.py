"""What a network sees of the state: angles as (sin, cos), everything scaled to order one."""

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .._indexing import take
from .._types import Array, Float, Q, QDot, U


class StateFeatures(eqx.Module):
    """φ(q, q̇, u) = [sin/cos of angles, (q_other − μ)/σ, (q̇ − μ)/σ, (u − μ)/σ].

    Angles enter as (sin θ, cos θ) so the features are 2π-periodic; the other entries are standardised with fixed
    (not trained) statistics of the training data. `n_inputs` counts all inputs the network sees, including a
    history of past inputs when the model is given one. Coordinates marked in `hide_position` enter only through
    their velocity: forces that cannot depend on where a cart is on its rail (friction, a drive) then cannot
    learn a spurious dependence on it.
    """

    angles: tuple[bool, ...] = eqx.field(static=True)
    hide_position: tuple[bool, ...] = eqx.field(static=True)
    q_mean: Float[Array, " n"]
    q_scale: Float[Array, " n"]
    qd_scale: Float[Array, " n"]
    u_scale: Float[Array, " m"]

    def __init__(
        self,
        angles,
        n_inputs: int,
        q_mean=None,
        q_scale=None,
        qd_scale=None,
        u_scale=None,
        hide_position=None,
    ):
        n = len(angles)
        self.angles = tuple(bool(a) for a in angles)
        self.hide_position = (
            (False,) * n if hide_position is None else tuple(map(bool, hide_position))
        )
        self.q_mean = jnp.zeros(n) if q_mean is None else jnp.asarray(q_mean, float)
        self.q_scale = jnp.ones(n) if q_scale is None else jnp.asarray(q_scale, float)
        self.qd_scale = jnp.ones(n) if qd_scale is None else jnp.asarray(qd_scale, float)
        self.u_scale = jnp.ones(n_inputs) if u_scale is None else jnp.asarray(u_scale, float)

    def _shown(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The indices of the shown angles and of the other shown coordinates."""
        angles = np.asarray(self.angles, bool)
        shown = ~np.asarray(self.hide_position, bool)
        return (
            tuple(np.flatnonzero(angles & shown).tolist()),
            tuple(np.flatnonzero(~angles & shown).tolist()),
        )

    @property
    def size(self) -> int:
        idx, other = self._shown()
        return 2 * len(idx) + len(other) + len(self.angles) + self.u_scale.shape[0]

    def __call__(self, q: Q, qd: QDot, u: U) -> Float[Array, " features"]:
        idx, other = self._shown()
        angle = take(q, idx)
        parts = [
            jnp.sin(angle),
            jnp.cos(angle),
            (take(q, other) - take(self.q_mean, other)) / take(self.q_scale, other),
            qd / self.qd_scale,
            u / self.u_scale,
        ]
        return jnp.concatenate(parts)

    @classmethod
    def from_data(cls, angles, q, qd, u, hide_position=None) -> "StateFeatures":
        """Statistics from arrays q (T, n), q̇ (T, n), u (T, m)."""

        def scale(x):
            s = np.std(np.asarray(x), axis=0)
            return np.where(s > 1e-12, s, 1.0)

        return cls(
            angles,
            np.shape(u)[1],
            q_mean=np.mean(np.asarray(q), axis=0),
            q_scale=scale(q),
            qd_scale=scale(qd),
            u_scale=scale(u),
            hide_position=hide_position,
        )


class OutputScale(eqx.Module):
    """A fixed (not trained) per-output scale s of a network: the learned part is s ⊙ f_θ(·), f_θ of order one."""

    value: Float[Array, " out"]

    def __call__(self, out):
        return self.value * out

"""Input history: a model that also reads its last k inputs, u_t, u_{t−1}, …, u_{t−k}, stacked newest first."""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from .._types import U

# NumPy in, NumPy out (data preparation keeps its float64); JAX arrays give JAX arrays (jit, grad).
Stacked = Float[Array, "steps mk"] | Float[np.ndarray, "steps mk"]
Past = Float[Array, "k m"] | Float[np.ndarray, "k m"]


def as_limit(limit) -> tuple[float, ...] | None:
    """An input limit as a model's static field holds it: a tuple of floats, one per input, or None."""
    return None if limit is None else tuple(float(v) for v in limit)


class InputHistory(eqx.Module):
    """The stacked input ū_t = (u_t, u_{t−1}, …, u_{t−k}) of shape (m (k + 1),), newest first.

    With a lagging actuator the state (q, q̇) and the current input u alone are not Markov; a model that also
    reads the last k inputs is. This is the one place that builds ū from a sequence of inputs (training data,
    control rollouts) or from a single held input (linearisation about an equilibrium), and that reads the
    current input back out of it (the physics uses only u_t).

    `n_inputs` is m, the system's inputs; `lags` is k; `limit` (m,) or None: the actuator's saturation, each
    input as delivered is clip(u_i, −limit_i, limit_i) (`saturate`).
    """

    n_inputs: int = eqx.field(static=True)
    lags: int = eqx.field(static=True, default=0)
    limit: tuple[float, ...] | None = eqx.field(static=True, default=None)

    def __check_init__(self):
        if self.n_inputs < 0 or self.lags < 0:
            raise ValueError(
                f"InputHistory: n_inputs and lags must be >= 0, got {self.n_inputs}, {self.lags}"
            )
        if self.limit is not None and (
            len(self.limit) != self.n_inputs or not all(v > 0 for v in self.limit)
        ):
            raise ValueError(
                f"InputHistory: limit must be {self.n_inputs} number(s) > 0 (one per input), got "
                f"{self.limit}"
            )

    @property
    def size(self) -> int:
        """m (k + 1): the length of the stacked input."""
        return self.n_inputs * (1 + self.lags)

    def current(self, u: Float[Array, " mk"]) -> U:
        """u_t, the first m entries of a stacked input."""
        return u[: self.n_inputs]

    def or_zeros(self, u: Float[Array, " mk"] | None, dtype) -> Float[Array, " mk"]:
        """The stacked input, or zeros for an unforced call (u = None)."""
        return jnp.zeros(self.size, dtype) if u is None else u

    def read(self, u: Float[Array, " mk"] | None, dtype) -> Float[Array, " mk"]:
        """The stacked input a model computes with: zeros for an unforced call, then `saturate`d."""
        return self.saturate(self.or_zeros(u, dtype))

    def saturate(self, u):
        """Inputs (..., m) or stacked (..., m (k + 1)) as the actuator delivers them, each within ±limit.

        A recorded command may exceed what the drive delivers (a feedback law asking for 15 N of a 10 N drive);
        a model that reads the command unclipped has to learn the saturation, and a smooth network learns it
        as a force that already weakens below the limit. The slope is 1 up to and at the limit (`where`, not
        `clip`, whose slope at the limit is 1/2): an MPC plan pressed against its input bound keeps its
        gradient. NumPy in gives NumPy out."""
        if self.limit is None:
            return u
        xp = np if isinstance(u, np.ndarray) else jnp
        lim = np.tile(np.asarray(self.limit, float), u.shape[-1] // self.n_inputs)
        lim = xp.asarray(lim, dtype=u.dtype)
        return xp.where(u > lim, lim, xp.where(u < -lim, -lim, u))

    def hold(self, u: Float[ArrayLike, " m"]) -> Float[Array, " mk"]:
        """u held over the whole history, (u, u, …, u): the steady-state reading (equilibria, linearisation).

        An input that is already stacked (shape (m (k + 1),)) is returned unchanged.
        """
        u = jnp.asarray(u)
        if self.lags and u.shape[-1] == self.n_inputs:
            return jnp.tile(u, self.lags + 1)
        return u

    def stack(self, us: Float[ArrayLike, "steps m"], u_past: Float[ArrayLike, "k m"]) -> Stacked:
        """us (steps, m) → ū (steps, m (k + 1)): row j is u_j, u_{j−1}, …, u_{j−k}.

        The inputs before the first are `u_past` (k, m), newest first (zeros for a recording that starts at
        rest, `past_held(us)` to hold the first input). NumPy in gives NumPy out (data preparation keeps its
        float64); JAX arrays give JAX arrays (jit, grad). Without history `us` is returned as it is.
        """
        if not self.lags:
            return us
        xp = np if isinstance(us, np.ndarray) and isinstance(u_past, np.ndarray) else jnp
        us, past = xp.asarray(us), xp.asarray(u_past)
        k, steps = self.lags, us.shape[0]
        if past.shape != (k, us.shape[-1]):
            raise ValueError(
                f"InputHistory.stack: u_past must have shape ({k}, {us.shape[-1]}) (newest first), "
                f"got {past.shape}"
            )
        padded = xp.concatenate([past[::-1], us])  # oldest first
        return xp.concatenate([padded[k - lag : k - lag + steps] for lag in range(k + 1)], axis=-1)

    def past_zeros(self, us: Float[ArrayLike, "steps m"]) -> Past:
        """u_past of zeros (a recording that starts from rest), in the array type of `us`."""
        xp = np if isinstance(us, np.ndarray) else jnp
        return xp.zeros((self.lags, us.shape[-1]), us.dtype)

    def past_held(self, us: Float[ArrayLike, "steps m"]) -> Past:
        """u_past equal to the first input (as if it had been applied forever)."""
        xp = np if isinstance(us, np.ndarray) else jnp
        return xp.broadcast_to(us[0], (self.lags, us.shape[-1]))

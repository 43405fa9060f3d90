"""An actuator between the commanded and the applied input: a dead time, a first-order lag and a limit.

The actuator acts on the command signal only (it does not depend on the state), at the rig's sub-step rate:

    u_applied(t) = y(t),   τ ẏ = sat(u_cmd(t − d)) − y,

discretised exactly for a command held over each sub-step h: y ← y + (1 − e^{−h/τ}) (sat(u_cmd) − y), and the
plant sees, held over each sub-step, the exact mean of y over it (second-order accurate in h).
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..systems._params import as_param, check_positive


class Actuator(eqx.Module):
    """Dead time `delay` (s, rounded to whole sub-steps), lag `time_constant` (s), saturation at ±`limit`."""

    delay: float = eqx.field(static=True)
    time_constant: jax.Array
    limit: jax.Array

    def __init__(self, delay: float = 0.0, time_constant=0.0, limit=np.inf):
        if delay < 0:
            raise ValueError(f"Actuator.delay must be >= 0, got {delay}")
        self.delay = float(delay)
        self.time_constant = as_param(time_constant)
        self.limit = as_param(limit)

    def __check_init__(self):
        check_positive("Actuator", "time_constant", self.time_constant, allow_zero=True)
        if not np.all(np.isposinf(np.asarray(self.limit))):  # no limit (the default) is allowed
            check_positive("Actuator", "limit", self.limit)

    def delay_steps(self, h: float) -> int:
        return int(round(self.delay / h))

    def init(self, m: int, h: float) -> tuple[jax.Array, jax.Array]:
        """The filter state at rest: (dead-time buffer (D, m), lag output (m,))."""
        return jnp.zeros((self.delay_steps(h), m)), jnp.zeros((m,))

    def apply(self, state, u_cmd, h: float):
        """Filter a command held over the sub-steps `u_cmd` (S, m); returns (new state, applied (S, m))."""
        buffer, y = state
        u_cmd = jnp.clip(u_cmd, -self.limit, self.limit)
        stream = jnp.concatenate([buffer, u_cmd], axis=0)
        delayed, buffer = stream[: u_cmd.shape[0]], stream[u_cmd.shape[0] :]
        tau = jnp.maximum(self.time_constant, 1e-30)
        lagged = self.time_constant > 0
        alpha = jnp.where(lagged, -jnp.expm1(-h / tau), 1.0)
        # The sub-step holds the mean of y over it, x + (y0 − x) (τ/h)(1 − e^{−h/τ}): holding the end value
        # instead would make the whole rig first-order accurate in h.
        mean_weight = jnp.where(lagged, alpha * tau / h, 0.0)

        def lag(y, x):
            held = x + (y - x) * mean_weight
            return y + alpha * (x - y), held

        y, applied = jax.lax.scan(lag, y, delayed)
        return (buffer, y), applied

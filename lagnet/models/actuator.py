"""Actuator dynamics as physics: a dead time and a first-order lag between the command and the applied input.

A drive does not apply the commanded torque at once. With a dead time d and a lag τ,

    u_applied(t) = y(t),    τ ẏ = u_cmd(t − d) − y,

and a model that takes the command as the force has to explain the difference some other way: a missing 20 ms lag
on a cart-pole is fitted as a damping of 0 where the truth is 0.35 N·s/m (the lag acts like negative damping), and
the bound at 0 hides it. Here both are physical parameters (`Bounded`, identified and reported like any other),
read from the model's input history ū_t = (u_t, u_{t−1}, …, u_{t−k}) of commands held over steps of Δt:

- the dead time shifts the command sequence by s = d / Δt steps, linearly interpolated between whole steps;
- the lag's output at the step's start is y₀ = Σ_{j≥1} (1 − a) a^{j−1} v_{t−j}, a = e^{−Δt/τ} (the exact
  response to held inputs, truncated to the history and renormalised), and over the step it moves towards v_t;
  the model applies its exact mean over the step, v_t + (y₀ − v_t)(τ/Δt)(1 − a).

The history must cover the dead time and a few time constants: `model.input_history` k with k Δt ≳ d + 3τ.
"""

import equinox as eqx
import jax
import jax.numpy as jnp

from ..systems.parameters import Bounded


class Actuator(eqx.Module):
    """Dead time and lag on `n_inputs` inputs with `lags` past commands held over `dt` each. Both are kept in
    steps of `dt` (`time_constant_steps` τ/Δt ∈ [0, k], `delay_steps` d/Δt ∈ [0, k − 1], each `Bounded`), so
    their bounds depend on the history alone; `summary` gives them in seconds."""

    time_constant_steps: Bounded
    delay_steps: Bounded
    dt: jax.Array  # the command's hold time: a leaf (saved with the model), never trained
    n_inputs: int = eqx.field(static=True)
    lags: int = eqx.field(static=True)
    learned: tuple[str, ...] = eqx.field(static=True)

    def __init__(
        self,
        time_constant: float,
        delay: float,
        dt: float,
        n_inputs: int,
        lags: int,
        learned: tuple[str, ...] = ("time_constant", "delay"),
    ):
        if lags < 1:
            raise ValueError(
                "Actuator: a lag or dead time needs past commands: model.input_history >= 1 (k Δt should "
                "cover the dead time and about three time constants)"
            )
        dt = float(dt)
        lag, shift = time_constant / dt, delay / dt
        if not (0 <= lag <= lags and 0 <= shift <= lags - 1):
            raise ValueError(
                f"Actuator: with {lags} past commands of {dt:g} s the time constant must be within "
                f"[0, {lags * dt:g}] s and the dead time within [0, {(lags - 1) * dt:g}] s, got {time_constant:g} "
                f"and {delay:g} (raise model.input_history)"
            )
        self.time_constant_steps = Bounded(lag, lower=0.0, upper=float(lags), scale=1.0)
        self.delay_steps = Bounded(shift, lower=0.0, upper=float(lags - 1), scale=1.0)
        self.dt = jnp.asarray(dt)
        self.n_inputs, self.lags = int(n_inputs), int(lags)
        unknown = set(learned) - {"time_constant", "delay"}
        if unknown:
            raise ValueError(f"Actuator.learned: unknown {sorted(unknown)} (time_constant, delay)")
        self.learned = tuple(learned)

    def trainable(self) -> "Actuator":
        """The lag and dead time that are `learned` (their raw values); the step is never trained."""
        mask = jax.tree.map(lambda _: False, self)
        for name in self.learned:
            field = f"{name}_steps"
            mask = eqx.tree_at(
                lambda a, field=field: getattr(a, field), mask, getattr(self, field).trainable()
            )
        return mask

    def __call__(self, u):
        """The applied input (m,) from the stacked commands ū (m (k + 1),), newest first."""
        commands = jnp.reshape(u, (self.lags + 1, self.n_inputs))
        shift = self.delay_steps.value.astype(commands.dtype)
        # v_j = u(t − j Δt − d): between stored commands, linearly in the shift (differentiable in d).
        steps = jnp.arange(self.lags + 1, dtype=commands.dtype) + shift
        whole = jnp.floor(steps)
        lower = jnp.clip(whole, 0, self.lags).astype(int)
        upper = jnp.clip(lower + 1, 0, self.lags)
        frac = (steps - whole)[:, None]
        v = (1 - frac) * commands[lower] + frac * commands[upper]
        lag = self.time_constant_steps.value.astype(commands.dtype)
        lagged = lag > 0
        safe = jnp.where(lagged, lag, 1.0)
        a = jnp.where(lagged, jnp.exp(-1.0 / safe), 0.0)
        weights = a ** jnp.arange(self.lags, dtype=commands.dtype)
        y0 = jnp.sum(weights[:, None] * v[1:], axis=0) / jnp.sum(weights)
        mean_weight = jnp.where(lagged, safe * (1 - a), 0.0)
        return v[0] + (y0 - v[0]) * mean_weight

    def summary(self) -> dict:
        dt = float(self.dt)
        return {
            "time_constant": float(self.time_constant_steps.value) * dt,
            "delay": float(self.delay_steps.value) * dt,
        }

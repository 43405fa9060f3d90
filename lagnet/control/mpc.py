"""Model-predictive control through the differentiable model: gradient-based shooting with optax."""

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

from .dynamics import Dynamics


class ShootingMPC(eqx.Module):
    """Optimise an input sequence u_{0..H−1} by gradient descent through the model's rollout.

        J(u) = Σ_k stage_cost(x_k, u_k) + terminal_cost(x_H),   u_k = u_max · tanh(v_k)   (bounded inputs),

    with Adam on v for `iterations` steps, warm-started from the previous solution shifted by one step. `solve`
    is for one initial state; vmap it over a batch of states (or of random restarts).
    """

    dynamics: Dynamics
    stage_cost: Callable = eqx.field(static=True)
    terminal_cost: Callable = eqx.field(static=True)
    horizon: int = eqx.field(static=True, default=40)
    iterations: int = eqx.field(static=True, default=100)
    learning_rate: float = eqx.field(static=True, default=0.1)
    u_max: float = eqx.field(static=True, default=1.0)

    def cost(self, v, x0, u_past=None):
        us = self.u_max * jnp.tanh(v)
        xs = self.dynamics.rollout(x0, us, u_past=u_past)
        stage = jax.vmap(self.stage_cost)(xs[:-1], us)
        return jnp.sum(stage) + self.terminal_cost(xs[-1])

    def solve(self, x0, v_init, u_past=None):
        """The optimised unconstrained sequence v (H, m) and its cost; apply u_max · tanh(v[0]).

        `u_past` (k, m), newest first: the inputs already applied, for a model with an input history of k.
        """
        opt = optax.adam(self.learning_rate)

        def body(carry, _):
            v, state = carry
            c, g = jax.value_and_grad(self.cost)(v, x0, u_past)
            updates, state = opt.update(g, state, v)
            return (optax.apply_updates(v, updates), state), c

        (v, _), costs = jax.lax.scan(body, (v_init, opt.init(v_init)), None, length=self.iterations)
        return v, self.cost(v, x0, u_past)

    def control(self, x0, v_prev, u_past=None):
        """One receding-horizon step: (u to apply now, the shifted warm start for the next call, the cost)."""
        v, cost = self.solve(x0, v_prev, u_past)
        shifted = jnp.concatenate([v[1:], v[-1:]])
        return self.u_max * jnp.tanh(v[0]), shifted, cost

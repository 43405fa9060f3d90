"""A controller in closed loop with a rig's true plant: `lagnet.data.rigs.simulate` with a controller state.

`simulate` takes a memoryless policy and is compiled afresh per call; a controller that carries a state (an
MPC's warm start) or a batch of controllers needs the same loop as a pure function to `jit` and `vmap`. The
loop is `simulate`'s, step for step: at t_n = n dt the controller sees the true state, the command is held over
the sample, the actuator filters it at h = dt / substeps and the plant is integrated with RK4 at h.
"""

import jax
import jax.numpy as jnp

from lagnet.integrators import RK4
from lagnet.rollout import rollout


def closed_loop(plant, actuator, controller, memory, x0, *, samples: int, dt: float, substeps: int):
    """Run `controller(x, memory) → (u_cmd (m,), memory, aux)` on the rig for `samples` samples.

    Returns (xs (samples + 1, 2n) the true states at the samples, us (samples, m) the commands, aux stacked).
    """
    h = dt / substeps
    n, m = plant.n_dof, plant.n_inputs

    def sample(carry, _):
        x, act, memory = carry
        u_cmd, memory, aux = controller(x, memory)
        u_cmd = jnp.reshape(u_cmd, (m,))
        act, applied = actuator.apply(act, jnp.broadcast_to(u_cmd, (substeps, m)), h)
        qs, qds = rollout(plant, RK4(), x[:n], x[n:], applied, h, throw=False)
        x_next = jnp.concatenate([qs[-1], qds[-1]])
        return (x_next, act, memory), (x_next, u_cmd, aux)

    x0 = jnp.asarray(x0, dtype=float)
    carry = (x0, actuator.init(m, h), memory)
    _, (xs, us, aux) = jax.lax.scan(sample, carry, None, length=samples)
    return jnp.concatenate([x0[None], xs]), us, aux


def wrap(angle):
    """An angle in [−π, π)."""
    return jnp.mod(angle + jnp.pi, 2 * jnp.pi) - jnp.pi

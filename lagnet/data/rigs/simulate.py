"""Sampled closed-loop simulation of a rig: a policy at the sample rate, the plant integrated in fine sub-steps."""

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .actuator import Actuator
from .plant import Plant


def simulate(
    plant: Plant,
    actuator: Actuator,
    policy: Callable[[jax.Array, jax.Array, Any], jax.Array],
    schedule: Any,
    q0,
    qd0,
    *,
    dt: float,
    substeps: int,
) -> dict[str, np.ndarray]:
    """Run the rig for as many samples as `schedule` has rows.

    At every sample t_n = n dt the policy (a hand or a controller, seeing the true state) sets the command
    u_cmd[n] = policy(q_n, q̇_n, schedule[n]), held until t_{n+1}. The actuator filters the command at the
    sub-step rate h = dt / substeps and the plant is integrated with `lagnet.rollout.rollout` and RK4 at step h.

    Returns (numpy, float64 when x64 is on):
        t (N,), q (N, n), qd (N, n): the true state at the samples;
        u_cmd (N, m): the commands; u_applied (N, m): the actuator output over the first sub-step after t_n.
    """
    # Imported here so that loading data never needs the integrators.
    from ...integrators import RK4
    from ...rollout import rollout

    h = dt / substeps
    integrator = RK4()
    m = plant.system.n_inputs
    q0 = jnp.asarray(q0, dtype=float)
    qd0 = jnp.asarray(qd0, dtype=float)

    @eqx.filter_jit
    def run(plant, actuator, schedule, q0, qd0):
        def sample(carry, s):
            q, qd, act = carry
            u_cmd = jnp.reshape(policy(q, qd, s), (m,))
            act, applied = actuator.apply(act, jnp.broadcast_to(u_cmd, (substeps, m)), h)
            qs, qds = rollout(plant, integrator, q, qd, applied, h)
            return (qs[-1], qds[-1], act), (q, qd, u_cmd, applied[0])

        carry = (q0, qd0, actuator.init(m, h))
        _, out = jax.lax.scan(sample, carry, schedule)
        return out

    q, qd, u_cmd, u_applied = run(plant, actuator, schedule, q0, qd0)
    n = int(np.asarray(u_cmd).shape[0])
    return {
        "t": dt * np.arange(n),
        "q": np.asarray(q),
        "qd": np.asarray(qd),
        "u_cmd": np.asarray(u_cmd),
        "u_applied": np.asarray(u_applied),
    }


def simulate_rig(
    rig: Any, duration: float, rng: np.random.Generator, initial_position: Callable
) -> dict[str, np.ndarray]:
    """The true (noise-free) run of a rig for `duration` s: `simulate` on its plant, actuator and hand.

    `rig` gives `dt`, `substeps`, `schedule(n, rng)`, `policy`, `plant()` and `actuator()`; the run starts at
    rest at q0 = initial_position(rng), drawn after the schedule (the order fixes the recordings' bits).
    """
    n = int(round(duration / rig.dt)) + 1
    schedule = rig.schedule(n, rng)
    q0 = initial_position(rng)
    with jax.enable_x64(True):
        return simulate(
            rig.plant(),
            rig.actuator(),
            rig.policy,
            {k: jnp.asarray(v) for k, v in schedule.items()},
            q0,
            np.zeros_like(q0),
            dt=rig.dt,
            substeps=rig.substeps,
        )

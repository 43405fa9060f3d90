"""A controller in closed loop with a rig: commands at the sample rate, the actuator and plant in fine sub-steps.

One loop for everything that drives a rig: the generators' "hand" (a policy of the true state and a per-sample
schedule) and controllers that carry a state (an MPC's warm start, a gain's past commands). A pure function of
arrays, so callers `jit` it and `vmap` it over gains, initial states or seeds.
"""

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PyTree, Real

from ..integrators import RK4
from ..rollout import rollout
from ..systems.base import AbstractDynamics
from .actuator import Actuator

# controller(x, memory, s) -> (u_cmd (m,), memory, aux). The axis `state` is 2n: q, then q̇ (a shape string
# cannot say 2n for an n that no argument binds).
Controller = Callable[[Float[Array, " state"], Any, Any], tuple[Float[Array, " m"], Any, Any]]


class ClosedLoopSolution(eqx.Module):
    """A closed-loop run of N samples.

    Attributes:
        xs: (N + 1, 2n) the true state x = (q, q̇) at t_0 … t_N.
        us: (N, m) the commands u_n, each held over [t_n, t_{n+1}).
        us_applied: (N, m) the actuator's output over the first sub-step after t_n.
        aux: what the controller reported at each sample, stacked along a leading axis of N.
    """

    # A field cannot refer to another field's axis by an expression: `states` is samples + 1, `state` is 2n.
    xs: Float[Array, "states state"]
    us: Float[Array, "samples m"]
    us_applied: Float[Array, "samples m"]
    aux: PyTree


def closed_loop(
    plant: AbstractDynamics,
    actuator: Actuator,
    controller: Controller,
    memory: PyTree,
    x0: Real[ArrayLike, " state"],
    schedule: PyTree = None,
    *,
    samples: int | None = None,
    dt: float,
    substeps: int,
    throw: bool = True,
) -> ClosedLoopSolution:
    """Run `controller` on the rig for N samples (N = `samples`, or the schedule's leading axis).

    At every sample t_n = n dt the controller sees the true state and its memory,

        (u_n, μ_{n+1}, aux_n) = controller(x_n, μ_n, s_n),   s_n = schedule[n] (None without a schedule),

    the command u_n is held until t_{n+1}, the actuator filters it at the sub-step h = dt / substeps and the
    plant is integrated with `lagnet.rollout` and RK4 at step h (the rig's physics, resolved by its sub-step).

    Arguments:
        plant: the true dynamics q̈ = a(q, q̇, u), e.g. a rig's `Plant`.
        actuator: between command and plant (dead time, lag, limit); its state starts at rest.
        controller: `controller(x (2n,), memory, s) -> (u_cmd (m,), memory, aux)`, pure.
        memory: the controller's initial state (any pytree; None if it has none).
        x0: (2n,) the initial state (q0, q̇0).
        schedule: a pytree of arrays with a leading axis N: the controller's per-sample inputs (a plan,
            a reference path), or None.
        throw: raise if the plant's state becomes non-finite (`lagnet.rollout`); False lets a batch of runs
            finish and be scored.

    Returns:
        a `ClosedLoopSolution` (xs (N + 1, 2n), us (N, m), us_applied (N, m), aux).
    """
    lengths = {jnp.shape(leaf)[0] for leaf in jax.tree.leaves(schedule)}
    if samples is not None:
        lengths.add(samples)
    if len(lengths) != 1:
        raise ValueError(
            f"closed_loop: give samples= or a schedule with one leading length, got samples={samples} "
            f"and schedule lengths {sorted(lengths - {samples})}"
        )
    (samples,) = lengths
    n, m = plant.n_dof, plant.n_inputs
    x0 = jnp.asarray(x0, dtype=float)
    if x0.shape != (2 * n,):
        raise ValueError(f"closed_loop: x0 must have shape (2n,) = ({2 * n},), got {x0.shape}")
    h = dt / substeps
    integrator = RK4()

    def sample(carry, s):
        x, act, memory = carry
        u_cmd, memory, aux = controller(x, memory, s)
        u_cmd = jnp.reshape(u_cmd, (m,))
        act, applied = actuator.apply(act, jnp.broadcast_to(u_cmd, (substeps, m)), h)
        qs, qds = rollout(plant, integrator, x[:n], x[n:], applied, h, throw=throw)
        x_next = jnp.concatenate([qs[-1], qds[-1]])
        return (x_next, act, memory), (x_next, u_cmd, applied[0], aux)

    carry = (x0, actuator.init(m, h), memory)
    _, (xs, us, applied, aux) = jax.lax.scan(sample, carry, schedule, length=samples)
    return ClosedLoopSolution(jnp.concatenate([x0[None], xs]), us, applied, aux)

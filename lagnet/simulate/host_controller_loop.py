"""A controller run from Python against a rig, one sample at a time: the true plant, its actuator and sensors in
the loop, and the time of every control step measured.

`closed_loop` compiles the whole run into one scan (fast, for controllers that are pure JAX functions). A
deployed controller is called once per sample from the host (an MPC solve, a policy network, an external solver);
`run_controller` runs that, with the rig's physics between calls compiled once.
"""

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..integrators import RK4
from ..rollout import rollout
from ..systems.base import AbstractDynamics
from .actuator import Actuator


class SampledRig(eqx.Module):
    """The rig over one sample of dt: the command u held, the actuator and the plant in `substeps` sub-steps
    (RK4 at h = dt / substeps, as `closed_loop`). `sample(x, act, u) -> (x⁺, act⁺)`; `init()` the actuator at
    rest."""

    plant: AbstractDynamics
    actuator: Actuator
    dt: float = eqx.field(static=True)
    substeps: int = eqx.field(static=True)

    @property
    def n_inputs(self) -> int:
        return self.plant.n_inputs

    def init(self):
        return self.actuator.init(self.n_inputs, self.dt / self.substeps)

    @eqx.filter_jit
    def sample(self, x, act, u):
        h = self.dt / self.substeps
        n, m = self.plant.n_dof, self.n_inputs
        u = jnp.reshape(jnp.asarray(u, x.dtype), (m,))
        act, applied = self.actuator.apply(act, jnp.broadcast_to(u, (self.substeps, m)), h)
        qs, qds = rollout(self.plant, RK4(), x[:n], x[n:], applied, h, throw=False)
        return jnp.concatenate([qs[-1], qds[-1]]), act


def rig_sampler(rig) -> SampledRig:
    """The `SampledRig` of a rig (`CartPoleRig`, `PendulumRig`: its `plant()`, `actuator()`, `dt`, `substeps`)."""
    return SampledRig(rig.plant(), rig.actuator(), rig.dt, rig.substeps)


@dataclasses.dataclass(frozen=True)
class ControllerRun:
    """A run of `run_controller` over N samples.

    Attributes:
        xs: (N + 1, 2n) the true state at t_0 … t_N.
        observations: (N, 2n) what the controller saw at t_0 … t_{N−1}.
        us: (N, m) the commands, each held over one sample.
        solve_times: (N,) wall-clock seconds of each controller call (the first includes any compilation).
        info: what the controller returned beside its command at each sample.
    """

    xs: np.ndarray
    observations: np.ndarray
    us: np.ndarray
    solve_times: np.ndarray
    info: list[Any]


def run_controller(
    rig: SampledRig,
    controller: Callable[[np.ndarray, Any], tuple[Any, Any, Any]],
    memory: Any,
    x0,
    *,
    samples: int,
    observe: Callable[[np.ndarray, np.random.Generator], np.ndarray] | None = None,
    u_limit: float | None = None,
    seed: int = 0,
) -> ControllerRun:
    """Drive `rig` for `samples` samples with `controller(y, memory) -> (u, memory, info)` called from Python.

    At each sample t_n the controller sees y_n = observe(x_n, rng) (the true state without `observe`), returns
    the command u_n (clipped to ±`u_limit` if given), which the rig holds over [t_n, t_{n+1}). The call's time
    (including waiting for its result: `jax.block_until_ready`) is recorded. A non-finite state ends the run early
    (the rest stays NaN).
    """
    rng = np.random.default_rng(seed)
    x = np.asarray(x0, dtype=float)
    n2, m = x.shape[0], rig.n_inputs
    xs = np.full((samples + 1, n2), np.nan)
    ys = np.full((samples, n2), np.nan)
    us = np.full((samples, m), np.nan)
    times = np.full(samples, np.nan)
    info = []
    xs[0] = x
    act = rig.init()
    for k in range(samples):
        y = x if observe is None else np.asarray(observe(x, rng), float)
        start = time.perf_counter()
        u, memory, aux = controller(y, memory)
        u = np.asarray(jax.block_until_ready(u), float).reshape(m)
        times[k] = time.perf_counter() - start
        if u_limit is not None:
            u = np.clip(u, -u_limit, u_limit)
        ys[k], us[k] = y, u
        info.append(aux)
        x_next, act = rig.sample(jnp.asarray(x), act, jnp.asarray(u))
        x = np.asarray(x_next)
        xs[k + 1] = x
        if not np.all(np.isfinite(x)):
            break
    return ControllerRun(xs, ys, us, times, info)

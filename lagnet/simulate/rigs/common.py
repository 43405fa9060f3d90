"""What every rig recording shares: sampled schedules, the true run, the metadata that makes it reproducible."""

import dataclasses
import platform
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..closed_loop import closed_loop


def recording_rng(seed: int, recording: str) -> np.random.Generator:
    """The generator of one recording: distinct, reproducible streams for "train", "test", ... from one seed."""
    tag = int.from_bytes(recording.encode(), "little") % (2**32)
    return np.random.default_rng([int(seed), tag])


def ou_noise(rng: np.random.Generator, n: int, dt: float, std: float, time: float) -> np.ndarray:
    """A stationary Ornstein–Uhlenbeck sequence (n,) with standard deviation `std` and correlation time `time`."""
    rho = np.exp(-dt / time)
    w = rng.standard_normal(n) * std * np.sqrt(1 - rho**2)
    out = np.empty(n)
    x = std * rng.standard_normal()
    for i in range(n):
        x = rho * x + w[i]
        out[i] = x
    return out


def smoothstep(s: np.ndarray) -> np.ndarray:
    """5th-order smooth step on [0, 1]: zero velocity and acceleration at both ends (a hand's minimum jerk)."""
    s = np.clip(s, 0.0, 1.0)
    return s**3 * (10 - 15 * s + 6 * s**2)


def simulate_rig(
    rig: Any, duration: float, rng: np.random.Generator, initial_position: Callable
) -> dict[str, np.ndarray]:
    """The true (noise-free) run of a rig for `duration` s: `closed_loop` on its plant, actuator and hand.

    `rig` (an `AbstractRig`) gives `dt`, `substeps`, `schedule(n, rng)`, `policy(q, q̇, s)`, `plant()` and
    `actuator()`; the run starts at rest at q0 = initial_position(rng), drawn after the schedule (the order fixes
    the recordings' bits).

    Returns (numpy, float64) at the N = duration / dt + 1 samples t_n = n dt:
        t (N,), q (N, n), qd (N, n): the true state; u_cmd (N, m): the hand's commands;
        u_applied (N, m): the actuator output over the first sub-step after t_n.
    """
    n = int(round(duration / rig.dt)) + 1
    schedule = rig.schedule(n, rng)
    q0 = initial_position(rng)
    n_dof = q0.shape[0]

    def hand(x, memory, s):
        return rig.policy(x[:n_dof], x[n_dof:], s), memory, None

    # Built under x64 (the parameters in float64), and passed as arguments of the compiled loop rather than
    # folded into it as constants: the arithmetic that wrote the shipped recordings (`lagnet data verify`).
    with jax.enable_x64(True):
        run = eqx.filter_jit(closed_loop)(
            rig.plant(),
            rig.actuator(),
            hand,
            None,
            np.concatenate([q0, np.zeros_like(q0)]),
            {k: jnp.asarray(v) for k, v in schedule.items()},
            dt=rig.dt,
            substeps=rig.substeps,
        )
        xs = np.asarray(run.xs[:-1])  # the state after the last command is past the recording
        return {
            "t": rig.dt * np.arange(n),
            "q": xs[:, :n_dof],
            "qd": xs[:, n_dof:],
            "u_cmd": np.asarray(run.us),
            "u_applied": np.asarray(run.us_applied),
        }


def true_columns(run: dict[str, np.ndarray], mapping: dict) -> dict[str, np.ndarray]:
    """The true state and applied input of a `simulate_rig` run, aligned with the measured rows (the first
    sample dropped): `true_<column>` for each of `mapping`'s positions, velocities and inputs, in that order."""
    out = {}
    for role, key in (("positions", "q"), ("velocities", "qd"), ("inputs", "u_applied")):
        for i, name in enumerate(mapping[role]):
            out[f"true_{name}"] = run[key][1:, i]
    return out


def metadata(
    generator: str,
    rig: Any,
    *,
    seed: int,
    recording: str,
    duration: float,
    columns: dict,
    units: dict,
    mapping: dict,
    system: str,
    system_params: dict[str, Any],
) -> dict[str, Any]:
    """Everything needed to regenerate a recording bit for bit, and to read it.

    `mapping` says which columns are time, positions, velocities, inputs (`lagnet.data.loader`); `system` and
    `system_params` name the known system a model starts from.
    """
    from ..._version import __version__

    return {
        "generator": generator,
        "lagnet_version": __version__,
        "versions": {
            "numpy": np.__version__,
            "jax": jax.__version__,
            "python": platform.python_version(),
        },
        "seed": int(seed),
        "recording": recording,
        "duration_s": float(duration),
        "params": dataclasses.asdict(rig),
        "columns": columns,
        "units": units,
        "x64": True,
        "mapping": mapping,
        "system": {"name": system, "params": system_params},
    }

"""What every rig recording shares: sampled schedules, the metadata that makes it reproducible."""

import dataclasses
import platform
from typing import Any

import jax
import numpy as np


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
    system_params: dict[str, float],
) -> dict[str, Any]:
    """Everything needed to regenerate a recording bit for bit, and to read it.

    `mapping` says which columns are time, positions, velocities, inputs (`lagnet.data.loader`); `system` and
    `system_params` name the known system a model starts from.
    """
    from ... import __version__

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

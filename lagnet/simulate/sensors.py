"""Sensor models of the rigs: what a measured position looks like, and velocities from differences of it.

All host-side numpy with an explicit `np.random.Generator`, so a recording is reproducible from its seed.
"""

import dataclasses

import numpy as np

from ..data.angles import unwrap


@dataclasses.dataclass(frozen=True)
class UltrasonicSensor:
    """A time-of-flight distance sensor reading the cart position x (m).

        x_meas = r · round((x + ε) / r),  ε ~ N(0, σ²),

    and with probability `outlier_prob` per sample a spurious echo adds N(0, outlier_std²) (the isolated spikes
    that make differenced velocities of such sensors reach several m/s).
    """

    noise_std: float = 1.0e-3
    resolution: float = 1.0e-3
    outlier_prob: float = 2e-3
    outlier_std: float = 0.02

    def measure(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        noisy = x + self.noise_std * rng.standard_normal(x.shape)
        spikes = rng.random(x.shape) < self.outlier_prob
        noisy = noisy + spikes * self.outlier_std * rng.standard_normal(x.shape)
        return self.resolution * np.round(noisy / self.resolution)


@dataclasses.dataclass(frozen=True)
class OpticalEncoder:
    """An optical shaft encoder with `counts_per_rev` counts: the angle floored to whole counts,

    θ_meas = (2π / N) ⌊θ N / 2π⌋,  reported wrapped to [wrap_low, wrap_low + 2π) (None: unwrapped).
    """

    counts_per_rev: int = 2000
    wrap_low: float | None = 0.0

    def measure(self, theta: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        step = 2 * np.pi / self.counts_per_rev
        counts = np.floor(theta / step)
        if self.wrap_low is None:
            return counts * step
        low = np.ceil(self.wrap_low / step)
        return (np.mod(counts - low, self.counts_per_rev) + low) * step


def backward_velocity(p: np.ndarray, dt: float | np.ndarray, *, angle: bool = False) -> np.ndarray:
    """(p_k − p_{k−1}) / dt for k ≥ 1, length N − 1: the rig's online velocity. Angles are unwrapped first."""
    p = unwrap(p) if angle else np.asarray(p, dtype=float)
    return np.diff(p) / dt


@dataclasses.dataclass(frozen=True)
class StateSensors:
    """What a controller reads of a rig each control period: every coordinate through its sensor, velocities by
    backward differences of the readings,

        q_meas,k = sensor_i(q_i,k),   q̇_meas,k = (q_meas,k − q_meas,k−1) / dt   (angles: the difference wrapped),

    with the estimate starting at rest (the first reading has no previous one to difference with).

    Attributes:
        positions: one sensor per coordinate (an `OpticalEncoder`, an `UltrasonicSensor`, anything with
            `measure(values, rng)`), or None to read that coordinate exactly.
        angles: per coordinate, whether it is an angle (its differences are wrapped to [−π, π)).
    """

    positions: tuple
    angles: tuple[bool, ...]

    def __post_init__(self):
        if len(self.positions) != len(self.angles):
            raise ValueError(
                f"StateSensors: one sensor per coordinate, got {len(self.positions)} sensors for "
                f"{len(self.angles)} coordinates"
            )

    def read_positions(self, q: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The coordinates (n,) as the sensors read them."""
        out = np.array(q, dtype=float)
        for i, sensor in enumerate(self.positions):
            if sensor is not None:
                out[i] = sensor.measure(np.asarray(q[i : i + 1], float), rng)[0]
        return out

    def velocities(self, q_meas: np.ndarray, q_prev: np.ndarray, dt: float) -> np.ndarray:
        """(q_meas − q_prev) / dt, the differences of angles wrapped (a reading that wrapped around moved little)."""
        d = q_meas - q_prev
        wrapped = np.mod(d + np.pi, 2 * np.pi) - np.pi
        return np.where(np.asarray(self.angles), wrapped, d) / dt

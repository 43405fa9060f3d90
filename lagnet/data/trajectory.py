"""A measured or simulated trajectory: time stamps, coordinates, velocities and inputs, on the host."""

import dataclasses
from typing import Any

import numpy as np

from .._errors import DataError


@dataclasses.dataclass(frozen=True, eq=False)
class Trajectory:
    """One contiguous recording, sampled at times t_0 < t_1 < ... < t_{N-1}.

    `q[k]`, `qd[k]` are the state at t_k; `u[k]` is the input held constant over [t_k, t_{k+1}) (zero-order hold),
    so the last row of `u` is recorded but never used to step. Angles (where `angles[i]` is True) are unwrapped:
    continuous in time, not reduced modulo 2π, so differences and integration targets are well defined.

    A plain dataclass of numpy arrays rather than an `eqx.Module`: it lives on the host; `WindowDataset` is what
    goes to the device.

    Attributes:
        t: (N,) time stamps in s.
        q: (N, n) generalised coordinates.
        qd: (N, n) generalised velocities.
        u: (N, m) inputs (m may be 0).
        coordinate_names, input_names: names of the columns of q and u.
        angles: (n,) which coordinates are angles.
        source: where it came from (a file path, with the episode when a file holds several).
        meta: the generator's metadata for simulated data (generator, parameters, seed), else {}.
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    u: np.ndarray
    coordinate_names: tuple[str, ...]
    input_names: tuple[str, ...]
    angles: tuple[bool, ...]
    source: str = ""
    meta: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        n_rows = self.t.shape[0]
        n = len(self.coordinate_names)
        for name, arr, width in (
            ("q", self.q, n),
            ("qd", self.qd, n),
            ("u", self.u, len(self.input_names)),
        ):
            if arr.shape != (n_rows, width):
                raise DataError(
                    f"Trajectory.{name} must have shape ({n_rows}, {width}), got {arr.shape} "
                    f"({self.source or 'no source'})"
                )
        if len(self.angles) != n:
            raise DataError(f"Trajectory.angles must have {n} entries, got {len(self.angles)}")

    @property
    def n_rows(self) -> int:
        return int(self.t.shape[0])

    @property
    def n_steps(self) -> int:
        """Number of steps t_k → t_{k+1}: one less than the number of samples."""
        return max(self.n_rows - 1, 0)

    @property
    def dt(self) -> np.ndarray:
        """(N − 1,) the measured step t_{k+1} − t_k, kept per step (time stamps need not be uniform)."""
        return np.diff(self.t)

    @property
    def duration(self) -> float:
        return float(self.t[-1] - self.t[0]) if self.n_rows else 0.0

    @property
    def is_uniform(self) -> bool:
        """Whether every step equals the median step to 1e-6 relative."""
        dt = self.dt
        return bool(dt.size == 0 or np.allclose(dt, np.median(dt), rtol=1e-6, atol=0.0))

    def slice(self, start: int, stop: int) -> "Trajectory":
        """Rows [start, stop) as a new trajectory (a contiguous time block)."""
        return dataclasses.replace(
            self,
            t=self.t[start:stop],
            q=self.q[start:stop],
            qd=self.qd[start:stop],
            u=self.u[start:stop],
            source=f"{self.source}[{start}:{stop}]",
        )

    def resample(self, dt: float) -> "Trajectory":
        """On the uniform grid t_0, t_0 + dt, ... ≤ t_{N-1}: q and q̇ interpolated linearly, u zero-order held.

        Interpolating q linearly is exact to O(dt²); prefer keeping the measured steps (`dt` per step) unless a
        method needs a fixed step.
        """
        if not dt > 0:
            raise DataError(f"resample dt must be > 0, got {dt} ({self.source})")
        t_new = self.t[0] + dt * np.arange(int(np.floor(self.duration / dt + 1e-9)) + 1)

        def interp(x):
            return np.stack([np.interp(t_new, self.t, col) for col in x.T], axis=1).reshape(
                t_new.size, x.shape[1]
            )

        # Zero-order hold: the input in force at t is the last one recorded at or before t.
        held = np.clip(np.searchsorted(self.t, t_new, side="right") - 1, 0, self.n_rows - 1)
        return dataclasses.replace(
            self,
            t=t_new,
            q=interp(self.q),
            qd=interp(self.qd),
            u=self.u[held],
            source=f"{self.source} (resampled dt={dt:g})",
        )

"""What a plant did during learning, and how it is written for `lagnet train`: a `Recording`, the generic random
excitation, and the NPZ files the data layer reads for the config's system.

A recording is in the system's own coordinates and convention (what the controller saw: (q, q̇) as the plant
measured it), so the loop reads it with its own mapping (`mapping`): the time column `t`, one column per
coordinate named as the system names it, its velocity `<name>_dot`, and one per input.
"""

import dataclasses
import os

import numpy as np

from ..control.plant import AbstractPlant
from ..control.tasks import Task
from ..data.formats.npz_file import write_npz
from ..systems.base import AbstractSystem


@dataclasses.dataclass(frozen=True)
class Recording:
    """A stretch of interaction with a plant, N rows: at t_k the plant's measured state was y_k and the input
    u_k was held until the next row.

    Attributes:
        t: (N,) s from the stretch's start.
        y: (N, 2n) the measured states (q, q̇).
        u: (N, m) the inputs held.
        seconds: how long the plant ran (what counts as interaction).
        xs: (K, 2n) the plant's true states where it knows them (a simulation), for figures; None otherwise.
    """

    t: np.ndarray
    y: np.ndarray
    u: np.ndarray
    seconds: float
    xs: np.ndarray | None = None

    def __post_init__(self):
        rows = len(self.t)
        if self.y.shape[0] != rows or self.u.shape[0] != rows:
            raise ValueError(
                f"Recording: t, y and u need one row each per sample, got {rows}, {self.y.shape[0]} and "
                f"{self.u.shape[0]} rows"
            )
        if rows < 2:
            raise ValueError(f"Recording: needs at least 2 samples to learn from, got {rows}")

    @classmethod
    def from_run(cls, ys, us, dt: float, xs=None) -> "Recording":
        """A closed-loop run (ys (N, 2n) seen, us (N, m) applied, at period dt) up to its first non-finite row
        (a run that ended early or diverged stops there); `seconds` is the periods the plant ran."""
        ys, us = np.asarray(ys, float), np.asarray(us, float)
        ran = np.all(np.isfinite(us), axis=1)
        steps = len(ran) if ran.all() else int(np.argmin(ran))
        ok = np.all(np.isfinite(ys[:steps]), axis=1)
        rows = steps if ok.all() else int(np.argmin(ok))
        return cls(dt * np.arange(rows), ys[:rows], us[:rows], steps * dt, xs)


def mapping(system: AbstractSystem) -> dict:
    """The data mapping of a recording of `system` (`lagnet.data`): t, q by coordinate name, q̇ as `<name>_dot`,
    u by input name; angles unwrapped."""
    names = list(system.coordinate_names)
    return {
        "time": "t",
        "positions": names,
        "velocities": [f"{c}_dot" for c in names],
        "inputs": list(system.input_names),
        "unwrap": True,
    }


def write_recording(path: str | os.PathLike, rec: Recording, system: AbstractSystem, meta: dict):
    """`rec` as an NPZ file the data layer reads with `mapping(system)`, with `meta` (JSON) and the mapping, units
    and seconds of interaction in its metadata."""
    n = system.n_dof
    columns = {"t": rec.t}
    for i, name in enumerate(system.coordinate_names):
        columns[name] = rec.y[:, i]
        columns[f"{name}_dot"] = rec.y[:, n + i]
    for j, name in enumerate(system.input_names):
        columns[name] = rec.u[:, j]
    units = {"t": "s", **system.state_units}
    full = {**meta, "mapping": mapping(system), "units": units, "seconds": float(rec.seconds)}
    write_npz(path, columns, full)


@dataclasses.dataclass(frozen=True)
class RandomExcitation:
    """Feedback-free random input, for any plant: from a start of the task's distribution, a piecewise-constant
    input, each level drawn uniformly within ±`amplitude` × the tighter of the task's and the plant's limits and
    held for a time drawn uniformly in `hold` (s). Stops early where the plant ends (a Gymnasium episode's end)
    or its state stops being finite.

    The plant's own limits and the task's bound it; nothing else does: a plant with end stops (a cart on a
    rail) needs its own excitation (`learn_to_control(..., excitation=)`), as the cart-pole rig's is."""

    amplitude: float = 0.5
    hold: tuple[float, float] = (0.1, 0.5)

    def __post_init__(self):
        lo, hi = self.hold
        if not (0 < self.amplitude <= 1 and 0 < lo <= hi):
            raise ValueError(
                f"RandomExcitation: need 0 < amplitude ≤ 1 and 0 < hold[0] ≤ hold[1], got "
                f"amplitude={self.amplitude}, hold={self.hold}"
            )

    def __call__(self, plant: AbstractPlant, task: Task, seconds: float, seed: int) -> Recording:
        rng = np.random.default_rng(seed)
        x0 = task.starts(1, int(rng.integers(2**31)))[0]
        limit = np.minimum(task.u_max, plant.u_max)
        limit = np.where(np.isfinite(limit), limit, 1.0)
        steps = int(round(seconds / plant.dt))
        us = np.zeros((steps, limit.size))
        k = 0
        while k < steps:
            length = max(int(round(rng.uniform(*self.hold) / plant.dt)), 1)
            us[k : k + length] = self.amplitude * limit * rng.uniform(-1, 1, limit.size)
            k += length
        ys, xs = np.full((steps, 2 * plant.n_dof), np.nan), [None] * (steps + 1)
        y = plant.reset(x0)
        xs[0] = plant.true_state
        for k in range(steps):
            ys[k] = y
            y = plant.step(us[k])
            xs[k + 1] = plant.true_state
            if plant.ended or not np.all(np.isfinite(y)):
                us[k + 1 :] = np.nan
                break
        ran = sum(x is not None for x in xs)
        return Recording.from_run(ys, us, plant.dt, np.stack(xs[:ran]))

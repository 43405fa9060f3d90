"""Evaluation windows on measured time grids: horizons in seconds or steps, windows by count, stride or start time.

With uneven time stamps "250 steps" is not "0.5 s": a horizon in seconds ends, in each window, at the first
recorded sample at least that long after the window's start, so every window is rolled out over the same time
and the number of steps varies from window to window. All horizons are measured on the same windows: they are
rolled out once, for the longest horizon, and the shorter ones read the same errors.
"""

import dataclasses
import re
from collections.abc import Sequence

import jax.numpy as jnp
import numpy as np

from .._errors import DataError
from .trajectory import Trajectory
from .windows import Window

_SECONDS = {"s": 1.0, "ms": 1e-3}


@dataclasses.dataclass(frozen=True)
class Horizon:
    """A prediction horizon: `value` seconds (`unit="s"`) or `value` integration steps (`unit="steps"`)."""

    value: float
    unit: str

    @property
    def label(self) -> str:
        if self.unit == "steps":
            return f"{int(self.value)} steps"
        return f"{self.value:g} s"

    @property
    def seconds(self) -> float | None:
        return self.value if self.unit == "s" else None

    @property
    def steps(self) -> int | None:
        return int(self.value) if self.unit == "steps" else None


def parse_horizon(text: str | int | float, what: str = "horizon") -> Horizon:
    """'0.5s', '0.5 s', '500ms' → seconds; '250', '250 steps', 250 → steps."""
    if isinstance(text, bool):
        raise DataError(f"{what}: expected seconds ('0.5s') or steps ('250'), got {text!r}")
    if isinstance(text, int):
        value, unit = float(text), "steps"
    elif isinstance(text, float):
        raise DataError(
            f"{what}: {text!r} is ambiguous: write '{text:g}s' for seconds or an integer for steps"
        )
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(s|ms|steps?)?\s*", str(text))
        if m is None:
            raise DataError(
                f"{what}: {text!r} is not a horizon: write seconds ('0.5s', '500ms') or steps ('250')"
            )
        number, suffix = float(m.group(1)), m.group(2) or "steps"
        if suffix in _SECONDS:
            value, unit = number * _SECONDS[suffix], "s"
        else:
            if number != int(number):
                raise DataError(f"{what}: {text!r}: a number of steps must be an integer")
            value, unit = number, "steps"
    if value <= 0:
        raise DataError(f"{what}: {text!r} must be positive")
    return Horizon(value, unit)


def steps_needed(t: np.ndarray, starts: np.ndarray, horizon: Horizon) -> np.ndarray:
    """For each start row, the number of steps after which `horizon` is reached (may run past the data).

    Seconds: the first sample j with t[s + j] − t[s] ≥ T (to 1e-9 relative, so a grid of 0.02 s reaches 0.1 s
    after exactly 5 steps despite rounding).
    """
    if horizon.unit == "steps":
        return np.full(len(starts), int(horizon.value))
    target = t[starts] + horizon.value * (1 - 1e-9)
    return np.searchsorted(t, target, side="left") - starts


@dataclasses.dataclass
class EvaluationWindows:
    """Windows of `steps` steps cut from measured recordings, and where each horizon ends in each of them.

    Attributes:
        windows: the batched `Window` (q, q̇ of shape (W, steps + 1, n), u (W, steps, m), dt (W, steps)).
        horizons: the requested horizons, in order.
        ends: (H, W) the number of steps after which horizon h is reached in window w (≤ steps).
        elapsed: (W, steps) the time from each window's start to the end of each step.
        lengths: (W,) each window's own number of steps (the rest is padding with dt = 0).
        sources: (W,) the recording and start time of each window, e.g. "run_05.csv @ 12.34 s".
    """

    windows: Window
    horizons: list[Horizon]
    ends: np.ndarray
    elapsed: np.ndarray
    lengths: np.ndarray
    sources: list[str]

    @property
    def steps(self) -> int:
        return int(self.elapsed.shape[1])


def cut_windows(
    trajs: Sequence[Trajectory],
    horizons: Sequence[Horizon],
    *,
    count: int | None = None,
    stride: Horizon | None = None,
    start_times: Sequence[float] | None = None,
    seed: int = 0,
    dtype=None,
) -> EvaluationWindows:
    """Windows long enough for every horizon, chosen by `count` (random, seeded, without replacement), by
    `stride` (every stride seconds or rows from each recording's start) or at `start_times` (seconds from each
    recording's first sample). Exactly one of the three; a window never crosses the end of a recording.

    Raises:
        ValueError: no recording is long enough, or a start time has no window (naming the valid range).
    """
    if sum(x is not None for x in (count, stride, start_times)) != 1:
        raise DataError("choose the windows by exactly one of count, stride or start times")
    horizons = list(horizons)
    if not horizons:
        raise DataError("at least one horizon is needed")
    # Every start from which the recording reaches every horizon; the longest decides the window's length.
    candidates, needed = [], {}
    for i, traj in enumerate(trajs):
        rows = np.arange(traj.n_rows - 1)
        each = np.stack([steps_needed(traj.t, rows, h) for h in horizons], axis=1)  # (rows, H)
        ok = rows + each.max(axis=1) <= traj.n_rows - 1
        candidates += [(i, int(s)) for s in rows[ok]]
        needed |= {(i, int(s)): n for s, n in zip(rows[ok], each[ok], strict=True)}
    if not candidates:
        raise DataError(
            f"no evaluation recording is long enough for a horizon of {max(horizons, key=_order).label} "
            f"({', '.join(f'{t.source}: {t.t[-1] - t.t[0]:.3g} s, {t.n_rows} rows' for t in trajs)})"
        )
    if start_times is not None:
        chosen = _at_times(trajs, candidates, start_times)
    elif stride is not None:
        chosen = _every(trajs, candidates, stride)
    else:
        rng = np.random.default_rng(seed)
        idx = np.sort(rng.choice(len(candidates), size=min(count, len(candidates)), replace=False))
        chosen = [candidates[j] for j in idx]
    ends = np.stack(
        [needed[c] for c in chosen], axis=1
    )  # (H, W): where each horizon ends in each window
    lengths = ends.max(axis=0)
    steps = int(lengths.max())

    # Windows of fewer steps (a recording sampled more coarsely) are padded to one shape with steps of dt = 0,
    # which leave the state where it is; no metric reads past a window's own length.
    def rows(field, i, s, n, extra):
        x = getattr(trajs[i], field)[s : s + n + extra]
        return np.concatenate([x, np.repeat(x[-1:], steps - n, axis=0)])

    def stack(field, extra):
        return np.stack(
            [rows(field, i, s, n, extra) for (i, s), n in zip(chosen, lengths, strict=True)]
        )

    dts = [np.diff(trajs[i].t[s : s + n + 1]) for (i, s), n in zip(chosen, lengths, strict=True)]
    dtype = dtype or jnp.result_type(float)
    windows = Window(
        q=jnp.asarray(stack("q", 1), dtype),
        qd=jnp.asarray(stack("qd", 1), dtype),
        u=jnp.asarray(stack("u", 0), dtype),
        dt=jnp.asarray(np.stack([np.pad(d, (0, steps - len(d))) for d in dts]), dtype),
    )
    elapsed = np.cumsum(np.asarray(windows.dt, float), axis=1)
    sources = [f"{trajs[i].source} @ {trajs[i].t[s] - trajs[i].t[0]:.3f} s" for i, s in chosen]
    return EvaluationWindows(windows, horizons, ends, elapsed, lengths, sources)


def _order(h: Horizon) -> tuple[int, float]:
    return (h.unit == "s", h.value)


def _every(trajs, chosen, stride: Horizon):
    """Starts every `stride` (seconds or rows) from each recording's first sample."""
    out = []
    for i, traj in enumerate(trajs):
        rows = np.array([s for j, s in chosen if j == i])
        if rows.size == 0:
            continue
        if stride.unit == "steps":
            picked = rows[rows % int(stride.value) == 0]
        else:
            marks = traj.t[0] + stride.value * np.arange(
                int((traj.t[rows[-1]] - traj.t[0]) / stride.value) + 1
            )
            picked = np.unique(
                rows[np.clip(np.searchsorted(traj.t[rows], marks), 0, len(rows) - 1)]
            )
        out += [(i, int(s)) for s in picked]
    return out


def _at_times(trajs, chosen, times):
    """The window starting at the first sample at or after each time (seconds from each recording's start)."""
    out = []
    for i, traj in enumerate(trajs):
        rows = {s for j, s in chosen if j == i}
        for time in times:
            s = int(np.searchsorted(traj.t, traj.t[0] + time - 1e-9))
            if s not in rows:
                last = traj.t[max(rows)] - traj.t[0] if rows else None
                where = f"0 … {last:.3f} s" if last is not None else "none: it is too short"
                raise DataError(
                    f"{traj.source}: no window reaching the horizon starts at {time:g} s "
                    f"(valid start times: {where})"
                )
            out.append((i, s))
    return out

"""A config's recordings as its model consumes them: mapped, extended by the input history, steps checked; and
the training and validation recordings a run trains on (`load_training_data`)."""

import dataclasses
import math

import numpy as np

from ..config import Config, ConfigError
from ..data.derivatives import DEFAULT_WINDOW, smoothed_derivative
from ..data.horizons import parse_horizon
from ..data.loader import load_trajectories
from ..data.trajectory import Trajectory
from ..data.windows import split_by_file, split_by_time
from ..models.history import InputHistory
from ..systems.base import AbstractSystem
from .build import input_limit

# How far the median measured step may be from a declared `integrator.dt` (time stamps carry rounding).
_DT_TOLERANCE = 1e-3


def with_input_history(traj: Trajectory, history: InputHistory) -> Trajectory:
    """The trajectory with inputs ū_t = (u_t, …, u_{t−k}), saturated at the history's limit (what the actuator
    delivered: the friction fit and the scales see the same inputs as the model); a recording starts from rest
    (zeros before it)."""
    if history.limit is not None:
        traj = dataclasses.replace(traj, u=history.saturate(traj.u))
    if not history.lags:
        return traj
    names = traj.input_names + tuple(
        f"{name}[t-{lag}]" for lag in range(1, history.lags + 1) for name in traj.input_names
    )
    u = history.stack(traj.u, history.past_zeros(traj.u))
    return dataclasses.replace(traj, u=u, input_names=names)


def measured_step(trajs: list[Trajectory]) -> float:
    """The median of the measured time steps over all recordings."""
    return float(np.median(np.concatenate([t.dt for t in trajs])))


def load_recordings(config: Config, system: AbstractSystem, paths) -> list[Trajectory]:
    """The trajectories in `paths`, mapped by `data.mapping`, with the inputs extended by the model's input
    history. Their measured time stamps are what is stepped; a declared `integrator.dt` must agree with each
    file's median step (else a `ConfigError`: resample the data, or drop `integrator.dt`)."""
    history = InputHistory(
        system.n_inputs, config.model.setting("input_history"), input_limit(config, system)
    )
    trajs = []
    for path in paths:
        loaded = load_trajectories(
            path, config.data.mapping, system=system, dtype=config.dtype, storage=config.dtype
        )
        declared = config.integrator.dt
        if declared is not None and loaded:
            step = measured_step(loaded)
            if abs(step / declared - 1) > _DT_TOLERANCE:
                raise ConfigError(
                    f"integrator.dt = {declared:g} s, but {path} was sampled every {step:g} s (median "
                    "step): remove integrator.dt to step the measured time stamps, or resample the data "
                    "(data.mapping.resample)"
                )
        trajs.extend(with_input_history(t, history) for t in loaded)
    return trajs


def sample_statistics(trajs: list[Trajectory], *, window: float = DEFAULT_WINDOW) -> dict:
    """Stacked samples (q, q̇, q̈, u) for feature scales, friction fits and output scales.

    q̈ is the smoothed derivative of the recorded q̇ (`lagnet.data.derivatives.smoothed_derivative`: a local
    quadratic least-squares fit over the widest 2k + 1 samples spanning at most `window` seconds, each recording
    on its own time stamps). Raw central differences of measured velocities are dominated by their noise and
    quantisation (on the 500 Hz DFKI double pendulum they make the residual force's spread 7–8× larger,
    experiments/output_scale_real.py); data at 50–100 Hz keep three samples at the default 30 ms, which is
    exactly the central difference of before (second order also at a recording's two ends).
    """
    # In float64 whatever the recordings' storage: friction fits and scales are least squares and moments.
    q = np.concatenate([t.q for t in trajs], dtype=float)
    qd = np.concatenate([t.qd for t in trajs], dtype=float)
    qdd = np.concatenate([smoothed_derivative(t.qd, t.t, window) for t in trajs], dtype=float)
    u = np.concatenate([t.u for t in trajs], dtype=float)
    steps = np.concatenate([np.diff(np.asarray(t.t, float)) for t in trajs])
    dt = float(np.median(steps)) if steps.size else float("nan")
    return {"q": q, "qd": qd, "qdd": qdd, "u": u, "dt": dt}


def validation_horizon(
    config: Config, recordings: list[Trajectory], validation: list[Trajectory]
) -> tuple[int, str | None]:
    """The steps of the validation windows, and why they are not the ones asked for (None when they are).

    `training.validation_horizon: evaluation` (the default) is the user's horizon, `evaluation.horizon` (seconds
    at the measured step), so the checkpoint is chosen by the error the evaluation reports; where no validation
    recording holds a window that long, the longest training horizon. `training` (or null) is the longest
    training horizon; a number is that many steps.
    """
    tc = config.training
    given, longest = tc.validation_horizon, tc.longest_horizon
    if isinstance(given, int):
        return given, None
    if given != "evaluation":
        return longest, None
    horizon = parse_horizon(config.evaluation.horizon, "evaluation.horizon")
    steps = horizon.steps
    if steps is None:
        steps = max(1, round(horizon.seconds / measured_step(recordings)))
    if not any(t.n_rows >= steps + 1 for t in validation):
        return longest, (
            f"validating over {longest} step(s), the longest training horizon: no validation recording holds a "
            f"window of the evaluation horizon ({steps} steps; training.validation_horizon)"
        )
    return steps, None


def check_enough_samples(
    config: Config,
    recordings: list[Trajectory],
    train: list[Trajectory],
    validation: list[Trajectory],
) -> None:
    """Checks that the `train` part of the training `recordings` holds a window of the longest training horizon,
    and `validation` one of the validation horizon unless `data.validation_fraction` is 0: else a `ConfigError`
    that says how many samples are needed. (With no validation window, the training loss would silently stand in
    for the validation loss.)"""
    tc, dc = config.training, config.data
    rows = max((t.n_rows for t in recordings), default=0)
    step = measured_step(recordings) if rows > 1 else None
    h = tc.longest_horizon
    if max((t.n_rows for t in train), default=0) < h + 1:
        cut = f" (after data.max_duration = {dc.max_duration:g} s)" if dc.max_duration else ""
        resample = (dc.mapping or {}).get("resample")
        if isinstance(resample, int | float) and not isinstance(resample, bool):
            cut += f" (resampled every {resample:g} s by data.mapping.resample)"
        need = "" if step is None else f", {h * step:.3g} s at the measured step of {step:g} s"
        raise ConfigError(
            f"the training data{cut} leave no window of {h} step(s) (the longest training horizon): the "
            f"longest recording has {rows} sample(s); a window needs {h + 1} consecutive samples{need}"
            + (
                f", in the part left after holding out data.validation_fraction = {v:g}"
                if (v := dc.validation_fraction) > 0 and not dc.validation
                else ""
            )
        )
    val_h = validation_horizon(config, recordings, validation)[0]
    if (dc.validation or dc.validation_fraction > 0) and not any(
        t.n_rows >= val_h + 1 for t in validation
    ):
        if dc.validation:
            raise ConfigError(
                f"data.validation {dc.validation} hold no window of {val_h} step(s) "
                f"(training.validation_horizon): that needs {val_h + 1} consecutive samples"
            )
        need = math.ceil((val_h + 1) / dc.validation_fraction)
        raise ConfigError(
            f"{rows} samples are too few to hold out data.validation_fraction = "
            f"{dc.validation_fraction:g} for validation: a validation window of {val_h} step(s) needs "
            f"{val_h + 1} held-out samples, so a recording of at least about {need} samples; add data, give "
            f"data.validation files, or set data.validation_fraction: 0.0 (the training loss then picks the "
            f"best epoch)"
        )


def load_training_data(config: Config, system):
    """The training recordings (truncated to `data.max_duration`) and the validation recordings: `data.validation`'s
    files when given, else the last `validation_fraction` of each training recording (or whole episodes)."""
    dc = config.data
    if not dc.train:
        raise ConfigError("data.train must name at least one file")
    trajs = load_recordings(config, system, dc.train)
    if dc.max_duration is not None:
        kept, left = [], dc.max_duration
        for traj in trajs:
            if left <= 0:
                break
            rows = int(np.searchsorted(traj.t - traj.t[0], left, side="right"))
            kept.append(traj.slice(0, rows) if rows < traj.n_rows else traj)
            left -= kept[-1].duration
        trajs = kept
    if dc.validation:
        # Whole held-out recordings: the validation loss then measures other runs, as a test set does.
        validation = load_recordings(config, system, dc.validation)
        check_enough_samples(config, trajs, trajs, validation)
        return trajs, validation
    v = dc.validation_fraction
    if v > 0 and len(trajs) >= 3:
        # Several recordings (runs, episodes): hold out whole ones, so validation measures runs the model was
        # not fitted on, as a test set does (a tail of each run may be a regime of its own).
        splits = split_by_file(trajs, {"train": 1 - v, "validation": v}, seed=config.seed)
    elif v > 0:
        splits = split_by_time(
            trajs, {"train": 1 - v, "validation": v}, blocks=dc.validation_blocks, seed=config.seed
        )
    else:
        splits = {"train": trajs, "validation": []}
    check_enough_samples(config, trajs, splits["train"], splits["validation"])
    return splits["train"], splits["validation"]

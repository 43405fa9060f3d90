"""`train_run`: a config trained into a run directory — `lagnet.fit` plus the run's files.

The directory holds config.yaml (the resolved config), run.json (the step and precision), metrics.jsonl (one line
per epoch), checkpoints/best.eqx and last.eqx, the last few training states (for `--resume`, bit for bit) and
summary.json. The parts live beside it: the config's system, integrator and model (`build`), the data
(`recordings`), the run folder's safety and identity (`folder`) and the callback that writes it (`callback`);
their public names are importable from here too.
"""

import dataclasses
import json
import os
import sys
import time
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from .. import parallel
from .._version import __version__
from ..config import Config, ConfigError
from ..config.sources import accepts_trust_code
from ..data.loader import reading_progress
from ..data.windows import make_windows
from ..models.consistency import check_physical
from ..models.summary import (
    collapsed_parameters,
    physics_summary,
    trained_bound_hits,
    unchanged_parameters,
    warn_unchanged,
)
from ..train.fit import TrainingDiverged, TrainState, fit, init_optimizer
from ..train.loss import StateLoss
from .build import build_integrator, build_model, build_system
from .callback import RunFiles
from .checkpoints import Checkpoints
from .files import save_json
from .folder import (
    RUN_ENTRIES,
    SYSTEM_DIR,
    check_output_dir,
    check_run_target,
    keep_system_source,
    run_identity,
)
from .identification import bound_message, identify_physics, save_identified
from .load import as_dtype, check_precision, start_from
from .lock import locks_run_dir
from .recordings import (
    load_training_data,
    measured_step,
    sample_statistics,
    validation_horizon,
)
from .spec import RunSpec, module_digest
from .validation import outlier_segments, segment_errors

__all__ = [
    "RUN_ENTRIES",
    "SYSTEM_DIR",
    "TrainResult",
    "check_output_dir",
    "check_run_target",
    "data_parallel_mesh",
    "keep_system_source",
    "load_training_data",
    "make_loss",
    "make_optimizer",
    "make_schedule",
    "run_identity",
    "train_run",
]


def make_loss(config: Config, system, stats) -> StateLoss:
    """The paper's state loss with the config's weights, normalised by the data's spread (1 for angles)."""
    tc = config.training
    n = system.n_dof

    def weights(key):
        w = getattr(tc, key)
        if w is None:
            return jnp.ones(n)
        if len(w) != n:
            raise ConfigError(f"training.{key} must have {n} entries (one per coordinate), got {w}")
        return jnp.asarray(w, float)

    if tc.normalise:
        sq = np.where(np.asarray(system.angles), 1.0, np.std(stats["q"], axis=0))
        sqd = np.std(stats["qd"], axis=0)
        sq, sqd = np.where(sq > 1e-12, sq, 1.0), np.where(sqd > 1e-12, sqd, 1.0)
    else:
        sq, sqd = np.ones(n), np.ones(n)
    return StateLoss(
        system.angles,
        weights("weights_q"),
        weights("weights_qd"),
        jnp.asarray(sq),
        jnp.asarray(sqd),
        residual_weight=float(config.model.setting("residual_penalty")),
    )


def schedule_steps(config: Config, steps_per_epoch: int) -> int:
    """The optimiser steps the schedule spans: the epochs', or `training.max_steps` when fewer. Built from the
    config each time a run starts, so a resume with a raised budget stretches the schedule to the new total."""
    tc = config.training
    return int(max(min(tc.epochs * steps_per_epoch, tc.max_steps or np.inf), 1))


def make_schedule(config: Config, steps_per_epoch: int) -> optax.Schedule:
    """The learning rate after n optimiser steps: lr (constant); lr (1 + cos(π n / N)) / 2 (cosine); or a
    linear rise from 0 over the warm-up epochs, then that cosine (warmup_cosine); N = `schedule_steps`."""
    tc = config.training
    total, lr = schedule_steps(config, steps_per_epoch), tc.learning_rate
    if tc.schedule == "cosine":
        return optax.cosine_decay_schedule(lr, total)
    if tc.schedule == "warmup_cosine":
        warm = min(tc.warmup_epochs * steps_per_epoch, total - 1)
        return optax.warmup_cosine_decay_schedule(0.0, lr, max(warm, 1), total)
    return optax.constant_schedule(lr)


def make_optimizer(config: Config, steps_per_epoch: int) -> optax.GradientTransformation:
    """The config's optimiser: Adam or AdamW with the learning rate of `make_schedule`, optional clipping."""
    tc = config.training
    # A constant rate is passed as a number: the optimiser state then has no schedule count (as runs had).
    schedule = (
        tc.learning_rate
        if tc.schedule not in ("cosine", "warmup_cosine")
        else make_schedule(config, steps_per_epoch)
    )
    parts = []
    if tc.clip_norm is not None:
        parts.append(optax.clip_by_global_norm(tc.clip_norm))
    if tc.optimizer == "adamw":
        parts.append(optax.adamw(schedule, weight_decay=tc.weight_decay))
    else:
        parts.append(optax.adam(schedule))
    return optax.chain(*parts)


def data_parallel_mesh(setting, batch_size: int):
    """The training mesh of the config's `devices` (see `lagnet.parallel.batch_mesh`), errors as ConfigError."""
    try:
        return parallel.batch_mesh(setting, batch_size)
    except ValueError as e:
        raise ConfigError(str(e)) from None


@dataclasses.dataclass
class TrainResult:
    run_dir: str
    model: eqx.Module
    best_validation: float
    epochs: int
    seconds: float
    select_by: str = "loss"
    # "physics" when no trained epoch beat the untrained model, which is the identified physics: the run ships it.
    fallback: str | None = None


@dataclasses.dataclass
class _Setup:
    """What `train_run` builds from the config before `fit`: the model (its physics identified), the objects `fit`
    takes, and the run's checkpoints and files."""

    model: eqx.Module
    integrator: object
    loss: StateLoss
    optimizer: optax.GradientTransformation
    windows: object  # epoch → the training windows of its horizon
    validation: object
    mesh: object
    select_by: str
    identification: dict | None
    dt: float
    data_key: jax.Array
    checkpoints: Checkpoints
    run_files: RunFiles
    load_seconds: float
    given: eqx.Module | None = None  # the physics as the config gives it, before identification


def _horizons(trajs, tc, dtype):
    """epoch → the training windows of its horizon (only the current horizon's are kept)."""
    stages = {}

    def windows(epoch):
        h = tc.horizon_at(epoch)
        if h not in stages:
            stages.clear()
            stages[h] = make_windows(trajs, h, skip_short=True, dtype=dtype)
        return stages[h]

    return windows


def _set_up(config: Config, run_dir: str, *, resume, progress, main, remove, start_time) -> _Setup:
    """Everything `fit` needs, built (and checked) before anything is written into `run_dir`."""
    dtype = jnp.dtype(config.dtype)
    model_key, data_key = jax.random.split(jax.random.key(config.seed))
    # The system, the training and validation recordings, their statistics and the model (in the run's dtype).
    system = build_system(config)
    train_trajs, val_trajs = load_training_data(config, system)
    stats = sample_statistics(train_trajs, window=config.data.derivative_window)
    model = build_model(config, system, stats, key=model_key)
    if config.model.setting("start_from") is not None:
        model = start_from(config.model.setting("start_from"), model)
    model = as_dtype(model, dtype)
    integrator = build_integrator(config)
    loss = make_loss(config, system, stats)
    tc = config.training
    dt = measured_step(train_trajs)
    checkpoints = Checkpoints(
        os.path.join(run_dir, "checkpoints"), tc.keep_checkpoints, run_identity(config)
    )
    if resume:
        checkpoints.check_identity(run_dir)
    val_h, why = validation_horizon(config, train_trajs, val_trajs)
    if why and main and val_trajs:
        warnings.warn(f"{config.name}: {why}", stacklevel=5)
    validation = make_windows(val_trajs, val_h, skip_short=True, dtype=dtype) if val_trajs else None
    given = model.physics_prior()
    model, identification = identify_physics(
        config,
        model,
        integrator,
        train_trajs + val_trajs
        if config.model.setting("identification").data == "all"
        else train_trajs,
        loss,
        dtype,
        checkpoints.folder,
        resume=resume,
        progress=progress and main,
        validation=validation,
    )
    spec = RunSpec(
        dt,
        config.dtype,
        config.model.setting("input_history"),
        __version__,
        sources=module_digest(config),
    )
    windows = _horizons(train_trajs, tc, dtype)
    steps_per_epoch = max(len(windows(0)) // tc.batch_size, 1)
    optimizer = make_optimizer(config, steps_per_epoch)
    schedule = make_schedule(config, steps_per_epoch)
    run_files = RunFiles(run_dir, checkpoints, config, spec, model, start_time, remove, schedule)
    # Loading the data, building the model and fitting its friction: what `lagnet train` does before `fit`.
    load_seconds = time.perf_counter() - start_time
    mesh = data_parallel_mesh(config.devices, tc.batch_size)
    if main and val_trajs and len(val_trajs) <= 200:
        scores = segment_errors(model, integrator, loss, val_trajs, val_h)
        for message in outlier_segments(scores, val_trajs):
            warnings.warn(f"{config.name}: {message}", stacklevel=5)
    select_by = tc.select_by
    if select_by in ("auto", "guarded_relative_error"):
        # Without validation windows there is no per-coordinate error to guard: the loss selects.
        select_by = "guarded_relative_error" if validation is not None else "loss"
    return _Setup(
        model,
        integrator,
        loss,
        optimizer,
        windows,
        validation,
        mesh,
        select_by,
        identification,
        dt,
        data_key,
        checkpoints,
        run_files,
        load_seconds,
        given,
    )


def _trains(model) -> bool:
    """Whether `model` has anything an optimiser updates (a known model, or frozen physics without a network,
    has not: it is scored, not stepped for epochs, and has no training state to resume)."""
    return bool(jax.tree_util.tree_leaves(eqx.filter(model, model.trainable())))


def _restored(setup: _Setup) -> TrainState | None:
    """The newest training state in the run's checkpoints, read into one of the same structure, shapes and
    dtypes; None for a model with nothing to train."""
    if not _trains(setup.model):
        return None
    params, _ = eqx.partition(setup.model, setup.model.trainable())
    like = TrainState.start(params, init_optimizer(setup.optimizer, params), setup.data_key, 0.0)
    try:
        return setup.checkpoints.load_latest(like)
    except ValueError as error:
        # A state saved before states recorded the step within an epoch: the same leaves without `step` (it
        # ended an epoch, step 0). If that fails too, the first error is the one to report.
        try:
            state = setup.checkpoints.load_latest(eqx.tree_at(lambda s: s.step, like, None))
        except ValueError:
            raise error from None
        return eqx.tree_at(lambda s: s.step, state, jnp.asarray(0), is_leaf=lambda x: x is None)


def _fit(config: Config, run_dir: str, setup: _Setup, restored, callbacks, progress: bool):
    """`lagnet.fit` with the config's training settings; a diverged fit names the last good checkpoint."""
    tc = config.training
    try:
        return fit(
            setup.model,
            setup.integrator,
            setup.windows,
            loss=setup.loss,
            optimizer=setup.optimizer,
            epochs=tc.epochs if _trains(setup.model) else 0,
            key=setup.data_key,
            batch_size=tc.batch_size,
            validation=setup.validation,
            patience=tc.patience,
            max_skipped_steps=tc.max_skipped_steps,
            mesh=setup.mesh,
            state=restored,
            callbacks=callbacks,
            progress=progress,
            desc=f"train {config.name}",
            max_steps=tc.max_steps,
            max_seconds=tc.max_seconds,
            select_by=setup.select_by,
        )
    except TrainingDiverged as e:
        raise TrainingDiverged(
            f"{config.name}: {e} (training.max_skipped_steps = {tc.max_skipped_steps}). "
            "The last good checkpoint is "
            f"{os.path.join(run_dir, 'checkpoints', 'best.eqx')} "
            "(try a smaller learning rate, clip_norm, or a shorter horizon)"
        ) from None


def _fallback(config: Config, setup: _Setup, result) -> str | None:
    """ "physics" when no trained epoch beat the untrained model and that model is the physics (the run ships
    it); warns when training never improved."""
    model, select_by = setup.model, setup.select_by
    improved = result.best_epoch >= 0
    trains = _trains(model)
    # A PINODE starts as its physics (network output zero): an untrained best is the physics, shipped as such.
    starts_as_physics = config.model.setting("zero_init") and model.physics_prior() is not model
    fallback = (
        "physics"
        if trains and starts_as_physics and model.physics_prior() is not None and not improved
        else None
    )
    if fallback and result.epochs_run > 0:
        warnings.warn(
            f"{config.name}: no trained epoch beat the "
            f"{'identified ' if setup.identification else ''}physics on "
            f"the validation data ({select_by}) in {result.epochs_run} epochs, so the run ships the physics "
            "(checkpoints/best.eqx is the model with its network at zero). The network does not help on "
            "this data as trained: check with `lagnet cv`, or give it more varied data",
            stacklevel=5,
        )
    elif trains and result.epochs_run > 0 and not improved and np.isfinite(result.best_loss):
        warnings.warn(
            f"{config.name}: the validation score never beat the untrained model's "
            f"({select_by}) in {result.epochs_run} epochs, so checkpoints/best.eqx is the untrained "
            "model (try another learning rate, horizon or network size, and compare with `lagnet cv`)",
            stacklevel=5,
        )
    return fallback


def _epoch_record(run_dir: str, epoch: int) -> dict:
    """metrics.jsonl's record of `epoch` ({} if none): an epoch run before a resume is not in `fit`'s history."""
    try:
        with open(os.path.join(run_dir, "metrics.jsonl"), encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue  # a line cut short by a kill
                if isinstance(record, dict) and record.get("epoch") == epoch:
                    return record
    except OSError:
        pass
    return {}


def _summary(config: Config, run_dir: str, setup: _Setup, result, seconds, fallback, stuck) -> dict:
    """summary.json's content."""
    select_by = setup.select_by
    params, _ = eqx.partition(result.model, result.model.trainable())
    # With select_by: final_error the best score is an error; the loss of that epoch is kept here (from
    # metrics.jsonl when the epoch was run before a resume).
    best_loss = next(
        (r["validation_loss"] for r in result.history if r["epoch"] == result.best_epoch), None
    )
    if best_loss is None and result.best_epoch >= 0:
        best_loss = _epoch_record(run_dir, result.best_epoch).get("validation_loss")
    return {
        "name": config.name,
        "model": config.model.type,
        "initial_validation_loss": result.initial_loss,
        "best_validation_loss": result.best_loss if select_by == "loss" else best_loss,
        "best_epoch": result.best_epoch,
        "improved": result.best_epoch >= 0,
        "epochs_run": result.epochs_run,
        "skipped_steps": result.skipped_steps,
        "seconds": seconds,
        # Where the time went: `lagnet train` before `fit`, tracing and compiling, the epochs.
        "seconds_load": setup.load_seconds,
        "seconds_compile": result.compile_seconds,
        "seconds_train": result.seconds - result.compile_seconds,
        "select_by": select_by,
        "validation_horizon": None if setup.validation is None else setup.validation.k,
        # The recordings validation (early stopping, checkpoint choice) saw: none means a split of the training
        # recordings (data.validation_fraction).
        "validation_recordings": list(config.data.validation),
        "best_score": result.best_loss,
        "stop_reason": result.stop_reason,
        "steps_run": result.steps_run,
        "train_windows": len(setup.windows(0)),
        "dt": setup.dt,
        "parameters": int(sum(x.size for x in jax.tree_util.tree_leaves(params))),
        "physics": physics_summary(result.model),
        "identification": setup.identification,
        "fallback": fallback,
        "unchanged_parameters": stuck,
        "at_bound": trained_bound_hits(setup.model, result.model),
        "collapsed": collapsed_parameters(setup.model, result.model),
    }


@accepts_trust_code
@locks_run_dir
def train_run(
    config: Config,
    run_dir: str,
    *,
    progress: bool = True,
    resume: bool = False,
    overwrite: bool = False,
) -> TrainResult:
    """Train the model a validated config describes into `run_dir`; return the best model.

    A folder that already holds a run is refused unless `overwrite` (its files, evaluation/ included, are
    then deleted, but only once the config, data, model and windows have been built without error).
    With `resume`, continue from the newest training state in `run_dir/checkpoints` (the config, system source
    and data must be the ones that wrote it, except `training.epochs`): the result is bit-identical to a run
    that was never interrupted.
    """
    check_precision(config.dtype, f"the config {config.name!r}")
    start_time = time.perf_counter()
    # In a multi-process run every process computes the same thing; process 0 alone writes the run directory.
    main = parallel.is_main_process()
    remove = check_run_target(run_dir, resume=resume, overwrite=overwrite) if main else []
    check_output_dir(run_dir)
    if progress and main:
        # Reading, checking and fitting friction to the data can take a while before anything else shows.
        print(f"train {config.name}: loading data …", file=sys.stderr, flush=True)
    with reading_progress(progress and main):
        setup = _set_up(
            config,
            run_dir,
            resume=resume,
            progress=progress,
            main=main,
            remove=remove,
            start_time=start_time,
        )
    restored = _restored(setup) if resume else None
    callbacks = [setup.run_files.open(restored)] if main else []
    if main:
        save_identified(setup.identification, setup.model, setup.checkpoints.folder, setup.given)
    result = _fit(config, run_dir, setup, restored, callbacks, progress)
    seconds = time.perf_counter() - start_time
    if progress and main:
        print(
            f"time: load {setup.load_seconds:.1f} s, compile {result.compile_seconds:.1f} s, "
            f"train {result.seconds - result.compile_seconds:.1f} s"
        )
    stuck = unchanged_parameters(setup.model, result.last_model) if result.epochs_run > 0 else []
    warn_unchanged(stuck, config.name)
    if result.epochs_run > 0 and main:
        for hit in trained_bound_hits(setup.model, result.model):
            warnings.warn(f"{config.name}: {bound_message(hit, 'trained')}", stacklevel=3)
    fallback = _fallback(config, setup, result)
    if main:
        summary = _summary(config, run_dir, setup, result, seconds, fallback, stuck)
        save_json(os.path.join(run_dir, "summary.json"), summary)
    # The run keeps its checkpoints either way; a model that is not physical is said, never shipped silently.
    check_physical(
        result.model, f"{config.name}: the trained model ({run_dir}/checkpoints/best.eqx)"
    )
    if not np.isfinite(result.best_loss):
        why = (
            "the untrained model's rollouts are already non-finite on the validation windows (a time step too "
            "large for these dynamics, extreme values in the data, or parameters that blow up)"
            if not np.isfinite(result.initial_loss)
            else "training made them non-finite (a learning rate too large?)"
        )
        raise TrainingDiverged(f"{config.name}: the validation loss was never finite: {why}")
    return TrainResult(
        run_dir,
        result.model,
        result.best_loss,
        result.epochs_run,
        seconds,
        setup.select_by,
        fallback,
    )

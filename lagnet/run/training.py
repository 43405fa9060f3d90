"""`train_run`: a config trained into a run directory — `lagnet.fit` plus the run's files.

The directory holds config.yaml (the resolved config), run.json (the step and precision), metrics.jsonl (one line
per epoch), checkpoints/best.eqx and last.eqx, the last few training states (for `--resume`, bit for bit) and
summary.json.
"""

import dataclasses
import json
import os
import shutil
import time
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from .. import parallel
from .._version import __version__
from ..config import Config, ConfigError, build_integrator, build_model, build_system, load_config
from ..config.sources import source_file, split_source
from ..data.windows import make_windows, split_by_file, split_by_time
from ..models.summary import physics_summary, unchanged_parameters, warn_unchanged
from ..train.fit import Callback, TrainingDiverged, TrainState, fit
from ..train.loss import StateLoss
from .checkpoints import Checkpoints
from .files import atomic_write, save_json, save_tree, save_yaml
from .load import CONFIG_FILE, as_dtype, check_precision
from .recordings import load_recordings, measured_step, sample_statistics
from .spec import RunSpec


@dataclasses.dataclass
class TrainResult:
    run_dir: str
    model: eqx.Module
    best_validation: float
    epochs: int
    seconds: float


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
        return trajs, load_recordings(config, system, dc.validation)
    v = dc.validation_fraction
    if v > 0 and len(trajs) >= 10:
        # Many short episodes (e.g. sampled pairs of states): hold out whole episodes.
        splits = split_by_file(trajs, {"train": 1 - v, "validation": v}, seed=config.seed)
    elif v > 0:
        splits = split_by_time(trajs, {"train": 1 - v, "validation": v})
    else:
        splits = {"train": trajs, "validation": []}
    return splits["train"], splits["validation"]


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
    )


def make_optimizer(config: Config, steps_per_epoch: int) -> optax.GradientTransformation:
    """The config's optimiser: Adam or AdamW, a learning-rate schedule over all steps, optional clipping."""
    tc = config.training
    total = max(tc.epochs * steps_per_epoch, 1)
    lr = tc.learning_rate
    if tc.schedule == "cosine":
        schedule = optax.cosine_decay_schedule(lr, total)
    elif tc.schedule == "warmup_cosine":
        warm = min(tc.warmup_epochs * steps_per_epoch, total - 1)
        schedule = optax.warmup_cosine_decay_schedule(0.0, lr, max(warm, 1), total)
    else:
        schedule = lr
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


def check_output_dir(run_dir: str, min_free_bytes: int = 20_000_000) -> None:
    """Fail before any work if the run directory cannot be written or its disk is (nearly) full."""
    try:
        os.makedirs(os.path.join(run_dir, "checkpoints"), exist_ok=True)
        probe = os.path.join(run_dir, f".write-test-{jax.process_index()}")
        with open(probe, "wb") as f:
            f.write(b"0" * 4096)
            f.flush()
            os.fsync(f.fileno())
        os.unlink(probe)
    except OSError as e:
        raise ValueError(f"run directory {run_dir!r} is not writable: {e.strerror or e}") from None
    free = shutil.disk_usage(run_dir).free
    if free < min_free_bytes:
        raise ValueError(
            f"run directory {run_dir!r}: only {free / 1e6:.1f} MB free on its disk; "
            f"training needs at least {min_free_bytes / 1e6:.0f} MB for checkpoints"
        )


def config_differences(now: dict, before: dict, prefix: str = "") -> list[str]:
    """`key.path: old in the run, new now` for every value that differs between two config dicts."""
    out = []
    for k in sorted(set(now) | set(before)):
        va, vb = now.get(k), before.get(k)
        if isinstance(va, dict) and isinstance(vb, dict):
            out += config_differences(va, vb, f"{prefix}{k}.")
        elif va != vb:
            out.append(f"{prefix}{k}: {vb!r} in the run, {va!r} now")
    return out


SYSTEM_DIR = "system"


def keep_system_source(config: Config, run_dir: str, *, write: bool = True) -> Config:
    """A system given by a source file is copied into `run_dir/system/`; the config then names the copy (so the run
    loads with the code and description it was trained with, even if the user's file changes or moves)."""
    source = config.system.source
    path = None if source is None else source_file(source)
    if path is None:
        return config
    _, function = split_source(source)
    copy = os.path.join(os.path.abspath(run_dir), SYSTEM_DIR, os.path.basename(path))
    if write and os.path.abspath(path) != copy:
        try:
            with open(path, "rb") as f:
                content = f.read()
        except OSError as e:
            raise ConfigError(f"system.source: cannot read {path}: {e}") from None
        os.makedirs(os.path.dirname(copy), exist_ok=True)
        atomic_write(copy, lambda f: f.write(content))
    kept = copy if function is None else f"{copy}:{function}"
    return dataclasses.replace(config, system=dataclasses.replace(config.system, source=kept))


def _saved_config(config: Config) -> dict:
    """config.yaml's content: a copied system source is named relative to the run (the run can move)."""
    out = config.to_dict()
    source = config.system.source
    path = None if source is None else source_file(source)
    if path is not None and os.path.basename(os.path.dirname(path)) == SYSTEM_DIR:
        _, function = split_source(source)
        rel = f"{SYSTEM_DIR}/{os.path.basename(path)}"
        out["system"]["source"] = rel if function is None else f"{rel}:{function}"
    return out


def _same_source(a: str | None, b: str | None) -> bool:
    """Whether two system sources are the same code: equal module names, or files with equal bytes."""
    files = (source_file(a) if a else None, source_file(b) if b else None)
    if None in files:
        return a == b
    if split_source(a)[1] != split_source(b)[1]:
        return False
    try:
        with open(files[0], "rb") as fa, open(files[1], "rb") as fb:
            return fa.read() == fb.read()
    except OSError:
        return False


def _check_resumable(config: Config, run_dir: str) -> None:
    config_path = os.path.join(run_dir, CONFIG_FILE)
    if not os.path.exists(config_path):
        raise FileNotFoundError(f"cannot resume {run_dir}: no {CONFIG_FILE} (not a run directory)")
    before = load_config(config_path).to_dict()
    now = config.to_dict()
    # The run keeps a copy of a source file: compare what it holds, not where it is.
    sources = before["system"].pop("source"), now["system"].pop("source")
    before["training"]["epochs"] = now["training"]["epochs"] = None
    diff = config_differences(now, before)
    if not _same_source(*sources):
        diff.append(f"system.source: {sources[0]!r} in the run, {sources[1]!r} now (other code)")
    if diff:
        raise ValueError(f"cannot resume {run_dir} with a different config: " + "; ".join(diff))


class _RunFiles(Callback):
    """Writes what `fit` reports into the run directory (process 0 only, see `lagnet.parallel`)."""

    def __init__(self, run_dir: str, keep: int, start_time: float, resumed_epoch: int | None):
        self.run_dir, self.start_time = run_dir, start_time
        self.ckpt = os.path.join(run_dir, "checkpoints")
        self.checkpoints = Checkpoints(self.ckpt, keep)
        self.metrics = os.path.join(run_dir, "metrics.jsonl")
        if resumed_epoch is not None:
            # Lines past the resumed epoch were written by the interrupted run: its next epochs are redone.
            with open(self.metrics) as f:
                kept = [line for line in f if json.loads(line)["epoch"] <= resumed_epoch]
            atomic_write(self.metrics, lambda f: f.write("".join(kept).encode()))

    def start(self, initial_loss, state, model):
        with open(self.metrics, "w") as f:
            f.write(json.dumps({"epoch": -1, "validation_loss": initial_loss}) + "\n")
        save_tree(os.path.join(self.ckpt, "best.eqx"), model)

    def record(self, record):
        line = {**record, "seconds": time.perf_counter() - self.start_time}
        with open(self.metrics, "a") as f:
            f.write(json.dumps(line) + "\n")

    def epoch_end(self, state, improved, model):
        self.checkpoints.save(state, int(state.epoch))
        save_tree(os.path.join(self.ckpt, "last.eqx"), model)
        if improved:
            save_tree(os.path.join(self.ckpt, "best.eqx"), model)


def train_run(
    config: Config, run_dir: str, *, progress: bool = True, resume: bool = False
) -> TrainResult:
    """Train the model a validated config describes into `run_dir`; return the best model.

    With `resume`, continue from the newest training state in `run_dir/checkpoints` (the config must be the
    run's, except `training.epochs`): the result is bit-identical to a run that was never interrupted.
    """
    check_precision(config.dtype, f"the config {config.name!r}")
    dtype = jnp.dtype(config.dtype)
    start_time = time.perf_counter()
    check_output_dir(run_dir)
    if resume:
        _check_resumable(config, run_dir)
    # In a multi-process run every process computes the same thing; process 0 alone writes the run directory.
    main = parallel.is_main_process()
    if main:
        config = keep_system_source(config, run_dir)
        save_yaml(os.path.join(run_dir, CONFIG_FILE), _saved_config(config))

    model_key, data_key = jax.random.split(jax.random.key(config.seed))
    system = build_system(config)
    train_trajs, val_trajs = load_training_data(config, system)
    stats = sample_statistics(train_trajs, window=config.data.derivative_window)
    model = as_dtype(build_model(config, system, stats, key=model_key), dtype)
    integrator = build_integrator(config)
    loss = make_loss(config, system, stats)
    tc = config.training
    dt = measured_step(train_trajs)
    if main:
        RunSpec(dt, config.dtype, config.model.input_history, __version__).save(run_dir)

    window_kw = dict(skip_short=True, dtype=dtype)
    stages = {}  # the training windows of the current horizon only

    def windows(epoch):
        h = tc.horizon_at(epoch)
        if h not in stages:
            stages.clear()
            stages[h] = make_windows(train_trajs, h, **window_kw)
        return stages[h]

    steps_per_epoch = max(len(windows(0)) // tc.batch_size, 1)
    optimizer = make_optimizer(config, steps_per_epoch)
    mesh = data_parallel_mesh(config.devices, tc.batch_size)
    val_h = tc.validation_horizon or tc.longest_horizon
    validation = make_windows(val_trajs, val_h, **window_kw) if val_trajs else None

    restored = None
    if resume:
        # The saved state is read into one of the same structure, shapes and dtypes.
        params, _ = eqx.partition(model, model.trainable())
        like = TrainState.start(params, optimizer.init(params), data_key, 0.0)
        restored = Checkpoints(
            os.path.join(run_dir, "checkpoints"), tc.keep_checkpoints
        ).load_latest(like)
    resumed_epoch = None if restored is None else int(restored.epoch)
    callbacks = [_RunFiles(run_dir, tc.keep_checkpoints, start_time, resumed_epoch)] if main else []
    try:
        result = fit(
            model,
            integrator,
            windows,
            loss=loss,
            optimizer=optimizer,
            epochs=tc.epochs,
            key=data_key,
            batch_size=tc.batch_size,
            validation=validation,
            patience=tc.patience,
            max_skipped_steps=tc.max_skipped_steps,
            mesh=mesh,
            state=restored,
            callbacks=callbacks,
            progress=progress,
            desc=f"train {config.name}",
        )
    except TrainingDiverged as e:
        raise TrainingDiverged(
            f"{config.name}: {e} (training.max_skipped_steps = {tc.max_skipped_steps}). "
            "The last good checkpoint is "
            f"{os.path.join(run_dir, 'checkpoints', 'best.eqx')} "
            "(try a smaller learning rate, clip_norm, or a shorter horizon)"
        ) from None
    seconds = time.perf_counter() - start_time
    stuck = unchanged_parameters(model, result.last_model) if result.epochs_run > 0 else []
    warn_unchanged(stuck, config.name)
    improved = result.best_epoch >= 0
    trains = bool(jax.tree_util.tree_leaves(eqx.filter(model, model.trainable())))
    if trains and result.epochs_run > 0 and not improved and np.isfinite(result.best_loss):
        warnings.warn(
            f"{config.name}: the validation loss never beat the untrained model's "
            f"{result.initial_loss:.4g} in {result.epochs_run} epochs, so checkpoints/best.eqx is the untrained "
            "model (try a smaller learning rate, a shorter horizon, or a smaller network)",
            stacklevel=2,
        )
    if main:
        params, _ = eqx.partition(result.model, result.model.trainable())
        save_json(
            os.path.join(run_dir, "summary.json"),
            {
                "name": config.name,
                "model": config.model.type,
                "initial_validation_loss": result.initial_loss,
                "best_validation_loss": result.best_loss,
                "best_epoch": result.best_epoch,
                "improved": improved,
                "epochs_run": result.epochs_run,
                "skipped_steps": result.skipped_steps,
                "seconds": seconds,
                "train_windows": len(windows(0)),
                "dt": dt,
                "parameters": int(sum(x.size for x in jax.tree_util.tree_leaves(params))),
                "physics": physics_summary(result.model),
                "unchanged_parameters": stuck,
            },
        )
    if not np.isfinite(result.best_loss):
        why = (
            "the untrained model's rollouts are already non-finite on the validation windows (a time step too "
            "large for these dynamics, extreme values in the data, or parameters that blow up)"
            if not np.isfinite(result.initial_loss)
            else "training made them non-finite (a learning rate too large?)"
        )
        raise TrainingDiverged(f"{config.name}: the validation loss was never finite: {why}")
    return TrainResult(run_dir, result.model, result.best_loss, result.epochs_run, seconds)

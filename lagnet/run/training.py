"""`train_run`: a config trained into a run directory — `lagnet.fit` plus the run's files.

The directory holds config.yaml (the resolved config), run.json (the step and precision), metrics.jsonl (one line
per epoch), checkpoints/best.eqx and last.eqx, the last few training states (for `--resume`, bit for bit) and
summary.json.
"""

import dataclasses
import json
import os
import shutil
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
from ..config import Config, ConfigError, build_integrator, build_model, build_system
from ..config.sources import accepts_trust_code, source_file, split_source
from ..data.windows import make_windows, split_by_file, split_by_time
from ..models import PINODE, start_physics_from
from ..models.summary import physics_summary, unchanged_parameters, warn_unchanged
from ..train.fit import Callback, TrainingDiverged, TrainState, fit, init_optimizer
from ..train.loss import StateLoss
from .checkpoints import Checkpoints
from .files import (
    atomic_write,
    json_ready,
    remove_orphans,
    save_json,
    save_yaml,
    sha256_file,
    tree_bytes,
    writable_folder,
    write_bytes,
)
from .identification import identify_physics, save_identified
from .load import CONFIG_FILE, as_dtype, check_precision, load_run
from .lock import locks_run_dir
from .recordings import check_enough_samples, load_recordings, measured_step, sample_statistics
from .spec import SPEC_FILE, RunSpec
from .validation import outlier_segments, segment_errors


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
        splits = split_by_time(trajs, {"train": 1 - v, "validation": v})
    else:
        splits = {"train": trajs, "validation": []}
    check_enough_samples(config, trajs, splits["train"], splits["validation"])
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
    """The config's optimiser: Adam or AdamW, a learning-rate schedule over all steps (the epochs', or
    `training.max_steps` when fewer), optional clipping."""
    tc = config.training
    total = max(min(tc.epochs * steps_per_epoch, tc.max_steps or np.inf), 1)
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
    """Fail before any work if the run directory cannot be written or its disk is (nearly) full.

    Probes the run directory, or its nearest existing parent, without creating either: a run that fails
    validation afterwards leaves nothing behind.
    """
    try:
        folder = writable_folder(run_dir)
    except (OSError, ValueError) as e:
        raise ValueError(
            f"run directory {run_dir!r} is not writable: {getattr(e, 'strerror', None) or e}"
        ) from None
    free = shutil.disk_usage(folder).free
    if free < min_free_bytes:
        raise ValueError(
            f"run directory {run_dir!r}: only {free / 1e6:.1f} MB free on its disk; "
            f"training needs at least {min_free_bytes / 1e6:.0f} MB for checkpoints"
        )


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


def _start_from(run_dir: str, model):
    """`model.start_from`: the model with the physics of the run in `run_dir` (its best checkpoint)."""
    key = "model.start_from"
    if not isinstance(model, PINODE):
        raise ConfigError(
            f"{key}: a {type(model).__name__} has no physics to start; a PINODE (pinode, pure_ode) has"
        )
    if not os.path.exists(os.path.join(run_dir, "checkpoints", "best.eqx")):
        raise ConfigError(f"{key}: {run_dir!r} holds no trained run (no checkpoints/best.eqx)")
    try:
        return start_physics_from(model, load_run(run_dir).model)
    except ValueError as e:
        raise ConfigError(f"{key}: {run_dir}: {e}") from None


def run_identity(config: Config) -> dict:
    """What makes checkpoints a run's own: its config (all but the budget `training.epochs | max_steps |
    max_seconds`, which a resume may raise),
    the bytes of its system source file, of the model it starts from and of every training and validation data
    file.

    Recorded in the checkpoint manifest with every state, so `--resume` compares against the run that wrote the
    states, not against a config.yaml that a later (killed) run may have replaced.
    """
    saved = config.to_dict()
    # The budget may grow on a resume (train longer); everything else decides what the states are.
    for budget in ("epochs", "max_steps", "max_seconds"):
        saved["training"].pop(budget, None)
    source = config.system.source
    path = None if source is None else source_file(source)
    if path is not None:
        # Where the source lives may change (the run keeps a copy); what it holds may not.
        saved["system"]["source"] = {
            "file": os.path.basename(path),
            "function": split_source(source)[1],
            "sha256": (sha256_file(path) or "missing")[:16],
        }
    start = config.model.start_from
    if start is not None:
        # The model it starts from, by content: a resume must start from the same physics.
        best = os.path.join(start, "checkpoints", "best.eqx")
        saved["model"]["start_from"] = {
            "run": os.path.basename(os.path.normpath(start)),
            "sha256": (sha256_file(best) or "missing")[:16],
        }
    # 64 bits of each file's SHA-256 tell the files apart and keep the message of a difference readable.
    data = {
        role: [(sha256_file(p) or "missing")[:16] for p in paths]
        for role, paths in (("train", config.data.train), ("validation", config.data.validation))
    }
    return json_ready({**saved, "data_sha256": data})


# What a run directory holds: `--overwrite` removes exactly these, and refuses a folder with anything else.
RUN_ENTRIES = (
    CONFIG_FILE,
    SPEC_FILE,
    "metrics.jsonl",
    "summary.json",
    "checkpoints",
    "evaluation",
    SYSTEM_DIR,
)


def check_run_target(run_dir: str, *, resume: bool, overwrite: bool) -> list[str]:
    """Refuse to train into a folder that holds a run, unless resuming it or told to overwrite it.

    Returns the entries `--overwrite` will remove (only once everything else is checked). Reads only.
    """
    if resume and overwrite:
        raise ValueError("--resume continues a run and --overwrite replaces it: give one of them")
    try:
        entries = sorted(os.listdir(run_dir))
    except (FileNotFoundError, NotADirectoryError):
        entries = []
    if resume:
        if CONFIG_FILE not in entries:
            raise FileNotFoundError(
                f"cannot resume {run_dir}: no {CONFIG_FILE} (not a run directory)"
            )
        return []
    if not entries:
        return []
    if not overwrite:
        raise ValueError(
            f"{run_dir} already holds a run ({', '.join(entries)}): pass --overwrite to replace it (its "
            "checkpoints and evaluation/ are deleted), --resume to continue it, or --out another folder"
        )
    foreign = [e for e in entries if e not in RUN_ENTRIES and not e.startswith(".tmp-")]
    if foreign:
        raise ValueError(
            f"{run_dir} holds files that lagnet did not write ({', '.join(foreign)}), so --overwrite would "
            "not replace a run: move them away, or choose another --out"
        )
    return entries


def _remove(run_dir: str, entries: list[str]) -> None:
    for name in entries:
        path = os.path.join(run_dir, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.unlink(path)


def _read_metrics(path: str, last_epoch: int) -> list[str]:
    """metrics.jsonl's lines up to `last_epoch`; a line cut short by a kill is dropped, with a warning."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    kept, torn = [], 0
    for line in lines:
        try:
            epoch = json.loads(line)["epoch"]
        except (json.JSONDecodeError, KeyError, TypeError):
            torn += 1
            continue
        # Lines past the resumed epoch were written by the interrupted run: its next epochs are redone.
        if epoch <= last_epoch:
            kept.append(line + "\n")
    if torn:
        warnings.warn(
            f"{path}: dropped {torn} unreadable line(s), written when the run was interrupted",
            stacklevel=3,
        )
    return kept


class _RunFiles(Callback):
    """Writes what `fit` reports into the run directory (process 0 only, see `lagnet.parallel`).

    Nothing is written before `open`, which `train_run` calls once the config, data, model and windows have
    all been built: a run that fails validation leaves the directory as it was.
    """

    def __init__(self, run_dir, checkpoints, config, spec, model, start_time, remove=()):
        self.run_dir, self.checkpoints, self.config, self.spec = run_dir, checkpoints, config, spec
        self.start_time, self.remove = start_time, list(remove)
        self.static = eqx.partition(model, model.trainable())[1]
        self.ckpt = checkpoints.folder
        self.metrics = os.path.join(run_dir, "metrics.jsonl")

    def open(self, restored):
        """Replace the old run (`--overwrite`), write the config and spec, and on resume bring metrics.jsonl,
        best.eqx and last.eqx to the restored state (a kill may have left them behind it)."""
        _remove(self.run_dir, self.remove)
        os.makedirs(self.ckpt, exist_ok=True)
        for folder in (self.run_dir, self.ckpt, os.path.join(self.run_dir, SYSTEM_DIR)):
            remove_orphans(folder)
        config = keep_system_source(self.config, self.run_dir)
        save_yaml(os.path.join(self.run_dir, CONFIG_FILE), _saved_config(config))
        self.spec.save(self.run_dir)
        if restored is not None:
            # The old summary describes the end of a run that continues now (and is rewritten at its end).
            _remove(self.run_dir, ["summary.json"])
            kept = _read_metrics(self.metrics, int(restored.epoch))
            atomic_write(self.metrics, lambda f: f.write("".join(kept).encode()))
            self.commit(restored)
        return self

    def commit(self, state):
        """The training state, then the manifest, then last.eqx and best.eqx (see `Checkpoints.save`)."""
        last = eqx.combine(state.params, self.static)
        best = eqx.combine(state.best_params, self.static)
        epoch = int(state.epoch)
        models = {
            "last.eqx": (tree_bytes(last), epoch),
            "best.eqx": (tree_bytes(best), int(state.best_epoch)),
        }
        self.checkpoints.save(state, epoch, models)

    def start(self, initial_loss, state, model):
        with open(self.metrics, "w") as f:
            f.write(json.dumps({"epoch": -1, "validation_loss": initial_loss}) + "\n")
        write_bytes(os.path.join(self.ckpt, "best.eqx"), tree_bytes(model))

    def record(self, record):
        line = {**record, "seconds": time.perf_counter() - self.start_time}
        with open(self.metrics, "a") as f:
            f.write(json.dumps(line) + "\n")

    def epoch_end(self, state, improved, model):
        self.commit(state)


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
    dtype = jnp.dtype(config.dtype)
    start_time = time.perf_counter()
    # In a multi-process run every process computes the same thing; process 0 alone writes the run directory.
    main = parallel.is_main_process()
    remove = check_run_target(run_dir, resume=resume, overwrite=overwrite) if main else []
    check_output_dir(run_dir)

    if progress and main:
        # Reading, checking and fitting friction to the data can take a while before anything else shows.
        print(f"train {config.name}: loading data …", file=sys.stderr, flush=True)
    model_key, data_key = jax.random.split(jax.random.key(config.seed))
    system = build_system(config)
    train_trajs, val_trajs = load_training_data(config, system)
    stats = sample_statistics(train_trajs, window=config.data.derivative_window)
    model = build_model(config, system, stats, key=model_key)
    if config.model.start_from is not None:
        model = _start_from(config.model.start_from, model)
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
    model, identification = identify_physics(
        config,
        model,
        integrator,
        train_trajs,
        loss,
        dtype,
        checkpoints.folder,
        resume=resume,
        progress=progress and main,
    )
    spec = RunSpec(dt, config.dtype, config.model.input_history, __version__)
    run_files = _RunFiles(run_dir, checkpoints, config, spec, model, start_time, remove)

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
    # Loading the data, building the model and fitting its friction: what `lagnet train` does before `fit`.
    load_seconds = time.perf_counter() - start_time
    mesh = data_parallel_mesh(config.devices, tc.batch_size)
    val_h = tc.validation_horizon or tc.longest_horizon
    validation = make_windows(val_trajs, val_h, **window_kw) if val_trajs else None

    if main and val_trajs and len(val_trajs) <= 200:
        scores = segment_errors(model, integrator, loss, val_trajs, val_h)
        for message in outlier_segments(scores, val_trajs):
            warnings.warn(f"{config.name}: {message}", stacklevel=4)
    select_by = tc.select_by
    if select_by == "auto":
        select_by = "relative_error" if validation is not None else "loss"
    restored = None
    if resume:
        # The saved state is read into one of the same structure, shapes and dtypes.
        params, _ = eqx.partition(model, model.trainable())
        like = TrainState.start(params, init_optimizer(optimizer, params), data_key, 0.0)
        restored = checkpoints.load_latest(like)
    callbacks = [run_files.open(restored)] if main else []
    if main:
        save_identified(identification, model, checkpoints.folder)
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
            max_steps=tc.max_steps,
            max_seconds=tc.max_seconds,
            select_by=select_by,
        )
    except TrainingDiverged as e:
        raise TrainingDiverged(
            f"{config.name}: {e} (training.max_skipped_steps = {tc.max_skipped_steps}). "
            "The last good checkpoint is "
            f"{os.path.join(run_dir, 'checkpoints', 'best.eqx')} "
            "(try a smaller learning rate, clip_norm, or a shorter horizon)"
        ) from None
    seconds = time.perf_counter() - start_time
    if progress and main:
        print(
            f"time: load {load_seconds:.1f} s, compile {result.compile_seconds:.1f} s, "
            f"train {result.seconds - result.compile_seconds:.1f} s"
        )
    stuck = unchanged_parameters(model, result.last_model) if result.epochs_run > 0 else []
    warn_unchanged(stuck, config.name)
    improved = result.best_epoch >= 0
    trains = bool(jax.tree_util.tree_leaves(eqx.filter(model, model.trainable())))
    # A PINODE starts as its physics (network output zero): an untrained best is the physics, shipped as such.
    starts_as_physics = config.model.zero_init and model.physics_prior() is not model
    fallback = (
        "physics"
        if trains and starts_as_physics and model.physics_prior() is not None and not improved
        else None
    )
    if fallback and result.epochs_run > 0:
        warnings.warn(
            f"{config.name}: no trained epoch beat the {'identified ' if identification else ''}physics on "
            f"the validation data ({select_by}) in {result.epochs_run} epochs, so the run ships the physics "
            "(checkpoints/best.eqx is the model with its network at zero). The network does not help on "
            "this data as trained: check with `lagnet cv`, or give it more varied data",
            stacklevel=4,
        )
    elif trains and result.epochs_run > 0 and not improved and np.isfinite(result.best_loss):
        warnings.warn(
            f"{config.name}: the validation score never beat the untrained model's "
            f"({select_by}) in {result.epochs_run} epochs, so checkpoints/best.eqx is the untrained "
            "model (try another learning rate, horizon or network size, and compare with `lagnet cv`)",
            stacklevel=4,
        )
    if main:
        params, _ = eqx.partition(result.model, result.model.trainable())
        save_json(
            os.path.join(run_dir, "summary.json"),
            {
                "name": config.name,
                "model": config.model.type,
                "initial_validation_loss": result.initial_loss,
                # With select_by: final_error the best score is an error; the loss of that epoch is kept here
                # (unknown when the epoch was run before a resume).
                "best_validation_loss": result.best_loss
                if select_by == "loss"
                else next(
                    (
                        r["validation_loss"]
                        for r in result.history
                        if r["epoch"] == result.best_epoch
                    ),
                    None,
                ),
                "best_epoch": result.best_epoch,
                "improved": improved,
                "epochs_run": result.epochs_run,
                "skipped_steps": result.skipped_steps,
                "seconds": seconds,
                # Where the time went: `lagnet train` before `fit`, tracing and compiling, the epochs.
                "seconds_load": load_seconds,
                "seconds_compile": result.compile_seconds,
                "seconds_train": result.seconds - result.compile_seconds,
                "select_by": select_by,
                "best_score": result.best_loss,
                "stop_reason": result.stop_reason,
                "steps_run": result.steps_run,
                "train_windows": len(windows(0)),
                "dt": dt,
                "parameters": int(sum(x.size for x in jax.tree_util.tree_leaves(params))),
                "physics": physics_summary(result.model),
                "identification": identification,
                "fallback": fallback,
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
    return TrainResult(
        run_dir, result.model, result.best_loss, result.epochs_run, seconds, select_by, fallback
    )

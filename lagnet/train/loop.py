"""Training through the solver: jit-compiled epochs of (rollout → loss → grad → optax update)."""

import dataclasses
import json
import os
import shutil
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from tqdm.auto import tqdm

from .. import config as _config
from .. import parallel
from ..data.loader import finite_difference
from ..data.windows import make_windows, split_by_file, split_by_time
from .build import build_integrator, build_model, build_system, load_recordings
from .checkpoint import atomic_write, load_tree, save_json, save_tree, save_yaml
from .loss import StateLoss, as_batch, batch_loss, window_loss


@dataclasses.dataclass
class TrainResult:
    run_dir: str
    model: eqx.Module
    best_validation: float
    epochs: int
    seconds: float


def set_precision(config: dict) -> None:
    """float64 needs x64 switched on before any array is made (float32 runs cast explicitly, so x64 is never
    switched off: that would break float64 work elsewhere in the same process)."""
    if config["dtype"] == "float64":
        jax.config.update("jax_enable_x64", True)


def load_training_data(config: dict, system):
    """The training recordings (truncated to `data.max_duration`), split by time into train and validation blocks."""
    dc = config["data"]
    if not dc["train"]:
        raise _config.ConfigError("data.train must name at least one file")
    trajs = load_recordings(config, system, dc["train"])
    if dc["max_duration"] is not None:
        kept, left = [], dc["max_duration"]
        for traj in trajs:
            if left <= 0:
                break
            rows = int(np.searchsorted(traj.t - traj.t[0], left, side="right"))
            kept.append(traj.slice(0, rows) if rows < traj.n_rows else traj)
            left -= kept[-1].duration
        trajs = kept
    v = dc["validation_fraction"]
    if v > 0 and len(trajs) >= 10:
        # Many short episodes (e.g. sampled pairs of states): hold out whole episodes.
        splits = split_by_file(trajs, {"train": 1 - v, "validation": v}, seed=config["seed"])
    elif v > 0:
        splits = split_by_time(trajs, {"train": 1 - v, "validation": v})
    else:
        splits = {"train": trajs, "validation": []}
    return splits["train"], splits["validation"]


def sample_statistics(trajs) -> dict:
    """Stacked samples (q, q̇, q̈ by central differences of q̇, u) for feature scales and friction fits."""
    q = np.concatenate([t.q for t in trajs])
    qd = np.concatenate([t.qd for t in trajs])
    qdd = np.concatenate([finite_difference(t.qd, t.t, "central") for t in trajs])
    u = np.concatenate([t.u for t in trajs])
    return {"q": q, "qd": qd, "qdd": qdd, "u": u}


def make_loss(config: dict, system, stats) -> StateLoss:
    tc = config["training"]
    n = system.n_dof

    def weights(key):
        w = tc[key]
        if w is None:
            return jnp.ones(n)
        if len(w) != n:
            raise _config.ConfigError(
                f"training.{key} must have {n} entries (one per coordinate), got {w}"
            )
        return jnp.asarray(w, float)

    if tc["normalise"]:
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


def make_optimizer(config: dict, steps_per_epoch: int):
    tc = config["training"]
    total = max(tc["epochs"] * steps_per_epoch, 1)
    lr = tc["learning_rate"]
    if tc["schedule"] == "cosine":
        schedule = optax.cosine_decay_schedule(lr, total)
    elif tc["schedule"] == "warmup_cosine":
        warm = min(tc["warmup_epochs"] * steps_per_epoch, total - 1)
        schedule = optax.warmup_cosine_decay_schedule(0.0, lr, max(warm, 1), total)
    else:
        schedule = lr
    parts = []
    if tc["clip_norm"] is not None:
        parts.append(optax.clip_by_global_norm(tc["clip_norm"]))
    if tc["optimizer"] == "adamw":
        parts.append(optax.adamw(schedule, weight_decay=tc["weight_decay"]))
    else:
        parts.append(optax.adam(schedule))
    return optax.chain(*parts)


def horizon_at(config: dict, epoch: int) -> int:
    horizon = config["training"]["horizon"]
    for start, h in sorted(config["training"]["curriculum"]):
        if epoch >= start:
            horizon = h
    return horizon


def data_parallel_mesh(setting, batch_size: int):
    """The training mesh of the config's `devices` (see `lagnet.parallel.batch_mesh`), errors as ConfigError."""
    try:
        return parallel.batch_mesh(setting, batch_size)
    except ValueError as e:
        raise _config.ConfigError(str(e)) from None


def make_epoch_fn(static, integrator, loss, optimizer, batch_size: int, mesh=None):
    """One epoch as a single compiled function: `lax.scan` over shuffled mini-batches, all on the device.

    A step whose loss or gradient is not finite is skipped (parameters and optimiser state unchanged) and counted.
    With a `mesh`, each batch of window start rows is split over its devices (data parallel: the data and the
    parameters are replicated, one all-reduce of the gradients per step).
    """

    def loss_of(params, data, starts):
        return batch_loss(
            eqx.combine(params, static), integrator, loss, as_batch(data.batch(starts))
        )

    value_and_grad = parallel.sharded_value_and_grad(loss_of, mesh)

    def step(carry, starts, data):
        params, opt_state, skipped = carry
        value, grads = value_and_grad(params, data, starts)
        updates, new_opt = optimizer.update(grads, opt_state, params)
        new_params = eqx.apply_updates(params, updates)
        finite = jnp.isfinite(value) & jnp.all(
            jnp.stack(
                [jnp.all(jnp.isfinite(g)) for g in jax.tree_util.tree_leaves(grads)]
                or [jnp.array(True)]
            )
        )
        keep = lambda new, old: jax.tree_util.tree_map(  # noqa: E731
            lambda a, b: jnp.where(finite, a, b), new, old
        )
        carry = (
            keep(new_params, params),
            keep(new_opt, opt_state),
            skipped + (~finite).astype(jnp.int32),
        )
        return carry, jnp.where(finite, value, jnp.nan)

    @eqx.filter_jit
    def epoch(params, opt_state, data, key):
        batches = data.epoch(key, batch_size, drop_last=len(data) >= batch_size)
        (params, opt_state, skipped), losses = jax.lax.scan(
            lambda c, s: step(c, s, data), (params, opt_state, jnp.zeros((), jnp.int32)), batches
        )
        return params, opt_state, jnp.nanmean(losses), skipped

    return epoch


def make_eval_fn(static, integrator, loss, chunk: int = 4096):
    """The mean window loss over every window of a dataset, vmapped `chunk` windows at a time (bounded memory)."""

    @eqx.filter_jit
    def evaluate(params, data):
        model = eqx.combine(params, static)

        def one(start):
            w = data.window(start)
            return window_loss(
                model, integrator, loss, w.q[0], w.qd[0], w.u, w.dt, w.q[1:], w.qd[1:]
            )

        return jnp.mean(jax.lax.map(one, data.starts, batch_size=chunk))

    return evaluate


class TrainingDiverged(RuntimeError):
    """Too many steps had a non-finite loss or gradient; the last good checkpoint is kept."""


class TrainState(eqx.Module):
    """Everything a resumed run needs to continue bit for bit: parameters, optimiser state, the data-order key,
    the epoch reached, and the early-stopping bookkeeping (with the best parameters so far)."""

    params: object
    opt_state: object
    best_params: object
    key_data: jax.Array
    epoch: jax.Array
    best: jax.Array
    best_epoch: jax.Array
    stale: jax.Array
    skipped: jax.Array


def _check_output_dir(run_dir: str, min_free_bytes: int = 20_000_000) -> None:
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


class _Checkpoints:
    """The training states of the last `keep` epochs, each written atomically, plus a manifest naming them.

    A crash (even `kill -9`) at any moment leaves the manifest pointing at complete files: a state file is
    renamed into place before the manifest that names it is replaced.
    """

    def __init__(self, folder: str, keep: int):
        self.folder, self.keep = folder, keep
        self.manifest = os.path.join(folder, "manifest.json")

    def entries(self) -> list[dict]:
        try:
            with open(self.manifest) as f:
                return json.load(f)["states"]
        except (FileNotFoundError, json.JSONDecodeError, KeyError):
            return []

    def save(self, state: TrainState, epoch: int) -> None:
        name = f"state-{epoch:06d}.eqx"
        save_tree(os.path.join(self.folder, name), state)
        entries = [e for e in self.entries() if e["file"] != name] + [
            {"file": name, "epoch": epoch}
        ]
        old, entries = entries[: -self.keep], entries[-self.keep :]
        save_json(self.manifest, {"states": entries, "latest": name})
        for e in old:
            path = os.path.join(self.folder, e["file"])
            if os.path.exists(path):
                os.unlink(path)

    def load_latest(self, like: TrainState) -> TrainState | None:
        """The newest loadable state (falling back to older ones if a file is damaged), or None."""
        errors = []
        for e in reversed(self.entries()):
            try:
                return load_tree(os.path.join(self.folder, e["file"]), like)
            except (ValueError, FileNotFoundError) as err:
                errors.append(str(err))
        if errors:
            raise ValueError("no training state could be loaded: " + "; ".join(errors))
        return None


def _config_differences(a: dict, b: dict, prefix: str = "") -> list[str]:
    out = []
    for k in sorted(set(a) | set(b)):
        va, vb = a.get(k), b.get(k)
        if isinstance(va, dict) and isinstance(vb, dict):
            out += _config_differences(va, vb, f"{prefix}{k}.")
        elif va != vb:
            out.append(f"{prefix}{k}: {vb!r} in the run, {va!r} now")
    return out


def train(
    config: dict, run_dir: str, *, progress: bool = True, resume: bool = False
) -> TrainResult:
    """Train the model a validated config describes; write the run directory; return the best model.

    With `resume`, continue from the newest training state in `run_dir/checkpoints` (the config must be the
    run's, except `training.epochs`): the result is bit-identical to a run that was never interrupted.
    """
    set_precision(config)
    dtype = jnp.float64 if config["dtype"] == "float64" else jnp.float32
    start_time = time.perf_counter()
    _check_output_dir(run_dir)
    ckpt = os.path.join(run_dir, "checkpoints")
    config_path = os.path.join(run_dir, "config.yaml")
    if resume:
        if not os.path.exists(config_path):
            raise FileNotFoundError(
                f"cannot resume {run_dir}: no config.yaml (not a run directory)"
            )
        previous = _config.load_config(config_path)
        diff = _config_differences(
            {**config, "training": {**config["training"], "epochs": None}},
            {**previous, "training": {**previous["training"], "epochs": None}},
        )
        if diff:
            raise ValueError(f"cannot resume {run_dir} with a different config: " + "; ".join(diff))
    # In a multi-process run every process computes the same thing; process 0 alone writes the run directory.
    main = parallel.is_main_process()
    if main:
        save_yaml(config_path, config)

    key = jax.random.key(config["seed"])
    model_key, data_key = jax.random.split(key)
    system = build_system(config)
    train_trajs, val_trajs = load_training_data(config, system)
    stats = sample_statistics(train_trajs)
    model = build_model(config, system, stats, key=model_key)
    model = jax.tree_util.tree_map(
        lambda x: x.astype(dtype) if eqx.is_inexact_array(x) else x, model
    )
    integrator = build_integrator(config)
    loss = make_loss(config, system, stats)
    tc = config["training"]

    params, static = eqx.partition(model, model.trainable())
    horizon = horizon_at(config, 0)
    window_kw = dict(skip_short=True, dtype=dtype)
    probe = make_windows(train_trajs, horizon, **window_kw)
    steps_per_epoch = max(len(probe) // tc["batch_size"], 1)
    optimizer = make_optimizer(config, steps_per_epoch)
    opt_state = optimizer.init(params)
    mesh = data_parallel_mesh(config["devices"], tc["batch_size"])
    params, opt_state = parallel.replicate((params, opt_state), mesh)
    epoch_fn = make_epoch_fn(static, integrator, loss, optimizer, tc["batch_size"], mesh)
    eval_fn = make_eval_fn(static, integrator, loss)

    max_h = max([tc["horizon"]] + [h for _, h in tc["curriculum"]])
    val_h = tc["validation_horizon"] or max_h
    val_data = make_windows(val_trajs, val_h, **window_kw) if val_trajs else None
    # Every array a compiled step reads lives on the mesh (a multi-process mesh accepts no single-device input).
    probe, val_data = parallel.replicate((probe, val_data), mesh)

    metrics_path = os.path.join(run_dir, "metrics.jsonl")
    initial = float(eval_fn(params, val_data if val_data is not None else probe))
    state = TrainState(
        params,
        opt_state,
        params,
        jax.random.key_data(data_key),
        jnp.asarray(-1),
        jnp.asarray(initial),
        jnp.asarray(-1),
        jnp.asarray(0),
        jnp.asarray(0),
    )
    checkpoints = _Checkpoints(ckpt, tc["keep_checkpoints"])
    restored = checkpoints.load_latest(state) if resume else None
    if restored is not None:
        state = restored
        done = int(state.epoch)
        if main:
            with open(metrics_path) as f:
                kept = [line for line in f if json.loads(line)["epoch"] <= done]
            atomic_write(metrics_path, lambda f: f.write("".join(kept).encode()))
    elif main:
        with open(metrics_path, "w") as f:
            f.write(json.dumps({"epoch": -1, "validation_loss": initial}) + "\n")
        save_tree(os.path.join(ckpt, "best.eqx"), eqx.combine(params, static))
    params, opt_state = parallel.replicate((state.params, state.opt_state), mesh)
    data_key = jax.random.wrap_key_data(state.key_data)
    best, best_epoch, stale = float(state.best), int(state.best_epoch), int(state.stale)
    skipped_total = int(state.skipped)
    first = int(state.epoch) + 1
    stopped_early = restored is not None and stale >= tc["patience"]

    windows = {horizon: probe}  # the training windows of the current horizon
    bar = tqdm(
        range(first, tc["epochs"]),
        desc=f"train {config['name']}",
        disable=not (progress and main),
        unit="epoch",
        initial=first,
        total=tc["epochs"],
    )
    epoch = first - 1
    for epoch in [] if stopped_early else bar:
        h = horizon_at(config, epoch)
        if h not in windows:
            windows = {h: parallel.replicate(make_windows(train_trajs, h, **window_kw), mesh)}
        data = windows[h]
        data_key, k = jax.random.split(data_key)
        params, opt_state, train_loss, skipped = epoch_fn(params, opt_state, data, k)
        train_loss = float(train_loss)
        skipped_total += int(skipped)
        val = float(eval_fn(params, val_data)) if val_data is not None else train_loss
        record = {
            "epoch": epoch,
            "horizon": h,
            "train_loss": train_loss,
            "validation_loss": val,
            "skipped_steps": int(skipped),
            "seconds": time.perf_counter() - start_time,
        }
        if main:
            with open(metrics_path, "a") as f:
                f.write(json.dumps(record) + "\n")
        bar.set_postfix(loss=f"{train_loss:.4g}", val=f"{val:.4g}", h=h)
        if skipped_total > tc["max_skipped_steps"]:
            raise TrainingDiverged(
                f"{config['name']}: {skipped_total} training steps had a non-finite loss or gradient "
                f"(training.max_skipped_steps = {tc['max_skipped_steps']}); stopped at epoch {epoch}. "
                f"The last good checkpoint is {os.path.join(ckpt, 'best.eqx')} "
                "(try a smaller learning rate, clip_norm, or a shorter horizon)"
            )
        improved = np.isfinite(val) and val < best
        if improved:
            best, best_epoch, stale = val, epoch, 0
        else:
            stale += 1
        state = TrainState(
            params,
            opt_state,
            params if improved else state.best_params,
            jax.random.key_data(data_key),
            jnp.asarray(epoch),
            jnp.asarray(best),
            jnp.asarray(best_epoch),
            jnp.asarray(stale),
            jnp.asarray(skipped_total),
        )
        if main:
            checkpoints.save(state, epoch)
            save_tree(os.path.join(ckpt, "last.eqx"), eqx.combine(params, static))
            if improved:
                save_tree(os.path.join(ckpt, "best.eqx"), eqx.combine(params, static))
        if stale >= tc["patience"]:
            break
    bar.close()
    best_model = eqx.combine(state.best_params, static)
    seconds = time.perf_counter() - start_time
    if main:
        save_json(
            os.path.join(run_dir, "summary.json"),
            {
                "name": config["name"],
                "model": config["model"]["type"],
                "initial_validation_loss": initial,
                "best_validation_loss": best,
                "best_epoch": best_epoch,
                "epochs_run": epoch + 1,
                "skipped_steps": skipped_total,
                "seconds": seconds,
                "train_windows": len(probe),
                "dt": float(np.median(np.concatenate([t.dt for t in train_trajs]))),
                "parameters": int(sum(x.size for x in jax.tree_util.tree_leaves(params))),
            },
        )
    return TrainResult(run_dir, best_model, best, epoch + 1, seconds)


def load_model(run_dir: str, which: str = "best"):
    """The model of a run directory: rebuilt from its config.yaml, leaves from checkpoints/<which>.eqx."""
    cfg_path = os.path.join(run_dir, "config.yaml")
    if not os.path.exists(cfg_path):
        raise FileNotFoundError(f"{run_dir}: not a run directory (no config.yaml)")
    config = _config.load_config(cfg_path)
    set_precision(config)
    dtype = jnp.float64 if config["dtype"] == "float64" else jnp.float32
    system = build_system(config)
    skeleton = build_model(config, system, None, key=jax.random.key(0))
    skeleton = jax.tree_util.tree_map(
        lambda x: x.astype(dtype) if eqx.is_inexact_array(x) else x, skeleton
    )
    return load_tree(os.path.join(run_dir, "checkpoints", f"{which}.eqx"), skeleton), config

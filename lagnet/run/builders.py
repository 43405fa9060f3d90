"""From a config to the objects `lagnet.fit` takes: the loss, the optimiser, the device mesh, and the model's
starting physics (`model.start_from`)."""

import os

import jax.numpy as jnp
import numpy as np
import optax

from .. import parallel
from ..config import Config, ConfigError
from ..config.sources import UntrustedCode, received_run
from ..train.loss import StateLoss
from .load import load_run


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


def start_from(run_dir: str, model):
    """`model.start_from`: the model with the physics of the run in `run_dir` (its best checkpoint)."""
    key = "model.start_from"
    if model.physics_prior() is None:
        raise ConfigError(
            f"{key}: a {type(model).__name__} has no physics to start; a PINODE (pinode, pure_ode) has"
        )
    if not os.path.exists(os.path.join(run_dir, "checkpoints", "best.eqx")):
        raise ConfigError(f"{key}: {run_dir!r} holds no trained run (no checkpoints/best.eqx)")
    try:
        # The run's own code (a Python system it keeps) runs only with consent naming it (--trust-run).
        with received_run(run_dir, key):
            started = load_run(run_dir).model
        return model.with_physics_from(started)
    except UntrustedCode:
        raise
    except ValueError as e:
        raise ConfigError(f"{key}: {run_dir}: {e}") from None

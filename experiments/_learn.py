"""Shared by the learn_* experiments: one-step training windows, trained with `lagnet.fit`."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax

import lagnet
from lagnet.data import WindowDataset


def one_step_windows(qs, qds, us, dt, keep=slice(None)):
    """The one-step windows (q_k, q̇_k) → (q_{k+1}, q̇_{k+1}) of a run qs, qds (steps + 1, n) under inputs us
    (steps, m) at a fixed step dt, one per step k (or per k in `keep`)."""
    steps, n = us.shape[0], qs.shape[1]
    return WindowDataset(
        q=jnp.asarray(qs),
        qd=jnp.asarray(qds),
        u=jnp.concatenate([jnp.asarray(us), jnp.zeros((1, us.shape[1]), us.dtype)]),
        dt=jnp.concatenate([jnp.full((steps,), dt), jnp.zeros(1)]),
        starts=jnp.arange(steps)[keep],
        k=1,
        angles=(False,) * n,
    )


def concatenate_windows(runs):
    """One set of windows from the windows of several runs (their rows stacked, starts shifted)."""
    offsets = np.cumsum([0] + [r.q.shape[0] for r in runs[:-1]])
    return WindowDataset(
        q=jnp.concatenate([r.q for r in runs]),
        qd=jnp.concatenate([r.qd for r in runs]),
        u=jnp.concatenate([r.u for r in runs]),
        dt=jnp.concatenate([r.dt for r in runs]),
        starts=jnp.concatenate([r.starts + o for r, o in zip(runs, offsets, strict=True)]),
        k=1,
        angles=runs[0].angles,
    )


def train(model, integrator, loss, windows, *, steps, lr, decay, batch_size=None, key=None):
    """`lagnet.fit` with Adam and a cosine decay of the rate from `lr` to `decay` · lr over `steps` steps.

    Full-batch by default (one step per epoch); with `batch_size`, shuffled mini-batches. Only
    `model.trainable()` is updated. Returns the model after the last step and the loss per epoch.
    """
    size = len(windows) if batch_size is None else batch_size
    epochs = math.ceil(steps / max(len(windows) // size, 1))
    result = lagnet.fit(
        model,
        integrator,
        windows,
        loss=loss,
        optimizer=optax.adam(optax.cosine_decay_schedule(lr, steps, alpha=decay)),
        epochs=epochs,
        batch_size=size,
        key=jax.random.key(0) if key is None else key,
    )
    return result.last_model, np.array([r["train_loss"] for r in result.history])

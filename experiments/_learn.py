"""Shared by the learn_* experiments: one-step training windows and an Adam loop on `batch_loss`."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from lagnet.train.loss import batch_loss


def one_step_windows(qs, qds, us, dt, keep=slice(None)):
    """The windows (q0, q̇0, u, dt, q1, q̇1) of `batch_loss`, one per step k of a trajectory (or per k in `keep`).

    Shapes (k, n), (k, n), (k, 1, m), (k, 1), (k, 1, n), (k, 1, n) for a run qs, qds (steps + 1, n) under
    inputs us (steps, m) at a fixed step dt.
    """
    windows = (
        qs[:-1],
        qds[:-1],
        us[:, None, :],
        jnp.full((us.shape[0], 1), dt),
        qs[1:, None],
        qds[1:, None],
    )
    return tuple(w[keep] for w in windows)


def concatenate_windows(runs):
    """One batch of windows from the windows of several runs."""
    return tuple(jnp.concatenate(parts) for parts in zip(*runs, strict=True))


def train(model, integrator, loss, batch, *, steps, lr, decay, batch_size=None, key=None):
    """Adam on `batch_loss` with a cosine decay of the rate from `lr` to `decay` · lr over `steps` steps.

    Full-batch by default; with `batch_size`, each step draws that many windows without replacement (from
    `key` folded with the step). Only `model.trainable()` is updated. Returns the model and the loss history.
    """
    params, static = eqx.partition(model, model.trainable())
    optimiser = optax.adam(optax.cosine_decay_schedule(lr, steps, alpha=decay))
    opt_state = optimiser.init(params)
    n = batch[0].shape[0]

    @eqx.filter_jit
    def update(params, opt_state, idx):
        sub = batch if idx is None else tuple(x[idx] for x in batch)

        def f(p):
            return batch_loss(eqx.combine(p, static), integrator, loss, sub)

        value, grads = eqx.filter_value_and_grad(f)(params)
        updates, opt_state = optimiser.update(grads, opt_state, params)
        return eqx.apply_updates(params, updates), opt_state, value

    history = []
    for i in range(steps):
        idx = None
        if batch_size is not None:
            idx = jax.random.choice(jax.random.fold_in(key, i), n, (batch_size,), replace=False)
        params, opt_state, value = update(params, opt_state, idx)
        history.append(float(value))
    return eqx.combine(params, static), np.array(history)

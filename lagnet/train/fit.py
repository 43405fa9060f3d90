"""`fit`: training through the solver as a library call — model, integrator, windows, loss, optimiser → model.

Each epoch is one compiled `lax.scan` over shuffled mini-batches (rollout → loss → gradient → optax update); the
validation loss is taken every epoch, the best parameters are kept, and training stops early after `patience`
epochs without improvement. Callbacks see every epoch's record and state (the CLI writes its run directory
through them); a `TrainState` resumes bit for bit.
"""

import dataclasses
from collections.abc import Callable, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from tqdm.auto import tqdm

from .. import parallel
from ..data.windows import WindowDataset
from ..integrators.base import AbstractIntegrator
from ..models.base import AbstractModel
from ..systems.parameters import project
from .loss import StateLoss, as_batch, batch_loss, window_loss


class TrainingDiverged(RuntimeError):
    """Too many steps had a non-finite loss or gradient."""


class TrainState(eqx.Module):
    """Everything a resumed fit needs to continue bit for bit: parameters, optimiser state, the data-order key,
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

    @classmethod
    def start(cls, params, opt_state, key: jax.Array, initial_loss: float) -> "TrainState":
        """The state before the first epoch (epoch −1, the initial loss as the best so far)."""
        count = jnp.asarray(0)
        return cls(
            params,
            opt_state,
            params,
            jax.random.key_data(key),
            jnp.asarray(-1),
            jnp.asarray(initial_loss),
            jnp.asarray(-1),
            count,
            count,
        )


class Callback:
    """Hooks into `fit`; override the ones you need (each default does nothing)."""

    def start(self, initial_loss: float, state: TrainState, model: eqx.Module) -> None:
        """Before the first epoch (not called when resuming from a state)."""

    def record(self, record: dict) -> None:
        """After each epoch's losses are known: epoch, horizon, train_loss, validation_loss, skipped_steps."""

    def epoch_end(self, state: TrainState, improved: bool, model: eqx.Module) -> None:
        """After each epoch: its state (what resumes it) and the model it ended with."""


@dataclasses.dataclass
class FitResult:
    """What `fit` returns: the best model (by validation loss) and the last, the loss history, the state."""

    model: AbstractModel
    last_model: AbstractModel
    initial_loss: float
    best_loss: float
    best_epoch: int
    epochs_run: int
    history: list[dict]
    skipped_steps: int
    stopped_early: bool
    state: TrainState


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
        # Projected gradient descent: bounded physical parameters (friction ≥ 0, ...) stay in range.
        new_params = project(eqx.apply_updates(params, updates), static)
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


def fit(
    model: AbstractModel,
    integrator: AbstractIntegrator,
    windows: WindowDataset | Callable[[int], WindowDataset],
    *,
    loss: StateLoss,
    optimizer: optax.GradientTransformation,
    epochs: int,
    key: jax.Array,
    batch_size: int = 128,
    validation: WindowDataset | None = None,
    patience: int | None = None,
    max_skipped_steps: int | None = None,
    mesh=None,
    state: TrainState | None = None,
    callbacks: Sequence[Callback] = (),
    progress: bool = False,
    desc: str = "fit",
) -> FitResult:
    """Train `model` by rolling it out with `integrator` over windows of measured data.

        minimise  E_windows [ loss(rollout(model, integrator, q0, q̇0, us, dts), measured states) ]

    Arguments:
        model: the model to train; `model.trainable()` says which leaves change.
        integrator: the method the rollouts use.
        windows: the training windows (`lagnet.data.make_windows`), or a function epoch → windows (a horizon
            curriculum; return the same object while the horizon is unchanged: it is placed once per object).
        loss: the state loss of one window's predicted states.
        optimizer: an optax transformation (its schedule counts optimiser steps).
        epochs: passes over the windows; `key`: the data-order key.
        validation: windows whose mean loss selects the best epoch; None: the training loss does.
        patience: stop after this many epochs without improvement (None: never).
        max_skipped_steps: raise `TrainingDiverged` when more steps than this had a non-finite loss/gradient.
        mesh: a `lagnet.parallel.batch_mesh` to split each batch over (data parallel), or None.
        state: a `TrainState` to resume from (its epoch, parameters, optimiser state and data key).
        callbacks: `Callback`s told of the start, each epoch's record and each epoch's end.

    Returns a `FitResult` with the best model, the last, and the history of records.
    """
    window_fn = windows if callable(windows) else (lambda epoch: windows)
    params, static = eqx.partition(model, model.trainable())
    opt_state = optimizer.init(params)
    params, opt_state = parallel.replicate((params, opt_state), mesh)
    epoch_fn = make_epoch_fn(static, integrator, loss, optimizer, batch_size, mesh)
    eval_fn = make_eval_fn(static, integrator, loss)

    stage0 = window_fn(0)
    placed = {
        id(stage0): parallel.replicate(stage0, mesh)
    }  # the current stage's windows, on the mesh
    validation = parallel.replicate(validation, mesh) if validation is not None else None
    initial = float(eval_fn(params, validation if validation is not None else placed[id(stage0)]))
    resumed = state is not None
    if state is None:
        state = TrainState.start(params, opt_state, key, initial)
        for cb in callbacks:
            cb.start(initial, state, eqx.combine(params, static))
    params, opt_state = parallel.replicate((state.params, state.opt_state), mesh)
    data_key = jax.random.wrap_key_data(state.key_data)
    best, best_epoch, stale = float(state.best), int(state.best_epoch), int(state.stale)
    skipped_total = int(state.skipped)
    first = int(state.epoch) + 1
    patience = np.inf if patience is None else patience
    max_skipped = np.inf if max_skipped_steps is None else max_skipped_steps
    stopped_early = resumed and stale >= patience

    history = []
    bar = tqdm(
        range(first, epochs),
        desc=desc,
        disable=not (progress and parallel.is_main_process()),
        unit="epoch",
        initial=first,
        total=epochs,
    )
    epoch = first - 1
    for epoch in [] if stopped_early else bar:
        raw = window_fn(epoch)
        if id(raw) not in placed:
            placed = {id(raw): parallel.replicate(raw, mesh)}
        data = placed[id(raw)]
        data_key, k = jax.random.split(data_key)
        params, opt_state, train_loss, skipped = epoch_fn(params, opt_state, data, k)
        train_loss = float(train_loss)
        skipped_total += int(skipped)
        val = float(eval_fn(params, validation)) if validation is not None else train_loss
        record = {
            "epoch": epoch,
            "horizon": data.k,
            "train_loss": train_loss,
            "validation_loss": val,
            "skipped_steps": int(skipped),
        }
        history.append(record)
        for cb in callbacks:
            cb.record(record)
        bar.set_postfix(loss=f"{train_loss:.4g}", val=f"{val:.4g}", h=record["horizon"])
        if skipped_total > max_skipped:
            bar.close()
            raise TrainingDiverged(
                f"{skipped_total} training steps had a non-finite loss or gradient "
                f"(stopped at epoch {epoch})"
            )
        improved = bool(np.isfinite(val) and val < best)
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
        for cb in callbacks:
            cb.epoch_end(state, improved, eqx.combine(params, static))
        if stale >= patience:
            stopped_early = True
            break
    bar.close()
    return FitResult(
        model=eqx.combine(state.best_params, static),
        last_model=eqx.combine(state.params, static),
        initial_loss=initial,
        best_loss=best,
        best_epoch=best_epoch,
        epochs_run=epoch + 1,
        history=history,
        skipped_steps=skipped_total,
        stopped_early=stopped_early,
        state=state,
    )

"""`fit`: training through the solver as a library call — model, integrator, windows, loss, optimiser → model.

Each epoch is one compiled `lax.scan` over shuffled mini-batches (rollout → loss → gradient → optax update); the
validation loss is taken every epoch, the best parameters are kept, and training stops early after `patience`
epochs without improvement. The stages of a horizon curriculum are padded to one layout (`WindowDataset.padded`),
so a whole run compiles one epoch program and one validation program. Callbacks see every epoch's record and
state (the CLI writes its run directory through them); a `TrainState` resumes bit for bit.
"""

import dataclasses
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.flatten_util import ravel_pytree
from tqdm.auto import tqdm

from .. import parallel
from ..data.angles import wrap
from ..data.windows import WindowDataset
from ..integrators.base import AbstractIntegrator
from ..models.base import AbstractModel
from ..systems.parameters import project
from .loss import StateLoss, as_batch, batch_loss, mean_over_steps, window_rollout

SELECTION_METRICS = ("loss", "final_error", "relative_error")


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
        """After each epoch's losses are known: epoch, horizon, steps, train_loss, validation_loss,
        validation_final_error (per coordinate) and its mean, skipped_steps."""

    def epoch_end(self, state: TrainState, improved: bool, model: eqx.Module) -> None:
        """After each epoch: its state (what resumes it) and the model it ended with."""


@dataclasses.dataclass
class FitResult:
    """What `fit` returns: the best model (by the selection metric) and the last, the loss history, the state.

    `best_loss` is the best value of the selection metric `selected_by` (the validation loss by default);
    `stop_reason` is "epochs", "patience", "max_steps" or "max_seconds"; `compile_seconds` is the time spent
    tracing and compiling, `seconds` the whole call.
    """

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
    selected_by: str = "loss"
    stop_reason: str = "epochs"
    steps_run: int = 0
    compile_seconds: float = 0.0
    seconds: float = 0.0


def init_optimizer(optimizer: optax.GradientTransformation, params) -> optax.OptState:
    """The optimiser's initial state for `params` (the trainable half of the model) as `fit` keeps it: the
    state of the parameters raveled into one vector, which the optimiser updates (see `make_epoch_fn`)."""
    # One compiled program, not one per operation run eagerly.
    return eqx.filter_jit(lambda p: optimizer.init(ravel_pytree(p)[0]))(params)


def make_epoch_fn(static, integrator, loss, optimizer, batch_size: int, mesh=None):
    """One epoch as a single compiled function: `lax.scan` over shuffled mini-batches, all on the device.

    A step whose loss or gradient is not finite is skipped (parameters and optimiser state unchanged) and counted.
    With a `mesh`, each batch of window start rows is split over its devices (data parallel: the data and the
    parameters are replicated, one all-reduce of the gradients per step). On a padded dataset (a curriculum
    stage) the loss scores each window's first `data.steps` steps, and the batches past `data.epoch_batches` are
    passed over (a `lax.cond`, no work): every stage of the curriculum runs this one program. The rollouts use
    `integrator.compact_form()` (RK4's compiles in half the time and mostly steps faster: `RK4.compact_form`).

    The optimiser updates the trainable parameters raveled into one vector (`opt_state` from `init_optimizer`):
    one array's update, finiteness check and all-reduce instead of one per leaf compiles fewer kernels. Element-wise
    optimisers (Adam, AdamW, global-norm clipping, schedules) are unchanged by it, up to the order of sums; one
    that reads the tree's structure (`optax.masked`, `optax.multi_transform`) does not apply.
    """

    stepper = integrator.compact_form()

    def loss_of(flat, shared, starts):
        unravel, data = shared
        return batch_loss(
            eqx.combine(unravel(flat), static),
            stepper,
            loss,
            as_batch(data.batch(starts)),
            steps=data.steps,
        )

    value_and_grad = parallel.sharded_value_and_grad(loss_of, mesh)

    def step(carry, starts, data, unravel):
        flat, opt_state, skipped = carry
        value, grads = value_and_grad(flat, (unravel, data), starts)
        updates, new_opt = optimizer.update(grads, opt_state, flat)
        # Projected gradient descent: bounded physical parameters (friction ≥ 0, ...) stay in range.
        new_flat = ravel_pytree(project(unravel(flat + updates), static))[0]
        finite = jnp.isfinite(value) & jnp.all(jnp.isfinite(grads))
        keep = lambda new, old: jax.tree_util.tree_map(  # noqa: E731
            lambda a, b: jnp.where(finite, a, b), new, old
        )
        carry = (
            keep(new_flat, flat),
            keep(new_opt, opt_state),
            skipped + (~finite).astype(jnp.int32),
        )
        return carry, jnp.where(finite, value, jnp.nan)

    @eqx.filter_jit
    def epoch(params, opt_state, data, key):
        batches = data.epoch(key, batch_size, drop_last=len(data) >= batch_size)
        flat, unravel = ravel_pytree(params)
        carry = (flat, opt_state, jnp.zeros((), jnp.int32))
        if data.count is None:
            body = lambda c, s: step(c, s, data, unravel)  # noqa: E731
            xs = batches
        else:
            active = data.epoch_batches(batch_size)

            def body(c, xs):
                j, s = xs

                def train(c):
                    c, value = step(c, s, data, unravel)
                    return c, value.astype(data.q.dtype)

                def pass_over(c):
                    return c, jnp.full((), jnp.nan, data.q.dtype)

                return jax.lax.cond(j < active, train, pass_over, c)

            xs = (jnp.arange(batches.shape[0]), batches)
        (flat, opt_state, skipped), losses = jax.lax.scan(body, carry, xs)
        return unravel(flat), opt_state, jnp.nanmean(losses), skipped

    return epoch


def make_eval_fn(static, integrator, loss, chunk: int = 4096):
    """Over every window of a dataset, vmapped `chunk` windows at a time (bounded memory): the mean window loss,
    and the mean |error| of each state coordinate at the window's end (q then q̇, in the data's units; angles as
    angles), e_i = mean_w |x̂_w,i(t_k) − x_w,i(t_k)|, what `lagnet evaluate` reports as `final_mean`. The
    rollouts use `integrator.compact_form()` (forward only, RK4's ran as fast: benchmarks/rollout_rk4.py)."""
    integrator = integrator.compact_form()

    @eqx.filter_jit
    def evaluate(params, data):
        model = eqx.combine(params, static)
        last = data.k - 1 if data.steps is None else data.steps - 1

        def one(start):
            w = data.window(start)
            qs, qds = window_rollout(
                model, integrator, w.q[0], w.qd[0], w.u, w.dt, steps=data.steps
            )
            value = mean_over_steps(loss.per_step(qs, qds, w.q[1:], w.qd[1:]), data.steps)
            dq = qs[last] - w.q[1 + last]
            dq = jnp.where(jnp.asarray(loss.angles), wrap(dq), dq)
            return value, jnp.abs(jnp.concatenate([dq, qds[last] - w.qd[1 + last]]))

        values, ends = jax.lax.map(one, data.starts, batch_size=chunk)
        if data.count is None:
            return jnp.mean(values), jnp.mean(ends, axis=0)
        valid = jnp.arange(len(data)) < data.count
        return (
            jnp.sum(jnp.where(valid, values, 0.0)) / data.count,
            jnp.sum(jnp.where(valid[:, None], ends, 0.0), axis=0) / data.count,
        )

    return evaluate


@dataclasses.dataclass(frozen=True)
class _Stages:
    """What `fit` learns from its windows function before training: where each horizon starts, the optimiser
    steps each epoch takes, and the one layout (rows, windows, k) every stage is padded to (None: one stage,
    nothing to pad)."""

    horizon_starts: tuple[int, ...]
    steps_per_epoch: tuple[int, ...]
    layout: tuple[int, int, int] | None

    @property
    def last_start(self) -> int:
        return self.horizon_starts[-1]


def _survey(window_fn: Callable[[int], WindowDataset], epochs: int, batch_size: int) -> _Stages:
    # One call per epoch (the windows function is asked for the same datasets again while training), keeping
    # only the previous dataset alive.
    horizon_starts, steps, shapes, small = [], [], set(), {}
    previous, prev_k = None, None
    for epoch in range(max(epochs, 1)):
        raw = window_fn(epoch)
        if raw is not previous:
            shapes.add((raw.q.shape[0], raw.k, len(raw)))
            if len(raw) < batch_size:
                small[raw.k] = len(raw)
            previous = raw
        if raw.k != prev_k:
            horizon_starts.append(epoch)
            prev_k = raw.k
        steps.append(max(len(raw) // batch_size, 1))
    for k, n in small.items():
        warnings.warn(
            f"the batch size {batch_size} is larger than the {n} training windows of {k} steps: each step "
            f"repeats every window about {batch_size / n:.0f}× and an epoch is a single step; use a batch size "
            f"≤ {n} (training.batch_size), more data, or a budget in steps (training.max_steps)",
            stacklevel=3,
        )
    layout = None
    if len(shapes) > 1:
        k = max(s[1] for s in shapes)
        layout = (max(rows - h for rows, h, _ in shapes) + k, max(s[2] for s in shapes), k)
    return _Stages(tuple(horizon_starts), tuple(steps), layout)


class _CompileClock:
    """Wall-clock seconds in which JAX was tracing, lowering or compiling while open (its monitoring events; time
    in which two programs compiled at once counts once)."""

    EVENTS = (
        "/jax/core/compile/jaxpr_trace_duration",
        "/jax/core/compile/jaxpr_to_mlir_module_duration",
        "/jax/core/compile/backend_compile_duration",
    )

    def __init__(self):
        self.spans = []

    def _listen(self, event, duration, **kwargs):
        if event in self.EVENTS:
            end = time.perf_counter()  # each event is reported as it ends
            self.spans.append((end - duration, end))

    @property
    def seconds(self) -> float:
        total, reached = 0.0, -np.inf
        for start, end in sorted(self.spans):
            total += max(end - max(start, reached), 0.0)
            reached = max(reached, end)
        return total

    def __enter__(self):
        jax.monitoring.register_event_duration_secs_listener(self._listen)
        return self

    def __exit__(self, *exc):
        jax.monitoring.unregister_event_duration_listener(self._listen)


def _say(message: str, end: str = "\n") -> None:
    print(message, end=end, file=sys.stderr, flush=True)


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
    max_steps: int | None = None,
    max_seconds: float | None = None,
    select_by: str = "loss",
) -> FitResult:
    """Train `model` by rolling it out with `integrator` over windows of measured data.

        minimise  E_windows [ loss(rollout(model, integrator, q0, q̇0, us, dts), measured states) ]

    Arguments:
        model: the model to train; `model.trainable()` says which leaves change.
        integrator: the method the rollouts use.
        windows: the training windows (`lagnet.data.make_windows`), or a function epoch → windows (a horizon
            curriculum; return the same object while the horizon is unchanged: it is placed once per object).
            The function is called for every epoch before training, to learn the stages: they are padded to
            the longest horizon and the most windows, and one compiled program trains them all.
        loss: the state loss of one window's predicted states.
        optimizer: an optax transformation (its schedule counts optimiser steps), applied to the trainable
            parameters raveled into one vector (see `make_epoch_fn`).
        epochs: passes over the windows; `key`: the data-order key.
        validation: windows whose mean loss selects the best epoch; None: the training loss does.
        patience: stop after this many epochs without improvement (None: never). With a curriculum, the count
            restarts when a new horizon starts (a longer horizon first raises the loss it is trained on), and
            training never stops before the last horizon has started: each stage gets `patience` epochs to
            improve on the best so far, which is kept from any stage.
        max_skipped_steps: raise `TrainingDiverged` when more steps than this had a non-finite loss/gradient.
        mesh: a `lagnet.parallel.batch_mesh` to split each batch over (data parallel), or None.
        state: a `TrainState` to resume from (its epoch, parameters, optimiser state and data key).
        callbacks: `Callback`s told of the start, each epoch's record and each epoch's end.
        max_steps: stop after the epoch in which this many optimiser steps were reached (None: off).
        max_seconds: stop after the epoch in which this call has run this many seconds (None: off).
        select_by: what selects the best epoch (and what patience waits on): "loss", the validation loss;
            "final_error", the mean over coordinates of the validation windows' end-of-window |error|; or
            "relative_error", the mean over coordinates of that error divided by the untrained model's (for a
            PINODE its physics: a score below 1 beats the physics, and epoch −1 scores exactly 1).

    Returns a `FitResult` with the best model, the last, and the history of records.
    """
    if select_by not in SELECTION_METRICS:
        raise ValueError(f"select_by must be one of {list(SELECTION_METRICS)}, got {select_by!r}")
    if select_by != "loss" and validation is None:
        raise ValueError(f"select_by={select_by!r} needs validation windows")
    start_time = time.perf_counter()
    talk = progress and parallel.is_main_process()
    window_fn = windows if callable(windows) else (lambda epoch: windows)
    stages = _survey(window_fn, epochs, batch_size)

    def lay_out(raw):
        return raw if stages.layout is None else raw.padded(*stages.layout)

    with _CompileClock() as clock:
        params, static = eqx.partition(model, model.trainable())
        opt_state = init_optimizer(optimizer, params)
        params, opt_state = parallel.replicate((params, opt_state), mesh)
        epoch_fn = make_epoch_fn(static, integrator, loss, optimizer, batch_size, mesh)
        eval_fn = make_eval_fn(static, integrator, loss)

        def relative(final):
            # Per coordinate, against the model before training (a PINODE: its identified physics); a
            # coordinate that model already predicts exactly is measured in its own units.
            base = np.where(initial_final > 0, initial_final, 1.0)
            return np.asarray(final) / base

        def score(value, final):
            if select_by == "loss" or not np.isfinite(value):
                # A non-finite loss makes any error score meaningless (a ratio of two overflowed errors is 1).
                return value
            if select_by == "final_error":
                return float(np.mean(final))
            return float(np.mean(relative(final)))

        resumed = state is not None
        first = 0 if state is None else int(state.epoch) + 1
        raw = window_fn(min(first, max(epochs - 1, 0)))
        # The current stage's windows, laid out and on the mesh.
        placed = {id(raw): parallel.replicate(lay_out(raw), mesh)}
        validation = parallel.replicate(validation, mesh) if validation is not None else None
        if talk:
            _say(f"{desc}: compiling the training step …", end=" ")
        t = time.perf_counter()
        try:
            with ThreadPoolExecutor(2) as pool:
                # Both programs are traced here and compiled on threads (tracing reads JAX's thread-local
                # settings; XLA's compile does not): the evaluation's first, while the epoch program is traced
                # on one core, then the epoch program's. The calls below find them compiled.
                # Without validation windows, the initial loss is on the training windows: one evaluation
                # outside the layout the epochs share.
                scored = validation if validation is not None else window_fn(0)
                evaluation = pool.submit(eval_fn.lower(params, scored).compile)
                compiled = None
                if first < epochs:
                    # With the argument types of the epochs (a typed key).
                    key_data = jax.random.key_data(key) if state is None else state.key_data
                    lowered = epoch_fn.lower(
                        params, opt_state, placed[id(raw)], jax.random.wrap_key_data(key_data)
                    )
                    compiled = pool.submit(lowered.compile)
                evaluation.result()
                initial, initial_final = eval_fn(params, scored)
                initial, initial_final = float(initial), np.asarray(initial_final)
                if compiled is not None:
                    compiled.result()
        except BaseException:
            if talk:
                _say("")
            raise
        if talk:
            _say(f"{time.perf_counter() - t:.1f} s")
        initial_score = score(initial, initial_final)
        if state is None:
            state = TrainState.start(params, opt_state, key, initial_score)
            for cb in callbacks:
                cb.start(initial, state, eqx.combine(params, static))
        params, opt_state = parallel.replicate((state.params, state.opt_state), mesh)
        data_key = jax.random.wrap_key_data(state.key_data)
        best, best_epoch, stale = float(state.best), int(state.best_epoch), int(state.stale)
        skipped_total = int(state.skipped)
        steps_done = int(sum(stages.steps_per_epoch[:first]))
        patience = np.inf if patience is None else patience
        max_skipped = np.inf if max_skipped_steps is None else max_skipped_steps
        max_steps = np.inf if max_steps is None else max_steps
        max_seconds = np.inf if max_seconds is None else max_seconds
        # The epochs the step budget allows, for the progress bar's total.
        total = epochs
        if np.isfinite(max_steps):
            reached = np.cumsum(stages.steps_per_epoch) >= max_steps
            total = min(epochs, int(np.argmax(reached)) + 1) if reached.any() else epochs
        stop_reason = "epochs"
        if resumed and first - 1 >= stages.last_start and stale >= patience:
            stop_reason = "patience"
        elif steps_done >= max_steps:
            stop_reason = "max_steps"

        history = []
        bar = tqdm(
            range(first, total),
            desc=desc,
            disable=not talk,
            unit="epoch",
            initial=first,
            total=total,
        )
        epoch = first - 1
        try:
            for epoch in [] if stop_reason != "epochs" else bar:
                raw = window_fn(epoch)
                if id(raw) not in placed:
                    placed = {id(raw): parallel.replicate(lay_out(raw), mesh)}
                data = placed[id(raw)]
                data_key, k = jax.random.split(data_key)
                params, opt_state, train_loss, skipped = epoch_fn(params, opt_state, data, k)
                train_loss = float(train_loss)
                skipped_total += int(skipped)
                steps_done += stages.steps_per_epoch[epoch]
                record = {"epoch": epoch, "horizon": raw.k, "steps": steps_done}
                record["train_loss"] = train_loss
                if validation is not None:
                    val, final = eval_fn(params, validation)
                    val, final = float(val), np.asarray(final)
                    record["validation_loss"] = val
                    record["validation_final_error"] = [float(x) for x in final]
                    record["validation_final_error_mean"] = float(np.mean(final))
                    record["validation_relative_error"] = [float(x) for x in relative(final)]
                else:
                    val = record["validation_loss"] = train_loss
                record["skipped_steps"] = int(skipped)
                history.append(record)
                for cb in callbacks:
                    cb.record(record)
                bar.set_postfix(loss=f"{train_loss:.4g}", val=f"{val:.4g}", h=raw.k)
                if skipped_total > max_skipped:
                    raise TrainingDiverged(
                        f"{skipped_total} training steps had a non-finite loss or gradient "
                        f"(stopped at epoch {epoch})"
                    )
                value = score(val, final) if validation is not None else val
                if epoch in stages.horizon_starts:
                    stale = 0  # a new horizon: patience counts from here
                improved = bool(np.isfinite(value) and value < best)
                if improved:
                    best, best_epoch, stale = value, epoch, 0
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
                if stale >= patience and epoch >= stages.last_start:
                    stop_reason = "patience"
                elif steps_done >= max_steps:
                    stop_reason = "max_steps"
                elif time.perf_counter() - start_time >= max_seconds:
                    stop_reason = "max_seconds"
                if stop_reason != "epochs":
                    break
        finally:
            # A message after the bar (an error, the reason for stopping) starts on a line of its own.
            bar.close()
        if talk and first < epochs:
            metric = {"loss": "validation loss", "final_error": "final error"}.get(
                select_by, "final error relative to the untrained model"
            )
            if stop_reason == "patience":
                _say(
                    f"stopped early at epoch {epoch}: no improvement for {stale} epochs; "
                    f"best epoch {best_epoch} ({metric} {best:.4g})"
                )
            elif stop_reason == "max_steps":
                _say(f"stopped at epoch {epoch}: {steps_done} optimiser steps reached max_steps")
            elif stop_reason == "max_seconds":
                _say(f"stopped at epoch {epoch}: {max_seconds:g} s reached (max_seconds)")
        seconds = time.perf_counter() - start_time
        return FitResult(
            model=eqx.combine(state.best_params, static),
            last_model=eqx.combine(state.params, static),
            initial_loss=initial,
            best_loss=best,
            best_epoch=best_epoch,
            epochs_run=epoch + 1,
            history=history,
            skipped_steps=skipped_total,
            stopped_early=stop_reason == "patience",
            state=state,
            selected_by=select_by,
            stop_reason=stop_reason,
            steps_run=steps_done,
            compile_seconds=clock.seconds,
            seconds=seconds,
        )

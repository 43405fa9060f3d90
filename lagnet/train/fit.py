"""`fit`: training through the solver as a library call — model, integrator, windows, loss, optimiser → model.

Each epoch is one compiled loop over shuffled mini-batches (rollout → loss → gradient → optax update) on the
device, run in parts when it is long (to show progress and check the budgets between steps); the validation
loss is taken every epoch, the best parameters are kept, and training stops early after `patience` epochs
without improvement. The stages of a horizon curriculum are padded to one layout (`WindowDataset.padded`), so a
whole run compiles one epoch program and one validation program. Callbacks see every epoch's record and state
(the CLI writes its run directory through them); a `TrainState` resumes bit for bit, also within an epoch.
The curriculum, the stopping policy and the progress shown live in `curriculum`, `stopping` and `progress`.
"""

import dataclasses
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.flatten_util import ravel_pytree

from .. import parallel
from ..config.schema import SELECT_BY
from ..data.angles import wrap
from ..data.windows import WindowDataset
from ..integrators.base import AbstractIntegrator
from ..models.base import AbstractModel
from ..systems.parameters import project
from .curriculum import Placed, survey
from .loss import StateLoss, as_batch, batch_loss, mean_over_steps, window_rollout
from .progress import CompileClock, Progress
from .stopping import StopPolicy, TrainingDiverged

__all__ = [
    "Callback",
    "EpochProgram",
    "FitResult",
    "TrainState",
    "TrainingDiverged",
    "fit",
    "init_optimizer",
    "make_epoch_fn",
    "make_eval_fn",
]


class TrainState(eqx.Module):
    """Everything a resumed fit needs to continue bit for bit: parameters, optimiser state, the data-order key,
    the epoch reached, and the early-stopping bookkeeping (with the best parameters so far).

    `epoch` is the last epoch completed; `step` the optimiser steps already taken of the next one (0 unless a
    budget stopped it there), whose mini-batch order `key_data` still gives.
    """

    params: object
    opt_state: object
    best_params: object
    key_data: jax.Array
    epoch: jax.Array
    best: jax.Array
    best_epoch: jax.Array
    stale: jax.Array
    skipped: jax.Array
    step: jax.Array

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
            count,
        )


class Callback:
    """Hooks into `fit`; override the ones you need (each default does nothing)."""

    def start(self, initial_loss: float, state: TrainState, model: eqx.Module) -> None:
        """Before the first epoch (not called when resuming from a state)."""

    def record(self, record: dict) -> None:
        """After each epoch's losses are known: epoch, horizon, steps, optimizer_steps (the optimiser's step
        count, which its schedule reads: steps less the skipped ones), train_loss, validation_loss,
        validation_final_error (per coordinate) and its mean, skipped_steps; and `partial: True` for an
        epoch a budget stopped within."""

    def epoch_end(self, state: TrainState, improved: bool, model: eqx.Module) -> None:
        """After each epoch, and after the part of one that a budget stopped: its state (what resumes it) and
        the model it ended with."""


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


def optimizer_steps(opt_state, fallback: int) -> int:
    """The optimiser's step count: the largest `count` in its state (optax's Adam and schedules each keep one;
    a skipped step advances none), or `fallback` for an optimiser that keeps none."""
    counts = [int(v) for _, v in optax.tree_utils.tree_get_all_with_path(opt_state, "count")]
    return max(counts) if counts else int(fallback)


class EpochProgram:
    """An epoch's compiled programs: `order(data, key)`, the epoch's shuffled mini-batches of window start rows
    (batches, batch_size), and `steps(params, opt_state, data, batches, first, last)`, the optimiser steps on
    batches first ≤ j < last (int32 arrays: one program for any range), a `lax.fori_loop` on the device that
    returns the parameters, the optimiser state, the sum and the count of its finite losses and the skipped
    steps. A step computes the same whichever range it is run in, so an epoch run in parts (to show progress,
    or stopped by a budget and resumed) ends bit for bit where one run whole does. Calling the program runs a
    whole epoch: (params, opt_state, mean finite loss, skipped steps).
    """

    def __init__(self, order: Callable, steps: Callable, batch_size: int):
        self.order, self.steps, self.batch_size = order, steps, batch_size

    def __call__(self, params, opt_state, data: WindowDataset, key: jax.Array):
        batches = self.order(data, key)
        n = jnp.asarray(data.epoch_batches(self.batch_size), jnp.int32)
        params, opt_state, total, count, skipped = self.steps(
            params, opt_state, data, batches, jnp.asarray(0, jnp.int32), n
        )
        return params, opt_state, total / count, skipped


def make_epoch_fn(static, integrator, loss, optimizer, batch_size: int, mesh=None) -> EpochProgram:
    """One epoch as compiled programs (`EpochProgram`): shuffled mini-batches, then the steps on them, all on the
    device.

    A step whose loss or gradient is not finite is skipped (parameters and optimiser state unchanged) and counted.
    With a `mesh`, each batch of window start rows is split over its devices (data parallel: the data and the
    parameters are replicated, one all-reduce of the gradients per step). On a padded dataset (a curriculum
    stage) the loss scores each window's first `data.steps` steps, and only the first `data.epoch_batches`
    batches are trained on: every stage of the curriculum runs this one program. The rollouts use
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
    def order(data, key):
        return data.epoch(key, batch_size, drop_last=len(data) >= batch_size)

    @eqx.filter_jit
    def steps(params, opt_state, data, batches, first, last):
        flat, unravel = ravel_pytree(params)
        dtype = data.q.dtype

        def body(j, carry):
            flat, opt_state, skipped, total, count = carry
            (flat, opt_state, skipped), value = step(
                (flat, opt_state, skipped), batches[j], data, unravel
            )
            finite = jnp.isfinite(value)
            total = total + jnp.where(finite, value, 0.0).astype(dtype)
            return flat, opt_state, skipped, total, count + finite.astype(jnp.int32)

        zero = jnp.zeros((), jnp.int32)
        carry = (flat, opt_state, zero, jnp.zeros((), dtype), zero)
        flat, opt_state, skipped, total, count = jax.lax.fori_loop(first, last, body, carry)
        return unravel(flat), opt_state, total, count, skipped

    return EpochProgram(order, steps, batch_size)


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


def end_errors(model, integrator, loss, windows) -> np.ndarray:
    """The mean |error| of each state coordinate at the windows' end (`make_eval_fn`'s), for one model."""
    params, static = eqx.partition(model, model.trainable())
    return np.asarray(make_eval_fn(static, integrator, loss)(params, windows)[1], float)


class _Selection:
    """What selects the best epoch: the validation loss, or an error at the validation windows' end (absolute,
    or relative to the untrained model's)."""

    def __init__(self, select_by: str, initial_final):
        self.select_by, self.initial_final = select_by, np.asarray(initial_final)

    def relative(self, final) -> np.ndarray:
        # Per coordinate, against the model before training (a PINODE: its identified physics); a coordinate
        # that model already predicts exactly is measured in its own units.
        base = np.where(self.initial_final > 0, self.initial_final, 1.0)
        return np.asarray(final) / base

    def score(self, value: float, final) -> float:
        if self.select_by == "loss" or not np.isfinite(value):
            # A non-finite loss makes any error score meaningless (a ratio of two overflowed errors is 1).
            return value
        if self.select_by == "final_error":
            return float(np.mean(final))
        if self.select_by == "guarded_relative_error":
            # The mean ratio, but only for an epoch that is no worse than the untrained model on any coordinate:
            # one that trades a coordinate away scores 1 + its worst excess, so it never beats that model.
            ratios = self.relative(final)
            worst = float(np.max(ratios))
            return float(np.mean(ratios)) if worst <= 1.0 else 1.0 + worst
        if self.select_by == "worst_relative_error":
            # The coordinate the epoch predicts worst against the untrained model: an epoch scores below 1 only
            # if it beats that model on every coordinate, not by trading one for another.
            return float(np.max(self.relative(final)))
        return float(np.mean(self.relative(final)))


def _check_selection(select_by: str, validation) -> None:
    if select_by not in SELECT_BY:
        raise ValueError(f"select_by must be one of {list(SELECT_BY)}, got {select_by!r}")
    if select_by != "loss" and validation is None:
        raise ValueError(f"select_by={select_by!r} needs validation windows")


def _compile(epoch_fn, eval_fn, params, opt_state, scored, data, key_data):
    """Compile the evaluation and (given its `data`) the epoch's programs; return the initial loss and final
    error on `scored`.

    The programs are traced here and compiled on threads (tracing reads JAX's thread-local settings; XLA's
    compile does not): the evaluation's first, while the epoch's steps are traced on one core, then theirs.
    The calls that follow find them compiled.
    """
    with ThreadPoolExecutor(2) as pool:
        evaluation = pool.submit(eval_fn.lower(params, scored).compile)
        compiled = None
        if data is not None:
            # With the argument types of the epochs (a typed key, int32 step bounds).
            batches = epoch_fn.order(data, jax.random.wrap_key_data(key_data))
            bound = jnp.asarray(0, jnp.int32)
            lowered = epoch_fn.steps.lower(params, opt_state, data, batches, bound, bound)
            compiled = pool.submit(lowered.compile)
        evaluation.result()
        initial, initial_final = eval_fn(params, scored)
        initial, initial_final = float(initial), np.asarray(initial_final)
        if compiled is not None:
            compiled.result()
    return initial, initial_final


class _Training:
    """One `fit` under way: its programs, its windows, where training stands, and the records so far."""

    # Optimiser steps per call of the epoch's steps program, at first; then as many as take about `SECONDS`
    # (a long epoch shows its progress and stops for a time budget within itself).
    FIRST_CALL = 256
    SECONDS = 0.5

    def __init__(self, programs, state, live, stages, window_fn, placed, validation, selection):
        self.epoch_fn, self.eval_fn = programs.epoch_fn, programs.eval_fn
        self.static, self.stages, self.window_fn, self.placed = (
            programs.static,
            stages,
            window_fn,
            placed,
        )
        self.validation, self.selection, self.callbacks = validation, selection, ()
        # The parameters and optimiser state trained on (`live`: the state's, placed on the mesh).
        self.params, self.opt_state = live
        self.data_key = jax.random.wrap_key_data(state.key_data)
        self.best, self.best_epoch = float(state.best), int(state.best_epoch)
        self.stale, self.skipped = int(state.stale), int(state.skipped)
        # A state that a budget stopped within an epoch continues that epoch from its step.
        self.offset = int(state.step)
        self.steps = stages.steps_before(int(state.epoch) + 1) + self.offset
        self.state, self.history, self.reason = state, [], "epochs"
        self.per_call, self.partial = self.FIRST_CALL, False

    def epoch(self, epoch: int, policy: StopPolicy, talk: Progress) -> dict:
        """Train epoch `epoch` to its end, or to where a budget stops it (`self.partial`); its record."""
        raw = self.window_fn(epoch)
        data = self.placed(raw)
        # The key that orders this epoch's batches: what a state stopped within it resumes from.
        self.epoch_key = self.data_key
        self.data_key, k = jax.random.split(self.data_key)
        batches = self.epoch_fn.order(data, k)
        n = self.stages.steps_per_epoch[epoch]
        j, self.offset = self.offset, 0
        total, count, skipped = 0.0, 0, 0
        while j < n:
            last = int(min(n, j + self.per_call, j + policy.steps_left(self.steps)))
            if last <= j:
                break
            t = time.perf_counter()
            self.params, self.opt_state, part, finite, dropped = self.epoch_fn.steps(
                self.params,
                self.opt_state,
                data,
                batches,
                *(jnp.asarray(i, jnp.int32) for i in (j, last)),
            )
            total, count, skipped = total + float(part), count + int(finite), skipped + int(dropped)
            self._pace(last - j, time.perf_counter() - t)
            self.steps += last - j
            j = last
            if j < n:
                talk.within(epoch, j, n)
                if policy.reason(epoch, 0, self.steps, patience=False) is not None:
                    break
        talk.within_done()
        self.skipped += skipped
        self.partial = j < n
        self.done_in_epoch = j
        record = {"epoch": epoch, "horizon": raw.k, "steps": self.steps}
        record["optimizer_steps"] = optimizer_steps(self.opt_state, self.steps - self.skipped)
        record["train_loss"] = total / count if count else float("nan")
        self.score = self.validate(record)
        record["skipped_steps"] = skipped
        if self.partial:
            record["partial"] = True
        return record

    def _pace(self, steps: int, seconds: float) -> None:
        # As many steps per call as take about SECONDS (at least 16: each call waits for its losses).
        if seconds > 0:
            self.per_call = int(min(max(16, steps * self.SECONDS / seconds), 1 << 30))

    def validate(self, record: dict) -> float:
        """Adds the validation losses to `record`; returns the epoch's score."""
        if self.validation is None:
            record["validation_loss"] = record["train_loss"]
            return record["train_loss"]
        val, final = self.eval_fn(self.params, self.validation)
        val, final = float(val), np.asarray(final)
        record["validation_loss"] = val
        record["validation_final_error"] = [float(x) for x in final]
        record["validation_final_error_mean"] = float(np.mean(final))
        record["validation_relative_error"] = [float(x) for x in self.selection.relative(final)]
        return self.selection.score(val, final)

    def keep(self, epoch: int) -> bool:
        """The early-stopping bookkeeping after `epoch` (its score), as a new state; whether it improved.

        An epoch a budget stopped within may be the best, but does not count towards patience; its state
        resumes it (the epoch before, the steps taken, the key that orders its batches)."""
        if epoch in self.stages.horizon_starts:
            self.stale = 0  # a new horizon: patience counts from here
        improved = bool(np.isfinite(self.score) and self.score < self.best)
        if improved:
            self.best, self.best_epoch, self.stale = self.score, epoch, 0
        elif not self.partial:
            self.stale += 1
        self.state = TrainState(
            self.params,
            self.opt_state,
            self.params if improved else self.state.best_params,
            jax.random.key_data(self.epoch_key if self.partial else self.data_key),
            jnp.asarray(epoch - 1 if self.partial else epoch),
            jnp.asarray(self.best),
            jnp.asarray(self.best_epoch),
            jnp.asarray(self.stale),
            jnp.asarray(self.skipped),
            jnp.asarray(self.done_in_epoch if self.partial else 0),
        )
        return improved

    def run(self, epochs: int, policy: StopPolicy, talk: Progress, *, resumed: bool) -> None:
        """The epochs after the state's until `epochs` or a stop (`self.reason` says which: "epochs" when it
        ran them all)."""
        first = int(self.state.epoch) + 1
        epoch = first - 1
        # A resumed fit may have stopped already (its patience or its step budget spent).
        reason = policy.reason(epoch, self.stale if resumed else 0, self.steps, clock=False)
        try:
            bar = talk.epochs(first, self.stages.epochs_within(epochs, policy.steps_limit()))
            for epoch in [] if reason is not None else bar:
                record = self.epoch(epoch, policy, talk)
                self.history.append(record)
                for cb in self.callbacks:
                    cb.record(record)
                talk.show(record)
                policy.check_finite(self.skipped, epoch)
                improved = self.keep(epoch)
                for cb in self.callbacks:
                    cb.epoch_end(self.state, improved, eqx.combine(self.params, self.static))
                # An epoch a budget stopped within stops the fit for that budget.
                reason = policy.reason(epoch, self.stale, self.steps, patience=not self.partial)
                if reason is not None:
                    break
        finally:
            talk.close()
        self.reason, self.last_epoch = reason or "epochs", epoch
        if first < epochs:
            talk.stopped(
                self.reason,
                epoch,
                stale=self.stale,
                best_epoch=self.best_epoch,
                best=self.best,
                select_by=self.selection.select_by,
                steps=self.steps,
                max_seconds=policy.max_seconds,
            )

    def result(self, initial: float, compile_seconds: float, seconds: float) -> FitResult:
        return FitResult(
            model=eqx.combine(self.state.best_params, self.static),
            last_model=eqx.combine(self.state.params, self.static),
            initial_loss=initial,
            best_loss=self.best,
            best_epoch=self.best_epoch,
            epochs_run=self.last_epoch + 1,
            history=self.history,
            skipped_steps=self.skipped,
            stopped_early=self.reason == "patience",
            state=self.state,
            selected_by=self.selection.select_by,
            stop_reason=self.reason,
            steps_run=self.steps,
            compile_seconds=compile_seconds,
            seconds=seconds,
        )


@dataclasses.dataclass
class _Programs:
    """The compiled-to-be programs of a fit (one epoch, one evaluation) and the model they train, split into
    its trainable parameters and the rest, with the optimiser's initial state."""

    epoch_fn: Callable
    eval_fn: Callable
    params: object
    static: object
    opt_state: object
    mesh: object

    @classmethod
    def make(cls, model, integrator, loss, optimizer, batch_size: int, mesh) -> "_Programs":
        params, static = eqx.partition(model, model.trainable())
        opt_state = init_optimizer(optimizer, params)
        params, opt_state = parallel.replicate((params, opt_state), mesh)
        epoch_fn = make_epoch_fn(static, integrator, loss, optimizer, batch_size, mesh)
        eval_fn = make_eval_fn(static, integrator, loss)
        return cls(epoch_fn, eval_fn, params, static, opt_state, mesh)


def _start(programs, window_fn, stages, state, key, validation, callbacks, talk, epochs, select_by):
    """Compile the programs, score the untrained model and (unless resuming) tell the callbacks: the fit
    ready to run its first epoch, and the initial loss."""
    epoch_fn, eval_fn, params, static = (
        programs.epoch_fn,
        programs.eval_fn,
        programs.params,
        programs.static,
    )
    opt_state, mesh = programs.opt_state, programs.mesh
    first = 0 if state is None else int(state.epoch) + 1
    placed = Placed(stages, mesh)
    data = placed(window_fn(min(first, max(epochs - 1, 0))))
    validation = parallel.replicate(validation, mesh) if validation is not None else None
    # Without validation windows, the initial loss is on the training windows: one evaluation outside the
    # layout the epochs share.
    scored = validation if validation is not None else window_fn(0)
    key_data = jax.random.key_data(key) if state is None else state.key_data
    with talk.compiling():
        initial, initial_final = _compile(
            epoch_fn, eval_fn, params, opt_state, scored, data if first < epochs else None, key_data
        )
    selection = _Selection(select_by, initial_final)
    if state is None:
        state = TrainState.start(params, opt_state, key, selection.score(initial, initial_final))
        for cb in callbacks:
            cb.start(initial, state, eqx.combine(params, static))
    live = parallel.replicate((state.params, state.opt_state), mesh)
    training = _Training(programs, state, live, stages, window_fn, placed, validation, selection)
    training.callbacks = callbacks
    return training, initial


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
        max_steps: stop after this many optimiser steps, within an epoch if need be (None: off). The epoch
            stopped within is validated (it may be the best) and its state resumes it bit for bit.
        max_seconds: stop at the first step boundary after this call has run this many seconds (None: off;
            a long epoch is run in parts of about half a second, between which the time is checked).
        select_by: what selects the best epoch (and what patience waits on): "loss", the validation loss;
            "final_error", the mean over coordinates of the validation windows' end-of-window |error|; or
            "relative_error", the mean over coordinates of that error divided by the untrained model's (for a
            PINODE its physics: a score below 1 beats the physics, and epoch −1 scores exactly 1); or
            "worst_relative_error", the largest of those ratios (below 1 only when every coordinate improves);
            or "guarded_relative_error", their mean over the epochs that are no worse on any coordinate (an
            epoch that trades one coordinate for another never beats the untrained model).

    Returns a `FitResult` with the best model, the last, and the history of records.
    """
    _check_selection(select_by, validation)
    start_time = time.perf_counter()
    talk = Progress(progress and parallel.is_main_process(), desc)
    window_fn = windows if callable(windows) else (lambda epoch: windows)
    stages = survey(window_fn, epochs, batch_size)
    policy = StopPolicy(
        patience, max_steps, max_seconds, max_skipped_steps, stages.last_start, start_time
    )
    with CompileClock() as clock:
        programs = _Programs.make(model, integrator, loss, optimizer, batch_size, mesh)
        training, initial = _start(
            programs, window_fn, stages, state, key, validation, callbacks, talk, epochs, select_by
        )
        training.run(epochs, policy, talk, resumed=state is not None)
    return training.result(initial, clock.seconds, time.perf_counter() - start_time)

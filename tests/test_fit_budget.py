"""`lagnet.fit`'s budget in optimiser steps or seconds, the warning for a batch larger than the data, and the
selection metric (the validation loss, or the error at the validation windows' end)."""

import importlib

import equinox as eqx
import jax
import numpy as np
import optax
import pytest
from test_fit_curriculum import recording, state_loss, untrained

import lagnet
from lagnet.data import make_windows
from lagnet.evaluate.metrics import window_errors


@pytest.fixture(scope="module")
def trajectories():
    return [recording(150, 0), recording(90, 1)]


def run(trajectories, **kw):
    defaults = dict(epochs=20, key=jax.random.key(0), batch_size=32)
    kw = dict(loss=state_loss(), optimizer=optax.adam(1e-2), **{**defaults, **kw})
    return lagnet.fit(untrained(), lagnet.RK4(), make_windows(trajectories, 2), **kw)


def test_a_step_budget_stops_at_that_step_within_an_epoch(trajectories):
    per_epoch = len(make_windows(trajectories, 2)) // 32
    result = run(trajectories, max_steps=2 * per_epoch + 1)
    assert result.stop_reason == "max_steps" and not result.stopped_early
    assert result.epochs_run == 3 and result.steps_run == 2 * per_epoch + 1
    assert [r["steps"] for r in result.history] == [per_epoch, 2 * per_epoch, 2 * per_epoch + 1]
    # The epoch stopped within is validated (it may be the best) and marked; its state resumes it.
    assert result.history[-1]["partial"] and "partial" not in result.history[1]
    assert int(result.state.epoch) == 1 and int(result.state.step) == 1


def _leaves(tree):
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(eqx.filter(tree, eqx.is_array))]


def test_a_run_stopped_within_an_epoch_resumes_bit_for_bit(trajectories):
    """Stopped by `max_steps` twice within epochs (2 steps into the second, 1 step into the third) and resumed
    each time, a fit ends with the parameters, optimiser state and data key of one run whole: the same steps on
    the same batches in the same order."""
    kw = dict(epochs=6, batch_size=8)
    per_epoch = len(make_windows(trajectories, 2)) // 8
    total = 3 * per_epoch + 2
    whole = run(trajectories, max_steps=total, **kw)
    first = run(trajectories, max_steps=per_epoch + 2, **kw)
    assert first.steps_run == per_epoch + 2 and int(first.state.step) == 2
    second = run(trajectories, max_steps=2 * per_epoch + 1, state=first.state, **kw)
    assert int(second.state.step) == 1
    last = run(trajectories, max_steps=total, state=second.state, **kw)
    assert last.steps_run == whole.steps_run == total
    assert _leaves((last.state.params, last.state.opt_state, last.state.key_data)) and all(
        np.array_equal(a, b)
        for a, b in zip(
            _leaves((last.state.params, last.state.opt_state, last.state.key_data)),
            _leaves((whole.state.params, whole.state.opt_state, whole.state.key_data)),
            strict=True,
        )
    )


def test_a_long_epoch_shows_its_steps(trajectories, capsys, monkeypatch):
    """An epoch run in parts shows a bar over its steps under the bar over the epochs."""
    fit_module = importlib.import_module(
        "lagnet.train.fit"
    )  # `lagnet.train.fit` is also the function
    monkeypatch.setattr(fit_module._Training, "FIRST_CALL", 1)
    monkeypatch.setattr(fit_module._Training, "SECONDS", 0.0)
    result = run(trajectories, epochs=1, batch_size=8, progress=True)
    assert result.steps_run == len(make_windows(trajectories, 2)) // 8
    err = capsys.readouterr().err
    assert "epoch 0:" in err and "step" in err


def test_a_time_budget_stops_after_the_epoch_that_reaches_it(trajectories):
    result = run(trajectories, max_seconds=1e-3)
    assert result.stop_reason == "max_seconds" and result.epochs_run == 1
    assert 0 < result.compile_seconds < result.seconds


def test_a_batch_larger_than_the_data_is_named_in_a_warning(trajectories):
    n = len(make_windows(trajectories, 2))
    with pytest.warns(
        UserWarning, match=rf"batch size 512 is larger than the {n} training windows"
    ):
        result = run(trajectories, epochs=2, batch_size=512)
    assert result.steps_run == 2  # one (repeating) step per epoch


def test_final_error_is_the_mean_end_of_window_error_and_can_select_the_best(trajectories):
    validation = make_windows(trajectories, 6)
    result = run(trajectories, epochs=4, validation=validation, select_by="final_error")
    last = result.history[-1]
    assert len(last["validation_final_error"]) == 2  # θ, θ̇
    # The same numbers from `lagnet evaluate`'s metric on the last model: mean over windows of |error| at t_k.
    errors = np.asarray(window_errors(result.last_model, lagnet.RK4(), validation.all(), (True,)))
    np.testing.assert_allclose(
        last["validation_final_error"], np.mean(errors[:, -1], 0), rtol=1e-10
    )
    assert last["validation_final_error_mean"] == pytest.approx(np.mean(errors[:, -1]), rel=1e-10)
    scores = [r["validation_final_error_mean"] for r in result.history]
    assert result.selected_by == "final_error" and result.best_loss == min(scores)
    assert result.best_epoch == int(np.argmin(scores))
    with pytest.raises(ValueError, match="select_by must be one of"):
        run(trajectories, select_by="validation")


def test_an_error_while_compiling_starts_on_a_new_line(trajectories, capsys):
    """`fit` says it is compiling before it does; an error there ends that line, so its message starts afresh."""

    class Broken(lagnet.RK4):
        def step(self, model, q, qd, u, dt, state):
            raise ValueError("this step cannot be traced")

    with pytest.raises(ValueError, match="cannot be traced"):
        lagnet.fit(
            untrained(), Broken(), make_windows(trajectories, 2), loss=state_loss(),
            optimizer=optax.adam(1e-2), epochs=3, key=jax.random.key(0), progress=True,
        )  # fmt: skip
    err = capsys.readouterr().err
    assert err.endswith("fit: compiling the training step … \n")

"""`lagnet.fit`'s budget in optimiser steps or seconds, the warning for a batch larger than the data, and the
selection metric (the validation loss, or the error at the validation windows' end)."""

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


def test_a_step_budget_stops_after_the_epoch_that_reaches_it(trajectories):
    per_epoch = len(make_windows(trajectories, 2)) // 32
    result = run(trajectories, max_steps=2 * per_epoch + 1)
    assert result.stop_reason == "max_steps" and not result.stopped_early
    assert result.epochs_run == 3 and result.steps_run == 3 * per_epoch
    assert [r["steps"] for r in result.history] == [per_epoch, 2 * per_epoch, 3 * per_epoch]


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

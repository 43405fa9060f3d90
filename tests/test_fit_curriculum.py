"""A horizon curriculum in `lagnet.fit`: one compiled program for every stage, the masked loss equal to the loss of
shorter windows, and early stopping that waits for the last stage."""

import importlib

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import lagnet
from lagnet.data import Trajectory, make_windows
from lagnet.rollout import rollout
from lagnet.systems import JointFriction
from lagnet.systems.parameters import project
from lagnet.train import StateLoss
from lagnet.train.loss import as_batch, batch_loss

fit_module = importlib.import_module("lagnet.train.fit")  # `lagnet.train.fit` is also the function


def recording(rows, seed, dt=0.05):
    """A forced, damped pendulum sampled every `dt` (RK4 on 5 substeps), random torques held for 10 samples."""
    plant = lagnet.PINODE(
        lagnet.Pendulum(), friction=JointFriction(1, coulomb={0: 0.05}, viscous={0: 0.1})
    )
    u = np.repeat(np.random.default_rng(seed).normal(size=(rows // 10 + 1, 1)), 10, 0)[:rows]
    qs, qds = rollout(
        plant, lagnet.RK4(), jnp.array([1.0]), jnp.array([0.0]), jnp.repeat(u[:-1], 5, 0), dt / 5
    )
    return Trajectory(
        t=dt * np.arange(rows), q=np.asarray(qs[::5]), qd=np.asarray(qds[::5]), u=u,
        coordinate_names=("theta",), input_names=("torque",), angles=(True,), source=f"p{seed}",
    )  # fmt: skip


@pytest.fixture(scope="module")
def trajectories():
    """Two recordings, so that windows must not cross from one to the other."""
    return [recording(150, 0), recording(90, 1)]


def untrained():
    """A pendulum with a wrong length and friction to learn: losses and gradients that are not trivial."""
    system = lagnet.Pendulum(com=0.8)
    friction = JointFriction(1, coulomb={0: 0.01}, viscous={0: 0.3})
    return lagnet.PINODE(system, friction=friction, learn_parameters=("com",))


def state_loss():
    return StateLoss((True,), jnp.ones(1), jnp.ones(1), jnp.ones(1), jnp.full(1, 2.0))


class Stages:
    """epoch → windows of a curriculum, one dataset per horizon (as `lagnet train` builds them)."""

    def __init__(self, trajs, schedule):
        self.trajs, self.schedule, self.cache = trajs, schedule, {}

    def horizon(self, epoch):
        return max(h for start, h in self.schedule if epoch >= start)

    def __call__(self, epoch):
        h = self.horizon(epoch)
        if h not in self.cache:
            self.cache = {h: make_windows(self.trajs, h)}
        return self.cache[h]


@pytest.mark.parametrize("compact", [False, True])
def test_masked_loss_at_horizon_k_is_the_loss_of_k_step_windows(trajectories, compact):
    """Windows padded to K = 9 steps and scored on their first k: value and gradient of k-step windows, with RK4
    and with its compact form (which rematerialises inside its step, so the held steps checkpoint nothing)."""
    integrator = lagnet.RK4().compact_form() if compact else lagnet.RK4()
    model, loss = untrained(), state_loss()
    longest = make_windows(trajectories, 9)
    params, static = eqx.partition(model, model.trainable())

    @eqx.filter_jit
    @eqx.filter_value_and_grad
    def value(p, data, starts):
        batch = as_batch(data.batch(starts))
        return batch_loss(eqx.combine(p, static), integrator, loss, batch, steps=data.steps)

    for k in (3, 9):
        short = make_windows(trajectories, k)
        padded = short.padded(longest.q.shape[0] + 9, longest.q.shape[0], 9)
        starts = short.starts[::7][:30]  # one shape: one compilation of the padded case
        v_short, g_short = value(params, short, starts)
        v_pad, g_pad = value(params, padded, starts)
        assert padded.window(starts[0]).u.shape[0] == 9 and int(padded.steps) == k
        np.testing.assert_allclose(float(v_pad), float(v_short), rtol=1e-12, atol=0)
        for a, b in zip(jax.tree.leaves(g_pad), jax.tree.leaves(g_short), strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-14)
        assert float(v_short) > 0


# The test's windows are float64, truncated with a warning in 32-bit mode.
@pytest.mark.parametrize("x64", [True, False])
@pytest.mark.filterwarnings("ignore:Explicitly requested dtype float64")
def test_padded_epochs_draw_each_window_once(trajectories, x64):
    """A padded stage's epoch: the first `epoch_batches` rows hold every window once, the rest pass unused; in
    64-bit mode and in JAX's default 32-bit mode, where `lagnet train` runs."""
    short = make_windows(trajectories, 4)
    with jax.enable_x64(x64):
        padded = short.padded(short.q.shape[0] + 20, len(short) + 40, 20)
        batches = jax.jit(lambda d, k: d.epoch(k, 16))(padded, jax.random.key(1))
        n = int(padded.epoch_batches(16))
    assert n == len(short) // 16 and batches.shape[0] == (len(short) + 40) // 16
    used = np.asarray(batches[:n]).ravel()
    assert len(set(used)) == used.size and set(used) <= set(np.asarray(short.starts))


def test_a_three_stage_curriculum_compiles_the_epoch_and_the_validation_once(
    trajectories, monkeypatch
):
    """Horizons 1 → 3 → 6: one trace of the training step and one of the validation pass for the whole run."""
    traces = {"train": 0, "validation": 0}

    def counted(name, function):
        def wrapper(*args, **kwargs):
            traces[name] += 1
            return function(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(fit_module, "batch_loss", counted("train", fit_module.batch_loss))
    monkeypatch.setattr(
        fit_module, "window_rollout", counted("validation", fit_module.window_rollout)
    )
    stages = Stages(trajectories, [(0, 1), (2, 3), (4, 6)])
    result = lagnet.fit(
        untrained(), lagnet.RK4(), stages, loss=state_loss(), optimizer=optax.adam(1e-3),
        epochs=6, key=jax.random.key(0), batch_size=32, validation=make_windows(trajectories, 6),
    )  # fmt: skip
    assert [r["horizon"] for r in result.history] == [1, 1, 3, 3, 6, 6]
    assert traces == {"train": 1, "validation": 1}
    # Each stage trained on all its windows: ⌊windows / batch⌋ optimiser steps per epoch.
    per_epoch = [len(make_windows(trajectories, h)) // 32 for h in (1, 1, 3, 3, 6, 6)]
    assert [r["steps"] for r in result.history] == list(np.cumsum(per_epoch))
    assert all(np.isfinite(r["train_loss"]) for r in result.history)


def test_patience_waits_for_the_last_stage_and_restarts_at_each(trajectories, capsys):
    """A learning rate of 0 never improves. Patience 2 with stages at epochs 0, 3 and 5 trains on until 2
    epochs into the last stage (epoch 6), and says why it stopped on a line of its own."""
    stages = Stages(trajectories, [(0, 1), (3, 2), (5, 4)])
    result = lagnet.fit(
        untrained(), lagnet.RK4(), stages, loss=state_loss(), optimizer=optax.sgd(0.0), epochs=12,
        key=jax.random.key(0), batch_size=64, validation=make_windows(trajectories, 4), patience=2,
        progress=True,
    )  # fmt: skip
    assert result.stopped_early and result.stop_reason == "patience"
    assert [r["horizon"] for r in result.history] == [1, 1, 1, 2, 2, 4, 4]
    assert result.epochs_run == 7 and int(result.state.stale) == 2
    err = capsys.readouterr().err
    assert "fit: compiling the training step … " in err
    assert (
        "\nstopped early at epoch 6: no improvement for 2 epochs; best epoch -1 (validation loss"
        in err
    )


def test_resuming_inside_a_curriculum_is_bit_identical(trajectories):
    """Interrupted after epoch 2 (inside the second stage) and resumed from its state: the same parameters, bit
    for bit, as the run that was never interrupted."""

    class Interrupt(Exception):
        pass

    class StopAfter(lagnet.train.Callback):
        def epoch_end(self, state, improved, model):
            if int(state.epoch) == 2:
                self.state = state
                raise Interrupt

    common = dict(
        loss=state_loss(), optimizer=optax.adam(1e-2), epochs=5, key=jax.random.key(3),
        batch_size=32, validation=make_windows(trajectories, 4),
    )  # fmt: skip
    schedule = [(0, 1), (2, 2), (4, 4)]
    whole = lagnet.fit(untrained(), lagnet.RK4(), Stages(trajectories, schedule), **common)
    stop = StopAfter()
    with pytest.raises(Interrupt):
        lagnet.fit(
            untrained(), lagnet.RK4(), Stages(trajectories, schedule), callbacks=[stop], **common
        )
    resumed = lagnet.fit(
        untrained(), lagnet.RK4(), Stages(trajectories, schedule), state=stop.state, **common
    )
    assert [r["epoch"] for r in resumed.history] == [3, 4]
    for a, b in zip(jax.tree.leaves(whole.state), jax.tree.leaves(resumed.state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_an_epoch_on_the_raveled_parameters_equals_the_optimiser_on_the_tree(trajectories):
    """`fit` hands its optimiser the trainable parameters as one vector: one epoch equals the same optimiser
    (clipping, AdamW) stepping on the parameter tree over the same batches, projected into the bounds after each
    step, up to the order of sums."""
    windows, key = make_windows(trajectories, 2), jax.random.key(5)
    optimizer = optax.chain(optax.clip_by_global_norm(0.5), optax.adamw(1e-2, weight_decay=1e-3))
    result = lagnet.fit(
        untrained(), lagnet.RK4(), windows, loss=state_loss(), optimizer=optimizer, epochs=1,
        key=key, batch_size=32,
    )  # fmt: skip
    initial, static = eqx.partition(untrained(), untrained().trainable())
    params, opt_state = initial, optimizer.init(initial)

    @jax.jit
    def step(params, opt_state, starts):
        def loss(p):
            batch = as_batch(windows.batch(starts))
            return batch_loss(eqx.combine(p, static), lagnet.RK4(), state_loss(), batch)

        updates, opt_state = optimizer.update(jax.grad(loss)(params), opt_state, params)
        return project(eqx.apply_updates(params, updates), static), opt_state

    batches = windows.epoch(jax.random.split(key)[1], 32, drop_last=True)  # fit's first epoch key
    assert len(batches) >= 5
    for starts in batches:
        params, opt_state = step(params, opt_state, starts)
    trained = eqx.partition(result.last_model, untrained().trainable())[0]
    leaves = jax.tree.leaves(params)
    assert len(leaves) == 3  # the length and two friction coefficients, each moved by the epoch
    for a, b, c in zip(jax.tree.leaves(trained), leaves, jax.tree.leaves(initial), strict=True):
        assert not np.allclose(b, c, rtol=1e-3)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-14)

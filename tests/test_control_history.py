"""Control dynamics of a model with an input history: the past inputs are the caller's explicit choice."""

import dataclasses
import os

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lagnet.control import Dynamics, ShootingMPC
from lagnet.integrators import RK4
from lagnet.models import PINODE, StateFeatures, make_mlp
from lagnet.systems import CartPole

K = 2  # the model reads u_t, u_{t−1}, u_{t−2}


def cartpole(history: int, limit: tuple[float, ...] | None = None) -> Dynamics:
    """A cart-pole PINODE whose random network sees the last `history` inputs (they change its forces)."""
    system = CartPole()
    features = StateFeatures(system.angles, 1 + history)
    net = make_mlp(
        features.size,
        2,
        width=16,
        depth=2,
        activation="tanh",
        final_activation="identity",
        zero_output=False,
        key=jax.random.key(0),
    )
    model = PINODE(system, network=net, features=features, input_history=history, input_limit=limit)
    return Dynamics(model, RK4(), 0.02)


@pytest.fixture(scope="module")
def dyn():
    return cartpole(K)


X0 = jnp.array([0.1, 0.3, -0.2, 0.5])
US = jnp.linspace(-2.0, 2.0, 12)[:, None]


def test_rollout_needs_the_past_inputs(dyn):
    """A history model's rollout no longer assumes the past inputs: it asks, naming the choices."""
    with pytest.raises(
        ValueError, match=r"reads its last 2 input\(s\); pass u_past.*\(2, 1\).*'held'.*'zeros'"
    ):
        dyn.rollout(X0, US)
    with pytest.raises(ValueError, match="u_past must be an array"):
        dyn.rollout(X0, US, u_past="previous")
    # The MPC plans through the same rollout: it needs them too.
    mpc = ShootingMPC(dyn, lambda x, u: jnp.sum(x**2), lambda x: 0.0, horizon=5, iterations=1)
    with pytest.raises(ValueError, match="pass u_past"):
        mpc.cost(jnp.zeros((5, 1)), X0)


def test_the_named_choices_equal_their_arrays(dyn):
    held = dyn.rollout(X0, US, u_past="held")
    np.testing.assert_array_equal(held, dyn.rollout(X0, US, u_past=jnp.full((K, 1), US[0, 0])))
    zeros = dyn.rollout(X0, US, u_past="zeros")
    np.testing.assert_array_equal(zeros, dyn.rollout(X0, US, u_past=jnp.zeros((K, 1))))
    # The choice matters (it is why it is explicit), and only in the first steps' inputs.
    assert not np.allclose(held[1], zeros[1], rtol=0, atol=1e-9)
    np.testing.assert_array_equal(
        dyn.history_inputs(US, "held")[K:], dyn.history_inputs(US, "zeros")[K:]
    )


def test_step_with_history_threads_the_past_like_rollout(dyn):
    """x⁺, u_past⁺ = step_with_history(x, u, u_past), iterated, is the rollout with that u_past, bit for bit."""
    u_past = jnp.array([[0.7], [-0.4]])
    xs = dyn.rollout(X0, US, u_past=u_past)
    x, past = X0, u_past
    for j in range(US.shape[0]):
        x, past = dyn.step_with_history(x, US[j], past)
        np.testing.assert_array_equal(x, xs[j + 1])
    np.testing.assert_array_equal(past, US[::-1][:K])  # the last k inputs, newest first
    # jit, and NumPy arrays in.
    step = eqx.filter_jit(dyn.step_with_history)
    x1, past1 = step(np.asarray(X0), np.asarray(US[0]), np.asarray(u_past))
    np.testing.assert_array_equal(x1, xs[1])
    np.testing.assert_array_equal(past1, [[US[0, 0]], [0.7]])
    with pytest.raises(ValueError, match=r"u_past must have shape \(2, 1\)"):
        dyn.step_with_history(X0, US[0], jnp.zeros((1, 1)))


def test_without_history_nothing_changes():
    dyn = cartpole(0)
    xs = dyn.rollout(X0, US)  # no u_past needed
    x, past = dyn.step_with_history(X0, US[0], jnp.zeros((0, 1)))
    assert past.shape == (0, 1)
    np.testing.assert_array_equal(x, xs[1])


def test_f_called_eagerly_rounds_as_compiled(dyn):
    """Eager `f` gives the bits a compiled controller (and an exported f) gets; op by op, XLA rounded 103 of
    200 cart-pole states differently by an ulp."""
    rng = np.random.default_rng(0)
    xs, us = jnp.asarray(rng.normal(size=(40, 4))), jnp.asarray(rng.normal(size=(40, 1)))
    compiled = jax.jit(lambda x, u: dyn.f(x, u))
    for x, u in zip(xs, us, strict=True):
        np.testing.assert_array_equal(dyn.f(x, u), compiled(x, u))
    # NumPy inputs are taken by f and step alike.
    np.testing.assert_array_equal(
        dyn.step(np.asarray(xs[0]), np.asarray(us[0])), dyn.step(xs[0], us[0])
    )


# --- the actuator's saturation (`input_limit`) ---------------------------------------------------------------


def test_input_limit_saturates_the_current_and_past_inputs(dyn):
    """The model reads each stacked input clipped to ±limit: beyond it the command changes nothing, within it
    the model is the unlimited one, and at the limit the slope is the unlimited model's (1, not clip's 1/2)."""
    limited = cartpole(K, (1.5,))
    q, qd = X0[:2], X0[2:]
    f, f_lim = dyn.model.acceleration, limited.model.acceleration
    over = jnp.array([4.0, -3.0, 2.5])  # u_t, u_{t−1}, u_{t−2}
    np.testing.assert_array_equal(f_lim(q, qd, over), f(q, qd, jnp.clip(over, -1.5, 1.5)))
    within = jnp.array([1.0, -0.5, 1.2])
    np.testing.assert_array_equal(f_lim(q, qd, within), f(q, qd, within))
    at = jnp.array([1.5, -1.5, 0.3])
    slope, slope_lim = (jax.jacfwd(lambda u, g=g: g(q, qd, u))(at) for g in (f, f_lim))
    np.testing.assert_allclose(slope_lim, slope, rtol=1e-6)
    beyond = jax.jacfwd(lambda u: f_lim(q, qd, u))(over)
    np.testing.assert_array_equal(beyond, 0.0)
    # The physics' own prior keeps the limit.
    assert limited.model.known_mechanics().input_limit == (1.5,)


TRAIN = os.path.join(os.path.dirname(__file__), "..", "data", "sim", "cartpole_train.npz")


def test_input_limit_in_a_config():
    """`model.input_limit`: one number for all inputs, or one per input (a wrong count names the key); the
    recordings a run trains on are the delivered inputs, saturated like the model's."""
    from helpers import CARTPOLE_MAPPING

    from lagnet.config import ConfigError, validate
    from lagnet.run import load_recordings
    from lagnet.run.build import input_limit

    config = validate(
        {
            "system": {"name": "cartpole"},
            "model": {"type": "pure_ode", "input_limit": 2.0},
            "data": {"train": TRAIN, "mapping": dict(CARTPOLE_MAPPING)},
        }
    )
    system = CartPole()
    assert input_limit(config, system) == (2.0,)
    u = np.concatenate([t.u for t in load_recordings(config, system, [TRAIN])])
    assert np.max(np.abs(u)) == 2.0
    bad = config.replace(model={"input_limit": [1.0, 2.0]})
    with pytest.raises(ConfigError, match=r"model\.input_limit: CartPole has 1 input\(s\)"):
        input_limit(bad, system)
    with pytest.raises(ConfigError, match=r"model\.input_limit"):
        validate({"model": {"type": "pinode", "input_limit": -1}})


# --- a control period of several model steps, and an iLQR that plans with the drive's past commands -----------


def test_a_period_of_several_model_steps_fills_that_many_places_of_the_history(dyn):
    """hold_with_history over 2 dt is step_with_history twice with u held; a period that is no whole number of
    the model's steps is refused; a model without history steps the period in `substeps` steps."""
    past = jnp.array([[0.7], [-0.4]])
    x, p = dyn.step_with_history(X0, US[3], past)
    x, p = dyn.step_with_history(x, US[3], p)
    x2, p2 = dyn.hold_with_history(X0, US[3], past, 2 * dyn.dt)
    np.testing.assert_array_equal(x2, x)
    np.testing.assert_array_equal(p2, p)
    assert dyn.history_steps(2 * dyn.dt) == 2
    with pytest.raises(ValueError, match=r"whole number of them, got 0.03 s"):
        dyn.history_steps(1.5 * dyn.dt)
    plain = cartpole(0)
    x, p = plain.hold_with_history(X0, US[3], jnp.zeros((0, 1)), 0.04, substeps=2)
    np.testing.assert_array_equal(x, plain.step(plain.step(X0, US[3], 0.02), US[3], 0.02))
    assert p.shape == (0, 1) and plain.history_steps(0.03) == 1


def test_an_ilqr_with_history_plans_from_the_commands_it_gave(dyn):
    """`ILQRController(history=True)` keeps its own last k commands (each period's in h places, newest first),
    starts them at rest on reset, and plans from (x, those commands): the first state of its plan is the plant's
    next state under them, where the held reading (history=False) predicts another."""
    from lagnet.control import task
    from lagnet.control.ilqr import ILQRController

    cartpole_task = dataclasses.replace(task("cartpole-swingup"), system=dyn.system)
    options = dict(horizon=5, iterations=1, first_iterations=1, catch=0.0, running=1.0)
    with pytest.raises(ValueError, match=r"ILQRController\(history=True\).*whole number"):
        ILQRController(dyn, cartpole_task, 0.03, history=True, **options)
    ctrl = ILQRController(dyn, cartpole_task, 2 * dyn.dt, history=True, **options)
    ctrl.reset(X0)
    np.testing.assert_array_equal(ctrl.past, jnp.zeros((K, 1)))
    u1 = np.asarray(ctrl(X0, 0.0))
    np.testing.assert_array_equal(np.asarray(ctrl.past), [u1, u1])  # one period of 2 dt: 2 places
    x1, past = dyn.hold_with_history(X0, u1, jnp.zeros((K, 1)), 2 * dyn.dt)
    z1 = jnp.concatenate([x1, past.reshape(-1)])
    predicted = ctrl.warm.rollout(z1, jnp.asarray([[0.5]]))[1]
    np.testing.assert_allclose(
        predicted[:4], dyn.hold_with_history(x1, jnp.array([0.5]), past, 2 * dyn.dt)[0], rtol=1e-6
    )
    held = ILQRController(dyn, cartpole_task, 2 * dyn.dt, **options)
    assert not np.allclose(held.warm.rollout(x1, jnp.asarray([[0.5]]))[1], predicted[:4])
    ctrl.reset(X0)
    np.testing.assert_array_equal(ctrl.past, jnp.zeros((K, 1)))


def test_a_kalman_filter_predicts_a_period_of_several_model_steps(dyn):
    """The filter of a history model at a period of 2 dt predicts with hold_with_history (the commands in 2
    places); a period that is no whole number of the model's steps is refused when it is built."""
    from lagnet.control import KalmanFilter

    filt = KalmanFilter(dyn, 2 * dyn.dt, process_noise=1e-3, measurement_noise=1e-3)
    x, p, past = filt.start(X0)
    u = jnp.array([0.8])
    x_pred, past_pred = dyn.hold_with_history(X0, u, past, 2 * dyn.dt)
    x1, _, past1 = filt.update((x, p, past), u, x_pred)  # a reading equal to the prediction
    np.testing.assert_allclose(x1, x_pred, rtol=1e-6)
    np.testing.assert_array_equal(past1, past_pred)
    np.testing.assert_array_equal(past1, [[0.8], [0.8]])
    with pytest.raises(ValueError, match=r"KalmanFilter: .*whole number"):
        KalmanFilter(dyn, 1.5 * dyn.dt, process_noise=1e-3, measurement_noise=1e-3)

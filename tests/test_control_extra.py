"""Control with trained models: a loaded run steps exactly as in training, LQR on it, the Gymnasium env."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import tiny_pinode_config, write_pendulum_csv

from lagnet.control import Dynamics, closed_loop_stable, dlqr, find_equilibrium, linearise, load
from lagnet.integrators import RK4
from lagnet.models import PINODE
from lagnet.rollout import rollout
from lagnet.run.training import load_training_data
from lagnet.run.training import train_run as train
from lagnet.systems import Pendulum


@pytest.fixture(scope="module")
def pendulum_csv(tmp_path_factory):
    """A forced, undamped pendulum, RK4 sub-steps, sampled at 20 Hz."""
    folder = tmp_path_factory.mktemp("control_data")
    return write_pendulum_csv(
        folder / "pendulum.csv", steps=400, hold=10, seed=1, friction=None, theta0=0.5
    )


@pytest.fixture(scope="module", params=[0, 1], ids=["no_history", "input_history_1"])
def trained(request, pendulum_csv, tmp_path_factory):
    config = tiny_pinode_config(pendulum_csv, request.param)
    run_dir = str(tmp_path_factory.mktemp("run") / "run")
    result = train(config, run_dir, progress=False)
    return config, run_dir, result


def test_loaded_step_equals_the_training_rollout_bit_for_bit(trained):
    """`load(run).step`, applied step by step, reproduces the rollout training ran on a recorded window:
    the same model leaves, integrator, time steps and (history-augmented) inputs."""
    config, run_dir, result = trained
    dyn = load(run_dir)
    assert isinstance(dyn.integrator, RK4)
    traj = load_training_data(config, result.model.system)[0][0]
    # The model's inputs as training saw them: u_k, then the history u_{k−1}, …
    k = config.model.input_history
    us = np.asarray(traj.u[:20])
    assert us.shape == (20, 1 + k)
    q0, qd0, dts = jnp.asarray(traj.q[0]), jnp.asarray(traj.qd[0]), jnp.asarray(traj.dt[:20])
    qs, qds = rollout(result.model, RK4(), q0, qd0, jnp.asarray(us), dts)
    x = jnp.concatenate([q0, qd0])
    for i in range(20):
        x = dyn.step(x, jnp.asarray(us[i]), dts[i])
        np.testing.assert_array_equal(x, jnp.concatenate([qs[i + 1], qds[i + 1]]))
    np.testing.assert_array_equal(
        dyn.rollout(jnp.concatenate([q0, qd0]), jnp.asarray(us), dts),
        jnp.concatenate([qs, qds], axis=1),
    )


def test_step_holds_the_current_input_over_the_history(trained):
    """Given only the current input (m,), `step` holds it over the model's input history, as `f` does."""
    _, run_dir, _ = trained
    dyn = load(run_dir)
    x, u = jnp.array([0.4, -0.2]), jnp.array([0.3])
    np.testing.assert_array_equal(dyn.step(x, u), dyn.step(x, dyn.full_input(u)))
    np.testing.assert_array_equal(dyn.rollout(x, u[None], u_past="held")[-1], dyn.step(x, u))


def test_lqr_on_a_trained_model_stabilises_it(trained):
    """Discrete LQR designed on the learned model's linearisation about its own upright equilibrium brings
    the model back to it from tilts of up to 0.3 rad."""
    _, run_dir, _ = trained
    dyn = load(run_dir)

    def step(x, u):
        return dyn.step(x, dyn.full_input(u))

    u_eq = jnp.zeros(1)
    x_eq, residual = find_equilibrium(dyn, jnp.array([jnp.pi, 0.0]), u_eq)
    assert residual < 1e-9
    assert abs(float(x_eq[0]) - np.pi) < 0.3
    ad, bd = linearise(step, x_eq, u_eq)
    assert np.max(np.abs(np.linalg.eigvals(np.asarray(ad)))) > 1  # upright is unstable
    q, r = jnp.diag(jnp.array([10.0, 1.0])), jnp.eye(1)
    k, _ = dlqr(ad, bd, q * dyn.dt, r * dyn.dt)
    assert closed_loop_stable(ad, bd, k, discrete=True)
    k = jnp.asarray(k)

    def closed(x0):
        def body(x, _):
            return step(x, u_eq - k @ (x - x_eq)), None

        return jax.lax.scan(body, x0, None, length=200)[0]

    x0s = x_eq + jnp.array([[-0.3, 0.0], [0.1, 0.0], [0.3, -0.2]])
    x_end = jax.vmap(closed)(x0s)
    np.testing.assert_allclose(x_end, jnp.broadcast_to(x_eq, x_end.shape), atol=1e-6)


# The Gymnasium environment.


def pendulum_env(max_steps=50, u_max=0.8):
    from lagnet.control.gym_env import LearnedModelEnv

    dyn = Dynamics(PINODE(Pendulum()), RK4(), 0.05)

    def reward(x, u, x_next):
        return -(1 + jnp.cos(x_next[0])) - 0.01 * u[0] ** 2

    def sampler(*, key):
        return jnp.array([0.2, 0.0]) * jax.random.uniform(key, (2,), minval=-1.0, maxval=1.0)

    return LearnedModelEnv(
        dyn, reward, max_steps=max_steps, u_max=u_max, initial_state_sampler=sampler
    ), dyn


def test_env_passes_the_gymnasium_checker():
    pytest.importorskip("gymnasium")
    from gymnasium.utils.env_checker import check_env

    env, _ = pendulum_env()
    check_env(env, skip_render_check=True)


def test_env_steps_the_model():
    gymnasium = pytest.importorskip("gymnasium")
    env, dyn = pendulum_env(max_steps=5, u_max=0.8)
    assert isinstance(env, gymnasium.Env)
    assert env.observation_space.shape == (2,) and env.observation_space.dtype == np.float32
    assert env.action_space.shape == (1,)
    np.testing.assert_array_equal(env.action_space.high, np.float32([0.8]))
    obs, info = env.reset(seed=3)
    again, _ = env.reset(seed=3)
    np.testing.assert_array_equal(obs, again)
    x = jnp.asarray(info["state"])
    for i in range(5):
        # Actions beyond the bound are clipped to it.
        obs, reward, terminated, truncated, info = env.step(np.array([2.0], np.float32))
        x_next = dyn.step(x, jnp.array([0.8]))
        np.testing.assert_allclose(info["state"], x_next, rtol=1e-12)
        np.testing.assert_allclose(info["u"], [0.8])
        np.testing.assert_allclose(reward, -(1 + np.cos(x_next[0])) - 0.01 * 0.64, rtol=1e-12)
        assert obs.dtype == np.float32 and not terminated
        assert truncated == (i == 4)
        x = x_next
    obs, _ = env.reset(options={"state": np.array([np.pi, 0.0])})
    np.testing.assert_allclose(obs, [np.pi, 0.0], rtol=1e-6)


def test_env_rejects_bad_arguments():
    pytest.importorskip("gymnasium")
    from lagnet.control.gym_env import LearnedModelEnv

    dyn = Dynamics(PINODE(Pendulum()), RK4(), 0.05)
    kwargs = dict(initial_state_sampler=lambda *, key: jnp.zeros(2))
    with pytest.raises(ValueError, match="max_steps"):
        LearnedModelEnv(dyn, lambda x, u, y: 0.0, max_steps=0, u_max=1.0, **kwargs)
    with pytest.raises(ValueError, match="u_max"):
        LearnedModelEnv(dyn, lambda x, u, y: 0.0, max_steps=5, u_max=-1.0, **kwargs)


def test_env_without_gymnasium_says_how_to_install(monkeypatch):
    import sys

    import lagnet.control.gym_env as gym_env

    gym_env._env_class.cache_clear()
    monkeypatch.setitem(sys.modules, "gymnasium", None)
    try:
        with pytest.raises(ImportError, match="pip install"):
            gym_env.LearnedModelEnv  # noqa: B018
    finally:
        gym_env._env_class.cache_clear()

"""The Gymnasium environment of the simulated TRUE rig: spaces, reset/step, the checker, the rig's physics."""

import jax.numpy as jnp
import numpy as np
import pytest

from lagnet.simulate import CartPoleRig, rig_sampler

gymnasium = pytest.importorskip("gymnasium")


def make_env(max_steps=20):
    from lagnet.control import RigEnv

    def reward(x, u, x_next):
        return -((np.mod(x_next[1], 2 * np.pi) - np.pi) ** 2) - 0.01 * float(u[0]) ** 2

    def sampler(rng):
        return np.array([rng.uniform(-0.05, 0.05), rng.uniform(-0.1, 0.1), 0.0, 0.0])

    return RigEnv(CartPoleRig(), reward, max_steps=max_steps, initial_state_sampler=sampler)


def test_rig_env_passes_the_gymnasium_checker():
    from gymnasium.utils.env_checker import check_env

    env = make_env()
    check_env(env, skip_render_check=True)
    assert isinstance(env, gymnasium.Env)
    assert env.observation_space.shape == (4,) and env.action_space.shape == (1,)
    np.testing.assert_allclose(env.action_space.high, CartPoleRig().force_limit)


def test_rig_env_steps_the_true_rig_and_truncates():
    env = make_env(max_steps=5)
    obs, info = env.reset(seed=3, options={"state": np.array([0.0, 0.3, 0.0, 0.0])})
    np.testing.assert_array_equal(info["state"], [0.0, 0.3, 0.0, 0.0])
    rig = rig_sampler(CartPoleRig())
    x, act = jnp.asarray(info["state"]), rig.init()
    for k in range(5):
        obs, reward, terminated, truncated, info = env.step(np.array([25.0]))  # clipped to 10 N
        np.testing.assert_array_equal(info["u"], [10.0])
        x, act = rig.sample(x, act, jnp.array([10.0]))
        np.testing.assert_allclose(info["state"], np.asarray(x), rtol=1e-12, atol=1e-14)
        assert not terminated and truncated == (k == 4)
    # The actuator's dead time and lag: after 0.1 s at 10 N the cart has moved less than a lag-free push would.
    assert 0 < info["state"][0] < 0.5 * 10.0 / 0.496 * 0.1**2
    with pytest.raises(ValueError, match="shape"):
        env.reset(options={"state": np.zeros(3)})

"""The extended Kalman filter in front of a controller (`lagnet.control.KalmanFilter`, `EstimatingController`):
it estimates a noisy rig's state better than its readings, carries a drive's past commands, and says what is
wrong with its arguments."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lagnet.control import Dynamics, EstimatingController, FunctionController, KalmanFilter, task
from lagnet.integrators import RK4

jax.config.update("jax_enable_x64", True)

DT = 0.02


def test_the_filter_estimates_a_driven_pendulum_better_than_its_noisy_readings():
    system = task("pendulum-swingup").system
    dyn = Dynamics(system, RK4(), DT)
    noise = np.array([0.002, 0.1])  # an encoder's angle, a noisy velocity
    filt = KalmanFilter(dyn, DT, process_noise=[1e-4, 1e-2], measurement_noise=noise)
    rng = np.random.default_rng(0)
    x = np.array([0.5, 0.0])
    us = 0.5 * np.sin(np.arange(300) * DT * 3.0)
    state = filt.start(x + noise * rng.standard_normal(2))
    update = jax.jit(lambda state, u, y: filt.update(state, u, y))
    reading_err, estimate_err = [], []
    for k, u in enumerate(us):
        x = np.asarray(dyn.step(jnp.asarray(x), jnp.asarray([u])))
        y = x + noise * rng.standard_normal(2)
        state = update(state, jnp.asarray([u]), y)
        if k >= 50:  # after the filter has settled
            reading_err.append(y - x)
            estimate_err.append(np.asarray(state[0]) - x)
    rms = lambda e: np.sqrt(np.mean(np.square(e), axis=0))  # noqa: E731
    # The velocity, the noisy entry, at well under half its reading's error.
    assert rms(estimate_err)[1] < 0.4 * rms(reading_err)[1]
    assert np.all(np.isfinite(np.asarray(state[1])))


def test_the_controller_acts_on_the_estimate_from_the_reading_reset_took():
    system = task("pendulum-swingup").system
    dyn = Dynamics(system, RK4(), DT)
    seen = []

    def law(x, t):
        seen.append(np.asarray(x))
        return np.array([0.1])

    est = EstimatingController(
        FunctionController(law), KalmanFilter(dyn, DT, process_noise=1e-3, measurement_noise=0.1)
    )
    with pytest.raises(RuntimeError, match="reset"):
        est(np.zeros(2), 0.0)
    x0 = np.array([0.3, 0.0])
    est.reset(x0)
    est(x0, 0.0)
    np.testing.assert_allclose(seen[0], x0)  # the first call: the start itself, nothing predicted
    far = np.array([2.0, 5.0])  # a wild reading: the estimate moves towards it, not onto it
    est(far, DT)
    predicted = np.asarray(dyn.step(jnp.asarray(x0), jnp.asarray([0.1])))
    assert np.all(np.abs(seen[1] - predicted) < np.abs(far - predicted))
    np.testing.assert_allclose(est.estimate(), seen[1])


def test_bad_noise_names_the_argument():
    dyn = Dynamics(task("pendulum-swingup").system, RK4(), DT)
    with pytest.raises(ValueError, match="measurement_noise must be > 0"):
        KalmanFilter(dyn, DT, process_noise=1e-3, measurement_noise=[0.1, 0.0])
    with pytest.raises(ValueError, match=r"process_noise .* \(2,\)"):
        KalmanFilter(dyn, DT, process_noise=[1e-3, 1e-3, 1e-3], measurement_noise=0.1)


def test_a_wrapped_reading_moves_the_estimate_the_short_way_round():
    dyn = Dynamics(task("pendulum-swingup").system, RK4(), DT)
    filt = KalmanFilter(dyn, DT, process_noise=[1e-2, 0.1], measurement_noise=[1e-2, 0.1])
    state = filt.start(np.array([np.pi - 0.01, 0.0]))
    # The plant reports the angle wrapped: −π + 0.01 is 0.02 rad past the estimate, not 2π − 0.02 before it.
    x, _, _ = filt.update(state, jnp.zeros(1), np.array([-np.pi + 0.01, 0.0]))
    assert abs(float(x[0]) - np.pi) < 0.05

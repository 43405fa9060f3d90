"""The smoothed derivative (exact for polynomials on any grid, accurate under noise), the robust spread, and the
q̈ that `sample_statistics` gives the feature scales, the friction fit and the output scale."""

import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from lagnet.data import Trajectory
from lagnet.data.derivatives import (
    DEFAULT_WINDOW,
    mad_spread,
    robust_spread,
    smoothed_derivative,
    window_half_width,
)
from lagnet.run.recordings import sample_statistics
from lagnet.systems import DoublePendulum


def jittered_grid(n, dt, seed=0, jitter=0.4):
    """n strictly increasing times with steps dt × U(1 − jitter, 1 + jitter)."""
    rng = np.random.default_rng(seed)
    return np.concatenate([[0.0], np.cumsum(dt * rng.uniform(1 - jitter, 1 + jitter, n - 1))])


@pytest.mark.parametrize(
    ("degree", "half_width"),
    # Every pair with at least degree + 1 samples (2k + 1) in the window.
    [(d, k) for d in (1, 2, 3, 4) for k in (1, 2, 5) if 2 * k + 1 >= d + 1],
)
def test_exact_for_polynomials_up_to_its_degree_on_a_jittered_grid(degree, half_width):
    t = jittered_grid(60, 0.1) + 0.3
    rng = np.random.default_rng(degree)
    coef = rng.normal(size=(degree + 1, 2))  # two columns, two polynomials
    y = np.stack([np.polyval(coef[:, i], t) for i in range(2)], axis=1)
    dy = np.stack([np.polyval(np.polyder(coef[:, i]), t) for i in range(2)], axis=1)
    got = smoothed_derivative(y, t, half_width=half_width, degree=degree)
    np.testing.assert_allclose(got, dy, rtol=1e-8, atol=1e-8 * np.abs(dy).max())
    # One degree more is not exact (the test can tell).
    y_hi = t ** (degree + 1)
    err = (
        smoothed_derivative(y_hi, t, half_width=half_width, degree=degree)
        - (degree + 1) * t**degree
    )
    assert np.abs(err).max() > 1e-6


def test_three_samples_are_the_central_differences_of_before():
    """k = 1, degree 2 is the parabola through three samples: `np.gradient`'s non-uniform central difference
    (second-order one-sided at the ends) — coarsely sampled data keep the q̈ they had."""
    t = jittered_grid(200, 0.02, seed=3)
    y = np.column_stack([np.sin(3 * t), np.exp(-t) * np.cos(7 * t)])
    np.testing.assert_allclose(
        smoothed_derivative(y, t, half_width=1), np.gradient(y, t, axis=0, edge_order=2), atol=1e-10
    )
    # At 50 and 100 Hz the default window keeps three samples; at 500 Hz it smooths over 15.
    assert window_half_width(np.arange(10) * 0.02, DEFAULT_WINDOW) == 1
    assert window_half_width(np.arange(10) * 0.01, DEFAULT_WINDOW) == 1
    assert window_half_width(np.arange(10) * 0.002, DEFAULT_WINDOW) == 7


def test_the_bias_on_a_sine_is_what_the_docstring_says():
    """On a uniform grid the derivative of sin(ωt) is low by (ωΔt)² (3k² + 3k − 1) / 30 (to leading order):
    quadratic convergence in the window."""
    dt, w = 0.002, 2 * np.pi * 5.0
    t = np.arange(2000) * dt
    interior = slice(100, -100)
    for k in (4, 8, 16):
        got = smoothed_derivative(np.sin(w * t), t, half_width=k)[interior]
        ratio = np.sum(got * np.cos(w * t[interior])) / np.sum(w * np.cos(w * t[interior]) ** 2)
        predicted = (w * dt) ** 2 * (3 * k**2 + 3 * k - 1) / 30
        assert 1 - ratio == pytest.approx(predicted, rel=0.1)


def test_accurate_on_a_noisy_sine_where_differences_are_not():
    """500 Hz, uneven steps, velocity noise 0.02 (quantisation-sized): the default 30 ms window cuts the error of
    the derivative ~10× against central differences and keeps it a few % of the signal."""
    t = jittered_grid(5000, 0.002, seed=1, jitter=0.3)
    w = 2 * np.pi * 1.5
    rng = np.random.default_rng(2)
    y = np.sin(w * t) + 0.02 * rng.normal(size=t.shape)
    true = w * np.cos(w * t)
    rms = lambda e: float(np.sqrt(np.mean(e**2)))  # noqa: E731
    smooth = rms(smoothed_derivative(y, t) - true)
    raw = rms(np.gradient(y, t) - true)
    assert smooth < raw / 8
    assert smooth < 0.1 * w  # signal amplitude w ≈ 9.4
    # And without noise, the bias of the 30 ms window at 1.5 Hz is tiny.
    clean = smoothed_derivative(np.sin(w * t), t) - true
    assert rms(clean[20:-20]) < 2e-3 * w


def test_shapes_short_recordings_and_bad_grids():
    t = np.linspace(0.0, 1.0, 4)
    assert smoothed_derivative(3 * t, t).shape == (4,)
    np.testing.assert_allclose(smoothed_derivative(3 * t[:2], t[:2]), [3.0, 3.0])
    # Shorter than the window: all samples, the degree lowered to fit.
    np.testing.assert_allclose(smoothed_derivative(t**2, t, half_width=10), 2 * t, atol=1e-12)
    assert smoothed_derivative(np.zeros((4, 3)), t).shape == (4, 3)
    with pytest.raises(ValueError, match="increasing"):
        smoothed_derivative(np.zeros(3), np.array([0.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="at least 2"):
        smoothed_derivative(np.zeros(1), np.zeros(1))
    with pytest.raises(ValueError, match="window"):
        smoothed_derivative(np.zeros(4), t, window=0.0)


def test_fast_enough_for_long_recordings():
    """1e5 rows × 2 columns at 500 Hz with the default window: well under a second."""
    t = jittered_grid(100_000, 0.002, seed=4, jitter=0.2)
    y = np.random.default_rng(0).normal(size=(t.size, 2))
    smoothed_derivative(y[:1000], t[:1000])
    start = time.perf_counter()
    smoothed_derivative(y, t)
    assert time.perf_counter() - start < 1.0


def test_robust_spread_is_sigma_on_gaussian_samples_and_ignores_one_percent_outliers():
    rng = np.random.default_rng(0)
    sigma = np.array([1.0, 3.0, 0.01])
    x = rng.normal(size=(200_000, 3)) * sigma + [5.0, -2.0, 0.0]
    np.testing.assert_allclose(robust_spread(x), sigma, rtol=0.01)
    np.testing.assert_allclose(mad_spread(x), sigma, rtol=0.01)
    np.testing.assert_allclose(np.std(x, axis=0), sigma, rtol=0.01)
    # 1 % wild samples, all on one side: the std is ruined, the robust spread moves by a few %.
    y = x.copy()
    y[rng.choice(len(y), len(y) // 100, replace=False)] = 1e3 * sigma
    assert np.all(np.std(y, axis=0) > 50 * sigma)
    np.testing.assert_allclose(robust_spread(y), sigma, rtol=0.05)
    # Small samples still estimate σ.
    np.testing.assert_allclose(robust_spread(x[:400]), sigma, rtol=0.15)
    assert robust_spread(np.ones((10, 2))).tolist() == [0.0, 0.0]


def test_robust_spread_sees_a_force_that_acts_part_of_the_time():
    """Why not the MAD: a force acting on 15 % of the samples has MAD 0, so a tanh output scaled by it could not
    supply the force; the trimmed std keeps it in view."""
    x = np.zeros(10_000)
    x[:1500] = 2.0
    assert mad_spread(x) == 0.0
    assert 0.3 * 2.0 < 3 * robust_spread(x) / 3 < 2.0
    assert 3 * robust_spread(x) > 2.0  # the auto scale 3 × spread covers it


def _double_pendulum_recording(dt=0.002, duration=4.0):
    """A noise-free double pendulum under smooth torques, integrated to 1e-11, sampled on a jittered grid."""
    system = DoublePendulum()

    def torque(t):
        return np.array([0.8 * np.sin(2.0 * t), 0.5 * np.cos(3.0 * t)])

    accel = jax.jit(lambda q, qd, u: system.acceleration(q, qd, u))

    def rhs(t, x):
        a = accel(jnp.asarray(x[:2]), jnp.asarray(x[2:]), jnp.asarray(torque(t)))
        return np.concatenate([x[2:], np.asarray(a)])

    t = jittered_grid(int(duration / dt), dt, seed=5, jitter=0.3)
    sol = solve_ivp(
        rhs, (0.0, t[-1]), [0.6, -0.4, 0.0, 0.0], t_eval=t, method="DOP853", rtol=1e-11, atol=1e-11
    )
    q, qd = sol.y[:2].T, sol.y[2:].T
    u = np.stack([torque(ti) for ti in t])
    true = np.asarray(
        jax.vmap(system.acceleration)(jnp.asarray(q), jnp.asarray(qd), jnp.asarray(u))
    )
    traj = Trajectory(t, q, qd, u, ("q1", "q2"), ("u1", "u2"), (True, True))
    return traj, true


def test_sample_statistics_qdd_is_the_true_acceleration_of_a_noise_free_trajectory():
    """500 Hz, steps uneven by ±30 %, the default 30 ms window: q̈ within 0.5 % of its range of the true
    M⁻¹(τ − C q̇ − G) everywhere (measured 0.2 %; central differences: 0.6 %, from the uneven steps), 0.1 % RMS."""
    traj, true = _double_pendulum_recording()
    stats = sample_statistics([traj, traj.slice(0, 900)])
    assert stats["qdd"].shape == (traj.n_rows + 900, 2)
    qdd = stats["qdd"][: traj.n_rows]
    span = np.ptp(true, axis=0)
    err = np.abs(qdd - true).max(axis=0) / span
    assert np.all(err < 5e-3), err
    # Each recording on its own: the short one agrees with the long one away from its end.
    np.testing.assert_allclose(
        stats["qdd"][traj.n_rows : -7], qdd[: 900 - 7], atol=1e-9 * span.max()
    )
    rms = np.sqrt(np.mean((qdd - true) ** 2, axis=0)) / span
    assert np.all(rms < 1e-3), rms
    for key in ("q", "qd", "u"):
        np.testing.assert_array_equal(stats[key][: traj.n_rows], getattr(traj, key))

"""Evaluation metrics on cases with known answers, and the evaluate/compare commands on a small run."""

import json
import os

import jax
import jax.numpy as jnp
import numpy as np

from lagnet.data.trajectory import Trajectory
from lagnet.data.windows import make_windows
from lagnet.evaluate import (
    angle_aware_difference,
    energy_error,
    evaluate_run,
    hold_errors,
    reversibility_error,
    summarise_errors,
    valid_prediction_time,
    window_errors,
)
from lagnet.evaluate.compare import compare_runs
from lagnet.integrators import RK4, Leapfrog
from lagnet.rollout import rollout
from lagnet.systems import CartPole, Pendulum


def recorded(system, integrator, steps=300, dt=0.02, seed=0):
    rng = np.random.default_rng(seed)
    us = jnp.asarray(rng.normal(size=(steps, system.n_inputs)))
    qs, qds = rollout(system, integrator, jnp.array([0.1, 3.0]), jnp.array([0.0, 1.0]), us, dt)
    u = np.concatenate([np.asarray(us), np.zeros((1, system.n_inputs))])
    return Trajectory(
        dt * np.arange(steps + 1),
        np.asarray(qs),
        np.asarray(qds),
        u,
        system.coordinate_names,
        system.input_names,
        system.angles,
    )


def test_exact_model_has_zero_window_error():
    cp = CartPole()
    traj = recorded(cp, RK4())
    windows = make_windows([traj], 30).all()
    err = window_errors(cp, RK4(), windows, cp.angles)
    assert err.shape == (len(windows.q), 30, 4)
    assert float(jnp.max(err)) < 1e-9
    assert float(jnp.max(hold_errors(windows, cp.angles))) > 0.1
    summary = summarise_errors(err, cp.state_names)
    assert set(summary) == set(cp.state_names) and summary["phi"]["mean"] < 1e-9


def test_angle_errors_wrap_across_pi():
    d = angle_aware_difference(
        jnp.array([np.pi - 0.01, 0.5]), jnp.array([-np.pi + 0.01, 0.5 + 4 * np.pi]), (True, True)
    )
    np.testing.assert_allclose(d, [-0.02, 0.0], atol=1e-12)
    d = angle_aware_difference(jnp.array([np.pi - 0.01]), jnp.array([-np.pi + 0.01]), (False,))
    np.testing.assert_allclose(d, [2 * np.pi - 0.02], atol=1e-12)


def test_known_energy_drift_is_measured():
    """E(t) = E0 + c t: the drift rate is c per step and the max error c T."""
    qs = jnp.linspace(0.0, 1.0, 101)[:, None]
    qds = jnp.zeros_like(qs)
    de, worst, slope = energy_error(lambda q, qd: 3.0 + 0.5 * q[0], qs, qds)
    np.testing.assert_allclose(slope, 0.5 / 100, rtol=1e-9)
    np.testing.assert_allclose(worst, 0.5, rtol=1e-12)
    # RK4 on the pendulum loses energy; leapfrog's error stays bounded: the metric tells them apart.
    pend = Pendulum()
    drift = {}
    for integrator in (RK4(), Leapfrog()):
        q, qd = rollout(pend, integrator, jnp.array([2.0]), jnp.zeros(1), None, 0.3, steps=10_000)
        drift[type(integrator).__name__] = energy_error(pend.energy, q, qd)[2]
    assert drift["RK4"] * 10_000 < -0.05 and abs(drift["Leapfrog"]) * 10_000 < 1e-3


def test_reversibility_and_valid_time():
    pend = Pendulum()
    us = jnp.zeros((200, 1))
    assert reversibility_error(pend, Leapfrog(), jnp.array([1.0]), jnp.zeros(1), us, 0.1) < 1e-12
    assert reversibility_error(pend, RK4(), jnp.array([1.0]), jnp.zeros(1), us, 0.3) > 1e-6
    errors = jnp.concatenate([jnp.zeros((5, 2)), jnp.ones((5, 2))])
    assert int(valid_prediction_time(errors, jnp.ones(2))) == 5
    assert int(valid_prediction_time(jnp.zeros((7, 2)), jnp.ones(2))) == 7


def test_evaluate_and_compare_write_their_outputs(tmp_path):
    import test_reliability
    from test_train import config_for  # the small synthetic pendulum run of the training tests

    from lagnet.run.training import train_run as train

    data = test_reliability.write_pendulum(tmp_path / "p.csv")
    runs = []
    for kind in ("pinode", "blackbox"):
        config = config_for(data, type=kind)
        config = config.replace(training={"epochs": 1})
        train(config, str(tmp_path / kind), progress=False)
        runs.append(str(tmp_path / kind))
    metrics = evaluate_run(runs[0])
    out = tmp_path / "pinode" / "evaluation"
    for name in (
        "metrics.json",
        "report.md",
        "window_errors.png",
        "long_rollout.png",
        "phase_portrait.png",
        "energy.png",
    ):
        assert (out / name).exists(), name
    assert json.loads((out / "metrics.json").read_text())["windows"] == metrics["windows"] == 50
    assert (
        metrics["errors"]["model"]["theta"]["mean"]
        < metrics["errors"]["hold initial state"]["theta"]["mean"]
    )
    table, rows = compare_runs(runs, str(tmp_path / "cmp"))
    assert "pinode (pinode, rk4)" in table and "blackbox (blackbox, rk4)" in table
    assert os.path.exists(tmp_path / "cmp" / "comparison.png")
    assert jax.numpy.isfinite(metrics["long_rollout"]["energy_error_max"])

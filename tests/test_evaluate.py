"""Evaluation metrics on cases with known answers, and the evaluate/compare commands on a small run."""

import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lagnet.data.horizons import Horizon, cut_windows, parse_horizon
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
from lagnet.evaluate.metrics import error_versus_time, horizon_errors
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


def uneven(n=400, seed=1):
    """A recording on a jittery time grid (steps of 8–12 ms), the shape of real data at ~100 Hz."""
    rng = np.random.default_rng(seed)
    t = np.concatenate([[0.0], np.cumsum(rng.uniform(0.008, 0.012, n - 1))])
    q = np.sin(t)[:, None]
    return Trajectory(t, q, np.cos(t)[:, None], np.zeros((n, 1)), ("theta",), ("torque",), (True,))


def test_horizons_parse_seconds_and_steps():
    assert parse_horizon("0.5s") == Horizon(0.5, "s") == parse_horizon(" 500 ms ")
    assert (
        parse_horizon("30")
        == Horizon(30.0, "steps")
        == parse_horizon(30)
        == parse_horizon("30 steps")
    )
    assert parse_horizon("2s").label == "2 s" and parse_horizon(250).label == "250 steps"
    for bad, why in (
        (0.5, "ambiguous"),
        ("half", "not a horizon"),
        ("0s", "positive"),
        ("2.5", "integer"),
    ):
        with pytest.raises(ValueError, match=why):
            parse_horizon(bad)


def test_windows_in_seconds_on_an_uneven_grid():
    """Each window reaches T at its first sample ≥ T after its start; every horizon uses the same windows."""
    traj = uneven()
    cut = cut_windows(
        [traj], [parse_horizon("0.1s"), parse_horizon("0.5s"), parse_horizon(7)], count=60
    )
    assert cut.windows.q.shape == (60, cut.steps + 1, 1) and len(cut.sources) == 60
    for h, ends in zip((0.1, 0.5), cut.ends[:2], strict=True):
        at_end = cut.elapsed[np.arange(60), ends - 1]
        before = np.where(ends > 1, cut.elapsed[np.arange(60), np.maximum(ends - 2, 0)], -1.0)
        assert np.all(at_end >= h - 1e-12) and np.all(before < h)
        assert len(set(ends.tolist())) > 1  # uneven steps: not one step count for all windows
    assert np.all(cut.ends[2] == 7)
    # The windows hold the recording's own rows and time steps; a shorter window is padded with dt = 0.
    first = int(np.searchsorted(traj.t, float(cut.sources[0].split("@ ")[1][:-2]) - 1e-6))
    n = int(cut.lengths[0])
    np.testing.assert_allclose(cut.windows.q[0, : n + 1, 0], traj.q[first : first + n + 1, 0])
    np.testing.assert_allclose(cut.windows.dt[0, :n], np.diff(traj.t[first : first + n + 1]))
    assert np.all(cut.windows.dt[0, n:] == 0) and np.all(
        cut.windows.q[0, n:, 0] == traj.q[first + n, 0]
    )
    assert cut.lengths.max() == cut.steps and cut.lengths.min() < cut.steps


def test_windows_by_stride_and_start_time():
    traj = uneven()
    h = [parse_horizon("0.2s")]
    every = cut_windows([traj], h, stride=parse_horizon("0.5s"))
    starts = np.array([float(s.split("@ ")[1][:-2]) for s in every.sources])
    np.testing.assert_allclose(np.diff(starts), 0.5, atol=0.012)  # within one sample of every 0.5 s
    at = cut_windows([traj], h, start_times=[0.0, 1.0, 2.5])
    np.testing.assert_allclose(
        [float(s.split("@ ")[1][:-2]) for s in at.sources], [0.0, 1.0, 2.5], atol=0.012
    )
    with pytest.raises(
        ValueError, match=r"no window .* starts at 9 s \(valid start times: 0 … 3\."
    ):
        cut_windows([traj], h, start_times=[9.0])
    with pytest.raises(ValueError, match="long enough for a horizon of 1000 steps"):
        cut_windows([traj], [parse_horizon(1000)], count=5)


def test_mean_and_end_errors_stop_at_each_windows_horizon():
    e = np.arange(2 * 5 * 2, dtype=float).reshape(2, 5, 2)
    mean, end = horizon_errors(e, np.array([2, 5]))
    np.testing.assert_allclose(mean[0], e[0, :2].mean(0))
    np.testing.assert_allclose(mean[1], e[1].mean(0))
    np.testing.assert_allclose(end, [e[0, 1], e[1, 4]])
    s = summarise_errors(e, ("a", "b"), np.array([2, 5]))
    assert s["a"]["final_mean"] == pytest.approx((e[0, 1, 0] + e[1, 4, 0]) / 2)


def test_reversibility_of_a_failed_rollout_is_nan_not_an_exception():
    """A rollout that blows up is reported (NaN), never an EquinoxRuntimeError out of evaluate."""
    err = reversibility_error(
        Pendulum(), RK4(), jnp.array([jnp.nan]), jnp.zeros(1), jnp.zeros((10, 1)), 0.1
    )
    assert not np.isfinite(float(err))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A PINODE and a black box trained for one epoch on the small pendulum data (shared by the tests below)."""
    import test_reliability
    from test_train import config_for  # the small synthetic pendulum run of the training tests

    from lagnet.run.training import train_run as train

    tmp = tmp_path_factory.mktemp("runs")
    data = test_reliability.write_pendulum(tmp / "p.csv")
    out = []
    for kind in ("pinode", "blackbox"):
        config = config_for(data, type=kind).replace(training={"epochs": 1})
        train(config, str(tmp / kind), progress=False)
        out.append(str(tmp / kind))
    return out


def test_evaluate_and_compare_write_their_outputs(runs, tmp_path):
    metrics = evaluate_run(runs[0])
    out = os.path.join(runs[0], "evaluation")
    for name in (
        "metrics.json",
        "report.md",
        "window_errors.png",
        "error_vs_horizon.png",
        "long_rollout.png",
        "phase_portrait.png",
        "energy.png",
    ):
        assert os.path.exists(os.path.join(out, name)), name
    with open(os.path.join(out, "metrics.json")) as f:
        assert json.load(f)["windows"] == metrics["windows"] == 50
    assert (
        metrics["errors"]["model"]["theta"]["mean"]
        < metrics["errors"]["hold initial state"]["theta"]["mean"]
    )
    # A PINODE is measured against its own physics prior; its ratio to it is reported per variable.
    assert metrics["baseline"] == "physics (prior)"
    assert metrics["ratio_to_prior"]["theta"]["final"] == pytest.approx(
        metrics["errors"]["model"]["theta"]["final_mean"]
        / metrics["errors"]["physics (prior)"]["theta"]["final_mean"]
    )
    table, rows = compare_runs(runs, str(tmp_path / "cmp"))
    assert "pinode (pinode, rk4)" in table and "blackbox (blackbox, rk4)" in table
    assert "physics (prior) (pendulum)" in rows and "hold initial state (pendulum)" in rows
    # A black box has no physics of its own: its baseline stays the known mechanics.
    with open(os.path.join(runs[1], "evaluation", "metrics.json")) as f:
        box = json.load(f)
    assert box["baseline"] == "known physics" and "known physics" in box["errors"]
    assert os.path.exists(tmp_path / "cmp" / "comparison.png")
    assert jax.numpy.isfinite(metrics["long_rollout"]["energy_error_max"])


def test_evaluate_horizons_in_seconds_with_units(runs, tmp_path, capsys):
    """`lagnet evaluate RUN --horizon 0.1s 0.5s 20`: both metrics per horizon, with units, everywhere."""
    from lagnet.cli import main

    out = str(tmp_path / "ev")
    assert (
        main(
            [
                "evaluate",
                runs[0],
                "--horizon",
                "0.1s",
                "0.5s",
                "20",
                "--stride",
                "0.5s",
                "--out",
                out,
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "Horizon 0.1 s (2 steps)" in printed and "Horizon 20 steps" in printed
    assert "| pinode model | at horizon |" in printed and "theta_dot [rad/s]" in printed
    assert f"wrote {out}/metrics.json" in printed
    with open(os.path.join(out, "metrics.json")) as f:
        m = json.load(f)
    assert [h["label"] for h in m["horizons"]] == ["0.1 s", "0.5 s", "20 steps"]
    assert m["units"] == {"theta": "rad", "theta_dot": "rad/s"}
    assert (
        m["horizons"][1]["min_steps"] == m["horizons"][1]["max_steps"] == 10
    )  # 0.5 s at dt = 0.05 s
    h = m["horizons"][1]["errors"]["model"]["theta"]
    assert h["mean"] != h["final_mean"] and m["errors"] == m["horizons"][0]["errors"]
    curve = m["error_vs_time"]
    assert len(curve["t"]) == len(curve["errors"]["model"]["theta"]) and curve["t"][
        -1
    ] == pytest.approx(1.0)
    report = open(os.path.join(out, "report.md")).read()
    assert (
        "| prediction | metric | theta [rad] |" in report and "![error against horizon]" in report
    )
    assert "| model |" not in report and "reversibility error" in report


def test_evaluate_without_plots_still_reports_and_bad_out_is_refused(runs, tmp_path):
    out = tmp_path / "np"
    evaluate_run(runs[0], out_dir=str(out), plots=False, horizons=["0.2s"], windows=5)
    assert "--no-plots" in (out / "report.md").read_text() and not (out / "energy.png").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="is a file, not a folder"):
        evaluate_run(runs[0], out_dir=str(tmp_path / "file"))
    with pytest.raises(ValueError, match="cannot write the evaluation to"):
        evaluate_run(runs[0], out_dir=str(tmp_path / "file" / "sub"))


def _fake_metrics(folder, system, names, model_type="pinode"):
    stats = {
        "mean": 1.0,
        "std": 0.1,
        "median": 1.0,
        "p25": 0.9,
        "p75": 1.1,
        "final_mean": 2.0,
        "final_std": 0.2,
    }
    errors = {
        k: {n: dict(stats) for n in names} for k in ("model", "known physics", "hold initial state")
    }
    os.makedirs(os.path.join(folder, "evaluation"))
    with open(os.path.join(folder, "evaluation", "metrics.json"), "w") as f:
        json.dump(
            {
                "model_type": model_type,
                "integrator": "rk4",
                "system": system,
                "horizon": "0.5 s",
                "errors": errors,
                "units": {n: "rad" for n in names},
            },
            f,
        )
    return str(folder)


def test_compare_keys_runs_by_path_and_mixes_systems(tmp_path):
    a = _fake_metrics(tmp_path / "a" / "base", "pendulum", ["theta", "theta_dot"])
    b = _fake_metrics(tmp_path / "b" / "base", "cartpole", ["x", "phi", "x_dot", "phi_dot"])
    table, rows = compare_runs([a, b], str(tmp_path / "cmp"))
    assert (
        f"{os.path.normpath(a)} (pinode, rk4)" in rows
        and f"{os.path.normpath(b)} (pinode, rk4)" in rows
    )
    assert "known physics (pendulum)" in rows and "known physics (cartpole)" in rows
    assert "| run (at horizon) |" in table and "—" in table and "theta [rad]" in table
    empty = tmp_path / "empty"
    os.makedirs(empty / "evaluation")
    (empty / "evaluation" / "metrics.json").write_text("")
    with pytest.raises(
        ValueError, match=r"empty/evaluation/metrics.json: not an evaluation's metrics"
    ):
        compare_runs([a, str(empty)])


def test_error_versus_time_compares_sample_rates_at_equal_times():
    """A 10 Hz and a 5 Hz window with the same error e(t) = t give the curve e(t) = t (not step by step)."""
    elapsed = np.array(
        [[0.1, 0.2, 0.3, 0.4], [0.2, 0.4, 0.4, 0.4]]
    )  # the second padded after 2 steps
    t, mean = error_versus_time(elapsed[..., None], elapsed, np.array([4, 2]), points=20)
    assert t[-1] == pytest.approx(0.4) and t[0] == pytest.approx(0.1)
    np.testing.assert_allclose(mean[:, 0], t, rtol=1e-12)


def test_config_horizons_in_seconds_or_steps():
    from lagnet.config import ConfigError, validate

    base = {"system": {"name": "pendulum"}, "data": {"train": ["x.csv"]}}
    config = validate({**base, "evaluation": {"horizon": "0.5s", "long_horizon": 400}})
    assert parse_horizon(config.evaluation.horizon) == Horizon(0.5, "s")
    with pytest.raises(ConfigError, match="evaluation.horizon"):
        validate({**base, "evaluation": {"horizon": "half a second"}})
    with pytest.raises(ConfigError, match="evaluation.long_horizon"):
        validate({**base, "evaluation": {"long_horizon": 0.5}})

"""Evaluation against the model's own physics prior, by region of the state space, with the coverage of the
training states, written as one set of files and tied to the checkpoint it evaluated."""

import json
import os
import shutil

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import PENDULUM_MAPPING, write_pendulum_csv

from lagnet.config import ConfigError, validate
from lagnet.data.horizons import cut_windows, parse_horizon
from lagnet.evaluate import evaluate_run, window_errors
from lagnet.evaluate.compare import compare_runs, load_metrics
from lagnet.evaluate.metrics import (
    amplitudes,
    covered_arc,
    in_bin,
    in_region,
    outside_share,
    quantile_edges,
)
from lagnet.evaluate.run import end_errors
from lagnet.integrators import RK4
from lagnet.models import PINODE, StateFeatures, make_mlp, physics_prior
from lagnet.rollout import rollout
from lagnet.run import load_recordings, load_run, save_tree
from lagnet.systems import Pendulum
from lagnet.systems.friction import JointFriction


def _pinode(zero_output: bool, seed: int = 0):
    system = Pendulum()
    features = StateFeatures(system.angles, 1)
    net = make_mlp(
        features.size,
        1,
        width=8,
        depth=2,
        activation="tanh",
        final_activation="identity",
        zero_output=zero_output,
        key=jax.random.key(seed),
    )
    return PINODE(
        system,
        friction=JointFriction(1, viscous={0: 0.3}, coulomb={0: 0.1}),
        network=net,
        features=features,
        learn_parameters={"mass": {"lower": 0.1}},
    )


def test_physics_prior_keeps_friction_and_parameters_and_drops_the_network():
    """prior(q, q̇, u) = M⁻¹ [B u + Q_f(q̇) − C q̇ − G] of the model's own (learned) parameters and friction."""
    q, qd, u = jnp.array([0.7]), jnp.array([-1.3]), jnp.array([0.4])
    model = _pinode(zero_output=False)
    prior = physics_prior(model)
    assert prior.network is None
    assert eqx.tree_equal(prior.friction, model.friction)
    assert eqx.tree_equal(prior.parameters, model.parameters)
    assert eqx.tree_equal(prior.system, model.system)
    # The network's share of q̈ is all that differs: model − prior = M⁻¹ s Q_θ.
    force = model.output_scale(model.network(model.features(q, qd, u)))
    m_inv = 1.0 / model.mass_matrix(q)[0, 0]
    np.testing.assert_allclose(
        model.acceleration(q, qd, u) - prior.acceleration(q, qd, u), m_inv * force, rtol=1e-12
    )
    # The friction is kept: the prior is not the mechanics alone.
    bare = PINODE(Pendulum())
    assert abs(float(prior.acceleration(q, qd, u)[0] - bare.acceleration(q, qd, u)[0])) > 0.1
    # A model without a network is its own prior; one without physics has none.
    pure = PINODE(Pendulum(), friction=model.friction)
    assert physics_prior(pure) is pure
    assert physics_prior(eqx_blackbox()) is None


def eqx_blackbox():
    from lagnet.models import BlackBox

    system = Pendulum()
    features = StateFeatures(system.angles, 1)
    net = make_mlp(
        features.size,
        1,
        width=4,
        depth=1,
        activation="tanh",
        final_activation="identity",
        zero_output=False,
        key=jax.random.key(1),
    )
    return BlackBox(system, net, features)


def test_amplitudes_bins_and_regions_measure_angles_modulo_two_pi():
    q0 = np.array([[0.1], [2 * np.pi - 0.2], [-3.0], [np.pi + 0.1]])
    qd0 = np.array([[-1.0], [0.5], [0.0], [2.0]])
    amp = amplitudes(q0, qd0, (True,))
    np.testing.assert_allclose(amp[:, 0], [0.1, 0.2, 3.0, np.pi - 0.1], atol=1e-12)
    np.testing.assert_allclose(amp[:, 1], [1.0, 0.5, 0.0, 2.0])
    # Not an angle: no wrap.
    assert amplitudes(q0, qd0, (False,))[1, 0] == pytest.approx(2 * np.pi - 0.2)
    edges = quantile_edges(np.arange(9.0), 3)
    np.testing.assert_allclose(edges, [0, 8 / 3, 16 / 3, 8])
    counts = [
        in_bin(np.arange(9.0), lo, hi, j == 2).sum()
        for j, (lo, hi) in enumerate(zip(edges[:-1], edges[1:], strict=True))
    ]
    assert counts == [3, 3, 3]
    # Upright ± 0.3 in the angle: −3.0 and π + 0.1 lie within it (across ±π), 0.1 and −0.2 do not.
    states = np.concatenate([q0, qd0], 1)
    inside = in_region(states, [np.pi, 0.0], [0.3, np.nan], [True, False])
    assert inside.tolist() == [False, False, True, True]
    # A second variable narrows it: |θ̇ − 2| ≤ 0.5.
    both = in_region(states, [np.pi, 2.0], [0.3, 0.5], [True, False])
    assert both.tolist() == [False, False, False, True]


def test_coverage_of_angles_is_the_shortest_arc():
    """Training angles around the upright ±π span an arc of 0.4, not [−π, π): a test angle at 0 lies outside."""
    train = np.array([np.pi - 0.2, -np.pi + 0.2, np.pi - 0.1, -np.pi + 0.05])
    start, length = covered_arc(train)
    assert start == pytest.approx(np.pi - 0.2) and length == pytest.approx(0.4)
    share, (low, high) = outside_share(train, np.array([np.pi, -np.pi + 0.1, 0.0, 1.0]), True)
    assert share == 0.5 and high - low == pytest.approx(0.4)
    # The training set itself is inside; a plain coordinate uses min–max.
    assert outside_share(train, train, True)[0] == 0.0
    share, rng = outside_share(np.array([-1.0, 2.0]), np.array([-1.0, 0.0, 2.0, 2.5]), False)
    assert share == 0.25 and rng == (-1.0, 2.0)


def test_config_regions_and_bins_are_checked():
    base = {"system": {"name": "pendulum"}, "data": {"train": ["x.csv"]}}
    ok = validate({**base, "evaluation": {"regions": {"up": {"theta": [3.14159, 0.3]}}}})
    assert ok.evaluation.regions == {"up": {"theta": [3.14159, 0.3]}}
    assert ok.evaluation.amplitude_bins == 3
    for bad, match in (
        ({"regions": {"up": {"theta": [3.1]}}}, r"evaluation.regions entry up.theta = \[3.1\]"),
        ({"regions": {"up": {"theta": [3.1, 0.0]}}}, "radius > 0"),
        ({"regions": {"up": {}}}, "at least one variable"),
        ({"regions": ["up"]}, "evaluation.regions must be a mapping"),
        ({"amplitude_bins": 0}, "evaluation.amplitude_bins must be >= 1"),
        ({"amplitude_bins": {"theta": [1.0, 0.5]}}, "increasing edges"),
    ):
        with pytest.raises(ConfigError, match=match):
            validate({**base, "evaluation": bad})


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A PINODE with the data's friction given, trained one epoch, with a named region in its config."""
    from lagnet.run.training import train_run

    tmp = tmp_path_factory.mktemp("regions")
    data = write_pendulum_csv(tmp / "p.csv", steps=400, hold=20, scale=1.0, substeps=1)
    config = validate(
        {
            "name": "regions",
            "dtype": "float64",
            "system": {"name": "pendulum"},
            "model": {
                "type": "pinode",
                "width": 8,
                "zero_init": False,
                "friction": {"viscous": {"theta": 0.1}, "coulomb": {"theta": 0.05}},
            },
            "data": {"train": [data], "mapping": dict(PENDULUM_MAPPING)},
            "training": {"epochs": 1, "batch_size": 32, "horizon": 3, "patience": 50},
            "evaluation": {
                "windows": 40,
                "horizon": 10,
                "long_horizon": 20,
                "regions": {
                    "everywhere": {"theta": [0.0, 4.0]},
                    "upright": {"theta": [3.14159, 0.3]},
                },
            },
        }
    )
    train_run(config, str(tmp / "run"), progress=False)
    return str(tmp / "run"), str(tmp)


def test_evaluation_reports_prior_regions_and_coverage(run):
    run_dir, tmp = run
    out = os.path.join(tmp, "ev")
    m = evaluate_run(run_dir, out_dir=out, plots=False, progress=False)
    names = ["theta", "theta_dot"]
    # The run identified its physics, so the physics as the config gave it is reported beside it.
    assert m["baseline"] == "physics (prior)" and set(m["errors"]) == {
        "model",
        "physics (prior)",
        "physics (as given)",
        "hold initial state",
    }
    # The prior row is the trained model's own physics: recomputed here on the same windows.
    loaded = load_run(run_dir)
    trajs = load_recordings(loaded.config, loaded.model.system, loaded.config.data.train)
    cut = cut_windows(trajs, [parse_horizon(10)], count=40, seed=loaded.config.seed)
    again = end_errors(
        {"model": loaded.model, "prior": physics_prior(loaded.model), "bare": PINODE(Pendulum())},
        loaded.integrator,
        cut,
    )
    for n in names:
        assert m["errors"]["physics (prior)"][n]["final_mean"] == pytest.approx(
            again["prior"][n], rel=1e-9
        )
        assert m["errors"]["model"][n]["final_mean"] == pytest.approx(again["model"][n], rel=1e-9)
        assert m["ratio_to_prior"][n]["final"] == pytest.approx(
            again["model"][n] / again["prior"][n], rel=1e-9
        )
    # The data's own friction is in the prior: it predicts far better than the mechanics without it.
    assert again["prior"]["theta_dot"] < 0.5 * again["bare"]["theta_dot"]
    # Regions: the amplitude bins of each variable share out all windows; `everywhere` is all of them.
    regions = m["regions"]
    for n in names:
        bins = [e for e in regions["amplitude"] if e["variable"] == n]
        assert len(bins) == 3 and sum(e["windows"] for e in bins) == m["windows"] == 40
    everywhere, upright = regions["named"]
    assert everywhere["windows"] == 40
    # Upright: the windows starting within 0.3 of θ = π (modulo 2π), counted here from the same windows.
    theta0 = np.asarray(cut.windows.q[:, 0, 0])
    expected = int((np.abs(np.mod(theta0 - 3.14159 + np.pi, 2 * np.pi) - np.pi) <= 0.3).sum())
    assert upright["windows"] == expected < 40
    assert (upright["model"] is None) == (expected == 0)
    for n in names:
        assert everywhere["model"][n] == pytest.approx(
            m["errors"]["model"][n]["final_mean"], rel=1e-9
        )
        assert everywhere["prior"][n] == pytest.approx(
            m["errors"]["physics (prior)"][n]["final_mean"], rel=1e-9
        )
    # Evaluated on its training file: every test state is inside the training range.
    assert m["coverage"]["warning"] is None
    assert all(v["outside"] == 0.0 for v in m["coverage"]["variables"].values())
    with open(os.path.join(out, "metrics.json")) as f:
        saved = json.load(f)
    assert {"regions", "coverage", "ratio_to_prior", "checkpoint", "baseline"} <= set(saved)
    assert saved["horizons"][0]["ratio_to_prior"]["theta"]["final"] == pytest.approx(
        m["ratio_to_prior"]["theta"]["final"]
    )
    report = open(os.path.join(out, "report.md")).read()
    assert "| physics (prior) | at horizon |" in report
    assert "Error ratio model / physics (prior)" in report and "| 10 steps | at horizon |" in report
    assert "Errors by region" in report and "| everywhere (theta 0 ± 4) | 40 |" in report
    assert f"| upright (theta 3.14159 ± 0.3) | {expected} |" in report
    assert "\\|theta\\| in [" in report and "\\|theta_dot\\| in [" in report
    assert (
        "Coverage: share of the 401 test states outside the training states' range: theta 0.0 %"
        in report
    )
    assert "Warning" not in report


def test_cli_warns_when_test_states_leave_the_training_range(run, capsys):
    from lagnet.cli import main

    run_dir, tmp = run
    wide = write_pendulum_csv(
        os.path.join(tmp, "wide.csv"), steps=200, hold=20, scale=3.0, substeps=1, theta0=2.5, seed=4
    )
    out = os.path.join(tmp, "wide-ev")
    assert (
        main(["evaluate", run_dir, "--data", wide, "--out", out, "--no-plots", "--windows", "20"])
        == 0
    )
    err = capsys.readouterr().err
    with open(os.path.join(out, "metrics.json")) as f:
        cov = json.load(f)["coverage"]
    # The share of test velocities outside the training velocities' min–max, counted here from the files.
    train_qd = np.loadtxt(os.path.join(tmp, "p.csv"), delimiter=",", skiprows=1)[:, 2]
    test_qd = np.loadtxt(wide, delimiter=",", skiprows=1)[:, 2]
    share = float(((test_qd < train_qd.min()) | (test_qd > train_qd.max())).mean())
    assert share > 0.05
    assert cov["variables"]["theta_dot"]["outside"] == pytest.approx(share)
    assert cov["test_states"] == 201 and cov["warning"]
    assert f"theta_dot {100 * share:.1f} %" in err
    assert "lagnet evaluate: warning: the evaluation data leave the training states' range" in err
    assert "**Warning: the evaluation data leave" in open(os.path.join(out, "report.md")).read()


def test_evaluation_files_are_replaced_as_one_set(run, monkeypatch):
    import lagnet.evaluate.report as report

    run_dir, tmp = run
    out = os.path.join(tmp, "once")
    first = evaluate_run(run_dir, out_dir=out, plots=False, progress=False, windows=20)
    before = {f: open(os.path.join(out, f)).read() for f in ("metrics.json", "report.md")}

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # the process stopped after metrics.json, before report.md

    monkeypatch.setattr(report, "write_report", killed)
    with pytest.raises(KeyboardInterrupt):
        evaluate_run(run_dir, out_dir=out, plots=False, progress=False, windows=10)
    assert {f: open(os.path.join(out, f)).read() for f in before} == before
    assert not [e for e in os.listdir(tmp) if "partial" in e]
    # A kill -9 leaves the new set in a hidden folder beside the old one; the next evaluation removes it.
    os.makedirs(os.path.join(tmp, ".once-partial-killed"))
    open(os.path.join(tmp, ".once-partial-killed", "metrics.json"), "w").close()
    monkeypatch.undo()
    second = evaluate_run(run_dir, out_dir=out, plots=False, progress=False, windows=10)
    assert second["windows"] == 10 != first["windows"]
    with open(os.path.join(out, "metrics.json")) as f:
        assert json.load(f)["windows"] == 10
    assert "10 windows" in open(os.path.join(out, "report.md")).read()
    assert not [e for e in os.listdir(tmp) if "partial" in e]
    # A folder holding other files is not replaced.
    os.makedirs(os.path.join(tmp, "mine"))
    open(os.path.join(tmp, "mine", "notes.txt"), "w").close()
    with pytest.raises(
        ValueError, match="holds files that an evaluation does not write .notes.txt."
    ):
        evaluate_run(run_dir, out_dir=os.path.join(tmp, "mine"), plots=False, progress=False)
    assert os.listdir(os.path.join(tmp, "mine")) == ["notes.txt"]


def test_compare_refuses_a_stale_evaluation_and_evaluate_redoes_it(run, tmp_path):
    run_dir, _ = run
    copy = str(tmp_path / "copy")
    shutil.copytree(run_dir, copy)
    # What the lead's training may add to summary.json: rendered when present.
    summary = os.path.join(copy, "summary.json")
    with open(summary) as f:
        s = json.load(f)
    s["identification"] = {
        "method": "gauss_newton",
        "loss_before": 0.5,
        "loss": 0.02,
        "at_bound": [{"name": "mass", "value": 0.1, "bound": 0.1, "side": "lower"}],
    }
    s["fallback"] = "physics"
    with open(summary, "w") as f:
        json.dump(s, f)
    m = evaluate_run(copy, plots=False, progress=False, windows=10)
    best = os.path.join(copy, "checkpoints", "best.eqx")
    from lagnet.run.files import sha256_file

    assert m["checkpoint"] == {"file": "checkpoints/best.eqx", "sha256": sha256_file(best)}
    report = open(os.path.join(copy, "evaluation", "report.md")).read()
    assert (
        "- Identification (gauss_newton): loss 0.5 → 0.02; physical parameters at a bound: "
        "mass = 0.1 (lower bound 0.1)" in report
    )
    assert "- Fallback: training kept the physics model" in report
    compare_runs([copy])  # current: accepted
    # Training went on (as a --resume would): best.eqx now holds another model.
    further = jax.tree_util.tree_map(
        lambda x: 1.01 * x if eqx.is_inexact_array(x) else x, load_run(copy).model
    )
    save_tree(best, further)
    os.remove(summary)  # an unfinished run: loading it warns instead of refusing the replaced file
    assert sha256_file(best) != m["checkpoint"]["sha256"]
    with pytest.raises(
        ValueError, match=r"its evaluation is of an older checkpoints/best.eqx .*evaluate it again"
    ):
        compare_runs([copy])
    with pytest.warns(UserWarning, match="lags behind"):
        evaluate_run(copy, plots=False, progress=False, windows=10)
    assert load_metrics(copy, evaluate_missing=False)["checkpoint"]["sha256"] == sha256_file(best)
    table, _ = compare_runs([copy])
    assert "physics (prior)" in table


def test_window_errors_of_prior_equal_model_when_the_network_outputs_zero():
    """The evaluation's prior row on windows: identical to the model's while its network outputs zero."""
    from lagnet.data.trajectory import Trajectory
    from lagnet.data.windows import make_windows

    plant = _pinode(zero_output=True)
    us = jnp.asarray(np.random.default_rng(0).normal(size=(60, 1)))
    qs, qds = eqx.filter_jit(rollout)(plant, RK4(), jnp.array([0.5]), jnp.zeros(1), us, 0.05)
    traj = Trajectory(
        0.05 * np.arange(61),
        np.asarray(qs) + 0.01,
        np.asarray(qds),
        np.concatenate([np.asarray(us), np.zeros((1, 1))]),
        ("theta",),
        ("torque",),
        (True,),
    )
    w = make_windows([traj], 10).all()
    errors = eqx.filter_jit(window_errors)
    a = errors(plant, RK4(), w, (True,))
    b = errors(physics_prior(plant), RK4(), w, (True,))
    assert float(jnp.max(a)) > 1e-3
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))

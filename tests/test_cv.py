"""`lagnet cv`: leave-one-run-out folds, their ratios to the physics as given, and the choice."""

import json
import os

import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from helpers import PENDULUM_MAPPING, model_section, write_pendulum_csv

from lagnet.commands.cv import fold_files, parse_folds
from lagnet.config import load_config
from lagnet.data.horizons import cut_windows, parse_horizon
from lagnet.evaluate.metrics import horizon_errors, window_errors
from lagnet.models import physics_prior
from lagnet.run import load_recordings, load_run


def _config(tmp, name, files, type="pinode", **model):
    path = tmp / f"{name}.yaml"
    config = {
        "name": name,
        "dtype": "float64",
        "system": {"name": "pendulum"},
        "model": model_section(type, network={"width": 4, "depth": 1}, **model),
        "data": {"train": files, "mapping": dict(PENDULUM_MAPPING)},
        "training": {"epochs": 5, "batch_size": 32, "horizon": 2, "learning_rate": 3e-3},
        "evaluation": {"windows": 20, "horizon": 5},
    }
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_fold_files_and_fold_selection(tmp_path):
    files = [str(tmp_path / f"r{i}.csv") for i in range(1, 4)]
    config = load_config(_config(tmp_path, "c", files))
    # Fold i validates on the next recording in order (wrapping), never on the held-out one.
    assert fold_files(config, 0) == ([files[2]], [files[1]])
    assert fold_files(config, 2) == ([files[1]], [files[0]])
    two = load_config(_config(tmp_path, "d", files[:2]))
    assert fold_files(two, 1) == ([files[0]], [])  # the config's own split of the one other run
    assert parse_folds("F1,3,r2.csv", files, "c.yaml") == [0, 2, 1]
    assert parse_folds(None, files, "c.yaml") == [0, 1, 2]
    with pytest.raises(ValueError, match=r"--folds: 'F9' is no fold of c.yaml \(F1..F3"):
        parse_folds("F9", files, "c.yaml")


def test_cv_trains_each_fold_and_chooses(tmp_path, capsys):
    from lagnet.cli import main

    files = [
        write_pendulum_csv(
            tmp_path / f"p{i}.csv", steps=120, hold=20, scale=1.0, seed=i, theta0=0.5 + 0.3 * i
        )
        for i in range(1, 4)
    ]
    pinode = _config(tmp_path, "pinode", files, type="pinode", zero_init=False)
    pure = _config(tmp_path, "pure", files, type="pure_ode", friction={"viscous": ["theta"]})
    out = tmp_path / "cv"
    args = ["cv", pinode, pure, "--folds", "F1,F3", "--epochs", "1", "--out", str(out), "--quiet"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    with open(out / "cv.json") as f:
        cv = json.load(f)
    assert cv["horizon"] == "5 steps" and [c["name"] for c in cv["configs"]] == ["pinode", "pure"]
    assert cv["command"] == f"lagnet cv {pinode} {pure} --folds F1,F3 --epochs 1 --out {out}"
    assert cv["date"] and cv["machine"]
    for c in cv["configs"]:
        assert [f["fold"] for f in c["folds"]] == [1, 3]
        f1, f3 = c["folds"]
        assert (f1["held_out"], f1["train"], f1["validation"]) == (files[0], [files[2]], [files[1]])
        assert (f3["held_out"], f3["train"], f3["validation"]) == (files[2], [files[1]], [files[0]])
        assert os.path.exists(out / c["name"] / "fold-1" / "checkpoints" / "best.eqx")
        assert not os.path.exists(out / c["name"] / "fold-2")
        for f in c["folds"]:
            given = f["errors"]["given physics"]
            for k in ("model", "physics"):
                for n in ("theta", "theta_dot"):
                    assert f["ratios"][k][n] == pytest.approx(
                        f["errors"][k][n] / given[n], rel=1e-12
                    )
                assert f["mean_ratio"][k] == pytest.approx(np.mean(list(f["ratios"][k].values())))
        for k in ("model", "physics"):
            assert c["summary"][k]["mean"] == pytest.approx(
                np.mean([f["mean_ratio"][k] for f in c["folds"]])
            )
            assert c["summary"][k]["worst"] == max(
                r for f in c["folds"] for r in f["ratios"][k].values()
            )
    pin, pure_c = cv["configs"]
    # One reference per held-out file: both configs are scored on the same windows against the same errors.
    for a, b in zip(pin["folds"], pure_c["folds"], strict=True):
        assert a["errors"]["given physics"] == b["errors"]["given physics"]
    # A pure ODE has no network: its model is its identified physics (a tie the simpler side wins).
    assert pure_c["folds"][0]["ratios"]["model"] == pure_c["folds"][0]["ratios"]["physics"]
    # The held-out errors of a fold's identified physics, recomputed from its run on the same windows.
    run = load_run(str(out / "pinode" / "fold-3"))
    test = load_recordings(run.config, run.model.system, [files[2]])
    cut = cut_windows(test, [parse_horizon(5)], count=20, seed=run.config.seed, dtype=jnp.float64)
    errs = window_errors(physics_prior(run.model), run.integrator, cut.windows, (True,))
    end = horizon_errors(errs, cut.ends[0])[1].mean(0)
    assert pin["folds"][1]["errors"]["physics"]["theta"] == pytest.approx(end[0], rel=1e-9)
    # The choice: the lowest mean; among equal means, physics before network and fewer trained parameters.
    ranked = sorted(
        (c["summary"][k]["mean"], k != "physics", c["trained_parameters"][k], c["name"], k)
        for c in cv["configs"]
        for k in c["summary"]
    )
    assert (cv["choice"]["config"], cv["choice"]["prediction"]) == (ranked[0][3], ranked[0][4])
    assert not (cv["choice"]["config"] == "pure" and cv["choice"]["prediction"] == "model")
    assert "| 1 (p1.csv) | theta |" in printed and "| 3 (p3.csv) | theta_dot |" in printed
    assert "| mean over folds of the fold's mean |" in printed and "| worst |" in printed
    assert f"Choice: {cv['choice']['config']}, its " in printed
    assert f"wrote {out}/cv.json" in printed


def test_cv_needs_two_recordings(tmp_path, capsys):
    from lagnet.cli import main

    one = write_pendulum_csv(tmp_path / "p.csv", steps=60, hold=20)
    config = _config(tmp_path, "one", [one])
    assert main(["cv", config, "--out", str(tmp_path / "cv")]) == 2
    assert (
        "data.train names 1 recording(s); leave-one-run-out cross-validation needs at least 2"
        in (capsys.readouterr().err)
    )

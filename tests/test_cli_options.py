"""Every option and config value is checked before any work, and its error names it: no numpy or scipy message,
no table printed from a meaningless value, no minutes of work before the refusal."""

import os
import shutil

import numpy as np
import pytest
import yaml
from helpers import PENDULUM_MAPPING, write_pendulum_csv

from lagnet.cli import main
from lagnet.config import ConfigError, load_config
from lagnet.data import load_trajectories
from lagnet.run import build_system

pytestmark = pytest.mark.attack("CLI", "unclear")

ROBOTS = os.path.join(os.path.dirname(__file__), "data", "robots")


@pytest.mark.attack("CLI", "hang")
@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["data", "generate", "pendulum", "--duration", "0"],
            "argument --duration: expected a number > 0",
        ),
        (
            ["data", "generate", "pendulum", "--duration", "-1"],
            "argument --duration: expected a number > 0",
        ),
        (
            ["data", "generate", "pendulum", "--duration", "nan"],
            "argument --duration: expected a number > 0",
        ),
        (
            ["data", "generate", "pendulum", "--seed", "-5"],
            "argument --seed: expected a whole number from 0",
        ),
        (["data", "coverage", "x.npz", "--radii", "-1"], "argument --radii: expected a number > 0"),
        (
            ["evaluate", "RUN", "--control", "--seeds", "-1"],
            "argument --seeds: expected a whole number",
        ),
    ],
)
def test_bad_options_are_refused_when_parsed(tmp_path, capsys, args, message):
    os.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        main([*args, *(["--out", str(tmp_path / "out")] if args[1] == "generate" else [])])
    assert info.value.code == 2
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == ""
    assert not (tmp_path / "out").exists()


def test_a_duration_too_short_to_record_names_the_option(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["data", "generate", "pendulum", "--duration", "1e-6", "--out", str(out)]) == 2
    assert "--duration 1e-06 s is too short to record pendulum" in capsys.readouterr().err
    assert not out.exists() or os.listdir(out) == []


@pytest.mark.attack("config", "silent")
@pytest.mark.parametrize("expand", ["yes", 1, 0, "false"])
def test_expand_must_be_a_bool(tmp_path, expand):
    path = tmp_path / "robot.yaml"
    source = os.path.join(ROBOTS, "pendulum.urdf")
    system = {"name": "urdf", "source": source, "params": {"actuated": ["theta"], "expand": expand}}
    path.write_text(yaml.safe_dump({"name": "robot", "system": system}))
    with pytest.raises(
        ConfigError, match=r"system.params.expand: expand must be true, false or null"
    ):
        build_system(load_config(path))


@pytest.mark.attack("data file", "unclear")
def test_a_coarse_resample_is_not_blamed_on_the_velocity_columns(tmp_path, capsys):
    path = write_pendulum_csv(tmp_path / "p.csv", steps=100, hold=20)  # 5 s at 0.05 s
    # The velocities are checked on the measured samples (two samples 5 s apart fit no velocity column).
    try:
        trajs = load_trajectories(path, {**PENDULUM_MAPPING, "resample": 5.0})
    except ValueError as e:
        assert "velocity column" not in str(e) and "mapping.resample" in str(e)
    else:
        assert len(trajs[0].t) == 2
    trajs = load_trajectories(path, {**PENDULUM_MAPPING, "resample": 0.1})
    assert np.allclose(np.diff(trajs[0].t), 0.1)
    # Training on the coarse recording: the error says the resampling is what left too few rows.
    config = yaml.safe_load(open(_pendulum_config(tmp_path)))
    config["data"]["mapping"]["resample"] = 5.0
    (tmp_path / "coarse.yaml").write_text(yaml.safe_dump(config))
    assert (
        main(["train", str(tmp_path / "coarse.yaml"), "--out", str(tmp_path / "r"), "--quiet"]) == 2
    )
    assert "resampled every 5 s by data.mapping.resample" in capsys.readouterr().err


def test_an_out_that_cannot_be_written_is_not_called_busy(tmp_path, capsys):
    config = _pendulum_config(tmp_path)
    assert main(["train", config, "--out", "/proc/lagnet-x", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "/proc/lagnet-x" in err and "not writable" in err and "being trained" not in err


def _pendulum_config(tmp_path, **model):
    write_pendulum_csv(tmp_path / "p.csv", steps=100, hold=20)
    path = tmp_path / "c.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "c",
                "dtype": "float64",
                "system": {"name": "pendulum"},
                "model": {"type": "pinode", "width": 2, **model},
                "data": {"train": "p.csv", "mapping": dict(PENDULUM_MAPPING)},
                "training": {"epochs": 1, "batch_size": 16, "horizon": 2},
            }
        )
    )
    return str(path)


def _robot_config(tmp_path, identification: str):
    write_pendulum_csv(tmp_path / "p.csv", steps=100, hold=20)
    shutil.copy(os.path.join(ROBOTS, "pendulum.urdf"), tmp_path / "pendulum.urdf")
    path = tmp_path / "robot.yaml"
    system = {"name": "urdf", "source": "pendulum.urdf"}
    system["params"] = {"actuated": ["theta"], "expand": False}
    path.write_text(
        yaml.safe_dump(
            {
                "name": "robot",
                "dtype": "float64",
                "system": system,
                "model": {
                    "type": "pinode",
                    "width": 2,
                    "learn_parameters": ["body_pos"],
                    "identification": {"method": identification, "max_iterations": 2},
                },
                "data": {"train": "p.csv", "mapping": dict(PENDULUM_MAPPING)},
                "training": {"epochs": 1, "batch_size": 16, "horizon": 2},
            }
        )
    )
    return str(path)


def test_an_identification_horizon_longer_than_the_data_names_the_key(tmp_path, capsys):
    config = _robot_config(tmp_path, "solver")
    args = ["train", config, "--out", str(tmp_path / "run"), "--quiet"]
    assert main([*args, "--set", "model.identification.horizon=100000"]) == 2
    err = capsys.readouterr().err
    assert "model.identification.horizon = 100000 steps" in err and "recording has 86 rows" in err


@pytest.mark.attack("CLI", "traceback")
@pytest.mark.parametrize("identification", ["none", "solver"])
def test_learned_urdf_kinematics_without_expansion_train_and_print(
    tmp_path, capsys, identification
):
    """body_pos (a matrix: one row per body) learned with expand: false: identified through the solver (scipy
    took it as a 2-D x0) and printed in the summary line (a list of lists)."""
    config = _robot_config(tmp_path, identification)
    assert main(["train", config, "--out", str(tmp_path / "run"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "learned parameters: body_pos [[" in out

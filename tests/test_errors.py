"""`lagnet.LagnetError`: one clause catches lagnet's own errors, a config's, a data file's and a run folder's,
and each is still the built-in it always was."""

import pytest
from helpers import PENDULUM_MAPPING, write_pendulum_csv

import lagnet


def test_lagnet_errors_share_one_root(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: {type: pinode, widht: 8}\n")
    with pytest.raises(lagnet.LagnetError, match="widht") as config_error:
        lagnet.load_config(bad)
    assert isinstance(config_error.value, ValueError)

    csv = write_pendulum_csv(tmp_path / "p.csv", steps=20, hold=5)
    with pytest.raises(lagnet.LagnetError, match="no_such_column") as data_error:
        lagnet.load_trajectory(csv, {**PENDULUM_MAPPING, "positions": ["no_such_column"]})
    assert isinstance(data_error.value, ValueError)

    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.yaml").write_text("name: r\n")
    (tmp_path / "run" / "run.json").write_text("{not json")
    with pytest.raises(lagnet.LagnetError):
        lagnet.load(str(tmp_path / "run"))
    for name in (
        "LagnetError",
        "DataError",
        "NonPhysicalModel",
        "fit",
        "train_run",
        "cross_validate",
    ):
        assert name in dir(lagnet)
    assert lagnet.cross_validate.__module__ == "lagnet.cross_validation"

"""A `--resume` of a finished run (no epochs left, or a budget that ends it at once) keeps every value of its
summary.json: the best epoch's validation loss, run before the resume, is read back from metrics.jsonl."""

import json

import pytest
import yaml
from helpers import PENDULUM_MAPPING, write_pendulum_csv

from lagnet.cli import main

# Timings are of each command; the rest describes the run and must survive a resume that trains nothing.
TIMINGS = {"seconds", "seconds_load", "seconds_compile", "seconds_train"}


@pytest.mark.attack("run folder", "loss")
@pytest.mark.parametrize("select_by", ["final_error", "loss"])
def test_a_resume_that_trains_nothing_loses_no_summary_value(tmp_path, select_by):
    write_pendulum_csv(tmp_path / "p1.csv", steps=100, hold=20, seed=1)
    write_pendulum_csv(tmp_path / "p2.csv", steps=100, hold=20, seed=2, theta0=0.9)
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": "res",
                "dtype": "float64",
                "system": {"name": "pendulum"},
                "model": {"type": "pinode", "width": 4, "depth": 1, "zero_init": False},
                "data": {
                    "train": ["p1.csv"],
                    "validation": ["p2.csv"],
                    "mapping": dict(PENDULUM_MAPPING),
                },
                "training": {"epochs": 2, "batch_size": 16, "horizon": 2, "select_by": select_by},
            }
        )
    )
    run = tmp_path / "run"
    assert main(["train", str(config), "--out", str(run), "--quiet"]) == 0
    before = json.loads((run / "summary.json").read_text())
    assert before["best_validation_loss"] is not None
    for budget in ([], ["--set", "training.epochs=4", "--set", "training.max_steps=1"]):
        assert main(["train", str(config), "--out", str(run), "--quiet", "--resume", *budget]) == 0
        after = json.loads((run / "summary.json").read_text())
        changed = {k for k in before if after.get(k) != before[k]} - TIMINGS
        assert changed <= ({"stop_reason"} if budget else set()), changed
        assert after["best_validation_loss"] == before["best_validation_loss"]

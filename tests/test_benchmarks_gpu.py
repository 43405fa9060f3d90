"""benchmarks/gpu.py, the accelerator table's one-command run: what it does where there is no accelerator, and how
it records a part that fails or runs out of budget (its measurements need a GPU; `--allow-cpu --quick` is the
manual smoke test)."""

import json
import os

import pytest
from helpers import load_benchmark


@pytest.fixture(scope="module")
def gpu():
    return load_benchmark("gpu")


def test_without_an_accelerator_it_measures_nothing_and_keeps_the_records(
    gpu, tmp_path, capsys, monkeypatch
):
    # What the probe finds on a CPU-only machine, whatever this one has.
    monkeypatch.setattr(gpu, "probe", lambda: {"backend": "cpu", "device": "cpu"})
    record = tmp_path / "gpu.json"
    record.write_text(json.dumps({"backend": "gpu", "table": ["kept"]}))
    assert gpu.main(["--out", str(tmp_path)]) == 0
    assert "no GPU or TPU" in capsys.readouterr().out
    assert json.loads(record.read_text())["table"] == ["kept"]
    assert sorted(os.listdir(tmp_path)) == ["gpu.json"]


def test_a_failing_or_overrunning_part_is_recorded_and_the_budget_is_kept(gpu, tmp_path):
    spent = gpu.run_part("a", "rollout_rk4", [], str(tmp_path), 0.0, False)
    assert spent["status"] == "not run: the budget was spent"
    failed = gpu.run_part("b", "rollout_rk4", ["--no-such-flag"], str(tmp_path), 60, False)
    assert failed["status"].startswith("failed (exit 2)")
    assert "--no-such-flag" in failed["output"]
    slow = gpu.run_part("c", "time_to_accuracy", [], str(tmp_path), 0.5, False)
    assert slow["status"] == "stopped after 0 s (budget)"
    lines = gpu.summary_table(str(tmp_path), [spent, failed, slow])
    assert lines[2:] == [
        "| a | not run: the budget was spent |",
        "| b | failed (exit 2) |",
        "| c | stopped after 0 s (budget) |",
    ]

"""Faults lose nothing: atomic checkpoints, exact resume after kill -9, non-finite steps, unwritable outputs."""

import json
import os
import signal
import subprocess
import sys
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from helpers import PENDULUM_MAPPING, write_pendulum_csv

from lagnet.config import validate
from lagnet.run import load_run, load_tree, save_tree
from lagnet.run.training import train_run as train
from lagnet.train import TrainingDiverged

pytestmark = pytest.mark.attack("run folder", "loss")


def write_pendulum(path, steps=400):
    return write_pendulum_csv(path, steps=steps, hold=20, scale=1.0, substeps=1)


def config_dict(data, **training):
    return {
        "name": "reliability",
        "seed": 3,
        "system": {"name": "pendulum"},
        "model": {"type": "pinode", "width": 8, "zero_init": False},
        "data": {
            "train": [data],
            "mapping": dict(PENDULUM_MAPPING),
        },
        "training": {"batch_size": 16, "horizon": 2, "patience": 1000, **training},
    }


def run_cli(args, **kw):
    return subprocess.Popen(
        [sys.executable, "-m", "lagnet.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def test_resume_after_kill_is_bit_identical(tmp_path):
    data = write_pendulum(tmp_path / "p.csv")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(config_dict(data, epochs=40)))
    # Uninterrupted reference run.
    ref = run_cli(["train", str(cfg), "--out", str(tmp_path / "ref"), "--quiet"])
    assert ref.wait(timeout=300) == 0, ref.stderr.read()
    # The same run, killed with SIGKILL once a few epochs are checkpointed, then resumed.
    proc = run_cli(["train", str(cfg), "--out", str(tmp_path / "cut"), "--quiet"])
    manifest = tmp_path / "cut" / "checkpoints" / "manifest.json"
    deadline = time.time() + 240
    while time.time() < deadline:
        try:
            if json.loads(manifest.read_text())["states"][-1]["epoch"] >= 3:
                break
        except (FileNotFoundError, json.JSONDecodeError, KeyError, IndexError):
            pass
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    reached = json.loads(manifest.read_text())["states"][-1]["epoch"]
    assert reached < 39, "the run finished before it could be killed"
    # Whatever the moment of the kill, the newest checkpoint loads.
    load_run(str(tmp_path / "cut"), "last")
    resumed = run_cli(["train", str(cfg), "--out", str(tmp_path / "cut"), "--quiet", "--resume"])
    assert resumed.wait(timeout=300) == 0, resumed.stderr.read()
    for name in ("last.eqx", "best.eqx"):
        a = (tmp_path / "ref" / "checkpoints" / name).read_bytes()
        b = (tmp_path / "cut" / "checkpoints" / name).read_bytes()
        assert a == b, f"{name} differs after resume"
    kept = json.loads(manifest.read_text())["states"]
    assert (
        len(kept) == 3
        and sorted(os.listdir(tmp_path / "cut" / "checkpoints")).count("manifest.json") == 1
    )
    lines = (tmp_path / "cut" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["epoch"] for x in lines] == list(range(-1, 40))


def test_resume_refuses_a_different_config(tmp_path):
    data = write_pendulum(tmp_path / "p.csv")
    train(validate(config_dict(data, epochs=1)), str(tmp_path / "run"), progress=False)
    other = validate(config_dict(data, epochs=2, learning_rate=0.1))
    with pytest.raises(
        ValueError, match=r"different config: training.learning_rate: 0.001 in the run, 0.1 now"
    ):
        train(other, str(tmp_path / "run"), progress=False, resume=True)


@pytest.mark.attack("run folder", "silent")
def test_non_finite_steps_are_skipped_then_stop_the_run(tmp_path, monkeypatch):
    """A NaN input in a few windows (data the loader would refuse, injected behind it) makes those training
    steps non-finite: they are skipped and counted, and past `max_skipped_steps` the run stops cleanly."""
    import dataclasses

    import lagnet.run.training as loop

    data = write_pendulum(tmp_path / "p.csv")
    original = loop.load_training_data

    def poisoned(config, system):
        train_trajs, val_trajs = original(config, system)
        u = train_trajs[0].u.copy()
        u[100] = np.nan
        return [dataclasses.replace(train_trajs[0], u=u)] + train_trajs[1:], val_trajs

    monkeypatch.setattr(loop, "load_training_data", poisoned)
    config = validate(config_dict(data, epochs=3, batch_size=8))
    result = train(config, str(tmp_path / "ok"), progress=False)
    summary = json.loads((tmp_path / "ok" / "summary.json").read_text())
    assert (
        0 < summary["skipped_steps"] <= 3 * 2
    )  # each epoch: the batches holding the 2 windows over row 100
    leaves = jax.tree_util.tree_leaves(eqx.filter(result.model, eqx.is_inexact_array))
    assert all(np.all(np.isfinite(x)) for x in leaves)
    config = config.replace(training={"max_skipped_steps": 0})
    with pytest.raises(
        TrainingDiverged, match=r"non-finite loss or gradient .* last good checkpoint is"
    ):
        train(config, str(tmp_path / "stop"), progress=False)
    load_run(str(tmp_path / "stop"))  # the last good checkpoint is intact


@pytest.mark.attack("run folder", "traceback")
def test_unwritable_run_directory_fails_early(tmp_path):
    data = write_pendulum(tmp_path / "p.csv")
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "run").write_text("a file where the run directory should be")
    with pytest.raises(ValueError, match="is not writable"):
        train(validate(config_dict(data, epochs=1)), str(locked / "run"), progress=False)


@pytest.mark.attack("run folder", "traceback")
def test_truncated_checkpoint_names_the_file(tmp_path):
    tree = {"w": jnp.arange(100.0)}
    path = str(tmp_path / "m.eqx")
    save_tree(path, tree)
    raw = open(path, "rb").read()
    open(path, "wb").write(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match=r"m.eqx: cannot be loaded into this model .* truncated"):
        load_tree(path, tree)
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".tmp-")]


def test_full_disk_fails_early(tmp_path):
    from lagnet.run.training import check_output_dir

    with pytest.raises(ValueError, match=r"MB free on its disk; training needs at least"):
        check_output_dir(str(tmp_path / "run"), min_free_bytes=10**18)


def test_a_run_being_trained_refuses_a_second_training(tmp_path, capsys):
    """While a process holds a run directory, training or resuming into it fails at once, naming the holder."""
    from lagnet.cli import main
    from lagnet.run.lock import RunInUse, lock_path, run_lock

    data = write_pendulum(tmp_path / "p.csv", steps=100)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(config_dict(data, epochs=1)))
    out = str(tmp_path / "runs" / "held")
    holder = rf"is being trained by pid {os.getpid()} on host .*since .*lock file .*\.held\.lock"
    with run_lock(out):
        for resume in (False, True):
            with pytest.raises(RunInUse, match=holder):
                train(validate(config_dict(data, epochs=1)), out, progress=False, resume=resume)
        assert main(["train", str(cfg), "--out", out, "--quiet"]) == 2
        assert f"is being trained by pid {os.getpid()}" in capsys.readouterr().err
        assert not os.path.exists(out)  # nothing written by the refused trainings
    assert not os.path.exists(tmp_path / "runs")  # the lock's own folder and file went with it
    # Released on any exit: a training that fails leaves no lock behind, and the next one runs.
    with pytest.raises(FileNotFoundError):
        train(validate(config_dict(str(tmp_path / "missing.csv"))), out, progress=False)
    assert not os.path.exists(lock_path(out))
    with run_lock(out):  # free again
        assert os.listdir(tmp_path / "runs") == [".held.lock"]


def test_two_trainings_started_together_into_one_folder(tmp_path):
    """Both used to exit 0 with the folder mixing the two runs; now one trains, the other fails cleanly."""
    data = write_pendulum(tmp_path / "p.csv")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(config_dict(data, epochs=15)))
    out = tmp_path / "conc"
    procs = [run_cli(["train", str(cfg), "--out", str(out), "--quiet"]) for _ in range(2)]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2], results
    loser = next(err for code, err in results if code == 2)
    assert "is being trained by pid" in loser and "Traceback" not in loser, loser
    # The winner's run is whole: every epoch once, its checkpoints load, no lock left.
    lines = (out / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["epoch"] for x in lines] == list(range(-1, 15))
    assert json.loads((out / "summary.json").read_text())["epochs_run"] == 15
    load_run(str(out))
    assert sorted(os.listdir(tmp_path)) == ["c.yaml", "conc", "p.csv"]

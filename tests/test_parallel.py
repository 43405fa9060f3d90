"""Data-parallel training: 4 devices, in one process or in two (gloo on localhost), give one device's loss curve."""

import json
import os
import shutil
import socket
import subprocess
import sys
import time

import equinox as eqx
import jax
import numpy as np
import pytest
import yaml
from helpers import xla_flags_without_device_count
from test_reliability import config_dict

from lagnet.run import load_run

SCRIPT = """
import json, os, sys
sys.path.insert(0, {tests!r})
import jax
from test_reliability import config_dict, write_pendulum
from lagnet.config import validate
from lagnet.run.training import train_run
cfg = validate(config_dict(write_pendulum({data!r}), epochs=3, batch_size=16)).replace(devices={devices})
r = train_run(cfg, {run!r}, progress=False)
leaf = r.model.network.layers[0].weight
print(json.dumps({{"devices": len(leaf.sharding.device_set), "available": jax.device_count()}}))
"""


def validation_losses(run_dir):
    return np.array([json.loads(x)["validation_loss"] for x in (run_dir / "metrics.jsonl").open()])


def run(tmp_path, devices):
    env = dict(
        os.environ,
        XLA_FLAGS=f"{xla_flags_without_device_count()} --xla_force_host_platform_device_count=4",
    )
    code = SCRIPT.format(
        tests=os.path.dirname(__file__),
        data=str(tmp_path / "p.csv"),
        devices=devices,
        run=str(tmp_path / f"run{devices}"),
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    info = json.loads(out.stdout.strip().splitlines()[-1])
    return info, validation_losses(tmp_path / f"run{devices}")


@pytest.fixture(scope="module")
def one_device(tmp_path_factory):
    """The 1-device reference run (its folder holds the data, p.csv), trained once for the module."""
    folder = tmp_path_factory.mktemp("one_device")
    info, losses = run(folder, 1)
    return folder, info, losses


def test_four_devices_match_one(tmp_path, one_device):
    _, one_info, one = one_device
    four_info, four = run(tmp_path, 4)
    assert one_info == {"devices": 1, "available": 4}
    assert four_info == {"devices": 4, "available": 4}
    assert len(one) == len(four) == 4
    np.testing.assert_allclose(four, one, rtol=1e-4)
    assert four[-1] < four[0]


def free_port():
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def test_two_processes_match_one(tmp_path, one_device):
    """`lagnet train --coordinator ... --num-processes 2 --process-id I`, 2 CPU devices per process: the batch is
    split over 4 devices in 2 processes, the curve is one device's, and process 0 alone writes the run directory."""
    folder, _, one = one_device
    shutil.copy(folder / "p.csv", tmp_path / "p.csv")
    cfg = tmp_path / "c.yaml"  # a relative data path: relative to the config file, not to the cwd
    cfg.write_text(yaml.safe_dump(config_dict("p.csv", epochs=3, batch_size=16)))
    out = tmp_path / "run"
    env = dict(
        os.environ,
        XLA_FLAGS=xla_flags_without_device_count(),
        LAGNET_CPU_DEVICES="2",
        JAX_PLATFORMS="cpu",
    )
    port = free_port()
    procs, cwds, logs = [], [], []
    try:
        for i in range(2):
            cwds.append(tmp_path / f"cwd{i}")  # empty: nothing may land beside the run directory
            cwds[i].mkdir()
            logs.append((tmp_path / f"out{i}.txt", tmp_path / f"err{i}.txt"))
            args = ["train", str(cfg), "--out", str(out), "--quiet", "--coordinator"]
            args += [f"localhost:{port}", "--num-processes", "2", "--process-id", str(i)]
            with open(logs[i][0], "w") as stdout, open(logs[i][1], "w") as stderr:
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "lagnet.cli", *args],
                        cwd=cwds[i],
                        env=env,
                        stdout=stdout,
                        stderr=stderr,
                    )
                )
        # Until both finish, one fails (its peer would wait on it) or the time is up.
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            codes = [p.poll() for p in procs]
            if None not in codes or any(c not in (None, 0) for c in codes):
                break
            time.sleep(0.1)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
    codes = [p.returncode for p in procs]
    report = "\n".join(
        f"process {i}: exit {c}{' (killed)' if c < 0 else ''}\n{err.read_text()[-2000:]}"
        for i, (c, (_, err)) in enumerate(zip(codes, logs, strict=True))
    )
    assert codes == [0, 0], report
    assert "trained reliability" in logs[0][0].read_text(), report
    two = validation_losses(out)
    assert len(two) == len(one) == 4
    np.testing.assert_allclose(two, one, rtol=1e-4)
    assert two[-1] < two[0]
    # Process 1 wrote nothing of its own: one set of run files, no leftovers, nothing in its working directory.
    assert sorted(os.listdir(out)) == [
        "checkpoints",
        "config.yaml",
        "metrics.jsonl",
        "run.json",
        "summary.json",
    ]
    assert sorted(os.listdir(out / "checkpoints")) == [
        "best.eqx",
        "last.eqx",
        "manifest.json",
        *(f"state-{e:06d}.eqx" for e in range(3)),
    ]
    assert [str(p.relative_to(tmp_path)) for p in tmp_path.rglob("metrics.jsonl")] == [
        "run/metrics.jsonl"
    ]
    assert [os.listdir(d) for d in cwds] == [[], []]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["epochs_run"] == 3 and summary["best_validation_loss"] == pytest.approx(two[-1])
    run = load_run(str(out))
    model, config = run.model, run.config
    reference = load_run(str(folder / "run1")).model
    assert config.data.train == [str(tmp_path / "p.csv")]
    for a, b in zip(
        jax.tree_util.tree_leaves(eqx.filter(model, eqx.is_array)),
        jax.tree_util.tree_leaves(eqx.filter(reference, eqx.is_array)),
        strict=True,
    ):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-6)

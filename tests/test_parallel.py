"""Data-parallel training over a device mesh: 4 (forced host) devices give one device's loss curve."""

import json
import os
import subprocess
import sys

import numpy as np

SCRIPT = """
import json, os, sys
sys.path.insert(0, {tests!r})
import jax
from test_reliability import config_dict, write_pendulum
from lagnet.config import validate
from lagnet.train import train
cfg = validate(config_dict(write_pendulum({data!r}), epochs=3, batch_size=16))
cfg["devices"] = {devices}
r = train(cfg, {run!r}, progress=False)
leaf = r.model.network.layers[0].weight
print(json.dumps({{"devices": len(leaf.sharding.device_set), "available": jax.device_count()}}))
"""


def run(tmp_path, devices):
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4")
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
    losses = [
        json.loads(x)["validation_loss"]
        for x in (tmp_path / f"run{devices}" / "metrics.jsonl").open()
    ]
    return info, np.array(losses)


def test_four_devices_match_one(tmp_path):
    one_info, one = run(tmp_path, 1)
    four_info, four = run(tmp_path, 4)
    assert one_info == {"devices": 1, "available": 4}
    assert four_info == {"devices": 4, "available": 4}
    assert len(one) == len(four) == 4
    np.testing.assert_allclose(four, one, rtol=1e-4)
    assert four[-1] < four[0]

"""`lagnet.control.learn_to_control`: the loop's bookkeeping, on the known model (nothing to train)."""

import json

import numpy as np
from helpers import CARTPOLE_MAPPING

from lagnet.config.schema import validate
from lagnet.learning import learn_to_control

KNOWN = {
    "name": "cartpole_known",
    "system": {"name": "cartpole"},
    "model": {"type": "known"},
    "integrator": {"name": "rk4"},
    "data": {
        "train": "unused.npz",
        "test": "unused.npz",
        "mapping": dict(CARTPOLE_MAPPING),
    },
    "training": {"epochs": 0},
}


def test_episodes_that_fail_are_recorded_and_learned_from(tmp_path):
    # A hold as long as the episode cannot succeed (the swing-up itself takes a second): every episode fails,
    # is recorded, and the next round trains on it.
    result = learn_to_control(
        validate(KNOWN),
        tmp_path,
        excitation_seconds=1.0,
        episode_seconds=1.0,
        hold=1.0,
        max_episodes=2,
    )
    assert not result.success
    assert [e.kind for e in result.episodes] == ["excitation", "mpc", "mpc"]
    assert result.seconds == 3.0
    assert [e.interaction for e in result.episodes] == [1.0, 2.0, 3.0]
    for k, e in enumerate(result.episodes):
        with np.load(e.recording) as f:
            cols, meta = {k: f[k] for k in f.files if k != "meta"}, json.loads(str(f["meta"]))
        assert len(cols["t"]) == int(round(e.seconds / 0.02)) - (1 if k else 0)
        assert np.all(np.isfinite(cols["x"]))
        assert meta["mapping"]["positions"] == ["x", "phi"]
    # The excitation moved the rig; the episodes started hanging and swung.
    assert np.ptp(result.episodes[0].xs[:, 0]) > 0.01
    assert np.max(np.abs(result.episodes[1].xs[:, 3])) > 1.0

"""A resume with a raised budget rebuilds the learning-rate schedule for the new total, and metrics.jsonl records
each epoch's learning rate and optimiser step count (continuous across the resume)."""

import json

import equinox as eqx
import jax
import numpy as np
import optax
from helpers import PENDULUM_MAPPING, write_pendulum_csv

from lagnet.config import validate
from lagnet.run import load_run
from lagnet.run.training import train_run

LR = 0.01


def config(data, epochs):
    return validate(
        {
            "name": "schedule",
            "seed": 1,
            "system": {"name": "pendulum"},
            "model": {"type": "pinode", "width": 8, "zero_init": False},
            "data": {"train": [data], "mapping": dict(PENDULUM_MAPPING)},
            "training": {
                "epochs": epochs,
                "batch_size": 16,
                "horizon": 2,
                "patience": 1000,
                "learning_rate": LR,
                "schedule": "cosine",
            },
        }
    )


def metrics(run):
    lines = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    # Every entry, the untrained model's (epoch -1) too, records the step count and the rate.
    assert lines[0]["epoch"] == -1 and (lines[0]["optimizer_steps"], lines[0]["learning_rate"]) == (
        0,
        LR,
    )
    return [x for x in lines if x["epoch"] >= 0]


def test_resume_with_more_epochs_follows_the_schedule_of_the_new_total(tmp_path):
    data = str(write_pendulum_csv(tmp_path / "p.csv", steps=200, hold=20, scale=1.0, substeps=1))
    n = 2
    run = tmp_path / "run"
    train_run(config(data, n), str(run), progress=False)
    first = metrics(run)
    per_epoch = first[0]["optimizer_steps"]
    assert per_epoch > 0 and [r["optimizer_steps"] for r in first] == [per_epoch, 2 * per_epoch]
    # The first run's cosine ends at 0 after its n epochs.
    assert first[-1]["learning_rate"] == 0.0
    before = np.concatenate([np.ravel(x) for x in _leaves(load_run(str(run), "last").model)])

    train_run(config(data, 2 * n), str(run), progress=False, resume=True)
    after = metrics(run)
    assert [r["epoch"] for r in after] == list(range(2 * n))
    # The step counter continues across the resume: one epoch's steps per entry.
    assert [r["optimizer_steps"] for r in after] == [per_epoch * (k + 1) for k in range(2 * n)]
    new = optax.cosine_decay_schedule(LR, 2 * n * per_epoch)
    for r in after[n:]:
        assert np.isclose(r["learning_rate"], float(new(r["optimizer_steps"])), rtol=1e-6)
    assert after[n]["learning_rate"] > 0.1 * LR
    # Had the old schedule (0 after n epochs) been kept, Adam's steps would not have moved the parameters.
    resumed = np.concatenate([np.ravel(x) for x in _leaves(load_run(str(run), "last").model)])
    assert np.max(np.abs(resumed - before)) > 1e-6


def _leaves(model):
    params, _ = eqx.partition(model, model.trainable())
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(params)]

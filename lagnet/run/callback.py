"""The callback through which `lagnet.fit` writes a run folder: metrics.jsonl, the checkpoints, config.yaml and
the run's spec."""

import json
import os
import time

import equinox as eqx

from ..train.fit import Callback
from .files import atomic_write, remove_orphans, save_yaml, tree_bytes, write_bytes
from .folder import SYSTEM_DIR, keep_system_source, read_metrics, remove_entries, saved_config
from .load import CONFIG_FILE


class RunFiles(Callback):
    """Writes what `fit` reports into the run directory (process 0 only, see `lagnet.parallel`).

    Nothing is written before `open`, which `train_run` calls once the config, data, model and windows have
    all been built: a run that fails validation leaves the directory as it was.
    """

    def __init__(
        self, run_dir, checkpoints, config, spec, model, start_time, remove=(), schedule=None
    ):
        self.run_dir, self.checkpoints, self.config, self.spec = run_dir, checkpoints, config, spec
        self.start_time, self.remove = start_time, list(remove)
        self.static = eqx.partition(model, model.trainable())[1]
        self.ckpt = checkpoints.folder
        self.metrics = os.path.join(run_dir, "metrics.jsonl")
        # The learning rate after n optimiser steps (`make_schedule`), recorded with each epoch; None: not recorded.
        self.schedule = schedule

    def open(self, restored):
        """Replace the old run (`--overwrite`), write the config and spec, and on resume bring metrics.jsonl,
        best.eqx and last.eqx to the restored state (a kill may have left them behind it)."""
        remove_entries(self.run_dir, self.remove)
        os.makedirs(self.ckpt, exist_ok=True)
        for folder in (self.run_dir, self.ckpt, os.path.join(self.run_dir, SYSTEM_DIR)):
            remove_orphans(folder)
        config = keep_system_source(self.config, self.run_dir)
        save_yaml(os.path.join(self.run_dir, CONFIG_FILE), saved_config(config))
        self.spec.save(self.run_dir)
        if restored is not None:
            # The old summary describes the end of a run that continues now (and is rewritten at its end).
            remove_entries(self.run_dir, ["summary.json"])
            kept = read_metrics(self.metrics, int(restored.epoch))
            atomic_write(self.metrics, lambda f: f.write("".join(kept).encode()))
            self.commit(restored)
        return self

    def commit(self, state):
        """The training state, then the manifest, then last.eqx and best.eqx (see `Checkpoints.save`)."""
        last = eqx.combine(state.params, self.static)
        best = eqx.combine(state.best_params, self.static)
        # A state a budget stopped within an epoch is that epoch's (it resumes it); it is replaced when the
        # epoch ends.
        epoch = int(state.epoch) + (1 if int(state.step) > 0 else 0)
        models = {
            "last.eqx": (tree_bytes(last), epoch),
            "best.eqx": (tree_bytes(best), int(state.best_epoch)),
        }
        self.checkpoints.save(state, epoch, models)

    def start(self, initial_loss, state, model):
        line = {"epoch": -1, "validation_loss": initial_loss, "optimizer_steps": 0}
        if self.schedule is not None:
            line["learning_rate"] = float(self.schedule(0))
        with open(self.metrics, "w") as f:
            f.write(json.dumps(line) + "\n")
        write_bytes(os.path.join(self.ckpt, "best.eqx"), tree_bytes(model))

    def record(self, record):
        line = {**record, "seconds": time.perf_counter() - self.start_time}
        if self.schedule is not None and "optimizer_steps" in record:
            # The rate of the next step, from the schedule of this run's budget (rebuilt when a resume raises it).
            line["learning_rate"] = float(self.schedule(record["optimizer_steps"]))
        with open(self.metrics, "a") as f:
            f.write(json.dumps(line) + "\n")

    def epoch_end(self, state, improved, model):
        self.commit(state)

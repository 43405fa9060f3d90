"""The recordings a run trains and validates on, as its config names them."""

import numpy as np

from ..config import Config, ConfigError
from ..data.windows import split_by_file, split_by_time
from .recordings import check_enough_samples, load_recordings


def load_training_data(config: Config, system):
    """The training recordings (truncated to `data.max_duration`) and the validation recordings: `data.validation`'s
    files when given, else the last `validation_fraction` of each training recording (or whole episodes)."""
    dc = config.data
    if not dc.train:
        raise ConfigError("data.train must name at least one file")
    trajs = load_recordings(config, system, dc.train)
    if dc.max_duration is not None:
        kept, left = [], dc.max_duration
        for traj in trajs:
            if left <= 0:
                break
            rows = int(np.searchsorted(traj.t - traj.t[0], left, side="right"))
            kept.append(traj.slice(0, rows) if rows < traj.n_rows else traj)
            left -= kept[-1].duration
        trajs = kept
    if dc.validation:
        # Whole held-out recordings: the validation loss then measures other runs, as a test set does.
        validation = load_recordings(config, system, dc.validation)
        check_enough_samples(config, trajs, trajs, validation)
        return trajs, validation
    v = dc.validation_fraction
    if v > 0 and len(trajs) >= 3:
        # Several recordings (runs, episodes): hold out whole ones, so validation measures runs the model was
        # not fitted on, as a test set does (a tail of each run may be a regime of its own).
        splits = split_by_file(trajs, {"train": 1 - v, "validation": v}, seed=config.seed)
    elif v > 0:
        splits = split_by_time(
            trajs, {"train": 1 - v, "validation": v}, blocks=dc.validation_blocks, seed=config.seed
        )
    else:
        splits = {"train": trajs, "validation": []}
    check_enough_samples(config, trajs, splits["train"], splits["validation"])
    return splits["train"], splits["validation"]

"""Closed loops over training seeds (`lagnet evaluate RUN --control --seeds`): the run's config trained with each
seed beside the run, and each seed's model judged on the rig as the run is.

It trains, so it sits above `lagnet.control` and `lagnet.evaluate`, beside `lagnet.cross_validation`.
"""

import os
from typing import Any

from .control import cartpole_evaluation
from .control.load import load
from .control.task_evaluation import write_control
from .run.folder import SEEDS_DIR
from .run.load import CONFIG_FILE, read_config
from .run.training import train_run


def seed_run(run_dir: str, seed: int, *, progress: bool = False) -> str:
    """The run folder of `run_dir`'s config trained with `seed`: `run_dir` itself for its own seed, otherwise
    RUN_DIR/seeds/seed-K, trained now (resumed if a training there was interrupted; a finished one is reused)."""
    config = read_config(run_dir)
    if seed == config.seed:
        return run_dir
    folder = os.path.join(run_dir, SEEDS_DIR, f"seed-{seed}")
    if not os.path.exists(os.path.join(folder, "summary.json")):
        resume = os.path.exists(os.path.join(folder, CONFIG_FILE))
        train_run(
            config.replace(seed=seed),
            folder,
            progress=progress,
            resume=resume,
            overwrite=not resume,
        )
    return folder


def evaluate_run_control_seeds(
    run_dir: str, seeds: list[int], out: str | None = None, *, progress: bool = False, **kwargs
) -> dict[str, Any]:
    """`cartpole_evaluation.evaluate_run_control` over training seeds (`lagnet evaluate RUN --control --seeds K ...`).

    Each seed's run (`seed_run`) is evaluated on the rig as the run is (`evaluate_control(..., **kwargs)`; the
    run's own results in OUT/metrics.json are reused for its seed, and made first if missing). Its "control"
    gains "seeds" {K: results} and "over_seeds" (`over_seeds`), and OUT/report.md a table; returns "control".
    """
    control = cartpole_evaluation.read_control(
        run_dir, out
    ) or cartpole_evaluation.evaluate_run_control(run_dir, out, **kwargs)
    own = {k: v for k, v in control.items() if k not in ("seeds", "over_seeds")}
    per_seed = {}
    for seed in seeds:
        folder = seed_run(run_dir, seed, progress=progress)
        per_seed[str(seed)] = (
            own
            if folder == run_dir
            else cartpole_evaluation.evaluate_control(load(folder), **kwargs)
        )
    control = {**own, "seeds": per_seed, "over_seeds": cartpole_evaluation.over_seeds(per_seed)}
    write_control(run_dir, out, control, cartpole_evaluation.seeds_section(control))
    return control

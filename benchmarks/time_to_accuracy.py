"""Time to accuracy: wall time of `lagnet train` on the cart-pole config until its validation loss is within 5 % of
the run's final best, split into load / compile / train; and the compile time of a 3-stage curriculum against one
stage.

Each run is a fresh `lagnet train` process with the compilation cache off (a cold start, as a user's first run):

- the config as shipped (configs/cartpole_pinode.yaml): time to accuracy = the process's start-up (imports) + the
  `seconds` of the first epoch in metrics.jsonl whose validation loss is ≤ 1.05 × the best; its parts are the
  start-up and loading (`seconds_load` in summary.json), compiling (`seconds_compile`) and the epochs up to it;
- the measured DFKI double pendulum's PINODE config (configs/dfki_double_pendulum_pinode.yaml), timed the same way;
- the same cart-pole config for 3 epochs at horizon 10 (one stage), and for 3 epochs with a curriculum
  5 → 10 → 20 (three stages): their `seconds_compile` and the ratio, which is ≤ 1.5 when the stages share
  one compiled program.

    .venv/bin/python benchmarks/time_to_accuracy.py [--config configs/cartpole_pinode.yaml]
        [--real-config configs/dfki_double_pendulum_pinode.yaml] [--json out]
"""

import json
import os
import subprocess
import sys
import tempfile
import time

from _common import load, parser, write

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WITHIN = 0.05


def lagnet_train(config: str, out: str, *settings: str) -> tuple[float, dict, list[dict]]:
    """Run `lagnet train` in a fresh process; its wall time, summary.json and metrics.jsonl (epochs ≥ 0)."""
    cmd = [sys.executable, "-m", "lagnet.cli", "train", config, "--out", out, "--quiet"]
    for s in settings:
        cmd += ["--set", s]
    env = {**os.environ, "LAGNET_COMPILATION_CACHE": "off"}
    t = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    with open(os.path.join(out, "metrics.jsonl")) as f:
        epochs = [r for r in map(json.loads, f) if r["epoch"] >= 0]
    return wall, summary, epochs


def time_to_accuracy(config: str, out: str, *settings: str) -> dict:
    """One cold `lagnet train` of `config`: the time to a validation loss within `WITHIN` of its best, in parts."""
    wall, summary, epochs = lagnet_train(config, out, *settings)
    best = min(r["validation_loss"] for r in epochs)
    reached = next(r for r in epochs if r["validation_loss"] <= (1 + WITHIN) * best)
    # The process's life outside `train_run`: interpreter and imports before it, printing after it.
    startup = wall - summary["seconds"]
    return {
        "config": os.path.relpath(config, ROOT),
        "best_validation_loss": best,
        "epoch_reached": reached["epoch"],
        "validation_loss_reached": reached["validation_loss"],
        "time_to_accuracy_s": startup + reached["seconds"],
        "startup_s": startup,
        "load_s": summary["seconds_load"],
        "compile_s": summary["seconds_compile"],
        "train_to_accuracy_s": reached["seconds"]
        - summary["seconds_load"]
        - summary["seconds_compile"],
        "epochs_run": summary["epochs_run"],
        "total_s": wall,
    }


def main():
    p = parser(__doc__)
    p.add_argument("--config", default=os.path.join(ROOT, "configs", "cartpole_pinode.yaml"))
    p.add_argument(
        "--real-config",
        default=os.path.join(ROOT, "configs", "dfki_double_pendulum_pinode.yaml"),
        help="the measured-data config timed beside it ('' to skip)",
    )
    args = p.parse_args()
    load_before = load()
    with tempfile.TemporaryDirectory() as tmp:
        extra = ["training.epochs=3"] if args.quick else []
        main_run = time_to_accuracy(args.config, os.path.join(tmp, "full"), *extra)
        real = (
            time_to_accuracy(args.real_config, os.path.join(tmp, "real"), *extra)
            if args.real_config
            else None
        )
        short = ["training.epochs=3", "training.patience=100"]
        _, one, _ = lagnet_train(args.config, os.path.join(tmp, "one"), *short)
        _, three, _ = lagnet_train(
            args.config,
            os.path.join(tmp, "three"),
            *short,
            "training.horizon=5",
            "training.curriculum=[[1, 10], [2, 20]]",
        )
    write(
        args.json,
        "time_to_accuracy",
        {
            **main_run,
            "within": WITHIN,
            "real": real,
            "one_stage_compile_s": one["seconds_compile"],
            "three_stage_compile_s": three["seconds_compile"],
            "compile_ratio": three["seconds_compile"] / one["seconds_compile"],
            "load_before": load_before,
            "load_after": load(),
        },
    )


if __name__ == "__main__":
    main()

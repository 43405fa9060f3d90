"""Time to accuracy: wall time of `lagnet train` on the cart-pole config until its validation loss is within 5 % of
the run's final best, split into load / compile / train; and the compile time of a 3-stage curriculum against one
stage.

Each run is a fresh `lagnet train` process with the compilation cache off (a cold start, as a user's first run):

- the config as shipped (configs/cartpole_pinode.yaml): time to accuracy = the process's start-up (imports) + the
  `seconds` of the first epoch in metrics.jsonl whose validation loss is ≤ 1.05 × the best; its parts are the
  start-up and loading (`seconds_load` in summary.json), compiling (`seconds_compile`) and the epochs up to it;
- the measured DFKI double pendulum's PINODE config (configs/dfki_double_pendulum_pinode.yaml), timed the same way;
- the same cart-pole config for 3 epochs at horizon 10 (one stage), and for 3 epochs with a curriculum
  5 → 10 → 20 (three stages), `--pairs` times interleaved (2): their `seconds_compile` and the ratio of the
  medians, which is ≤ 1.5 when the stages share one compiled program.

Compile times on a shared 2-core machine vary by ±25 % from one run to the next, so the cart-pole's cold compile
(`run_compile_s` in RESULTS.md) is the median over every cold run of its one-stage program: the full run and the
one-stage runs, each listed.

    .venv/bin/python benchmarks/time_to_accuracy.py [--config configs/cartpole_pinode.yaml]
        [--real-config configs/dfki_double_pendulum_pinode.yaml] [--pairs 2] [--json out]
"""

import json
import os
import statistics
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
    p.add_argument(
        "--pairs", type=int, default=2, help="interleaved one-stage / three-stage cold runs (≥ 1)"
    )
    args = p.parse_args()
    if args.pairs < 1:
        p.error(f"--pairs must be ≥ 1, got {args.pairs}")
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
        one, three = [], []
        for i in range(args.pairs):
            _, summary, _ = lagnet_train(args.config, os.path.join(tmp, f"one{i}"), *short)
            one.append(summary["seconds_compile"])
            _, summary, _ = lagnet_train(
                args.config,
                os.path.join(tmp, f"three{i}"),
                *short,
                "training.horizon=5",
                "training.curriculum=[[1, 10], [2, 20]]",
            )
            three.append(summary["seconds_compile"])
    # The full run and the one-stage runs compile the same program (they differ in constants only).
    cold = [main_run["compile_s"], *one]
    write(
        args.json,
        "time_to_accuracy",
        {
            **main_run,
            "within": WITHIN,
            "real": real,
            "cold_compile_runs_s": cold,
            "cold_compile_median_s": statistics.median(cold),
            "one_stage_compile_runs_s": one,
            "three_stage_compile_runs_s": three,
            "one_stage_compile_s": statistics.median(one),
            "three_stage_compile_s": statistics.median(three),
            "compile_ratio": statistics.median(three) / statistics.median(one),
            "load_before": load_before,
            "load_after": load(),
        },
    )


if __name__ == "__main__":
    main()

"""Wall time of the paper's cart-pole config (configs/cartpole_pinode.yaml) to its target accuracy.

Trains the config as shipped (`lagnet.run.training.train_run`) into a temporary run directory, then evaluates it
(`lagnet.evaluate.run.evaluate_run`, 30-step windows of the test data). The target is to beat the pure ODE
model's mean window errors (x, φ, ẋ, φ̇) = (0.033 m, 0.100 rad, 0.158 m/s, 0.569 rad/s) by 2× on every state.
Reported: the training wall time (including compilation), the first epoch (mostly compilation), the errors, and
whether each meets the target.

    .venv/bin/python benchmarks/train_config.py [--config configs/cartpole_pinode.yaml] [--epochs N] [--json out]
"""

import json
import os
import tempfile
import time

from _common import load, parser, write

PURE_ODE = {"x": 0.033, "phi": 0.100, "x_dot": 0.158, "phi_dot": 0.569}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    p = parser(__doc__)
    p.add_argument("--config", default=os.path.join(ROOT, "configs", "cartpole_pinode.yaml"))
    p.add_argument("--epochs", type=int, default=None, help="override training.epochs")
    args = p.parse_args()
    from lagnet import config as lagnet_config
    from lagnet.evaluate.run import evaluate_run
    from lagnet.run.training import train_run as train

    config = lagnet_config.load_config(args.config)
    if args.quick and args.epochs is None:
        args.epochs = 3
    if args.epochs is not None:
        config = config.replace(training={"epochs": args.epochs})
    load_before = load()
    with tempfile.TemporaryDirectory() as run_dir:
        t = time.perf_counter()
        result = train(config, run_dir, progress=False)
        train_s = time.perf_counter() - t
        with open(os.path.join(run_dir, "metrics.jsonl")) as f:
            epochs = [json.loads(line) for line in f if json.loads(line)["epoch"] >= 0]
        t = time.perf_counter()
        metrics = evaluate_run(run_dir, plots=False, progress=False)
        eval_s = time.perf_counter() - t
    errors = {k: v["mean"] for k, v in metrics["errors"]["model"].items()}
    target = {k: v / 2 for k, v in PURE_ODE.items()}
    met = {k: errors[k] <= target[k] for k in target}
    first = epochs[0]["seconds"] if epochs else None
    later = [b["seconds"] - a["seconds"] for a, b in zip(epochs[:-1], epochs[1:], strict=True)]
    write(
        args.json,
        "train_config",
        {
            "config": os.path.relpath(args.config, ROOT),
            "epochs_run": result.epochs,
            "train_seconds": train_s,
            "first_epoch_seconds": first,
            "median_epoch_seconds": sorted(later)[len(later) // 2] if later else None,
            "evaluate_seconds": eval_s,
            "errors": errors,
            "target": target,
            "met": met,
            "all_met": all(met.values()),
            "load_before": load_before,
            "load_after": load(),
        },
    )


if __name__ == "__main__":
    main()

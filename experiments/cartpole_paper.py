"""The PINODE paper's result on the shipped cart-pole rig, and its data-efficiency argument.

1. PINODE (10-step and one-step loss), the pure ODE model (least-squares friction, eq. 13) and a black-box
   neural ODE of the same size, trained on the 8 min recording and evaluated on 1000 test windows of 30 steps
   (0.6 s), beside the known model alone and "hold the initial state" (the paper's Figure 4, as a table).
2. The same comparison with 30 s, 1, 2, 4 and 8 min of training data: one table and one figure.

    python experiments/cartpole_paper.py [--quick] [--sizes 30 60 120 240 480]

Writes experiments/out/cartpole_paper.{md,json,png}; the runs go to runs/cartpole_paper/.
"""

import argparse
import json
import math
import os
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

from lagnet.config import load_config  # noqa: E402
from lagnet.evaluate.run import evaluate_run  # noqa: E402
from lagnet.run.training import train_run as train  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CONFIGS = {
    "PINODE": ("cartpole_pinode.yaml", []),
    "PINODE, one-step loss": ("cartpole_pinode.yaml", ["training.horizon=1"]),
    "pure ODE": ("cartpole_pure_ode.yaml", []),
    "black box": ("cartpole_blackbox.yaml", []),
}
STATE = ("x", "phi", "x_dot", "phi_dot")
UNITS = {"x": "m", "phi": "rad", "x_dot": "m/s", "phi_dot": "rad/s"}


def budget(seconds: float, batch: int = 128, steps: int = 6000) -> list[str]:
    """Epochs for about `steps` gradient steps whatever the data size (small sets get more passes)."""
    windows = 0.85 * 50 * seconds
    per_epoch = max(windows // batch, 1)
    epochs = int(min(max(math.ceil(steps / per_epoch), 40), 600))
    return [f"training.epochs={epochs}", f"training.patience={max(8, epochs // 5)}"]


def run_one(label, seconds, out_root, extra=()):
    file, overrides = CONFIGS[label]
    sets = list(overrides) + list(extra)
    if seconds is not None:
        sets.append(f"data.max_duration={seconds}")
        if label != "pure ODE":
            sets += budget(seconds)
    config = load_config(os.path.join(ROOT, "configs", file), sets)
    tag = label.replace(" ", "_").replace(",", "").replace("-", "_")
    run_dir = os.path.join(out_root, f"{tag}_{int(seconds or 480)}s")
    t0 = time.perf_counter()
    result = train(config, run_dir, progress=False, overwrite=True)
    metrics = evaluate_run(run_dir, plots=seconds is None, progress=False)
    return {
        "label": label,
        "seconds_of_data": seconds or 480,
        "train_seconds": time.perf_counter() - t0,
        "epochs": result.epochs,
        "errors": metrics["errors"],
        "baseline": metrics["baseline"],
        "run_dir": run_dir,
    }


def table(rows, with_baselines: bool):
    head = "| model | " + " | ".join(STATE) + " |\n|---|" + "---|" * len(STATE) + "\n"
    lines = []
    for r in rows:
        e = r["errors"]["model"]
        lines.append(
            f"| {r['label']} | "
            + " | ".join(f"{e[s]['mean']:.4f} ± {e[s]['std']:.3f}" for s in STATE)
            + " |"
        )
    if with_baselines:
        # The first row's baselines: its physics prior (the evaluation's name for it) and holding the state.
        for base in (rows[0]["baseline"], "hold initial state"):
            e = rows[0]["errors"][base]
            name = f"{rows[0]['label']}'s {base}" if base != "hold initial state" else base
            lines.append(
                f"| {name} | "
                + " | ".join(f"{e[s]['mean']:.4f} ± {e[s]['std']:.3f}" for s in STATE)
                + " |"
            )
    return head + "\n".join(lines)


def plot_efficiency(efficiency, path):
    """Mean window error versus minutes of training data, one panel per state variable."""
    fig, axs = plt.subplots(1, 4, figsize=(12, 3))
    for ax, s in zip(axs, STATE, strict=True):
        for label, style in (("PINODE", "o-"), ("pure ODE", "s--"), ("black box", "^:")):
            pts = [
                (r["seconds_of_data"], r["errors"]["model"][s]["mean"])
                for r in efficiency
                if r["label"] == label
            ]
            ax.plot([p[0] / 60 for p in pts], [p[1] for p in pts], style, label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        minutes = sorted({r["seconds_of_data"] / 60 for r in efficiency})
        ax.set_xticks(minutes, [f"{m:g}" for m in minutes])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_xlabel("training data [min]")
        ax.set_ylabel(f"mean |error| {s} [{UNITS[s]}]")
    axs[0].legend(fontsize=7)
    fig.suptitle("PINODE vs pure ODE vs black box: 30-step (0.6 s) test windows", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", type=float, nargs="+", default=[30, 60, 120, 240, 480])
    ap.add_argument(
        "--quick", action="store_true", help="3 epochs per model, sizes 60 and 480 s (smoke test)"
    )
    ap.add_argument("--runs", default=os.path.join(ROOT, "runs", "cartpole_paper"))
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument(
        "--replot", action="store_true", help="only redraw the figure from the saved JSON"
    )
    args = ap.parse_args()
    if args.replot:
        with open(os.path.join(args.out, "cartpole_paper.json")) as f:
            plot_efficiency(
                json.load(f)["efficiency"], os.path.join(args.out, "cartpole_paper.png")
            )
        return
    os.makedirs(args.out, exist_ok=True)
    extra = ["training.epochs=3"] if args.quick else []
    sizes = [60, 480] if args.quick else args.sizes

    full = [run_one(label, None, args.runs, extra) for label in CONFIGS]
    for r in full:
        print(f"{r['label']:>24}: {r['train_seconds']:6.1f} s, {r['epochs']} epochs")
    print(table(full, True))

    efficiency = []
    for seconds in sizes:
        for label in ("PINODE", "pure ODE", "black box"):
            r = (
                full[list(CONFIGS).index(label)]
                if seconds == 480
                else run_one(label, seconds, args.runs, extra)
            )
            efficiency.append(r)
            m = r["errors"]["model"]
            print(
                f"{seconds:5.0f} s {label:>10}: "
                + "  ".join(f"{s}={m[s]['mean']:.4f}" for s in STATE)
            )

    lines = [
        "# Cart-pole: PINODE vs pure ODE vs black box",
        "",
        "Mean ± std over 1000 test windows of 30 steps (0.6 s) of the per-window mean absolute error "
        "(φ compared as an angle), trained on the 8 min recording `data/sim/cartpole_train.npz`, tested on "
        "`data/sim/cartpole_test.npz`. Command: `python experiments/cartpole_paper.py`.",
        "",
        table(full, True),
        "",
        "Training time on this machine: "
        + ", ".join(f"{r['label']} {r['train_seconds']:.0f} s ({r['epochs']} epochs)" for r in full)
        + ".",
        "",
        "## Data efficiency",
        "",
        "| data | model | " + " | ".join(STATE) + " |\n|---|---|" + "---|" * len(STATE),
    ]
    for r in efficiency:
        m = r["errors"]["model"]
        lines.append(
            f"| {r['seconds_of_data']:.0f} s | {r['label']} | "
            + " | ".join(f"{m[s]['mean']:.4f}" for s in STATE)
            + " |"
        )
    lines += ["", "![error versus data](cartpole_paper.png)", ""]
    with open(os.path.join(args.out, "cartpole_paper.md"), "w") as f:
        f.write("\n".join(lines))
    with open(os.path.join(args.out, "cartpole_paper.json"), "w") as f:
        json.dump({"full": full, "efficiency": efficiency}, f, indent=1)

    plot_efficiency(efficiency, os.path.join(args.out, "cartpole_paper.png"))
    print(f"wrote {os.path.join(args.out, 'cartpole_paper.md')}")


if __name__ == "__main__":
    main()

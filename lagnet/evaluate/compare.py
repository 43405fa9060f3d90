"""`lagnet compare RUN_DIR ...`: several evaluated runs side by side, one table and one figure."""

import json
import os

import numpy as np


def load_metrics(run_dir: str, evaluate_missing: bool = True) -> dict:
    path = os.path.join(run_dir, "evaluation", "metrics.json")
    if not os.path.exists(path):
        if not evaluate_missing:
            raise FileNotFoundError(
                f"{run_dir}: not evaluated yet (run `lagnet evaluate {run_dir}`)"
            )
        from .run import evaluate_run

        return evaluate_run(run_dir, plots=False, progress=False)
    with open(path) as f:
        return json.load(f)


def compare_runs(
    run_dirs, out_dir: str | None = None, *, baselines: bool = True
) -> tuple[str, dict]:
    """A Markdown table (mean ± std of the window errors per state variable, one row per run, plus the known-
    physics and hold-state baselines of the first run) and, with `out_dir`, comparison.png and comparison.md."""
    rows = {}
    for run in run_dirs:
        m = load_metrics(run)
        label = f"{os.path.basename(os.path.normpath(run))} ({m['model_type']}, {m['integrator']})"
        rows[label] = m["errors"]["model"]
    first = load_metrics(run_dirs[0])
    if baselines:
        for k in ("known physics", "hold initial state"):
            rows[k] = first["errors"][k]
    names = list(next(iter(rows.values())))
    head = "| run | " + " | ".join(names) + " |\n|---|" + "---|" * len(names) + "\n"
    body = "\n".join(
        f"| {label} | "
        + " | ".join(f"{s[n]['mean']:.4g} ± {s[n]['std']:.2g}" for n in names)
        + " |"
        for label, s in rows.items()
    )
    table = head + body
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from .plots import unit

        fig, axs = plt.subplots(1, len(names), figsize=(3.0 * len(names), 3.2))
        for ax, name in zip(np.atleast_1d(axs), names, strict=True):
            means = [s[name]["mean"] for s in rows.values()]
            stds = [s[name]["std"] for s in rows.values()]
            ax.bar(
                range(len(rows)),
                means,
                yerr=stds,
                color=[f"C{i}" for i in range(len(rows))],
                capsize=3,
            )
            ax.set_xticks(range(len(rows)))
            ax.set_xticklabels(
                [k.split(" (")[0] for k in rows], rotation=35, ha="right", fontsize=7
            )
            ax.set_ylabel(f"mean |error| {name} [{unit(name)}]")
        fig.suptitle(f"{first['windows']} windows × {first['horizon']} steps", fontsize=9)
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, "comparison.png"), dpi=110)
        plt.close(fig)
        with open(os.path.join(out_dir, "comparison.md"), "w") as f:
            f.write(f"# Comparison\n\n{table}\n\n![comparison](comparison.png)\n")
    return table, rows

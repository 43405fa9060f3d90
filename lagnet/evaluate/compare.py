"""`lagnet compare RUN_DIR ...`: several evaluated runs side by side, tables and one figure."""

import os

import numpy as np

from ..config.bounded import read_json
from .report import METRICS


def load_metrics(run_dir: str, evaluate_missing: bool = True) -> dict:
    """RUN_DIR/evaluation/metrics.json (evaluating the run first if it has none and `evaluate_missing`).

    Refuses metrics of another checkpoint than the run's current best.eqx (the run was trained further since).
    """
    path = os.path.join(run_dir, "evaluation", "metrics.json")
    if not os.path.exists(path):
        if not evaluate_missing:
            raise FileNotFoundError(
                f"{run_dir}: not evaluated yet (run `lagnet evaluate {run_dir}`)"
            )
        from .run import evaluate_run

        return evaluate_run(run_dir, plots=False, progress=False)
    try:
        metrics = read_json(path, "an evaluation's metrics")
        metrics["errors"]["model"]
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(
            f"{path}: not an evaluation's metrics ({type(e).__name__}: {e}); "
            f"evaluate the run again with `lagnet evaluate {run_dir}`"
        ) from None
    from .run import stale_evaluation

    stale = stale_evaluation(run_dir, metrics)
    if stale:
        raise ValueError(stale)
    return metrics


def run_labels(run_dirs) -> list[str]:
    """Each run's folder name, or its whole path where two runs share a folder name."""
    paths = [os.path.normpath(r) for r in run_dirs]
    if len(set(paths)) != len(paths):
        raise ValueError(
            f"a run is given twice: {sorted(p for p in paths if paths.count(p) > 1)[0]}"
        )
    names = [os.path.basename(p) for p in paths]
    return [n if names.count(n) == 1 else p for n, p in zip(names, paths, strict=True)]


def compare_runs(
    run_dirs, out_dir: str | None = None, *, baselines: bool = True
) -> tuple[str, dict]:
    """Tables of the window errors (mean ± std over windows, per state variable with its unit; one table for the
    error averaged over each window and one for the error at its horizon), a row per run plus the physics
    (the first run's prior, or the known physics) and hold-state baselines of each system's first run; with
    `out_dir`, comparison.md and comparison.png.

    Runs are keyed by their path (two `base` folders stay apart); runs of different systems share the columns
    they have in common and leave the others empty.
    """
    if out_dir:
        from .run import check_writable

        check_writable(out_dir, "the comparison")
        os.makedirs(out_dir, exist_ok=True)
    rows, units, horizons, seen_systems = {}, {}, {}, set()
    for run, label in zip(run_dirs, run_labels(run_dirs), strict=True):
        m = load_metrics(run)
        units |= m.get("units", {})
        horizon = m["horizon"] if isinstance(m["horizon"], str) else f"{m['horizon']} steps"
        key = f"{label} ({m['model_type']}, {m['integrator']})"
        rows[key] = m["errors"]["model"]
        horizons[key] = horizon
        system = m.get("system", "?")
        if baselines and system not in seen_systems:
            seen_systems.add(system)
            for k in (m.get("baseline", "known physics"), "hold initial state"):
                if k not in m["errors"]:
                    continue
                base = f"{k} ({system})" if len(run_dirs) > 1 else k
                rows[base], horizons[base] = m["errors"][k], horizon
    names = list(dict.fromkeys(n for r in rows.values() for n in r))
    cols = [f"{n} [{units[n]}]" if n in units else n for n in names]
    tables = []
    for prefix, metric in METRICS:
        head = (
            f"| run ({metric}) | horizon | "
            + " | ".join(cols)
            + " |\n|---|---|"
            + "---|" * len(names)
        )
        body = [
            f"| {label} | {horizons[label]} | "
            + " | ".join(
                f"{s[n][prefix + 'mean']:.4g} ± {s[n][prefix + 'std']:.2g}"
                if n in s and prefix + "mean" in s[n]
                else "—"
                for n in names
            )
            + " |"
            for label, s in rows.items()
        ]
        tables.append(head + "\n" + "\n".join(body))
    table = "\n\n".join(tables)
    if out_dir:
        _plot(rows, names, units, os.path.join(out_dir, "comparison.png"))
        with open(os.path.join(out_dir, "comparison.md"), "w") as f:
            f.write(f"# Comparison\n\n{table}\n\n![comparison](comparison.png)\n")
    return table, rows


def _plot(rows: dict, names, units: dict, path: str) -> None:
    """Median per-window error with its interquartile range, log scale (errors span decades; a mean ± std bar
    would reach below zero)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axs = plt.subplots(
        1, len(names), figsize=(max(3.0 * len(names), 6.0), 3.8), layout="constrained"
    )
    for ax, name in zip(np.atleast_1d(axs), names, strict=True):
        have = [(i, s[name]) for i, s in enumerate(rows.values()) if name in s and "p25" in s[name]]
        for i, s in have:
            med = s["median"]
            ax.bar(i, med, color=f"C{i}")
            ax.errorbar(i, med, yerr=[[med - s["p25"]], [s["p75"] - med]], color="k", capsize=3)
        ax.set_yscale("log")
        ax.set_xticks(range(len(rows)))
        # A path label keeps its last two folders: enough to tell `a/base` from `b/base`.
        short = [os.path.join(*k.split(" (")[0].split(os.sep)[-2:]) for k in rows]
        ax.set_xticklabels(short, rotation=35, ha="right", fontsize=7)
        ax.set_ylabel(f"per-window mean |error| {name} [{units.get(name, '?')}]", fontsize=8)
    fig.suptitle("median and interquartile range over windows", fontsize=9)
    fig.savefig(path, dpi=110)
    plt.close(fig)

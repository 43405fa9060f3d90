"""Figures and the Markdown report of an evaluation (matplotlib, written to PNG)."""

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

UNITS = {
    "x": "m",
    "phi": "rad",
    "theta": "rad",
    "x_dot": "m/s",
    "phi_dot": "rad/s",
    "theta_dot": "rad/s",
}


def unit(name: str) -> str:
    return UNITS.get(name, "rad/s" if name.endswith("_dot") else "")


def plot_histograms(errors: dict, names, path: str, horizon: int) -> str:
    """Figure 4 of the paper: histograms of the per-window mean |error|, one panel per state variable."""
    n = len(names)
    fig, axs = plt.subplots(1, n, figsize=(3.2 * n, 2.8))
    axs = np.atleast_1d(axs)
    for i, (ax, name) in enumerate(zip(axs, names, strict=True)):
        per = {k: np.asarray(v).mean(axis=1)[:, i] for k, v in errors.items()}
        # Log-spaced bins: the models' errors span orders of magnitude.
        allv = np.concatenate(list(per.values()))
        allv = allv[allv > 0]
        lo, hi = (np.percentile(allv, 0.5), np.percentile(allv, 99.5)) if allv.size else (1e-6, 1.0)
        bins = np.geomspace(lo, max(hi, lo * 10), 40)
        ax.set_xscale("log")
        for label, e in per.items():
            ax.hist(e, bins=bins, alpha=0.5, label=f"{label}: μ={e.mean():.3g}")
        ax.set_xlabel(f"|error| {name} [{unit(name)}]")
        ax.set_ylabel("windows")
        ax.legend(fontsize=6)
    fig.suptitle(f"absolute error over {horizon}-step windows", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_long_rollout(t, q, qd, predictions: dict, names, path: str) -> str:
    """Figure 3 of the paper: long rollouts overlaid on the measurement, one panel per state variable.

    `predictions`: label → (qs, q̇s) from the same initial state with the recorded inputs.
    """
    true = np.concatenate([q, qd], axis=1)
    preds = {k: np.concatenate(v, axis=1) for k, v in predictions.items()}
    n = len(names)
    fig, axs = plt.subplots(2, n // 2, figsize=(3.4 * (n // 2), 4.6), squeeze=False)
    for i, name in enumerate(names):
        ax = axs[i // (n // 2), i % (n // 2)]
        ax.plot(t, true[:, i], "k.", ms=2, label="measured")
        for j, (label, pred) in enumerate(preds.items()):
            ax.plot(t, pred[:, i], "-", lw=1.4 if j == 0 else 1.0, label=label, alpha=1 if j == 0 else 0.7)
        ax.set_xlabel("t [s]")
        ax.set_ylabel(f"{name} [{unit(name)}]")
    axs[0, 0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_report(metrics: dict, figures: dict, path: str) -> str:
    from .run import format_table

    folder = os.path.dirname(path)
    lines = [
        f"# Evaluation of {metrics['run']}",
        "",
        f"Model `{metrics['model_type']}` with `{metrics['integrator']}`, on {', '.join(metrics['data'])}.",
        "",
        f"Mean ± std over {metrics['windows']} windows of {metrics['horizon']} steps of the per-window mean "
        "absolute error (angles compared as angles):",
        "",
        format_table(metrics),
        "",
    ]
    for label, fig in figures.items():
        lines.append(f"![{label}]({os.path.relpath(fig, folder)})")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path

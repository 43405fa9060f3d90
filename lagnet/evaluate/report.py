"""The printed table and `report.md` of an evaluation."""

import os


def format_table(metrics: dict) -> str:
    """Markdown table of mean ± std absolute errors per state variable, one row per model."""
    first = next(iter(metrics["errors"].values()))
    names = list(first)
    head = "| model | " + " | ".join(names) + " |\n|---|" + "---|" * len(names) + "\n"
    rows = []
    for label, summary in metrics["errors"].items():
        cells = [f"{summary[n]['mean']:.4g} ± {summary[n]['std']:.2g}" for n in names]
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    return head + "\n".join(rows)


def write_report(metrics: dict, figures: dict, path: str) -> str:
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
        f"Long rollout of {metrics['long_rollout']['steps']} steps from a measured state: "
        f"valid prediction time {metrics['long_rollout']['valid_prediction_time_s']:.2f} s "
        f"({metrics['long_rollout']['valid_prediction_tolerance']}), "
        f"max energy error {metrics['long_rollout']['energy_error_max']:.3g} J, "
        f"unforced energy drift {metrics['long_rollout']['unforced_energy_drift_per_s']:.3g} J/s, "
        f"reversibility error {metrics['long_rollout']['reversibility_error']:.3g}"
        + (
            ""
            if metrics["long_rollout"]["ok"]
            else f"; the rollout FAILED at step {metrics['long_rollout']['failed_step']}"
        )
        + ".",
        "",
    ]
    for label, fig in figures.items():
        lines.append(f"![{label}]({os.path.relpath(fig, folder)})")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path

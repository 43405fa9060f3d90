"""The printed tables and `report.md` of an evaluation."""

import os

METRICS = (("", "mean over window"), ("final_", "at horizon"))


def prediction_labels(metrics: dict) -> dict:
    return {"model": f"{metrics['model_type']} model"} | {
        k: k for k in metrics["errors"] if k != "model"
    }


def _steps(h: dict) -> str:
    if h["steps"] is not None:
        return f"{h['steps']} steps = {h['mean_seconds']:.3g} s on average"
    if h["min_steps"] == h["max_steps"]:
        return f"{h['min_steps']} steps"
    return f"{h['min_steps']}–{h['max_steps']} steps, {h['mean_steps']:.1f} on average"


def horizon_table(metrics: dict, h: dict) -> str:
    """One horizon: a row per prediction and metric, a column per state variable with its unit; cells are the
    mean ± std over windows."""
    errors = h["errors"]
    names = list(next(iter(errors.values())))
    units = metrics.get("units", {})
    cols = [f"{n} [{units[n]}]" if n in units else n for n in names]
    lines = [
        f"Horizon {h['label']} ({_steps(h)}), {metrics['windows']} windows; mean ± std over windows of the "
        "|error| averaged over each window and of the |error| at its horizon:",
        "",
        "| prediction | metric | " + " | ".join(cols) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for key, label in prediction_labels(metrics).items():
        for prefix, metric in METRICS:
            cells = [
                f"{errors[key][n][prefix + 'mean']:.4g} ± {errors[key][n][prefix + 'std']:.2g}"
                for n in names
            ]
            lines.append(f"| {label} | {metric} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def format_table(metrics: dict) -> str:
    """Every horizon's table (older metrics.json without `horizons`: its single horizon)."""
    horizons = metrics.get("horizons") or [
        {
            "label": f"{metrics['horizon']} steps",
            "steps": metrics["horizon"],
            "mean_seconds": float("nan"),
            "errors": metrics["errors"],
        }
    ]
    return "\n\n".join(horizon_table(metrics, h) for h in horizons)


def _long_rollout(lr: dict) -> list[str]:
    seconds = lr.get("seconds")
    length = f"{lr['steps']} steps" + (f" ({seconds:.3g} s)" if seconds is not None else "")
    valid = lr["valid_prediction_time_s"]
    valid_text = (
        f"at least {valid:.3g} s (the whole rollout)"
        if lr.get("valid_for_whole_rollout")
        else f"{valid:.3g} s"
    )
    out = [
        f"Long rollout of {length} from a measured state"
        + (f" ({lr['start']})" if lr.get("start") else "")
        + (
            ""
            if lr["ok"]
            else f". **The rollout FAILED at step {lr['failed_step']}** (non-finite or not converged)"
        )
        + ":",
        "",
        f"- valid prediction time: {valid_text} (how long the {lr['valid_prediction_tolerance']} held);",
        f"- largest |energy error| against the measured states: {lr['energy_error_max']:.3g} J;",
        f"- energy drift without input: {lr['unforced_energy_drift_per_s']:.3g} J/s (a passive model "
        "only loses energy: this should be ≤ 0);",
        f"- reversibility error: {lr['reversibility_error']:.3g} (roll forward, then back with −dt and "
        "the inputs reversed: max |Δq| + max |Δq̇| at the start, mixed units; 0 only for a time-reversible "
        "integrator on conservative dynamics, so friction and learned damping make it large by design).",
    ]
    return out


def write_report(metrics: dict, figures: dict, path: str) -> str:
    folder = os.path.dirname(path)
    lines = [
        f"# Evaluation of {metrics['run']}",
        "",
        f"Model `{metrics['model_type']}` with the `{metrics['integrator']}` integrator, on "
        f"{', '.join(metrics['data'])}; {metrics['windows']} {metrics.get('window_selection', 'windows')}. "
        "Errors are absolute (angles compared modulo 2π), in the units of each column; the baselines are the "
        "known physics alone (the model without its learned parts) and holding the initial state.",
        "",
        format_table(metrics),
        "",
        *_long_rollout(metrics["long_rollout"]),
        "",
    ]
    for label, fig in figures.items():
        lines += [f"![{label}]({os.path.relpath(fig, folder)})", ""]
    if not figures:
        lines.append("(figures not written: evaluated with --no-plots)")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path

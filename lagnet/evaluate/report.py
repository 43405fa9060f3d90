"""The printed tables and `report.md` of an evaluation."""

import math
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


def _number(x) -> str:
    return "—" if x is None else f"{x:.3g}"


def ratio_table(metrics: dict) -> str:
    """model / baseline per state variable at each horizon (of the mean over the window and at its end)."""
    horizons = [h for h in metrics.get("horizons") or [] if "ratio_to_prior" in h]
    if not horizons:
        return ""
    names = list(horizons[0]["ratio_to_prior"])
    base = metrics.get("baseline", "known physics")
    lines = [
        f"Error ratio model / {base} per state variable (< 1: the learned parts help; > 1: the model is "
        "worse than its physics), of the mean |error| over the window and of the |error| at its horizon:",
        "",
        "| horizon | metric | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for h in horizons:
        r = h["ratio_to_prior"]
        for key, metric in (("mean", "mean over window"), ("final", "at horizon")):
            cells = [_number(r[n][key]) for n in names]
            lines.append(f"| {h['label']} | {metric} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _region_row(where: str, e: dict, names) -> str:
    cells = []
    for n in names:
        m, p = (e["model"] or {}).get(n), (e["prior"] or {}).get(n)
        ratio = m / p if m is not None and p else None
        cells.append(f"{_number(m)} / {_number(p)} ({_number(ratio)})")
    return f"| {where} | {e['windows']} | " + " | ".join(cells) + " |"


def region_table(metrics: dict) -> str:
    """End-of-window errors of the model and its baseline by the windows' initial amplitude and by the
    config's named regions."""
    regions = metrics.get("regions")
    if not regions:
        return ""
    names = list(metrics["errors"]["model"])
    base = metrics.get("baseline", "known physics")
    lines = [
        f"Errors by region of the windows' initial state at {regions['horizon']}: mean |error| at the horizon of "
        f"the model / {base} (ratio), per state variable. Amplitude bins are of |q| (angles: the wrapped "
        "distance from the hanging position 0) and |q̇| at the window's start:",
        "",
        "| region | windows | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for e in regions.get("amplitude", []):
        where = f"\\|{e['variable']}\\| in [{e['low']:.3g}, {e['high']:.3g}]"
        lines.append(_region_row(where, e, names))
    for e in regions.get("named", []):
        bounds = ", ".join(f"{k} {c:g} ± {r:g}" for k, (c, r) in e["bounds"].items())
        lines.append(_region_row(f"{e['name']} ({bounds})", e, names))
    return "\n".join(lines)


def _trained_on(v: dict) -> str:
    if "arc_length" in v:
        # Angles: the arc of the training angles, its ends wrapped to [−π, π).
        end = (v["train_high"] + math.pi) % (2 * math.pi) - math.pi
        return f"trained on the arc from {v['train_low']:.3g} to {end:.3g}, {v['arc_length']:.3g} rad long"
    return f"trained on [{v['train_low']:.3g}, {v['train_high']:.3g}]"


def coverage_line(metrics: dict) -> str:
    """One line: the share of the test states outside the training states' range, and a warning."""
    cov = metrics.get("coverage")
    if not cov:
        return ""
    if "error" in cov:
        return f"Coverage: not measured ({cov['error']})."
    parts = ", ".join(
        f"{k} {100 * v['outside']:.1f} % ({_trained_on(v)})" for k, v in cov["variables"].items()
    )
    line = f"Coverage: share of the {cov['test_states']} test states outside the training states' range: {parts}."
    if cov.get("warning"):
        line += f" **Warning: {cov['warning']}.**"
    return line


def _bounds(hits) -> str:
    return ", ".join(
        f"{b.get('name')} = {_number(b.get('value'))} "
        f"({b['side'] + ' ' if b.get('side') else ''}bound {_number(b.get('bound'))})"
        for b in hits
        if isinstance(b, dict)
    )


def _collapses(items) -> str:
    return ", ".join(
        f"{c.get('name')} {_number(c.get('start'))} → {_number(c.get('value'))}"
        for c in items
        if isinstance(c, dict)
    )


def training_lines(metrics: dict) -> list[str]:
    """What training reported about the physics (summary.json's `identification`, its bound hits and collapses
    on every path, and `fallback`)."""
    lines = []
    ident = metrics.get("identification")
    if isinstance(ident, dict) and ident.get("method") == "none":
        # Nothing identified through a solver: the record is the least-squares friction start's.
        hits = ident.get("at_bound") or []
        lines.append(
            "- Friction: the least-squares start, "
            + (f"on its bound: {_bounds(hits)}." if hits else "no coefficient on its bound.")
        )
        ident = None
    if isinstance(ident, dict):
        how = f" ({ident['method']})" if ident.get("method") else ""
        loss = (
            f"loss {_number(ident['loss_before'])} → {_number(ident['loss'])}; "
            if isinstance(ident.get("loss_before"), int | float)
            and isinstance(ident.get("loss"), int | float)
            else ""
        )
        if ident.get("kept_start"):
            lines.append(f"- Identification{how} kept the starting physics: {ident['kept_start']}.")
        if ident.get("kept_least_squares"):
            lines.append(
                f"- Identification{how} kept the equation-error least-squares fit in its place: "
                f"{ident['kept_least_squares']}."
            )
        at_bound = ident.get("at_bound") or []
        if at_bound:
            lines.append(
                f"- Identification{how}: {loss}physical parameters at a bound: {_bounds(at_bound)} (the "
                "data asks for a value beyond it)."
            )
        elif not ident.get("kept_start"):
            lines.append(f"- Identification{how}: {loss}no physical parameter ended at a bound.")
        if ident.get("friction_fit_at_bound"):
            lines.append(
                "- The least-squares friction start left on its bound: "
                f"{_bounds(ident['friction_fit_at_bound'])}."
            )
        if ident.get("collapsed"):
            lines.append(
                f"- Identification collapsed (moved > 1000×): {_collapses(ident['collapsed'])}."
            )
    if metrics.get("at_bound"):
        lines.append(f"- Training left on a bound: {_bounds(metrics['at_bound'])}.")
    if metrics.get("collapsed"):
        lines.append(f"- Training collapsed (moved > 1000×): {_collapses(metrics['collapsed'])}.")
    fallback = metrics.get("fallback")
    if fallback:
        lines.append(
            f"- Fallback: training kept the {fallback} model (the learned residual did not beat it)."
        )
    return lines


def _baseline_text(label: str) -> str:
    if label == "physics (prior)":
        return (
            "the model's physics prior (its mechanics with the learned parameters and friction, its network "
            "removed)"
        )
    return "the known physics alone (the mechanics without learned parts)"


def write_report(metrics: dict, figures: dict, path: str) -> str:
    folder = os.path.dirname(path)
    lines = [
        f"# Evaluation of {metrics['run']}",
        "",
        f"Model `{metrics['model_type']}` with the `{metrics['integrator']}` integrator, on "
        f"{', '.join(metrics['data'])}; {metrics['windows']} {metrics.get('window_selection', 'windows')}. "
        "Errors are absolute (angles compared modulo 2π), in the units of each column; the baselines are "
        + _baseline_text(metrics.get("baseline", "known physics"))
        + " and holding the initial state.",
        "",
        *([coverage_line(metrics), ""] if metrics.get("coverage") else []),
        *([*training_lines(metrics), ""] if training_lines(metrics) else []),
        format_table(metrics),
        "",
        *([ratio_table(metrics), ""] if ratio_table(metrics) else []),
        *([region_table(metrics), ""] if region_table(metrics) else []),
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

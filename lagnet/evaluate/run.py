"""`lagnet evaluate`: window errors at one or several horizons (the paper's Figure 4), the error against the
horizon, a long rollout (Figure 3) with its physics, figures and a report."""

import os

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

from ..data.horizons import EvaluationWindows, Horizon, cut_windows, parse_horizon
from ..models import PINODE
from ..rollout import rollout_solution
from ..run import load_recordings, load_run, save_json
from ..run.files import writable_folder
from ..systems.base import AbstractLagrangianDynamics
from .metrics import (
    energy_error,
    error_versus_time,
    hold_errors,
    reversibility_error,
    state_abs_error,
    summarise_errors,
    valid_prediction_time,
    window_errors,
)


def load_eval_data(config, system, paths=None):
    """The evaluation recordings: `paths`, else the config's test files, else its training files."""
    paths = paths or config.data.test or config.data.train
    return load_recordings(config, system, paths), paths


def check_writable(folder: str, what: str) -> None:
    """Fail before any work when `folder` cannot take the evaluation's files (a file, read-only, no space)."""
    try:
        writable_folder(folder)
    except (OSError, ValueError) as e:
        raise ValueError(
            f"cannot write {what} to {folder}: {getattr(e, 'strerror', None) or e} "
            "(give --out a writable folder)"
        ) from None


def window_error_samples(model, known_model, integrator, windows, angles) -> dict:
    """Per-window |error| (W, k, 2n) of the model, of the known physics alone and of holding the initial state."""
    return {
        "model": eqx.filter_jit(window_errors)(model, integrator, windows, angles),
        "known physics": eqx.filter_jit(window_errors)(known_model, integrator, windows, angles),
        "hold initial state": hold_errors(windows, angles),
    }


def horizon_metrics(errs: dict, cut: EvaluationWindows, names) -> list[dict]:
    """For each horizon: its windows' step counts and, per prediction, the window-mean and end errors."""
    out = []
    for h, ends in zip(cut.horizons, cut.ends, strict=True):
        out.append(
            {
                "label": h.label,
                "seconds": h.seconds,
                "steps": h.steps,
                "mean_steps": float(ends.mean()),
                "min_steps": int(ends.min()),
                "max_steps": int(ends.max()),
                "mean_seconds": float(cut.elapsed[np.arange(len(ends)), ends - 1].mean()),
                "errors": {k: summarise_errors(v, names, ends) for k, v in errs.items()},
            }
        )
    return out


def long_rollout(model, known_model, integrator, w, spread, names, angles) -> tuple[dict, dict]:
    """A longer rollout from a measured state (the paper's Figure 3) and its physics: (metrics, traces)."""
    roll = eqx.filter_jit(rollout_solution)
    sol = roll(model, integrator, w.q[0], w.qd[0], w.u, w.dt)
    known = roll(known_model, integrator, w.q[0], w.qd[0], w.u, w.dt)
    err = state_abs_error(sol.qs[1:], sol.qds[1:], w.q[1:], w.qd[1:], angles)
    t = np.cumsum(np.concatenate([[0.0], np.asarray(w.dt)]))
    vpt = int(valid_prediction_time(err, jnp.where(spread > 0, spread, 1.0), tol=0.5))
    # A model without a Lagrangian of its own (the black box) is measured with the known system's energy.
    energy = model.energy if isinstance(model, AbstractLagrangianDynamics) else model.system.energy
    e_model = jax.vmap(energy)(sol.qs, sol.qds)
    e_measured = jax.vmap(energy)(w.q, w.qd)
    # Without input the energy of a passive model can only fall: its drift rate says how fast.
    unforced = roll(model, integrator, w.q[0], w.qd[0], jnp.zeros_like(w.u), w.dt)
    _, _, unforced_drift = energy_error(energy, unforced.qs, unforced.qds)
    steps = int(w.dt.shape[0])
    metrics = {
        "steps": steps,
        "seconds": float(t[-1]),
        "ok": bool(sol.ok),
        "failed_step": int(sol.failed_step),
        "mean_abs_error": dict(zip(names, np.asarray(err.mean(0)).tolist(), strict=True)),
        "valid_prediction_time_s": float(t[vpt]),  # vpt ≤ steps: t has steps + 1 entries
        "valid_for_whole_rollout": vpt == steps,
        "valid_prediction_tolerance": "normalised RMS state error (each variable over its spread in the data) ≤ 0.5",
        "energy_error_max": float(jnp.max(jnp.abs(e_model - e_measured))),
        "unforced_energy_drift_per_s": float(unforced_drift / jnp.mean(w.dt)),
        "reversibility_error": float(
            eqx.filter_jit(reversibility_error)(model, integrator, w.q[0], w.qd[0], w.u, w.dt)
        ),
    }
    traces = {"t": t, "model": sol, "known": known, "e_model": e_model, "e_measured": e_measured}
    return metrics, traces


def write_figures(metrics, errs, cut, traces, w, model, trajs, out_dir) -> dict:
    """The figures: window-error histograms, error against horizon, long rollout, phase portrait, energy,
    learned parts. Returns label → path."""
    from .plots import (
        plot_energy,
        plot_error_versus_horizon,
        plot_histograms,
        plot_learned_parts,
        plot_long_rollout,
        plot_phase_portrait,
    )
    from .report import prediction_labels

    units = metrics["units"]
    labels = prediction_labels(metrics)
    t, sol, known = traces["t"], traces["model"], traces["known"]
    q, qd = np.asarray(w.q), np.asarray(w.qd)
    first = metrics["horizons"][0]
    ends = cut.ends[0]
    figs = {
        "window errors": plot_histograms(
            {labels[k]: v for k, v in errs.items()},
            ends,
            units,
            os.path.join(out_dir, "window_errors.png"),
            f"{first['label']}, {metrics['windows']} windows",
        ),
        "error against horizon": plot_error_versus_horizon(
            {labels[k]: v for k, v in metrics["error_vs_time"]["errors"].items()},
            np.asarray(metrics["error_vs_time"]["t"]),
            units,
            [h["mean_seconds"] for h in metrics["horizons"]],
            os.path.join(out_dir, "error_vs_horizon.png"),
        ),
        "long rollout": plot_long_rollout(
            t,
            q,
            qd,
            {labels["model"]: (sol.qs, sol.qds), "known physics": (known.qs, known.qds)},
            units,
            os.path.join(out_dir, "long_rollout.png"),
        ),
        "phase portrait": plot_phase_portrait(
            q,
            qd,
            np.asarray(sol.qs),
            np.asarray(sol.qds),
            units,
            os.path.join(out_dir, "phase_portrait.png"),
        ),
        "energy": plot_energy(
            t,
            np.asarray(traces["e_measured"]),
            np.asarray(traces["e_model"]),
            os.path.join(out_dir, "energy.png"),
        ),
    }
    learned = plot_learned_parts(model, trajs, units, os.path.join(out_dir, "learned_force.png"))
    if learned is not None:
        figs["learned parts"] = learned
    return figs


def _windows_description(stride, starts, seed) -> str:
    if starts is not None:
        return f"windows starting at {', '.join(f'{s:g}' for s in starts)} s of each recording"
    if stride is not None:
        return f"windows starting every {stride.label} of each recording"
    return f"windows drawn at random (seed {seed}) from all start samples"


def evaluate_run(
    run_dir: str,
    data_paths=None,
    out_dir=None,
    *,
    plots: bool = True,
    progress=True,
    horizons=None,
    windows: int | None = None,
    stride=None,
    starts=None,
    long_horizon=None,
) -> dict:
    """Evaluate a trained run on its test data (or `data_paths`); write metrics.json, report.md and figures.

    Arguments:
        horizons: prediction horizons, each seconds ('0.5s', '500ms') or steps (30, '30'); default the config's
            `evaluation.horizon` steps. All are measured on the same windows (cut for the longest).
        windows: how many windows, drawn at random (default the config's `evaluation.windows`); or
        stride: a window every stride seconds/steps of each recording; or
        starts: windows starting at these times (seconds from each recording's start).
        long_horizon: the long rollout's length, seconds or steps (default the config's `evaluation.long_horizon`).
    """
    run = load_run(run_dir)
    model, config, integrator = run.model, run.config, run.integrator
    out_dir = out_dir or os.path.join(run_dir, "evaluation")
    check_writable(out_dir, "the evaluation")
    os.makedirs(out_dir, exist_ok=True)
    ec = config.evaluation
    horizons = [
        h if isinstance(h, Horizon) else parse_horizon(h, "horizon")
        for h in (horizons or [ec.horizon])
    ]
    stride = (
        parse_horizon(stride, "stride")
        if stride is not None and not isinstance(stride, Horizon)
        else stride
    )
    long_h = (
        long_horizon
        if isinstance(long_horizon, Horizon)
        else parse_horizon(
            long_horizon if long_horizon is not None else ec.long_horizon, "long horizon"
        )
    )
    if stride is None and starts is None and windows is None:
        windows = ec.windows
    bar = tqdm(total=4, desc=f"evaluate {run_dir}", disable=not progress, unit="stage")
    dtype = jnp.dtype(config.dtype)
    system = model.system
    trajs, paths = load_eval_data(config, system, data_paths)
    cut = cut_windows(
        trajs,
        horizons,
        count=windows,
        stride=stride,
        start_times=starts,
        seed=config.seed,
        dtype=dtype,
    )
    names, angles = system.state_names, system.angles
    # The known mechanics alone, fed the same (history-extended) inputs as the model.
    known_model = PINODE(system, input_history=config.model.input_history)

    bar.update()
    bar.set_postfix_str("window errors")
    errs = window_error_samples(model, known_model, integrator, cut.windows, angles)
    per_horizon = horizon_metrics(errs, cut, names)
    # Every prediction's curve on the same time grid (it depends only on the windows' times).
    curves = {k: error_versus_time(v, cut.elapsed, cut.lengths) for k, v in errs.items()}
    metrics = {
        "run": run_dir,
        "model_type": config.model.type,
        "integrator": config.integrator.name,
        "system": config.system.name,
        "data": list(paths),
        "units": system.state_units,
        "windows": len(cut.sources),
        "window_selection": _windows_description(stride, starts, config.seed),
        # The first horizon's errors stay at the top level (what `lagnet compare` and older readers use).
        "horizon": per_horizon[0]["label"],
        "errors": per_horizon[0]["errors"],
        "horizons": per_horizon,
        "error_vs_time": {
            "t": curves["model"][0].tolist(),
            "errors": {
                k: dict(zip(names, mean.T.tolist(), strict=True)) for k, (_, mean) in curves.items()
            },
        },
    }

    bar.update()
    bar.set_postfix_str("long rollout")
    long_cut = cut_windows(trajs, [long_h], count=1, seed=config.seed, dtype=dtype)
    w = jax.tree_util.tree_map(lambda x: x[0], long_cut.windows)
    spread = jnp.concatenate([jnp.std(cut.windows.q[:, 0], 0), jnp.std(cut.windows.qd[:, 0], 0)])
    metrics["long_rollout"], traces = long_rollout(
        model, known_model, integrator, w, spread, names, angles
    )
    metrics["long_rollout"]["start"] = long_cut.sources[0]
    save_json(os.path.join(out_dir, "metrics.json"), metrics)
    bar.update()
    figures = {}
    if plots:
        bar.set_postfix_str("figures")
        figures = write_figures(metrics, errs, cut, traces, w, model, trajs, out_dir)
    from .report import write_report

    write_report(metrics, figures, os.path.join(out_dir, "report.md"))
    bar.update()
    bar.close()
    metrics["written"] = [os.path.join(out_dir, f) for f in ("metrics.json", "report.md")] + list(
        figures.values()
    )
    return metrics

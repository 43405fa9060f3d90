"""`lagnet evaluate`: the paper's window errors (Figure 4), a long rollout (Figure 3), energy, and a report."""

import os

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

from ..data.windows import make_windows
from ..models import PINODE
from ..rollout import rollout_solution
from ..run import load_recordings, load_run, save_json
from ..systems.base import AbstractLagrangianDynamics
from .metrics import (
    energy_error,
    hold_errors,
    reversibility_error,
    state_abs_error,
    summarise_errors,
    valid_prediction_time,
    window_errors,
)


def select_windows(trajs, horizon: int, count: int, seed: int, dtype):
    """`count` windows of `horizon` steps from measured data, start rows drawn without replacement (seeded)."""
    data = make_windows(trajs, horizon, skip_short=True, dtype=dtype)
    rng = np.random.default_rng(seed)
    n = len(data)
    idx = np.sort(rng.choice(n, size=min(count, n), replace=False))
    return data.batch(jnp.asarray(np.asarray(data.starts)[idx]))


def load_eval_data(config, system, paths=None):
    """The evaluation recordings: `paths`, else the config's test files, else its training files."""
    paths = paths or config.data.test or config.data.train
    return load_recordings(config, system, paths), paths


def window_error_samples(model, known_model, integrator, windows, angles) -> dict:
    """Per-window |error| of the model, of the known physics alone and of holding the initial state."""
    return {
        "model": eqx.filter_jit(window_errors)(model, integrator, windows, angles),
        "known physics": eqx.filter_jit(window_errors)(known_model, integrator, windows, angles),
        "hold initial state": hold_errors(windows, angles),
    }


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
    metrics = {
        "steps": int(w.dt.shape[0]),
        "ok": bool(sol.ok),
        "failed_step": int(sol.failed_step),
        "mean_abs_error": dict(zip(names, np.asarray(err.mean(0)).tolist(), strict=True)),
        "valid_prediction_time_s": float(t[vpt]),  # vpt ≤ steps: t has steps + 1 entries
        "valid_prediction_tolerance": "normalised RMS state error (by the data's spread) below 0.5",
        "energy_error_max": float(jnp.max(jnp.abs(e_model - e_measured))),
        "unforced_energy_drift_per_s": float(unforced_drift / jnp.mean(w.dt)),
        "reversibility_error": float(
            eqx.filter_jit(reversibility_error)(model, integrator, w.q[0], w.qd[0], w.u, w.dt)
        ),
    }
    traces = {"t": t, "model": sol, "known": known, "e_model": e_model, "e_measured": e_measured}
    return metrics, traces


def write_figures(metrics, errs, traces, w, model, trajs, names, horizon, out_dir) -> None:
    """The figures (window-error histograms, long rollout, phase portrait, energy, learned parts) and report.md."""
    from .plots import (
        plot_energy,
        plot_histograms,
        plot_learned_parts,
        plot_long_rollout,
        plot_phase_portrait,
    )
    from .report import write_report

    t, sol, known = traces["t"], traces["model"], traces["known"]
    q, qd = np.asarray(w.q), np.asarray(w.qd)
    figs = {
        "histograms": plot_histograms(
            errs, names, os.path.join(out_dir, "window_errors.png"), horizon
        ),
        "long_rollout": plot_long_rollout(
            t,
            q,
            qd,
            {"model": (sol.qs, sol.qds), "known physics": (known.qs, known.qds)},
            names,
            os.path.join(out_dir, "long_rollout.png"),
        ),
        "phase_portrait": plot_phase_portrait(
            q,
            qd,
            np.asarray(sol.qs),
            np.asarray(sol.qds),
            model.system,
            os.path.join(out_dir, "phase_portrait.png"),
        ),
        "energy": plot_energy(
            t,
            np.asarray(traces["e_measured"]),
            np.asarray(traces["e_model"]),
            os.path.join(out_dir, "energy.png"),
        ),
    }
    learned = plot_learned_parts(model, trajs, os.path.join(out_dir, "learned_force.png"))
    if learned is not None:
        figs["learned_parts"] = learned
    write_report(metrics, figs, os.path.join(out_dir, "report.md"))


def evaluate_run(
    run_dir: str, data_paths=None, out_dir=None, *, plots: bool = True, progress=True
) -> dict:
    """Evaluate a trained run on its test data (or `data_paths`); write metrics.json, figures and report.md."""
    bar = tqdm(
        total=5 if plots else 4, desc=f"evaluate {run_dir}", disable=not progress, unit="stage"
    )
    run = load_run(run_dir)
    model, config, integrator = run.model, run.config, run.integrator
    out_dir = out_dir or os.path.join(run_dir, "evaluation")
    os.makedirs(out_dir, exist_ok=True)
    dtype = jnp.dtype(config.dtype)
    system = model.system
    trajs, paths = load_eval_data(config, system, data_paths)
    ec = config.evaluation
    windows = select_windows(trajs, ec.horizon, ec.windows, config.seed, dtype)
    names, angles = system.state_names, system.angles
    # The known mechanics alone, fed the same (history-extended) inputs as the model.
    known_model = PINODE(system, input_history=config.model.input_history)

    bar.update()
    bar.set_postfix_str("window errors")
    errs = window_error_samples(model, known_model, integrator, windows, angles)
    metrics = {
        "run": run_dir,
        "model_type": config.model.type,
        "integrator": config.integrator.name,
        "data": paths,
        "windows": int(windows.q.shape[0]),
        "horizon": ec.horizon,
        "errors": {k: summarise_errors(v, names) for k, v in errs.items()},
    }

    bar.update()
    bar.set_postfix_str("long rollout")
    w = jax.tree_util.tree_map(
        lambda x: x[0], select_windows(trajs, ec.long_horizon, 1, config.seed, dtype)
    )
    spread = jnp.concatenate([jnp.std(windows.q[:, 0], 0), jnp.std(windows.qd[:, 0], 0)])
    metrics["long_rollout"], traces = long_rollout(
        model, known_model, integrator, w, spread, names, angles
    )
    save_json(os.path.join(out_dir, "metrics.json"), metrics)
    bar.update()
    if plots:
        bar.set_postfix_str("figures")
        write_figures(metrics, errs, traces, w, model, trajs, names, ec.horizon, out_dir)
        bar.update()
    bar.update()
    bar.close()
    return metrics

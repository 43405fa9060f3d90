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
from ..train.build import build_integrator, load_recordings
from ..train.checkpoint import save_json
from ..train.loop import load_model
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
    paths = paths or config["data"]["test"] or config["data"]["train"]
    return load_recordings(config, system, paths), paths


def evaluate_run(
    run_dir: str, data_paths=None, out_dir=None, *, plots: bool = True, progress=True
) -> dict:
    """Evaluate a trained run on its test data (or `data_paths`); write metrics.json, figures and report.md."""
    bar = tqdm(
        total=5 if plots else 4, desc=f"evaluate {run_dir}", disable=not progress, unit="stage"
    )
    model, config = load_model(run_dir)
    out_dir = out_dir or os.path.join(run_dir, "evaluation")
    os.makedirs(out_dir, exist_ok=True)
    dtype = jnp.float64 if config["dtype"] == "float64" else jnp.float32
    system = model.system
    integrator = build_integrator(config)
    trajs, paths = load_eval_data(config, system, data_paths)
    ec = config["evaluation"]
    windows = select_windows(trajs, ec["horizon"], ec["windows"], config["seed"], dtype)
    names = system.state_names
    angles = system.angles

    bar.update()
    bar.set_postfix_str("window errors")
    # The known mechanics alone, fed the same (history-extended) inputs as the model.
    known_model = PINODE(system, input_history=config["model"]["input_history"])
    errs = {
        "model": eqx.filter_jit(window_errors)(model, integrator, windows, angles),
        "known physics": eqx.filter_jit(window_errors)(known_model, integrator, windows, angles),
        "hold initial state": hold_errors(windows, angles),
    }
    metrics = {
        "run": run_dir,
        "model_type": config["model"]["type"],
        "integrator": config["integrator"]["name"],
        "data": paths,
        "windows": int(windows.q.shape[0]),
        "horizon": ec["horizon"],
        "errors": {k: summarise_errors(v, names) for k, v in errs.items()},
    }

    bar.update()
    bar.set_postfix_str("long rollout")
    # A longer rollout from a measured state (the paper's Figure 3), and its physics.
    long = select_windows(trajs, ec["long_horizon"], 1, config["seed"], dtype)
    w = jax.tree_util.tree_map(lambda x: x[0], long)
    roll = eqx.filter_jit(rollout_solution)
    sol = roll(model, integrator, w.q[0], w.qd[0], w.u, w.dt)
    qs, qds = sol.qs, sol.qds
    known = roll(known_model, integrator, w.q[0], w.qd[0], w.u, w.dt)
    long_err = state_abs_error(qs[1:], qds[1:], w.q[1:], w.qd[1:], angles)
    spread = jnp.concatenate([jnp.std(windows.q[:, 0], 0), jnp.std(windows.qd[:, 0], 0)])
    t_long = np.cumsum(np.concatenate([[0.0], np.asarray(w.dt)]))
    vpt = int(valid_prediction_time(long_err, jnp.where(spread > 0, spread, 1.0), tol=0.5))
    e_model = jax.vmap(model.energy)(qs, qds)
    e_measured = jax.vmap(model.energy)(w.q, w.qd)
    # Without input the energy of a passive model can only fall: its drift rate says how fast.
    unforced = roll(model, integrator, w.q[0], w.qd[0], jnp.zeros_like(w.u), w.dt)
    _, _, unforced_drift = energy_error(model.energy, unforced.qs, unforced.qds)
    metrics["long_rollout"] = {
        "steps": ec["long_horizon"],
        "ok": bool(sol.ok),
        "failed_step": int(sol.failed_step),
        "mean_abs_error": dict(zip(names, np.asarray(long_err.mean(0)).tolist(), strict=True)),
        "valid_prediction_time_s": float(t_long[vpt]),  # vpt ≤ steps: t_long has steps + 1 entries
        "valid_prediction_tolerance": "normalised RMS state error (by the data's spread) below 0.5",
        "energy_error_max": float(jnp.max(jnp.abs(e_model - e_measured))),
        "unforced_energy_drift_per_s": float(unforced_drift / jnp.mean(w.dt)),
        "reversibility_error": float(
            eqx.filter_jit(reversibility_error)(model, integrator, w.q[0], w.qd[0], w.u, w.dt)
        ),
    }
    save_json(os.path.join(out_dir, "metrics.json"), metrics)
    bar.update()
    if plots:
        bar.set_postfix_str("figures")
        from .plots import (
            plot_energy,
            plot_histograms,
            plot_learned_parts,
            plot_long_rollout,
            plot_phase_portrait,
            write_report,
        )

        figs = {
            "histograms": plot_histograms(
                errs, names, os.path.join(out_dir, "window_errors.png"), ec["horizon"]
            ),
            "long_rollout": plot_long_rollout(
                t_long,
                np.asarray(w.q),
                np.asarray(w.qd),
                {"model": (qs, qds), "known physics": (known.qs, known.qds)},
                names,
                os.path.join(out_dir, "long_rollout.png"),
            ),
        }
        figs["phase_portrait"] = plot_phase_portrait(
            np.asarray(w.q),
            np.asarray(w.qd),
            np.asarray(qs),
            np.asarray(qds),
            system,
            os.path.join(out_dir, "phase_portrait.png"),
        )
        figs["energy"] = plot_energy(
            t_long, np.asarray(e_measured), np.asarray(e_model), os.path.join(out_dir, "energy.png")
        )
        learned = plot_learned_parts(model, trajs, os.path.join(out_dir, "learned_force.png"))
        if learned is not None:
            figs["learned_parts"] = learned
        write_report(metrics, figs, os.path.join(out_dir, "report.md"))
        bar.update()
    bar.update()
    bar.close()
    return metrics


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

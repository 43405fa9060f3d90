"""`lagnet evaluate`: the paper's window errors (Figure 4), a long rollout (Figure 3), energy, and a report."""

import dataclasses
import os

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..data.loader import load_trajectories
from ..data.windows import make_windows
from ..models import PINODE
from ..rollout import rollout
from ..train.build import build_integrator, with_input_history
from ..train.checkpoint import save_json
from ..train.loop import load_model
from .metrics import hold_errors, state_abs_error, summarise_errors, window_errors


def select_windows(trajs, horizon: int, count: int, seed: int, dtype):
    """`count` windows of `horizon` steps from measured data, start rows drawn without replacement (seeded)."""
    data = make_windows(trajs, horizon, skip_short=True, dtype=dtype)
    rng = np.random.default_rng(seed)
    n = len(data)
    idx = np.sort(rng.choice(n, size=min(count, n), replace=False))
    return data.batch(jnp.asarray(np.asarray(data.starts)[idx]))


def load_eval_data(config, system, paths=None):
    paths = paths or config["data"]["test"] or config["data"]["train"]
    trajs = []
    for path in paths:
        trajs.extend(load_trajectories(path, config["data"]["mapping"], system=system))
    h = config["model"]["input_history"]
    if h:
        trajs = [with_input_history(t, h) for t in trajs]
    if config["integrator"]["dt"] is not None:
        dt = config["integrator"]["dt"]
        trajs = [dataclasses.replace(t, t=t.t[0] + dt * np.arange(t.n_rows)) for t in trajs]
    return trajs, paths


def evaluate_run(
    run_dir: str, data_paths=None, out_dir=None, *, plots: bool = True, progress=True
) -> dict:
    """Evaluate a trained run on its test data (or `data_paths`); write metrics.json, figures and report.md."""
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

    errs = {
        "model": eqx.filter_jit(window_errors)(model, integrator, windows, angles),
        "known physics": eqx.filter_jit(window_errors)(PINODE(system), integrator, windows, angles),
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

    # A longer rollout from the first test sample (the paper's Figure 3), and the model's energy along it.
    long = select_windows(trajs, ec["long_horizon"], 1, config["seed"], dtype)
    w = jax.tree_util.tree_map(lambda x: x[0], long)
    qs, qds = eqx.filter_jit(rollout)(model, integrator, w.q[0], w.qd[0], w.u, w.dt, throw=False)
    qk, qdk = eqx.filter_jit(rollout)(PINODE(system), integrator, w.q[0], w.qd[0], w.u, w.dt, throw=False)
    long_err = state_abs_error(qs[1:], qds[1:], w.q[1:], w.qd[1:], angles)
    metrics["long_rollout"] = {
        "steps": ec["long_horizon"],
        "mean_abs_error": dict(zip(names, np.asarray(long_err.mean(0)).tolist(), strict=True)),
    }
    save_json(os.path.join(out_dir, "metrics.json"), metrics)
    if plots:
        from .plots import plot_histograms, plot_long_rollout, write_report

        figs = {
            "histograms": plot_histograms(
                errs, names, os.path.join(out_dir, "window_errors.png"), ec["horizon"]
            ),
            "long_rollout": plot_long_rollout(
                np.cumsum(np.concatenate([[0.0], np.asarray(w.dt)])),
                np.asarray(w.q),
                np.asarray(w.qd),
                {"model": (qs, qds), "known physics": (qk, qdk)},
                names,
                os.path.join(out_dir, "long_rollout.png"),
            ),
        }
        write_report(metrics, figs, os.path.join(out_dir, "report.md"))
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

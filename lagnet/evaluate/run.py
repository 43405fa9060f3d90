"""`lagnet evaluate`: window errors at one or several horizons (the paper's Figure 4), the error against the
horizon, a long rollout (Figure 3) with its physics, figures and a report."""

import os
import shutil
import tempfile

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

from ..config.bounded import read_json
from ..config.sources import accepts_trust_code
from ..data.horizons import EvaluationWindows, Horizon, cut_windows, parse_horizon
from ..models import physics_prior
from ..rollout import rollout_solution
from ..run import load_recordings, load_run, save_json
from ..run.files import GIVEN_PHYSICS, load_tree, sha256_file, writable_folder
from ..run.load import split_checkpoint_path
from ..systems.base import AbstractLagrangianDynamics
from .metrics import (
    amplitudes,
    energy_error,
    error_versus_time,
    hold_errors,
    horizon_errors,
    in_bin,
    in_region,
    outside_share,
    quantile_edges,
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


PRIOR = "physics (prior)"
GIVEN = "physics (as given)"
KNOWN = "known physics"
HOLD = "hold initial state"
# What `evaluate_run` writes: an output folder holding anything else is not replaced.
OUTPUTS = (
    "metrics.json",
    "report.md",
    "window_errors.png",
    "error_vs_horizon.png",
    "long_rollout.png",
    "phase_portrait.png",
    "energy.png",
    "learned_force.png",
)
# `--control` adds a closed-loop figure per task: control_TASK.png.
CONTROL_FIGURE_PREFIX = "control_"
COVERAGE_WARNING = 0.05


def baseline(model, input_history: int = 0) -> tuple[str, object]:
    """The physics a model is measured against, with its label: the model's own prior (`physics_prior`: its
    friction and learned parameters kept, its network removed), or for a model without physics of its own the
    known mechanics alone, fed the same (history-extended) inputs."""
    prior = physics_prior(model)
    if prior is not None:
        return PRIOR, prior
    return KNOWN, model.known_mechanics(input_history)


def given_physics(run):
    """The physics as the run's config gave it, before identification (checkpoints/given.eqx, which a run
    that identified its physics keeps), or None."""
    path = os.path.join(run.path, "checkpoints", GIVEN_PHYSICS)
    prior = physics_prior(run.model)
    if prior is None or not os.path.isfile(path):
        return None
    return load_tree(path, prior)


def window_error_samples(model, base, integrator, windows, angles) -> dict:
    """Per-window |error| (W, k, 2n) of the model, of its baseline physics and of holding the initial state.
    `base` is (label, model) as from `baseline`."""
    label, physics = base
    return {
        "model": eqx.filter_jit(window_errors)(model, integrator, windows, angles),
        label: eqx.filter_jit(window_errors)(physics, integrator, windows, angles),
        HOLD: hold_errors(windows, angles),
    }


def ratios(errors: dict, label: str) -> dict:
    """model / baseline per state variable, of the mean error over the window and of the error at its end
    (< 1: the learned parts help; non-finite where the baseline's error is 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return {
            n: {
                key: float(np.float64(errors["model"][n][m]) / errors[label][n][m])
                for key, m in (("mean", "mean"), ("final", "final_mean"))
            }
            for n in errors["model"]
        }


def _mean_per_variable(final, mask, names) -> dict | None:
    if not mask.any():
        return None
    return dict(zip(names, final[mask].mean(0).tolist(), strict=True))


def region_errors(errs: dict, ends, q0, qd0, names, angles, *, bins, regions, label) -> dict:
    """End-of-window errors of the model and its baseline, split by the windows' initial state.

    - `amplitude`: per state variable, bins of its initial |q| (an angle's wrapped distance from 0) or |q̇|:
      `bins` equal-count bins, or {variable: edges};
    - `named`: the config's `evaluation.regions` {name: {variable: [centre, radius]}}.

    Each entry gives the window count and the mean |error| at the horizon per state variable (None when empty).
    """
    final = {k: horizon_errors(errs[k], ends)[1] for k in ("model", label)}
    amp = amplitudes(q0, qd0, angles)
    names = list(names)
    unknown = [v for v in (bins if isinstance(bins, dict) else {}) if v not in names]
    if unknown:
        raise ValueError(
            f"evaluation.amplitude_bins: no state variable {unknown[0]!r} (the system's: {names})"
        )

    def entry(mask, **where):
        return {
            **where,
            "windows": int(mask.sum()),
            "model": _mean_per_variable(final["model"], mask, names),
            "prior": _mean_per_variable(final[label], mask, names),
        }

    amplitude = []
    for i, name in enumerate(names):
        if isinstance(bins, dict) and name not in bins:
            continue
        edges = (
            np.asarray(bins[name], float)
            if isinstance(bins, dict)
            else quantile_edges(amp[:, i], bins)
        )
        for j in range(len(edges) - 1):
            low, high = float(edges[j]), float(edges[j + 1])
            mask = in_bin(amp[:, i], low, high, last=j == len(edges) - 2)
            amplitude.append(entry(mask, variable=name, low=low, high=high))
    named = []
    wrapped = np.concatenate([np.asarray(angles, bool), np.zeros(len(angles), bool)])
    states = np.concatenate([np.asarray(q0, float), np.asarray(qd0, float)], axis=-1)
    for region, bounds in regions.items():
        centres, radii = np.zeros(len(names)), np.full(len(names), np.nan)
        for var, (centre, radius) in bounds.items():
            if var not in names:
                raise ValueError(
                    f"evaluation.regions.{region}.{var}: no state variable {var!r} "
                    f"(the system's: {names})"
                )
            centres[names.index(var)], radii[names.index(var)] = centre, radius
        mask = in_region(states, centres, radii, wrapped)
        named.append(entry(mask, name=region, bounds={k: list(v) for k, v in bounds.items()}))
    return {"amplitude": amplitude, "named": named}


def coverage(config, system, trajs) -> dict:
    """The share of the evaluation's states outside the range of the training states, per state variable
    (the training files' samples; an angle's range is the shortest arc holding them)."""
    try:
        train = load_recordings(config, system, config.data.train)
    except (OSError, ValueError) as e:
        return {"error": f"the training data could not be read: {e}"}
    names, n = system.state_names, system.n_dof
    train_states = np.concatenate([np.concatenate([t.q, t.qd], 1) for t in train])
    test_states = np.concatenate([np.concatenate([t.q, t.qd], 1) for t in trajs])
    per = {}
    for i, name in enumerate(names):
        share, (low, high) = outside_share(
            train_states[:, i], test_states[:, i], i < n and system.angles[i]
        )
        per[name] = {"outside": share, "train_low": low, "train_high": high}
        if i < n and system.angles[i]:
            # An arc: train_high may exceed π (the arc crosses ±π); its length says how much it covers.
            per[name]["arc_length"] = high - low
    worst = max(per, key=lambda k: per[k]["outside"])
    outside = [k for k in names if per[k]["outside"] > COVERAGE_WARNING]
    warning = None
    if outside:
        warning = (
            "the evaluation data leave the training states' range: "
            + ", ".join(f"{k} {100 * per[k]['outside']:.1f} %" for k in outside)
            + f" of the test states (over {100 * COVERAGE_WARNING:g} %): errors there measure "
            "extrapolation"
        )
    return {
        "train_data": list(config.data.train),
        "test_states": int(test_states.shape[0]),
        "variables": per,
        "worst": worst,
        "warning": warning,
    }


def checkpoint_file(run_dir: str) -> tuple[str, str]:
    """The run folder and the checkpoint an evaluation of `run_dir` (RUN or RUN/checkpoints/NAME.eqx) reads,
    relative to the run: (RUN, "checkpoints/NAME.eqx")."""
    folder, which = split_checkpoint_path(run_dir)
    return folder, os.path.join("checkpoints", f"{which}.eqx")


def stale_evaluation(run_dir: str, metrics: dict) -> str | None:
    """Why `metrics` no longer describe the checkpoint they name (the run was trained further), or None."""
    checkpoint = metrics.get("checkpoint") or {}
    recorded, file = checkpoint.get("sha256"), checkpoint.get("file")
    if recorded is None or file is None:
        return None
    current = sha256_file(os.path.join(run_dir, file))
    if current is None or recorded == current:
        return None
    return (
        f"{run_dir}: its evaluation is of an older {file} (sha256 {recorded[:12]}…, now {current[:12]}…: "
        f"the run was trained further, e.g. with --resume); evaluate it again with `lagnet evaluate {run_dir}`"
    )


def training_notes(run_dir: str) -> dict:
    """What summary.json says of the physics' identification and of a fallback to the physics, when present."""
    try:
        summary = read_json(os.path.join(run_dir, "summary.json"), "a run's summary")
    except (OSError, ValueError):
        return {}
    if not isinstance(summary, dict):
        return {}
    keys = ("identification", "fallback", "at_bound", "collapsed")
    return {k: summary[k] for k in keys if summary.get(k) not in (None, [])}


def end_errors(models: dict, integrators, cut: EvaluationWindows) -> dict:
    """Mean |error| at the end of each window of `cut` (its first horizon), per prediction and state variable:
    {label: {variable: error}} for each model of `models` {label: model}, stepped by `integrators` {label:
    integrator} (or one integrator for all)."""
    out = {}
    for label, model in models.items():
        integrator = integrators[label] if isinstance(integrators, dict) else integrators
        errs = eqx.filter_jit(window_errors)(model, integrator, cut.windows, model.angles)
        final = horizon_errors(errs, cut.ends[0])[1].mean(0)
        out[label] = dict(zip(model.state_names, final.tolist(), strict=True))
    return out


def _prepare_output(out_dir: str) -> str:
    """A new temporary folder next to `out_dir` for the evaluation's files (refusing an `out_dir` that holds
    files the evaluation does not write: they would be replaced with it)."""
    check_writable(out_dir, "the evaluation")
    if os.path.isdir(out_dir):
        foreign = sorted(
            e
            for e in os.listdir(out_dir)
            if e not in OUTPUTS and not (e.startswith(CONTROL_FIGURE_PREFIX) and e.endswith(".png"))
        )
        if foreign:
            raise ValueError(
                f"{out_dir} holds files that an evaluation does not write ({', '.join(foreign[:5])}): the "
                "evaluation replaces its folder as a whole, so give --out a new or empty folder"
            )
    parent = os.path.dirname(os.path.abspath(out_dir))
    os.makedirs(parent, exist_ok=True)
    # What an evaluation killed before it finished left behind: folders of this prefix are only ever ours.
    prefix = _temporary_prefix(out_dir)
    for name in os.listdir(parent):
        if name.startswith(prefix):
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
    return tempfile.mkdtemp(dir=parent, prefix=prefix)


def _temporary_prefix(out_dir: str) -> str:
    # Not the `.tmp-` of atomic file writes: a run's writer deletes those as files, and these are folders.
    return f".{os.path.basename(os.path.abspath(out_dir))}-partial-"


def _publish(tmp: str, out_dir: str) -> None:
    """Put the folder `tmp` in the place of `out_dir` by renames: a kill at any moment leaves either the old
    evaluation or the new one whole under `out_dir` (or, between the two renames, none), never a mix."""
    os.chmod(tmp, 0o777 & ~_umask())
    old = None
    if os.path.lexists(out_dir):
        old = tempfile.mkdtemp(dir=os.path.dirname(tmp), prefix=f"{_temporary_prefix(out_dir)}old-")
        os.rename(out_dir, os.path.join(old, "previous"))
    os.rename(tmp, out_dir)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _umask() -> int:
    # The umask can only be read by setting it; it is restored at once.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


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


def long_rollout(model, base_model, integrator, w, spread, names, angles) -> tuple[dict, dict]:
    """A longer rollout from a measured state (the paper's Figure 3) and its physics: (metrics, traces)."""
    roll = eqx.filter_jit(rollout_solution)
    sol = roll(model, integrator, w.q[0], w.qd[0], w.u, w.dt)
    known = roll(base_model, integrator, w.q[0], w.qd[0], w.u, w.dt)
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
            {labels["model"]: (sol.qs, sol.qds), metrics["baseline"]: (known.qs, known.qds)},
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


def _options(ec, horizons, stride, long_horizon, windows, starts):
    """The evaluation's horizons, stride, long horizon and window count, parsed, with the config's defaults."""
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
    return horizons, stride, long_h, windows


def _window_metrics(run_dir, run, errs, cut, base, trajs, paths, checkpoint, sha, stride, starts):
    """metrics.json's window errors, per horizon, over time and by region (without the long rollout)."""
    config, system = run.config, run.model.system
    names, angles, label = system.state_names, system.angles, base[0]
    ec = config.evaluation
    per_horizon = horizon_metrics(errs, cut, names)
    for h in per_horizon:
        h["ratio_to_prior"] = ratios(h["errors"], label)
    # Every prediction's curve on the same time grid (it depends only on the windows' times).
    curves = {k: error_versus_time(v, cut.elapsed, cut.lengths) for k, v in errs.items()}
    regions = region_errors(
        errs,
        cut.ends[0],
        cut.windows.q[:, 0],
        cut.windows.qd[:, 0],
        names,
        angles,
        bins=ec.amplitude_bins,
        regions=ec.regions,
        label=label,
    )
    return {
        "run": run_dir,
        "model_type": config.model.type,
        "integrator": config.integrator.name,
        "system": config.system.name,
        "data": list(paths),
        "checkpoint": {"file": checkpoint, "sha256": sha},
        "units": system.state_units,
        "windows": len(cut.sources),
        "window_selection": _windows_description(stride, starts, config.seed),
        "baseline": label,
        # The first horizon's errors stay at the top level (what `lagnet compare` and older readers use).
        "horizon": per_horizon[0]["label"],
        "errors": per_horizon[0]["errors"],
        "ratio_to_prior": per_horizon[0]["ratio_to_prior"],
        "horizons": per_horizon,
        "error_vs_time": {
            "t": curves["model"][0].tolist(),
            "errors": {
                k: dict(zip(names, mean.T.tolist(), strict=True)) for k, (_, mean) in curves.items()
            },
        },
        "regions": {"horizon": per_horizon[0]["label"], **regions},
    }


def _write_outputs(metrics, errs, cut, traces, w, model, trajs, out_dir, plots, bar) -> dict:
    """metrics.json, the figures and report.md into `out_dir`, as one set; returns the figures' paths.

    Every file goes to a new folder that then takes the place of the old one: a killed evaluation never
    leaves new metrics beside an old report or old figures.
    """
    tmp = _prepare_output(out_dir)
    try:
        save_json(os.path.join(tmp, "metrics.json"), metrics)
        bar.update()
        figures = {}
        if plots:
            bar.set_postfix_str("figures")
            figures = write_figures(metrics, errs, cut, traces, w, model, trajs, tmp)
        from .report import write_report

        write_report(metrics, figures, os.path.join(tmp, "report.md"))
        _publish(tmp, out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {k: os.path.join(out_dir, os.path.basename(v)) for k, v in figures.items()}


@accepts_trust_code
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
    # Hashed before loading: the metrics name the checkpoint they were computed from.
    folder, checkpoint = checkpoint_file(run_dir)
    sha = sha256_file(os.path.join(folder, checkpoint))
    run = load_run(run_dir)
    model, config, integrator = run.model, run.config, run.integrator
    out_dir = out_dir or os.path.join(run_dir, "evaluation")
    check_writable(out_dir, "the evaluation")
    horizons, stride, long_h, windows = _options(
        config.evaluation, horizons, stride, long_horizon, windows, starts
    )
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
    base = baseline(model, config.model.setting("input_history"))

    bar.update()
    bar.set_postfix_str("window errors")
    errs = window_error_samples(model, base, integrator, cut.windows, angles)
    given = given_physics(run)
    if given is not None:
        # Beside the identified physics: what identification did to the model the config gave.
        errs[GIVEN] = eqx.filter_jit(window_errors)(given, integrator, cut.windows, angles)
    metrics = _window_metrics(
        run_dir, run, errs, cut, base, trajs, paths, checkpoint, sha, stride, starts
    )
    metrics["coverage"] = coverage(config, system, trajs)
    metrics.update(training_notes(folder))

    bar.update()
    bar.set_postfix_str("long rollout")
    long_cut = cut_windows(trajs, [long_h], count=1, seed=config.seed, dtype=dtype)
    w = jax.tree_util.tree_map(lambda x: x[0], long_cut.windows)
    spread = jnp.concatenate([jnp.std(cut.windows.q[:, 0], 0), jnp.std(cut.windows.qd[:, 0], 0)])
    metrics["long_rollout"], traces = long_rollout(
        model, base[1], integrator, w, spread, names, angles
    )
    metrics["long_rollout"]["start"] = long_cut.sources[0]
    figures = _write_outputs(metrics, errs, cut, traces, w, model, trajs, out_dir, plots, bar)
    bar.update()
    bar.close()
    metrics["written"] = [os.path.join(out_dir, f) for f in ("metrics.json", "report.md")] + list(
        figures.values()
    )
    return metrics

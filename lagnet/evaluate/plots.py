"""Figures and the Markdown report of an evaluation (matplotlib, written to PNG)."""

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..simulate import true_plant  # noqa: E402

# The generalised force conjugate to a coordinate in these units (torque on an angle, force on a length).
FORCE_UNITS = {"rad": "N·m", "m": "N"}


def _legend_above(fig, ax, ncol: int | None = None, top: float = 0.9, **kw) -> None:
    """One legend for the figure, above the panels (never on the data); the panels end at `top`."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        loc="upper center",
        ncol=ncol or len(labels),
        fontsize=8,
        frameon=False,
        **{"bbox_to_anchor": (0.5, 1.0)} | kw,
    )
    fig.tight_layout(rect=(0, 0, 1, top))


def plot_histograms(errors: dict, ends, units: dict, path: str, title: str) -> str:
    """Figure 4 of the paper: histograms of the per-window mean |error| up to the horizon, one panel per state
    variable. `errors`: label → (W, k, 2n); `ends`: (W,) the steps each window needs to reach the horizon."""
    from .metrics import horizon_errors

    names = list(units)
    fig, axs = plt.subplots(1, len(names), figsize=(3.2 * len(names), 3.0))
    axs = np.atleast_1d(axs)
    per_label = {k: horizon_errors(v, ends)[0] for k, v in errors.items()}
    for i, (ax, name) in enumerate(zip(axs, names, strict=True)):
        per = {k: v[:, i] for k, v in per_label.items()}
        # Log-spaced bins: the models' errors span orders of magnitude.
        allv = np.concatenate(list(per.values()))
        allv = allv[allv > 0]
        lo, hi = (np.percentile(allv, 0.5), np.percentile(allv, 99.5)) if allv.size else (1e-6, 1.0)
        bins = np.geomspace(lo, max(hi, lo * 10), 40)
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # labels on decades only
        for label, e in per.items():
            ax.hist(e, bins=bins, alpha=0.5, label=label)
        ax.set_xlabel(f"mean |error| {name} [{units[name]}]")
        ax.set_ylabel("windows")
    fig.suptitle(f"per-window mean |error| up to the horizon ({title})", fontsize=9, y=0.99)
    _legend_above(fig, axs[0], top=0.87, bbox_to_anchor=(0.5, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_error_versus_horizon(curves: dict, t, units: dict, marks, path: str) -> str:
    """Mean |error| over the windows against the time since the window's start, log–log, one panel per state
    variable; `curves`: label → {state name: errors at `t`}; dotted lines at the requested horizons."""
    names = list(units)
    cols = min(len(names), 4)
    rows = -(-len(names) // cols)
    fig, axs = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.9 * rows), squeeze=False)
    for i, name in enumerate(names):
        ax = axs[i // cols, i % cols]
        for j, (label, curve) in enumerate(curves.items()):
            ax.plot(t, curve[name], "-", lw=1.6 if j == 0 else 1.1, label=label)
        for m in marks:
            ax.axvline(m, color="0.6", ls=":", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("time since window start [s]")
        ax.set_ylabel(f"mean |error| {name} [{units[name]}]")
    for k in range(len(names), rows * cols):
        axs[k // cols, k % cols].set_visible(False)
    _legend_above(fig, axs[0, 0])
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_long_rollout(t, q, qd, predictions: dict, units: dict, path: str) -> str:
    """Figure 3 of the paper: long rollouts overlaid on the measurement, one panel per state variable.

    `predictions`: label → (qs, q̇s) from the same initial state with the recorded inputs.
    """
    names = list(units)
    true = np.concatenate([q, qd], axis=1)
    preds = {k: np.concatenate(v, axis=1) for k, v in predictions.items()}
    n = len(names)
    fig, axs = plt.subplots(2, n // 2, figsize=(max(3.4 * (n // 2), 5.5), 5.0), squeeze=False)
    for i, name in enumerate(names):
        ax = axs[i // (n // 2), i % (n // 2)]
        ax.plot(t, true[:, i], "k.", ms=2, label="measured")
        for j, (label, pred) in enumerate(preds.items()):
            ax.plot(
                t,
                pred[:, i],
                "-",
                lw=1.4 if j == 0 else 1.0,
                label=label,
                alpha=1 if j == 0 else 0.7,
            )
        ax.set_xlabel("t [s]")
        ax.set_ylabel(f"{name} [{units[name]}]")
    _legend_above(fig, axs[0, 0], markerscale=4)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_phase_portrait(q, qd, q_pred, qd_pred, units: dict, path: str) -> str:
    """Phase-space portrait (q_i, q̇_i) of the measured and the predicted long rollout, one panel per coordinate."""
    n = q.shape[1]
    names = list(units)
    fig, axs = plt.subplots(1, n, figsize=(max(3.4 * n, 5.5), 3.3), squeeze=False)
    for i in range(n):
        ax = axs[0, i]
        ax.plot(q[:, i], qd[:, i], "k.", ms=2, label="measured")
        ax.plot(q_pred[:, i], qd_pred[:, i], "-", lw=1.2, label="model")
        ax.set_xlabel(f"{names[i]} [{units[names[i]]}]")
        ax.set_ylabel(f"{names[n + i]} [{units[names[n + i]]}]")
    _legend_above(fig, axs[0, 0], markerscale=4)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_energy(t, e_measured, e_model, path: str) -> str:
    """The model's energy along its rollout and along the measurement, and their difference."""
    fig, axs = plt.subplots(1, 2, figsize=(8, 2.8))
    axs[0].plot(t, e_measured, "k.", ms=2, label="measured state")
    axs[0].plot(t, e_model, "-", lw=1.2, label="model rollout")
    axs[0].set_ylabel("energy [J]")
    axs[1].plot(t, e_model - e_measured, "-", lw=1.2)
    axs[1].set_ylabel("energy error [J]")
    for ax in axs:
        ax.set_xlabel("t [s]")
    _legend_above(fig, axs[0], markerscale=4)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_learned_parts(model, trajs, units: dict, path: str) -> str | None:
    """What the model learned against the truth where the data's generator is known.

    PINODE: the learned non-conservative force on each coordinate against its velocity over the measured samples,
    with the simulated rig's unmodelled forces at the same states. Learned potential: V_θ against the known V.
    Returns None for models without learned forces.
    """
    import jax
    import jax.numpy as jnp

    parts = model.learned_parts()
    if "potential" in parts:
        n = model.system.n_dof
        if n != 1:
            return None
        grid = jnp.linspace(-np.pi, np.pi, 200)[:, None]
        learned = np.asarray(jax.vmap(model.learned_potential)(grid))
        true = np.asarray(jax.vmap(model.system.potential_energy)(grid))
        fig, ax = plt.subplots(figsize=(5.5, 3.3))
        ax.plot(grid[:, 0], true - true.mean(), "k--", label="known V")
        ax.plot(grid[:, 0], learned - learned.mean(), "-", label="learned $V_\\theta$")
        ax.set_xlabel(f"{model.system.coordinate_names[0]} [{model.system.coordinate_units[0]}]")
        ax.set_ylabel("V − mean [J]")
        _legend_above(fig, ax)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return path
    if "force" not in parts:
        return None
    traj = trajs[0]
    step = max(traj.n_rows // 4000, 1)
    q, qd, u = (jnp.asarray(x[::step]) for x in (traj.q, traj.qd, traj.u))
    learned = np.asarray(jax.vmap(model.learned_force)(q, qd, u.astype(q.dtype)))
    plant = true_plant(traj.meta)
    true = np.asarray(jax.vmap(plant.unmodelled_force)(q, qd)) if plant is not None else None
    names = model.system.coordinate_names
    fig, axs = plt.subplots(1, len(names), figsize=(max(3.6 * len(names), 5.5), 3.3), squeeze=False)
    for i, name in enumerate(names):
        ax = axs[0, i]
        ax.plot(
            np.asarray(qd[:, i]),
            learned[:, i],
            ".",
            ms=1.5,
            alpha=0.5,
            label="learned Q (friction + network)",
        )
        if true is not None:
            ax.plot(
                np.asarray(qd[:, i]),
                true[:, i],
                "k.",
                ms=1,
                alpha=0.5,
                label="rig's unmodelled forces",
            )
        ax.set_xlabel(f"{name}_dot [{units[name + '_dot']}]")
        ax.set_ylabel(f"generalised force on {name} [{FORCE_UNITS.get(units[name], '?')}]")
    _legend_above(fig, axs[0, 0], markerscale=5)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path

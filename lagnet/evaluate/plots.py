"""Figures and the Markdown report of an evaluation (matplotlib, written to PNG)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..simulate import true_plant  # noqa: E402

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
            ax.plot(
                t,
                pred[:, i],
                "-",
                lw=1.4 if j == 0 else 1.0,
                label=label,
                alpha=1 if j == 0 else 0.7,
            )
        ax.set_xlabel("t [s]")
        ax.set_ylabel(f"{name} [{unit(name)}]")
    axs[0, 0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_phase_portrait(q, qd, q_pred, qd_pred, system, path: str) -> str:
    """Phase-space portrait (q_i, q̇_i) of the measured and the predicted long rollout, one panel per coordinate."""
    n = q.shape[1]
    fig, axs = plt.subplots(1, n, figsize=(3.4 * n, 3.0), squeeze=False)
    for i, name in enumerate(system.coordinate_names):
        ax = axs[0, i]
        ax.plot(q[:, i], qd[:, i], "k.", ms=2, label="measured")
        ax.plot(q_pred[:, i], qd_pred[:, i], "-", lw=1.2, label="model")
        ax.set_xlabel(f"{name} [{unit(name)}]")
        ax.set_ylabel(f"{name}_dot [{unit(name + '_dot')}]")
    axs[0, 0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_energy(t, e_measured, e_model, path: str) -> str:
    """The model's energy along its rollout and along the measurement, and their difference."""
    fig, axs = plt.subplots(1, 2, figsize=(8, 2.8))
    axs[0].plot(t, e_measured, "k.", ms=2, label="measured state")
    axs[0].plot(t, e_model, "-", lw=1.2, label="model rollout")
    axs[0].set_ylabel("energy [J]")
    axs[0].legend(fontsize=7)
    axs[1].plot(t, e_model - e_measured, "-", lw=1.2)
    axs[1].set_ylabel("energy error [J]")
    for ax in axs:
        ax.set_xlabel("t [s]")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_learned_parts(model, trajs, path: str) -> str | None:
    """What the model learned against the truth where the data's generator is known.

    PINODE: the learned non-conservative force on each coordinate against its velocity over the measured samples,
    with the simulated rig's unmodelled forces at the same states. Learned potential: V_θ against the known V.
    Returns None for models without learned forces.
    """
    import jax
    import jax.numpy as jnp

    from ..models import PINODE, LearnedPotential

    if isinstance(model, LearnedPotential):
        n = model.system.n_dof
        if n != 1:
            return None
        grid = jnp.linspace(-np.pi, np.pi, 200)[:, None]
        learned = np.asarray(jax.vmap(model.learned_potential)(grid))
        true = np.asarray(jax.vmap(model.system.potential_energy)(grid))
        fig, ax = plt.subplots(figsize=(4.2, 3))
        ax.plot(grid[:, 0], true - true.mean(), "k--", label="known V")
        ax.plot(grid[:, 0], learned - learned.mean(), "-", label="learned $V_\\theta$")
        ax.set_xlabel(f"{model.system.coordinate_names[0]} [rad]")
        ax.set_ylabel("V − mean [J]")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return path
    if not isinstance(model, PINODE) or (model.network is None and model.friction is None):
        return None
    traj = trajs[0]
    step = max(traj.n_rows // 4000, 1)
    q, qd, u = (jnp.asarray(x[::step]) for x in (traj.q, traj.qd, traj.u))
    learned = np.asarray(jax.vmap(model.nonconservative_force)(q, qd, u.astype(q.dtype)))
    plant = true_plant(traj.meta)
    true = np.asarray(jax.vmap(plant.unmodelled_force)(q, qd)) if plant is not None else None
    names = model.system.coordinate_names
    fig, axs = plt.subplots(1, len(names), figsize=(3.6 * len(names), 3), squeeze=False)
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
        ax.set_xlabel(f"{name}_dot [{unit(name + '_dot')}]")
        ax.set_ylabel(f"generalised force on {name}")
    axs[0, 0].legend(fontsize=6, markerscale=5)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path

"""Is the simulated cart-pole rig explained by the known model? The one-step residual acceleration says no.

From the shipped recording (`data/sim/cartpole_train.npz`, measured: sensor noise, quantisation, differenced
velocities) the data acceleration at sample k is the difference of consecutive measured velocities,

    a_k = (q̇_{k+1} − q̇_k) / dt   (= the second difference of the measured positions),

and the known model's is `CartPole.acceleration(q_k, v_k, u)` with v_k = (q̇_k + q̇_{k+1}) / 2 and the logged
input averaged over the two steps. Their difference, premultiplied by M(q_k), is the generalised force the model
is missing: r = M(q) (a_data − a_model), which a friction model Q_θ(q, q̇, u) has to learn. The rig is then
regenerated from the file's own metadata (generator, parameters, seed; checked bit for bit against the file)
with its noise-free truth, to show the same residual without the sensor noise.

Run:  .venv/bin/python experiments/cartpole_residual.py   → experiments/out/cartpole_residual.png
"""

from pathlib import Path

import jax
import jax.numpy as jnp
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import lagnet.data as ld  # noqa: E402
from lagnet.simulate import rig_from_meta  # noqa: E402

jax.config.update("jax_enable_x64", True)
OUT = Path(__file__).resolve().parent / "out"


def residual_force(system, q, qd, u, a):
    """r = M(q) (a − a_model(q, q̇, u)) for every row."""

    def one(q, qd, u, a):
        return system.mass_matrix(q) @ (a - system.acceleration(q, qd, u))

    return np.asarray(
        jax.vmap(one)(jnp.asarray(q), jnp.asarray(qd), jnp.asarray(u), jnp.asarray(a))
    )


def binned(v, r, edges):
    idx = np.digitize(v, edges) - 1
    centres, means, errs = [], [], []
    for b in range(len(edges) - 1):
        sel = idx == b
        if sel.sum() >= 50:
            centres.append(0.5 * (edges[b] + edges[b + 1]))
            means.append(r[sel].mean())
            errs.append(r[sel].std() / np.sqrt(sel.sum()))
    return np.array(centres), np.array(means), np.array(errs)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    (tr,) = ld.load_dataset("cartpole_train")
    system = ld.dataset_system("cartpole_train")
    dt = float(np.median(tr.dt))

    # Measured: differences of consecutive measured velocities.
    k = np.arange(1, tr.n_rows - 1)  # rows with a sample on either side
    a = (tr.qd[k + 1] - tr.qd[k]) / dt
    v = 0.5 * (tr.qd[k] + tr.qd[k + 1])
    u = 0.5 * (tr.u[k - 1] + tr.u[k])
    r_meas = residual_force(system, tr.q[k], v, u, a)
    a_model = np.asarray(jax.vmap(system.acceleration)(tr.q[k], v, u))

    # Least-squares fit of the paper's pure-ODE friction (Coulomb on the cart, viscous on the pole), eq. (13).
    m_tot = float(system.cart_mass + system.rod_mass + system.tip_mass)
    mu_c = -np.sum(r_meas[:, 0] * np.sign(v[:, 0])) / (m_tot * 9.81 * np.sum(np.sign(v[:, 0]) ** 2))
    mu_p = -np.sum(r_meas[:, 1] * v[:, 1]) / np.sum(v[:, 1] ** 2)

    # Truth: regenerate from the file's metadata, check it is the same recording, take exact accelerations.
    rig = rig_from_meta(tr.meta, strict=True)  # raises if the file's parameters are not this rig's
    cols, _ = rig.record(
        tr.meta["duration_s"], seed=tr.meta["seed"], recording=tr.meta["recording"], truth=True
    )
    raw, _ = ld.read_table(ld.dataset_path("cartpole_train"))
    same = all(
        np.array_equal(cols[c], raw[c]) for c in ("t", "x", "phi", "x_dot", "phi_dot", "force")
    )
    qt = np.stack([cols["true_x"], cols["true_phi"]], axis=1)
    vt = np.stack([cols["true_x_dot"], cols["true_phi_dot"]], axis=1)
    plant = rig.plant()
    at = np.asarray(jax.vmap(plant.acceleration)(qt, vt, cols["true_force"][:, None]))
    r_true = residual_force(system, qt, vt, cols["force"][:, None], at)
    # The same with the force the actuator really applied: what is left is the plant's own (friction, inertia).
    r_plant = residual_force(system, qt, vt, cols["true_force"][:, None], at)
    friction = np.asarray(jax.vmap(plant.unmodelled_force)(qt, vt))

    fig, axes = plt.subplots(2, 2, figsize=(10, 7.5))
    specs = [
        (0, "cart", r"$\dot x$ (m/s)", "x_dot", "N", np.linspace(-1.6, 1.6, 41)),
        (1, "pole", r"$\dot\varphi$ (rad/s)", "phi_dot", "N m", np.linspace(-20, 20, 41)),
    ]
    print(
        f"cartpole_train: {tr.n_rows} samples at {1 / dt:.0f} Hz; regenerated bit for bit: {same}"
    )
    for j, name, vlabel, vname, unit, edges in specs:
        for row, (vel, r, label) in enumerate(
            [
                (v[:, j], r_meas[:, j], "measured (noisy)"),
                (vt[:, j], r_true[:, j], "noise-free truth"),
            ]
        ):
            ax = axes[row, j]
            ax.plot(vel, r, ".", ms=1, alpha=0.15, color="0.5", rasterized=True)
            c, m, e = binned(vel, r, edges)
            ax.errorbar(c, m, e, fmt="o-", ms=3, color="C3", lw=1.2, label="binned mean ± s.e.")
            vv = np.linspace(edges[0], edges[-1], 801)
            law = -np.asarray(jax.vmap(plant.forces[j].magnitude)(vv))
            ax.plot(vv, law, "C0", lw=1.5, label="rig friction law")
            paper = -mu_c * m_tot * 9.81 * np.sign(vv) if j == 0 else -mu_p * vv
            ax.plot(vv, paper, "k--", lw=1, label="paper's model, least squares")
            if row == 1:
                cp, mp, ep = binned(vel, r_plant[:, j], edges)
                ax.errorbar(
                    cp, mp, ep, fmt="s-", ms=3, color="C2", lw=1.2,
                    label="binned, with the applied (not the logged) force",
                )  # fmt: skip
                ax.legend(fontsize=7, loc="upper right")
            lim = {0: 2.0, 1: 0.05}[j] if row == 0 else {0: 2.0, 1: 0.04}[j]
            ax.set_ylim(-lim, lim)
            ax.set_xlim(edges[0], edges[-1])
            ax.axhline(0, color="k", lw=0.4)
            ax.set_xlabel(vlabel)
            ax.set_ylabel(f"residual force on {name} ({unit})")
            ax.set_title(f"{name}: M(q)(q̈_data − q̈_CartPole), {label}", fontsize=9)
            if row == 0 and j == 0:
                ax.legend(fontsize=7, loc="upper right")
            # Numbers: the binned residual at moderate speeds, and how much a friction law explains.
            pos = m[(c > 0.1 * edges[-1]) & (c < 0.5 * edges[-1])].mean()
            neg = m[(c < 0.1 * edges[0]) & (c > 0.5 * edges[0])].mean()
            print(
                f"  {name:4s} {label:17s}: mean residual {pos:+.4f} {unit} for {vname} > 0, "
                f"{neg:+.4f} {unit} for <0 (binned, 10-50% of range); rms {np.sqrt(np.mean(r**2)):.4f}"
            )
        ss_tot = np.sum((r_true[:, j] - r_true[:, j].mean()) ** 2)
        paper_force = -mu_c * m_tot * 9.81 * np.sign(vt[:, 0]) if j == 0 else -mu_p * vt[:, 1]
        ss_plant = np.sum((r_plant[:, j] - r_plant[:, j].mean()) ** 2)
        for what, pred in (
            ("rig's friction law", friction[:, j]),
            ("paper's friction", paper_force),
        ):
            r2 = 1 - np.sum((r_true[:, j] - pred) ** 2) / ss_tot
            r2p = 1 - np.sum((r_plant[:, j] - pred) ** 2) / ss_plant
            print(
                f"  {name:4s} truth: R^2 of the {what}: {r2:.3f} on the residual with the logged "
                f"force, {r2p:.3f} with the applied force"
            )
    print(
        f"  least-squares friction of the paper's model on this data: mu_c = {mu_c:.4f} "
        f"(paper 0.0408), mu_p = {mu_p:.5f} N m s (paper 0.0020)"
    )
    print(
        "  rms residual / rms model acceleration (measured): "
        + ", ".join(
            f"{n} {np.sqrt(np.mean((a[:, i] - a_model[:, i]) ** 2)) / np.sqrt(np.mean(a_model[:, i] ** 2)):.2f}"
            for i, n in enumerate(("x", "phi"))
        )
    )
    fig.suptitle(
        "Simulated cart-pole rig: what CartPole (Table 2, no friction) does not explain",
        fontsize=11,
    )
    fig.tight_layout()
    path = OUT / "cartpole_residual.png"
    fig.savefig(path, dpi=130)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

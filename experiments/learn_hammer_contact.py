"""Learning the hammer's contact law with a PINODE whose known part is the linear oscillator and a free hammer.

Data: the true `Hammer` (lecture parameters: ω_H = 3000, α = 3, M_r = 0.2, 400 Hz target) stepped by `Leapfrog`
at 44.1 kHz for strike speeds 0.25, 0.5, 1, 2, 4. Model: `PINODE(Hammer(contact=False),
network=ContactNetwork(...), force_on=(0, 1))`, i.e. the known oscillator and hammer plus equal and opposite
learned forces ±f_θ(δ) of the compression δ = u_H − u, with the one-sided structure f_θ = f_s [δ/δ_s]_+
softplus(g_θ) (pushes only, only in contact). Trained on one-step windows through the same scheme
(`lagnet.train.loss.batch_loss`). Reported: the law's error over the compressions the data visit, the exponent α
fitted to the learned law (true 3), and a held-out strike at speed 2.5: contact time and peak force.

Run:  .venv/bin/python experiments/learn_hammer_contact.py   → experiments/out/learn_hammer_contact.png
"""

import time
from pathlib import Path

import jax
import jax.numpy as jnp
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _learn import concatenate_windows, one_step_windows, train  # noqa: E402

from lagnet.integrators import Leapfrog  # noqa: E402
from lagnet.models import PINODE, StateFeatures  # noqa: E402
from lagnet.models.lecture.passive import ContactNetwork  # noqa: E402
from lagnet.rollout import rollout  # noqa: E402
from lagnet.systems.lecture.hammer import Hammer, contact_force  # noqa: E402
from lagnet.train.loss import StateLoss  # noqa: E402

jax.config.update("jax_enable_x64", True)
OUT = Path(__file__).resolve().parent / "out"

FS = 44100
K = 1.0 / FS
TRAIN_SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0)
TEST_SPEED = 2.5
STEPS = 400


def strike(model, integrator, speed, steps=STEPS):
    q0, qd0 = jnp.array([0.0, -1e-4]), jnp.array([0.0, speed])
    return rollout(model, integrator, q0, qd0, jnp.zeros((steps, 0)), K, throw=False)


def generate(truth, integrator):
    """One-step windows in or next to contact, plus every 10th free step (so f_θ ≈ 0 out of contact is seen)."""
    rows, compressions = [], []
    for v in TRAIN_SPEEDS:
        qs, qds = strike(truth, integrator, v)
        delta = np.asarray(qs[:, 1] - qs[:, 0])
        near = (delta[:-1] > -2e-5) | (delta[1:] > -2e-5)
        keep = np.flatnonzero(near | (np.arange(STEPS) % 10 == 0))
        rows.append(one_step_windows(qs, qds, jnp.zeros((STEPS, 0)), K, keep))
        compressions.append(delta[delta > 0])
    batch = concatenate_windows(rows)
    return batch, np.concatenate(compressions)


def contact_stats(qs, force):
    on = np.nonzero(force > 1e-9 * force.max())[0]
    return 1e3 * (on[-1] - on[0] + 1) * K, force.max()


def main():
    t0 = time.perf_counter()
    truth = Hammer()
    integrator = Leapfrog(
        implicit_kick=False
    )  # the learned force depends on q only: the explicit scheme
    batch, deltas = generate(truth, integrator)
    t_data = time.perf_counter() - t0

    net = ContactNetwork(
        compression_scale=3e-4, force_scale=1e4, width=32, depth=2, key=jax.random.key(0)
    )
    model = PINODE(
        Hammer(contact=False),
        network=net,
        features=StateFeatures((False, False), 0),
        force_on=(0, 1),
    )
    loss = StateLoss((False, False), jnp.zeros(2), jnp.ones(2), jnp.ones(2), jnp.full(2, K * 1e3))
    model, history = train(model, integrator, loss, batch, steps=2000, lr=3e-3, decay=0.02)
    t_train = time.perf_counter() - t0 - t_data

    grid = np.linspace(0.0, deltas.max(), 400)
    true_law = np.asarray(contact_force(jnp.asarray(grid), truth.omega_h, truth.alpha))
    learned = np.asarray(jax.vmap(model.network.law)(jnp.asarray(grid)))
    lo, hi = np.quantile(deltas, [0.05, 1.0])
    sel = (grid >= lo) & (grid <= hi)
    rel = np.sqrt(np.mean((learned[sel] - true_law[sel]) ** 2) / np.mean(true_law[sel] ** 2))
    fit = (
        grid >= 0.25 * deltas.max()
    )  # where the forces are large enough to be determined by the data
    alpha_fit = np.polyfit(np.log(grid[fit]), np.log(np.maximum(learned[fit], 1e-30)), 1)[0]
    negative = np.asarray(jax.vmap(model.network.law)(jnp.linspace(-1e-3, 0.0, 101)))

    qs_t, _ = strike(truth, integrator, TEST_SPEED)
    qs_l, _ = strike(model, integrator, TEST_SPEED)
    f_t = np.asarray(jax.vmap(truth.force)(qs_t))
    f_l = np.asarray(jax.vmap(lambda q: model.network.law(q[1] - q[0]))(qs_l))
    (ct, pt), (cl, pl) = contact_stats(qs_t, f_t), contact_stats(qs_l, f_l)
    u_err = np.sqrt(
        np.mean((np.asarray(qs_l[:, 0] - qs_t[:, 0])) ** 2) / np.mean(np.asarray(qs_t[:, 0]) ** 2)
    )

    print(
        f"hammer contact law: {len(batch)} one-step windows from {len(TRAIN_SPEEDS)} strikes; "
        f"compressions up to {deltas.max():.2e}"
    )
    print(
        f"  final loss {history[-20:].mean():.2e}; relative RMS error of the law (data range) {rel:.2e}"
    )
    print(
        f"  fitted exponent α of the learned law {alpha_fit:.3f} (true {float(truth.alpha):g}); "
        f"max |f_θ| for δ ≤ 0: {np.abs(negative).max():.1e}"
    )
    print(
        f"  held-out strike at speed {TEST_SPEED}: contact {ct:.3f} ms true | {cl:.3f} ms learned, "
        f"peak force {pt:.0f} | {pl:.0f}, relative RMS error of the target's u {u_err:.2e}"
    )
    print(
        f"runtime: data {t_data:.1f} s, training 2000 steps {t_train:.1f} s, total {time.perf_counter() - t0:.1f} s"
    )

    fig, axs = plt.subplots(1, 3, figsize=(9.6, 2.9))
    ax = axs[0]
    ax.plot(1e3 * grid, true_law, "k", lw=2, label="true $\\omega_H^{4}[\\delta]_+^3$")
    ax.plot(
        1e3 * grid,
        learned,
        color="tab:blue",
        lw=1.3,
        ls="--",
        label=f"learned (rel. err {rel:.1e}, $\\alpha\\approx${alpha_fit:.2f})",
    )
    ax.set_xlabel("compression $\\delta$ (mm)")
    ax.set_ylabel("force")
    ax.set_title("contact law", fontsize=9)
    ax.legend(fontsize=6.5)
    ax = axs[1]
    ax.semilogy(history, lw=0.8)
    ax.set_xlabel("training step")
    ax.set_title("one-step loss (full batch)", fontsize=9)
    ax = axs[2]
    t = 1e3 * np.arange(len(f_t)) * K
    ax.plot(t, f_t, "k", lw=1.8, label=f"true: {ct:.2f} ms")
    ax.plot(t, f_l, color="tab:blue", lw=1.2, ls="--", label=f"learned: {cl:.2f} ms")
    ax.set_xlim(0, 1.5)
    ax.set_xlabel("time (ms)")
    ax.set_title(f"held-out strike, speed {TEST_SPEED}: contact force", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    OUT.mkdir(exist_ok=True)
    fig.savefig(OUT / "learn_hammer_contact.png", dpi=130)
    print(f"wrote {OUT / 'learn_hammer_contact.png'}")


if __name__ == "__main__":
    main()

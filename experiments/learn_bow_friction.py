"""Learning the bow's friction curve φ with a PINODE whose known part is the linear oscillator.

Data: the true bowed oscillator (`BowedOscillator`, lecture parameters) stepped by `CentredImplicit` at 44.1 kHz
for bow speeds v_B ∈ {0.2, −0.15} and bow forces F_B ∈ {200, 500, 1000} (inputs u = (v_B, F_B)), 50 ms each
from rest. Model: `PINODE(BowedOscillator(friction=None), network=PassiveFriction(...))`, i.e.

    u'' = −ω0² u − F_B φ_θ(u' − v_B),

trained on one-step windows through the same centred scheme (`lagnet.train.loss.batch_loss`, Newton inside the
loss), with a passive network φ_θ(η) = (η/η_s) g_θ(η/η_s)² and, for comparison, an unconstrained one
φ_θ = g_θ. Reported: the error of φ_θ against the true φ where the data visit, the fraction of |η| ≤ 1.5 where
φ_θ(η) η < 0 (active, energy-creating friction), and a free rollout of the learned bow at F_B = 500 (its
frequency and amplitude; stick–slip is sensitive, so a small frequency error soon becomes a large phase error).

Run:  .venv/bin/python experiments/learn_bow_friction.py   → experiments/out/learn_bow_friction.png
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

from lagnet.integrators import CentredImplicit, centred_velocities  # noqa: E402
from lagnet.models import PINODE, StateFeatures  # noqa: E402
from lagnet.models.lecture.passive import PassiveFriction  # noqa: E402
from lagnet.rollout import rollout  # noqa: E402
from lagnet.systems.lecture.bowed import BowedOscillator, SoftFriction  # noqa: E402
from lagnet.train.loss import StateLoss  # noqa: E402

jax.config.update("jax_enable_x64", True)
OUT = Path(__file__).resolve().parent / "out"

FS = 44100
K = 1.0 / FS
OMEGA0 = 2 * np.pi * 200.0
SETTINGS = [(vb, fb) for vb in (0.2, -0.15) for fb in (200.0, 500.0, 1000.0)]
STEPS = int(0.05 * FS)


def generate(truth, scheme):
    """One-step windows (q0, q̇0, u, dt, q1, q̇1) from every trajectory, and the centred η of every step."""
    rows = []
    etas = []
    for vb, fb in SETTINGS:
        us = jnp.tile(jnp.array([vb, fb]), (STEPS, 1))
        qs, qds = rollout(truth, scheme, jnp.zeros(1), jnp.zeros(1), us, K)
        rows.append(one_step_windows(qs, qds, us, K))
        etas.append(centred_velocities(qds)[:, 0] - vb)
    batch = concatenate_windows(rows)
    return batch, np.concatenate([np.asarray(e) for e in etas])


def frequency(u):
    """From the upward zero crossings of the second half of a run (Hz)."""
    late = u[len(u) // 2 :]
    zc = np.nonzero((late[:-1] < 0) & (late[1:] >= 0))[0]
    return (len(zc) - 1) / ((zc[-1] - zc[0]) * K)


def main():
    t0 = time.perf_counter()
    friction = SoftFriction(100.0)
    truth = BowedOscillator(omega0=OMEGA0, friction=friction)
    scheme = CentredImplicit(max_iterations=12, rtol=0.0, atol=1e-12)
    batch, etas = generate(truth, scheme)
    t_data = time.perf_counter() - t0

    known = BowedOscillator(omega0=OMEGA0, friction=None)
    features = StateFeatures((False,), 2)  # raw (u, u', v_B, F_B): PassiveFriction scales η itself
    # Loss on the velocity only, scaled so that an error of one unit of F_B φ per step costs O(1).
    loss = StateLoss((False,), jnp.zeros(1), jnp.ones(1), jnp.ones(1), jnp.full(1, K * 500.0))
    key = jax.random.key(0)
    models, histories = {}, {}
    for name, passive in [("passive", True), ("unconstrained", False)]:
        net = PassiveFriction(eta_scale=0.1, passive=passive, width=32, depth=2, key=key)
        model = PINODE(known, network=net, features=features, force_on=(0,))
        models[name], histories[name] = train(
            model,
            scheme,
            loss,
            batch,
            steps=1500,
            lr=3e-3,
            decay=0.05,
            batch_size=512,
            key=jax.random.fold_in(key, 1),
        )
    t_train = time.perf_counter() - t0 - t_data

    lo, hi = np.quantile(etas, [0.005, 0.995])
    grid = np.linspace(-1.5, 1.5, 3001)
    inside = (grid >= lo) & (grid <= hi)
    true_phi = np.asarray(friction(jnp.asarray(grid)))
    curves = {n: np.asarray(jax.vmap(m.network.phi)(jnp.asarray(grid))) for n, m in models.items()}
    print(
        f"bow friction: {len(batch)} one-step windows from {len(SETTINGS)} runs; data η in "
        f"[{lo:.2f}, {hi:.2f}] (99% range)"
    )
    print(
        f"{'network':>14} {'final loss':>11} {'RMS φ err (data range)':>23} {'max φ err (data)':>17} "
        f"{'frac. φη<0 on |η|≤1.5':>22}"
    )
    stats = {}
    for name, c in curves.items():
        err = c[inside] - true_phi[inside]
        active = np.mean(c * grid < -1e-12)
        stats[name] = (np.sqrt(np.mean(err**2)), np.max(np.abs(err)), active)
        print(
            f"{name:>14} {histories[name][-50:].mean():11.2e} {stats[name][0]:23.2e} {stats[name][1]:17.2e} "
            f"{active:22.3f}"
        )

    # A free rollout of the learned bow at F_B = 500, v_B = 0.2 for 0.1 s against the truth.
    steps = int(0.1 * FS)
    us = jnp.tile(jnp.array([0.2, 500.0]), (steps, 1))
    u_true, _ = rollout(truth, scheme, jnp.zeros(1), jnp.zeros(1), us, K)
    u_learn, _ = rollout(models["passive"], scheme, jnp.zeros(1), jnp.zeros(1), us, K, throw=False)
    u_true, u_learn = np.asarray(u_true[:, 0]), np.asarray(u_learn[:, 0])
    f_true, f_learn = frequency(u_true), frequency(u_learn)
    a_true, a_learn = (
        1e3 * np.abs(u_true[steps // 2 :]).max(),
        1e3 * np.abs(u_learn[steps // 2 :]).max(),
    )
    print(
        f"free rollout 0.1 s at F_B = 500 (passive network): frequency {f_true:.1f} Hz true | {f_learn:.1f} Hz "
        f"learned, peak |u| {a_true:.3f} | {a_learn:.3f} mm"
    )
    print(
        f"runtime: data {t_data:.1f} s, training (2 networks × 1500 steps) {t_train:.1f} s, "
        f"total {time.perf_counter() - t0:.1f} s"
    )

    fig, axs = plt.subplots(2, 2, figsize=(7.6, 5.4))
    ax = axs[0, 0]
    ax.axvspan(lo, hi, color="0.92", lw=0, label="data range")
    ax.plot(grid, true_phi, "k", lw=2, label="true $\\phi$")
    ax.plot(
        grid,
        curves["passive"],
        color="tab:blue",
        lw=1.4,
        label=f"passive net (RMS err {stats['passive'][0]:.1e})",
    )
    ax.plot(
        grid,
        curves["unconstrained"],
        color="tab:orange",
        lw=1.2,
        ls="--",
        label=f"unconstrained (RMS err {stats['unconstrained'][0]:.1e})",
    )
    ax.set_xlabel("$\\eta = v_{\\mathrm{rel}}$")
    ax.set_title("learned friction curve", fontsize=9)
    ax.legend(fontsize=6.5, loc="lower right")
    ax = axs[0, 1]
    for name, col in [("passive", "tab:blue"), ("unconstrained", "tab:orange")]:
        ax.plot(
            grid,
            curves[name] * grid,
            color=col,
            lw=1.3,
            label=f"{name}: $\\phi\\eta<0$ on {100 * stats[name][2]:.0f}% of $|\\eta|\\leq1.5$",
        )
    ax.plot(grid, true_phi * grid, "k", lw=1)
    ax.axhline(0, color="gray", lw=0.5)
    ax.set_xlabel("$\\eta$")
    ax.set_title("passivity: $\\phi_\\theta(\\eta)\\,\\eta \\geq 0$", fontsize=9)
    ax.legend(fontsize=6.5)
    ax = axs[1, 0]
    for name, col in [("passive", "tab:blue"), ("unconstrained", "tab:orange")]:
        ax.semilogy(histories[name], color=col, lw=0.8, label=name)
    ax.set_xlabel("training step")
    ax.set_ylabel("one-step loss")
    ax.legend(fontsize=7)
    ax.set_title("training (one-step windows, centred scheme)", fontsize=9)
    ax = axs[1, 1]
    t = 1e3 * np.arange(len(u_true)) * K
    ax.plot(t, 1e3 * u_true, "k", lw=1.6, label="true")
    ax.plot(
        t,
        1e3 * u_learn,
        color="tab:blue",
        lw=1,
        ls="--",
        label=f"learned: {f_learn:.1f} Hz (true {f_true:.1f})",
    )
    ax.set_xlim(60, 100)
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("$u$ (mm)")
    ax.set_title("free rollout, $F_B = 500$", fontsize=9)
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    OUT.mkdir(exist_ok=True)
    fig.savefig(OUT / "learn_bow_friction.png", dpi=130)
    print(f"wrote {OUT / 'learn_bow_friction.png'}")


if __name__ == "__main__":
    main()

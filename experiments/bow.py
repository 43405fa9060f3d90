"""The bowed oscillator: the centred implicit scheme with a warm-started Newton solve, stick–slip, the sawtooth.

u'' = −ω0² u − F_B φ(u' − v_B) with the lecture's soft friction curve (σ = 100, f0 = 200 Hz, v_B = 0.2,
44.1 kHz), as `lagnet.systems.lecture.bowed.BowedOscillator` stepped by `lagnet.integrators.CentredImplicit` through
`lagnet.rollout`. Printed per bow force: the uniqueness bound k ≤ 2/(F_B max(−φ')), Newton iterations per
step, the fraction of time slipping, the oscillation frequency and amplitude (beside the lecture code's), and
the energy balance 𝔥^{n+½} − 𝔥^{n−½} = −k F_B φ(η)(η + v_B) (residual at rounding level).

Run:  .venv/bin/python experiments/bow.py   → experiments/out/bow.png
"""

import time
from pathlib import Path

import jax
import jax.numpy as jnp
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from lagnet.integrators import CentredImplicit, centred_velocities  # noqa: E402
from lagnet.rollout import rollout  # noqa: E402
from lagnet.systems.lecture.bowed import BowedOscillator, SoftFriction  # noqa: E402

jax.config.update("jax_enable_x64", True)
OUT = Path(__file__).resolve().parent / "out"

FS = 44100
K = 1.0 / FS
F0, VB, SIGMA = 200.0, 0.2, 100.0
FORCES = (200.0, 500.0, 1000.0)
# From running the lecture's code (its figure prints no numbers): slip fraction over 40–100 ms (|v_rel| > 0.05),
# frequency from upward zero crossings after 50 ms (Hz), peak |u| after 40 ms (mm).
LECTURE = {
    200.0: dict(slip=0.658, freq=182.7, peak=0.242),
    500.0: dict(slip=0.546, freq=142.1, peak=0.410),
    1000.0: dict(slip=0.409, freq=99.8, peak=0.711),
}


def bowed(system, scheme, bow_force, duration=0.1):
    """A rollout from rest with constant (v_B, F_B); returns t, u, v_rel (centred), and Newton iterations."""
    steps = int(duration * FS) - 2
    us = jnp.tile(jnp.array([VB, bow_force]), (steps, 1))
    q0 = qd0 = jnp.zeros(1)
    qs, qds = rollout(system, scheme, q0, qd0, us, K)
    v = centred_velocities(qds)  # (steps, 1)
    # Re-solve each step from its recorded state with the same warm start as in the rollout, to count iterations.
    warm = jnp.concatenate([qd0[None], v[:-1]])
    sols = jax.vmap(lambda q, qd, u, v0: scheme.solve(system, q, qd, u, K, v0))(
        qs[:-1], qds[:-1], us, warm
    )
    energy = jax.vmap(lambda a, b: system.discrete_energy(a, b, K))(qs[:-1], qs[1:])
    eta = v[:, 0] - VB
    supplied = -K * bow_force * system.friction(eta) * (eta + VB)
    balance = np.asarray(energy[1:] - energy[:-1] - supplied[1:])
    return dict(
        t=np.arange(len(qs)) * K,
        u=np.asarray(qs[:, 0]),
        vrel=np.asarray(eta),
        iterations=np.asarray(sols.iterations),
        converged=bool(jnp.all(sols.converged)),
        balance=np.max(np.abs(balance)) / np.max(np.abs(np.asarray(energy))),
    )


def measures(r):
    t, u, vrel = r["t"], r["u"], r["vrel"]
    sel = t[:-1] >= 0.04
    slip = np.mean(np.abs(vrel[sel]) > 0.05)
    late = u[t >= 0.05]
    zc = np.nonzero((late[:-1] < 0) & (late[1:] >= 0))[0]
    freq = (len(zc) - 1) / ((zc[-1] - zc[0]) * K)
    return slip, freq, 1e3 * np.abs(u[t >= 0.04]).max()


def main():
    friction = SoftFriction(SIGMA)
    system = BowedOscillator(omega0=2 * np.pi * F0, friction=friction)
    scheme = CentredImplicit(max_iterations=20, rtol=0.0, atol=1e-12)
    t0 = time.perf_counter()
    runs = {F: bowed(system, scheme, F) for F in FORCES}
    runtime = time.perf_counter() - t0

    print(f"bowed oscillator, f0 = {F0:g} Hz, v_B = {VB}, σ = {SIGMA:g}, k = 1/{FS}")
    print(f"max(−φ') = {float(friction.max_negative_slope()):.4f}")
    print(
        f"{'F_B':>6} {'k_max (bound)':>14} {'k/k_max':>8} {'Newton it. mean/max':>20} "
        f"{'slip frac lect|lagnet':>22} {'freq Hz lect|lagnet':>21} {'peak mm lect|lagnet':>21} "
        f"{'energy bal.':>11}"
    )
    for F, r in runs.items():
        kmax = float(system.max_step(F))
        slip, freq, peak = measures(r)
        lec = LECTURE[F]
        print(
            f"{F:6.0f} {kmax:14.3e} {K / kmax:8.3f} {r['iterations'].mean():12.2f} / {r['iterations'].max():<5d}"
            f" {lec['slip']:10.3f} | {slip:.3f} {lec['freq']:9.1f} | {freq:7.1f}"
            f" {lec['peak']:9.3f} | {peak:.3f}   {r['balance']:9.1e}"
            f"{'' if r['converged'] else '  NOT CONVERGED'}"
        )
    print(f"runtime {runtime:.2f} s (three runs of 0.1 s at 44.1 kHz, compile included)")

    fig = plt.figure(figsize=(6.4, 5.6))
    ax0 = fig.add_subplot(3, 3, 1)
    eta = np.linspace(-0.6, 0.6, 400)
    ax0.plot(eta, np.asarray(friction(jnp.asarray(eta))), color="k")
    ax0.axhline(0, color="gray", lw=0.4)
    ax0.axvline(0, color="gray", lw=0.4)
    ax0.set_title("friction $\\phi(v_{\\mathrm{rel}})$", fontsize=8)
    ax0.set_xticks([0])
    ax0.set_yticks([-1, 0, 1])

    ax1 = fig.add_subplot(3, 3, 2)
    v = np.linspace(-0.5, 0.5, 2001)
    F = 500.0
    kmax = float(system.max_step(F))
    v_steep = np.sqrt(1.5 / SIGMA)  # where −φ' is largest
    for k, col, lab in [(K, "steelblue", f"k = 1/{FS}"), (3 * kmax, "firebrick", "k = 3 k_max")]:
        # g(v) = 2v/k + F_B φ(v) + b, with b chosen so that a root sits where φ falls fastest.
        g = 2 / k * v + F * np.asarray(friction(jnp.asarray(v)))
        g = g - np.interp(v_steep, v, g)
        roots = np.count_nonzero(np.diff(np.sign(g)) != 0)
        ax1.plot(v, g / np.abs(g).max(), color=col, lw=1, label=f"{lab}: {roots} root(s)")
    ax1.axhline(0, color="gray", lw=0.4)
    ax1.set_title("$g(v)$: unique root iff $k\\leq k_{\\max}$", fontsize=8)
    ax1.set_xticks([0])
    ax1.set_yticks([0])
    ax1.legend(fontsize=5.5, loc="upper left")

    ax2 = fig.add_subplot(3, 3, 3)
    for F, col in zip(FORCES, ["lightsteelblue", "steelblue", "navy"], strict=True):
        u = runs[F]["u"][-600:]
        ax2.plot(
            1e3 * np.arange(600) * K, u / np.abs(u).max(), color=col, lw=1, label=f"$F_B$={F:g}"
        )
    ax2.set_title("bow force shapes the wave", fontsize=8)
    ax2.set_xticks([])
    ax2.set_yticks([])
    ax2.legend(fontsize=5.5, loc="lower left")

    r = runs[500.0]
    slip = np.abs(r["vrel"]) > 0.05
    t = 1e3 * r["t"]
    series = [(t, 1e3 * r["u"], "$u$ (mm)"), (t[:-1], r["vrel"], "$v_{\\mathrm{rel}}$")]
    for row, (tt, y, lab) in enumerate(series):
        ax = fig.add_subplot(3, 1, row + 2)
        ax.plot(tt, y, color="k", lw=1)
        ax.fill_between(t[:-1], y.min(), y.max(), where=slip, color="gray", alpha=0.25, lw=0)
        ax.set_ylabel(lab)
        ax.set_xlim(40, 100)
        if row == 0:
            ax.set_title(
                f"stick and slip at $F_B$ = 500 (shaded: slipping); lagnet CentredImplicit, "
                f"{r['iterations'].mean():.1f} Newton it./step",
                fontsize=8,
            )
            ax.set_xticks([])
        else:
            ax.set_xlabel("time (ms)")
    fig.tight_layout()
    OUT.mkdir(exist_ok=True)
    fig.savefig(OUT / "bow.png", dpi=130)
    print(f"wrote {OUT / 'bow.png'}")


if __name__ == "__main__":
    main()

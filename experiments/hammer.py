"""Hammer/mallet contact on an oscillator: contact time and force spectrum for three strike speeds.

The lecture's model (ω0 = 2π·400, M_r = 0.2, ω_H = 3000, α = 3, 44.1 kHz) as `lagnet.systems.lecture.hammer.Hammer`,
stepped by lagnet's explicit `Leapfrog` (its positions obey the lecture's central difference
u^{n+1} = 2u^n − u^{n−1} + k² a(u^n) exactly). A harder strike gives a shorter contact and a brighter force
spectrum; the discrete energy 𝔥 is conserved to rounding out of contact and changes only by a small jump across
the contact.

Run:  .venv/bin/python experiments/hammer.py   → experiments/out/hammer.png
"""

import time
from pathlib import Path

import jax
import jax.numpy as jnp
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from lagnet.integrators import Leapfrog  # noqa: E402
from lagnet.rollout import rollout  # noqa: E402
from lagnet.systems.lecture.hammer import Hammer  # noqa: E402

jax.config.update("jax_enable_x64", True)
OUT = Path(__file__).resolve().parent / "out"

FS = 44100
K = 1.0 / FS
SPEEDS = (0.25, 1.0, 4.0)
# The lecture's printed contact times (its legend) and, from running its code, the −20 dB bandwidth (Hz).
LECTURE_CONTACT_MS = {0.25: 2.3, 1.0: 1.0, 4.0: 0.5}
LECTURE_BANDWIDTH_HZ = {0.25: 1060.5, 1.0: 2180.2, 4.0: 4414.3}


def strike(system, speed, steps=1200, uh0=-1e-4):
    """Positions, velocities and contact force of one strike from u_H = uh0 at speed `speed` (target at rest)."""
    q0 = jnp.array([0.0, uh0])
    qd0 = jnp.array([0.0, speed])
    qs, qds = rollout(system, Leapfrog(), q0, qd0, jnp.zeros((steps, 0)), K)
    force = jax.vmap(system.force)(qs)
    return np.asarray(qs), np.asarray(qds), np.asarray(force)


def analyse(system, speed):
    qs, _, force = strike(system, speed)
    on = np.nonzero(force)[0]
    contact_ms = 1e3 * (on[-1] - on[0] + 1) * K
    spec = np.abs(np.fft.rfft(force, 8192))
    freqs = np.fft.rfftfreq(8192, K)
    db = 20 * np.log10(spec / spec[0] + 1e-9)
    bandwidth = freqs[np.argmax(db < -20)]
    energy = np.asarray(jax.vmap(lambda a, b: system.discrete_energy(a, b, K))(qs[:-1], qs[1:]))
    before, after = energy[: on[0] - 1], energy[on[-1] + 1 :]
    drift = max(np.ptp(before) / before[0], np.ptp(after) / after[0])
    jump = (after.mean() - before.mean()) / before.mean()
    return dict(
        force=force,
        on=on,
        contact_ms=contact_ms,
        freqs=freqs,
        db=db,
        bandwidth=bandwidth,
        energy=energy,
        drift=drift,
        jump=jump,
        peak=force.max(),
    )


def main():
    system = Hammer()
    t0 = time.perf_counter()
    results = {v: analyse(system, v) for v in SPEEDS}
    runtime = time.perf_counter() - t0

    print("hammer: contact time and force spectrum (lecture vs lagnet)")
    print(
        f"{'speed':>6} {'contact ms':>22} {'-20 dB bandwidth Hz':>26} {'peak F':>9} "
        f"{'energy drift (free)':>20} {'energy jump':>12}"
    )
    for v, r in results.items():
        print(
            f"{v:6.2f} {LECTURE_CONTACT_MS[v]:9.1f} | {r['contact_ms']:9.3f}   "
            f"{LECTURE_BANDWIDTH_HZ[v]:10.1f} | {r['bandwidth']:10.1f}   {r['peak']:9.1f} "
            f"{r['drift']:20.1e} {r['jump']:12.1e}"
        )
    print(f"runtime {runtime:.2f} s (three strikes of 1200 steps, compile included)")

    colours = {0.25: "lightsteelblue", 1.0: "steelblue", 4.0: "navy"}
    fig, axs = plt.subplots(3, 1, figsize=(5.2, 6.4))
    for v, r in results.items():
        t = 1e3 * (np.arange(len(r["force"])) - r["on"][0]) * K
        axs[0].plot(
            t,
            r["force"] / r["peak"],
            color=colours[v],
            lw=1.5,
            label=f"speed {v:g}: contact {r['contact_ms']:.2f} ms (lecture {LECTURE_CONTACT_MS[v]})",
        )
        axs[1].plot(
            r["freqs"] / 1e3,
            r["db"],
            color=colours[v],
            lw=1.5,
            label=f"−20 dB at {r['bandwidth'] / 1e3:.2f} kHz",
        )
        e = r["energy"]
        axs[2].plot(
            1e3 * np.arange(len(e)) * K,
            (e - e[0]) / e[0],
            color=colours[v],
            lw=1.2,
            label=f"jump {r['jump']:.1e}, free drift {r['drift']:.0e}",
        )
    axs[0].set_xlim(-0.2, 3)
    axs[0].set_xlabel("time from contact (ms)")
    axs[0].set_yticks([])
    axs[0].set_title("normalized contact force (lagnet Leapfrog, 44.1 kHz)", fontsize=9)
    axs[0].legend(fontsize=7)
    axs[1].set_xlim(0, 8)
    axs[1].set_ylim(-60, 3)
    axs[1].set_xlabel("frequency (kHz)")
    axs[1].set_ylabel("dB")
    axs[1].set_title("force spectrum: harder strike, brighter sound", fontsize=9)
    axs[1].legend(fontsize=7)
    axs[2].set_xlim(0, 4)
    axs[2].set_xlabel("time (ms)")
    axs[2].set_ylabel("rel. change of $\\mathfrak{h}$")
    axs[2].set_title("discrete energy: constant out of contact, a small jump across it", fontsize=9)
    axs[2].legend(fontsize=7)
    fig.tight_layout()
    OUT.mkdir(exist_ok=True)
    fig.savefig(OUT / "hammer.png", dpi=130)
    print(f"wrote {OUT / 'hammer.png'}")


if __name__ == "__main__":
    main()

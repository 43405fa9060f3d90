"""Energy is kept, but is the pitch right? Numerical over true frequency, ω̃/ω, of leapfrog and average acceleration.

On u'' = −ω²u one step is a rotation-like 2×2 matrix whose eigenvalues are e^{±iω̃h}; ω̃h is their angle. The
matrix is the Jacobian of one `lagnet.rollout` step of lagnet's `Leapfrog` and `Newmark(¼, ½)`, to compare with
the lecture's closed forms sin(ω̃h/2) = ωh/2 (leapfrog plays sharp) and tan(ω̃h/2) = ωh/2 (average acceleration
plays flat). The lecture's point: an 8 kHz partial at 44.1 kHz, ωh = 2π·8000/44100 ≈ 1.14, is off by more than a
semitone. Checked here also by ear, so to speak: a one-second rollout at 44.1 kHz, its frequency counted from the
zero crossings.

Run:  .venv/bin/python experiments/lecture_pitch.py   → experiments/out/lecture_pitch.png
"""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _common import COL, linear_oscillator, report, save  # noqa: E402

from lagnet import integrator_analysis as analysis  # noqa: E402
from lagnet.integrators import (  # noqa: E402
    Leapfrog,
    Newmark,
)
from lagnet.rollout import rollout  # noqa: E402

FS, F8 = 44100.0, 8000.0
X8 = 2 * np.pi * F8 / FS  # ωh of an 8 kHz partial at 44.1 kHz
SCHEMES = {
    "leapfrog = central difference": (Leapfrog(), COL["leapfrog"], lambda x: 2 * np.arcsin(x / 2) / x),
    "average acceleration": (Newmark(0.25, 0.5), COL["average acceleration"],
                             lambda x: 2 * np.arctan(x / 2) / x),
}  # fmt: skip
# The lecture's figure labels at the 8 kHz point (from running its NumPy snippet), 100 (ω̃/ω − 1).
LECTURE_PERCENT = {"leapfrog = central difference": "+6.4%", "average acceleration": "-9.1%"}


def pitch_ratio(integrator, wh) -> np.ndarray:
    """ω̃/ω = angle(eig(step matrix)) / ωh for each ωh (shape of wh)."""
    return analysis.frequency_ratio(integrator, wh)


def heard_frequency(integrator, f: float = F8, fs: float = FS, seconds: float = 1.0) -> float:
    """The frequency (Hz) of a `seconds`-long rollout of u'' = −(2πf)²u at rate fs, from its zero crossings."""
    steps = int(round(seconds * fs))
    qs, _ = rollout(
        linear_oscillator(2 * np.pi * f), integrator, jnp.ones(1), jnp.zeros(1), None, 1 / fs,
        steps=steps,
    )  # fmt: skip
    return analysis.zero_crossing_frequency(qs[:, 0], 1 / fs)


def main():
    wh = np.linspace(0.01, 1.99, 300)
    fig, ax = plt.subplots(figsize=(5.2, 3.8))
    ax.axhspan(2 ** (-1 / 12), 2 ** (1 / 12), color="0.92", lw=0, label="within a semitone")
    rows = []
    for (name, (integ, col, closed)), dy in zip(SCHEMES.items(), (0.07, -0.07), strict=True):
        ratio = pitch_ratio(integ, wh)
        ax.plot(wh, ratio, color=col, lw=1.8, label=f"lagnet {name}")
        ax.plot(wh[::15], closed(wh[::15]), "+", color="k", ms=5)
        r8 = float(pitch_ratio(integ, X8)[0])
        ax.plot(X8, r8, "o", color=col, ms=5)
        ax.text(X8 - 0.05, r8 + dy, f"{100 * (r8 - 1):+.1f}%", color=col, ha="right", fontsize=8)
        heard = heard_frequency(integ)
        rows += [
            (f"{name}: ω̃/ω - 1 at 8 kHz / 44.1 kHz", LECTURE_PERCENT[name], f"{100 * (r8 - 1):+.1f}%"),
            (f"{name}: closed form vs lagnet's step", f"{closed(X8):.10f}", f"{r8:.10f}"),
            (f"{name}: 8 kHz rollout heard at (Hz)", f"{F8 * closed(X8):.1f}", f"{heard:.1f}"),
            (f"{name}: off by (semitones)", f"{12 * np.log2(closed(X8)):+.2f}",
             f"{12 * np.log2(heard / F8):+.2f}"),
        ]  # fmt: skip
    ax.plot([], [], "+", color="k", label="lecture's closed forms")
    ax.axhline(1, color="gray", ls="--", lw=1, label="exact")
    ax.axvline(X8, color="gray", lw=0.8, ls=":")
    ax.text(X8, 0.72, " 8 kHz at 44.1 kHz", color="gray", fontsize=7.5)
    ax.set_xlim(0, 2)
    ax.set_ylim(0.7, 1.6)
    ax.set_xlabel("ωh")
    ax.set_ylabel("ω̃/ω (numerical over true pitch)")
    ax.set_title("lagnet on u'' = −ω²u: numerical pitch over true pitch", fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    save(fig, "lecture_pitch")
    report("numerical pitch, 8 kHz partial at 44.1 kHz (ωh = 1.1398)", rows)


if __name__ == "__main__":
    main()

"""Newmark: choosing β and γ. The amplitude gain per step on u'' = −ω²u versus ωh.

The gain is the spectral radius of one step's 2×2 matrix (the lecture's `newmark_matrix`), here the Jacobian of
one `lagnet.rollout` step of lagnet's `Newmark(beta, gamma)` on the linear oscillator (Newton solve included).
Above 1 blows up, below 1 damps: average acceleration (¼, ½) keeps 1 for every h, central difference (0, ½)
keeps 1 until ωh = 2 and then blows up, the damped (0.3025, 0.6) stays below 1. The dots check the matrix against
100-step rollouts: (|y_100| / |y_0|)^(1/100).

Run:  .venv/bin/python experiments/lecture_newmark_gain.py   → experiments/out/lecture_newmark_gain.png
"""

import jax

jax.config.update("jax_enable_x64", True)

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _common import COL, report, save  # noqa: E402

from lagnet import integrator_analysis as analysis  # noqa: E402
from lagnet.integrators import Newmark  # noqa: E402

MEMBERS = {
    "(1/4, 1/2) average acceleration": ((0.25, 0.5), COL["average acceleration"], "-"),
    "(0, 1/2) central difference": ((0.0, 0.5), COL["leapfrog"], "--"),
    "(0.3025, 0.6) damped": ((0.3025, 0.6), COL["damped Newmark"], "-"),
}
CHECK_WH = (0.5, 1.0, 1.9, 2.5, 4.0)

# From running the lecture's NumPy snippet (`newmark_matrix`): max |eig| at ωh = 0.5, 1, 1.9, 2.5, 4.
LECTURE_GAIN = {
    "(1/4, 1/2) average acceleration": (1.0, 1.0, 1.0, 1.0, 1.0),
    "(0, 1/2) central difference": (1.0, 1.0, 1.0, 4.0, 13.928203),
    "(0.3025, 0.6) damped": (0.988311, 0.960846, 0.909637, 0.885316, 0.852072),
}
# The first point of the lecture's grid (np.linspace(0.01, 4, 400)) where central difference gains more than 1.
LECTURE_ONSET = 2.01


def gain(beta: float, gamma: float, wh) -> np.ndarray:
    """max |eig| of one Newmark(β, γ) step on u'' = −u with h = ωh, for each ωh."""
    return analysis.amplification(Newmark(beta, gamma), wh)


def rollout_gain(beta: float, gamma: float, wh: float, steps: int = 100) -> float:
    """(|y_N| / |y_0|)^(1/N) of an N-step rollout from (u, u') = (1, 0)."""
    return analysis.growth_rate(Newmark(beta, gamma), wh, steps)


def onset(beta: float, gamma: float, wh, tol: float = 1e-9) -> float:
    """The first ωh of the grid where the gain exceeds 1 + tol (nan if none)."""
    return analysis.first_unstable(Newmark(beta, gamma), wh, tol)


def main():
    wh = np.linspace(0.01, 4, 400)
    fig, ax = plt.subplots(figsize=(5.6, 3.5))
    gains = {}
    for name, ((b, g), col, ls) in MEMBERS.items():
        gains[name] = gain(b, g, wh)
        ax.plot(wh, gains[name], color=col, ls=ls, lw=1.8, label=name)
        dots = [rollout_gain(b, g, x) for x in CHECK_WH]
        ax.plot(CHECK_WH, dots, "o", color=col, ms=4, mfc="none")
    ax.plot([], [], "o", color="0.3", mfc="none", ms=4, label="100-step rollouts")
    ax.axhline(1, color="gray", lw=0.8, ls=":")
    ax.set_ylim(0.8, 1.6)
    ax.set_xlabel("ωh")
    ax.set_ylabel("amplitude gain per step")
    ax.set_title("lagnet Newmark on u'' = −ω²u: above 1 blows up, below 1 damps", fontsize=9)
    ax.legend(fontsize=7.5, loc="upper left")
    fig.tight_layout()
    save(fig, "lecture_newmark_gain")

    rows = []
    for name, ((b, g), _, _) in MEMBERS.items():
        ours = gain(b, g, np.array(CHECK_WH))
        for x, lec, v in zip(CHECK_WH, LECTURE_GAIN[name], ours, strict=True):
            rows.append((f"{name}, ωh = {x}", f"{lec:.6f}", f"{v:.6f}"))
    rows.append(
        ("central difference: first ωh of the grid with gain > 1", LECTURE_ONSET, onset(0, 0.5, wh))
    )
    report("Newmark amplitude gain per step (spectral radius of the step matrix)", rows)


if __name__ == "__main__":
    main()

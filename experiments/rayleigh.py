"""Rayleigh's oscillator u'' = (μ − u'²) u' − u: the bifurcation diagram, and how numerics moves the onset.

`lagnet.systems.lecture.rayleigh.Rayleigh` rolled out by lagnet's RK4 (h = 0.02, "exact"), ForwardEuler and
BackwardEuler (h = 0.2) for 161 values of μ at once (`jax.vmap` over the system), amplitude = max |u| over the
last 20 of 300 time units, as in the lecture. The onsets are measured two ways: from the diagram (first μ with
amplitude > 0.01, the lecture code's grid) and exactly, by bisection on the spectral radius of the step Jacobian
at rest (`lagnet.integrator_analysis.hopf_onset`): forward Euler −h, backward Euler +h.

Run:  .venv/bin/python experiments/rayleigh.py   → experiments/out/rayleigh.png
"""

import time
from pathlib import Path

import jax
import jax.numpy as jnp
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from lagnet.integrator_analysis import hopf_onset, limit_cycle_amplitude  # noqa: E402
from lagnet.integrators import RK4, BackwardEuler, ForwardEuler, Leapfrog, SymplecticEuler  # noqa: E402
from lagnet.systems.lecture.rayleigh import Rayleigh  # noqa: E402

jax.config.update("jax_enable_x64", True)
OUT = Path(__file__).resolve().parent / "out"

T, TAIL = 300.0, 20.0
# The lecture's statements (onset −h, +h, amplitude √(4μ/3)) and, from running its code, the onsets read off its
# diagram (first grid μ with amplitude > 0.01) and its RK4 amplitudes at μ = 0.1 and 1.
LECTURE_ONSET_GRID = {"RK4": -0.01, "forward Euler": -0.21, "backward Euler": 0.19}
LECTURE_AMPLITUDE = {0.1: 0.3655, 1.0: 1.2544}


def diagram(integrator, h, mus):
    steps, tail = int(T / h), int(TAIL / h)

    def one(mu):
        return limit_cycle_amplitude(
            Rayleigh(mu), integrator, h, jnp.array([0.3]), jnp.zeros(1), steps, tail
        )

    return np.asarray(jax.jit(jax.vmap(one))(jnp.asarray(mus)))


def main():
    mus = np.linspace(-0.6, 1.0, 161)
    runs = {
        "RK4": (RK4(), 0.02, "k"),
        "forward Euler": (ForwardEuler(), 0.2, "tab:red"),
        "backward Euler": (BackwardEuler(), 0.2, "tab:green"),
    }
    t0 = time.perf_counter()
    amps = {name: diagram(integ, h, mus) for name, (integ, h, _) in runs.items()}
    t_diagram = time.perf_counter() - t0

    print("Rayleigh oscillator: onsets (lecture vs lagnet)")
    print(
        f"{'scheme':>16} {'h':>5} {'lecture':>8} {'diagram: lecture code | lagnet':>32} {'exact (step Jacobian)':>22}"
    )
    onsets = {}
    for name, (integ, h, _) in runs.items():
        stated = {"RK4": 0.0, "forward Euler": -h, "backward Euler": h}[name]
        grid = mus[np.argmax(amps[name] > 0.01)]
        exact = hopf_onset(lambda mu: Rayleigh(mu), integ, h, (-0.5, 0.5))
        onsets[name] = exact
        print(
            f"{name:>16} {h:5.2f} {stated:8.2f} {LECTURE_ONSET_GRID[name]:16.2f} | {grid:6.2f}"
            f" {exact:22.3e}"
        )
    for name, integ in [
        ("leapfrog", Leapfrog()),
        ("symplectic Euler", SymplecticEuler()),
        ("RK4", RK4()),
    ]:
        print(
            f"{name:>16} {0.2:5.2f} {'':>8} {'':>32} {hopf_onset(lambda mu: Rayleigh(mu), integ, 0.2):22.3e}"
        )
    print("amplitude vs √(4μ/3) (RK4, h = 0.02)")
    for mu in (0.02, 0.05, 0.1, 0.2, 0.5, 1.0):
        a = float(diagram(RK4(), 0.02, np.array([mu]))[0])
        lec = LECTURE_AMPLITUDE.get(mu)
        lec = f"{lec:.4f}" if lec else "   -  "
        print(
            f"  μ = {mu:4.2f}: √(4μ/3) = {np.sqrt(4 * mu / 3):.4f}, lecture code {lec}, lagnet {a:.4f}, "
            f"rel. diff {a / np.sqrt(4 * mu / 3) - 1:+.2%}"
        )
    hs = np.array([0.025, 0.05, 0.1, 0.2, 0.4])
    fe = [hopf_onset(lambda mu: Rayleigh(mu), ForwardEuler(), h, (-1, 1)) for h in hs]
    be = [hopf_onset(lambda mu: Rayleigh(mu), BackwardEuler(), h, (-1, 1)) for h in hs]
    print(
        "onset vs h: "
        + ", ".join(f"h={h:g}: FE {a:+.4f} BE {b:+.4f}" for h, a, b in zip(hs, fe, be, strict=True))
    )
    print(f"runtime: diagrams {t_diagram:.1f} s, total {time.perf_counter() - t0:.1f} s")

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(7.4, 2.6), width_ratios=[2.2, 1])
    for name, (_, h, col) in runs.items():
        lab = (
            "RK4, $h=0.02$ (exact)"
            if name == "RK4"
            else f"{name}, $h={h}$: onset {onsets[name]:+.3f}"
        )
        ax.plot(mus, amps[name], color=col, lw=2 if name == "RK4" else 1.6, label=lab)
    pos = mus[mus > 0]
    ax.plot(pos, np.sqrt(4 * pos / 3), "k:", lw=1, label="$\\sqrt{4\\mu/3}$")
    ax.set_xlabel("$\\mu$ (bow force)")
    ax.set_ylabel("amplitude")
    ax.set_title("bifurcation diagram (lagnet integrators)", fontsize=9)
    ax.legend(fontsize=6.5, loc="upper left")
    ax2.plot(hs, fe, "o-", color="tab:red", ms=3, label="forward Euler")
    ax2.plot(hs, be, "o-", color="tab:green", ms=3, label="backward Euler")
    ax2.plot(hs, -hs, "k:", lw=0.8, label="$\\mp h$")
    ax2.plot(hs, hs, "k:", lw=0.8)
    ax2.axhline(0, color="gray", lw=0.4)
    ax2.set_xlabel("$h$")
    ax2.set_ylabel("onset $\\mu^*$")
    ax2.set_title("numerics moves the threshold", fontsize=9)
    ax2.legend(fontsize=6.5)
    fig.tight_layout()
    OUT.mkdir(exist_ok=True)
    fig.savefig(OUT / "rayleigh.png", dpi=130)
    print(f"wrote {OUT / 'rayleigh.png'}")


if __name__ == "__main__":
    main()

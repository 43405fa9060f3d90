"""What is a symplectic integrator? A disk of pendulum states, 12 steps of h = 0.3, and the area it keeps.

The lecture's disk (θ, θ') = (1.2 + 0.3 cos s, 0.3 sin s), 400 states on its rim, each stepped 12 times with
h = 0.3 by forward Euler, leapfrog and backward Euler; the area inside the rim (shoelace formula) over the initial
area. Frictionless physics keeps it (Liouville; dashed: an adaptive diffrax reference), forward Euler grows it,
backward Euler shrinks it, leapfrog keeps it exactly.

Also the per-step area factor det(∂ step/∂(u, u')) on u'' = −u at h = 0.3, against the lecture's formulas:
forward Euler 1 + h², backward Euler 1/(1 + h²), RK4 1 − h⁶/72 + h⁸/576, and 1 for leapfrog, symplectic Euler and
average-acceleration Newmark.

Run:  .venv/bin/python experiments/lecture_phase_area.py   → experiments/out/lecture_phase_area.png
"""

import jax

jax.config.update("jax_enable_x64", True)

import diffrax  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _common import COL, report, save  # noqa: E402

from lagnet import integrator_analysis as analysis  # noqa: E402
from lagnet.integrators import (  # noqa: E402
    RK4,
    BackwardEuler,
    DiffraxReference,
    ForwardEuler,
    Leapfrog,
    Newmark,
    SymplecticEuler,
)
from lagnet.systems import Pendulum  # noqa: E402

H, STEPS, N_RIM = 0.3, 12, 400
SCHEMES = {
    "forward Euler": ForwardEuler(),
    "leapfrog": Leapfrog(),
    "backward Euler": BackwardEuler(),
}
EXACT = DiffraxReference(diffrax.Tsit5(), rtol=1e-11, atol=1e-11)

# The lecture's panel titles ("12 steps: area ×…"), from running its NumPy snippet.
LECTURE_AREA = {"forward Euler": "1.72", "leapfrog": "1.00", "backward Euler": "0.44"}
FACTOR_SCHEMES = {
    "forward Euler": (ForwardEuler(), lambda h: 1 + h**2),
    "backward Euler": (BackwardEuler(), lambda h: 1 / (1 + h**2)),
    "RK4": (RK4(), lambda h: 1 - h**6 / 72 + h**8 / 576),
    "leapfrog": (Leapfrog(), lambda h: 1.0),
    "symplectic Euler": (SymplecticEuler(), lambda h: 1.0),
    "Newmark (1/4, 1/2)": (Newmark(0.25, 0.5), lambda h: 1.0),
}

PENDULUM = Pendulum()


def disk(n: int = N_RIM) -> tuple[np.ndarray, np.ndarray]:
    """The rim of the lecture's disk of initial states, shape (n,) each."""
    s = np.linspace(0, 2 * np.pi, n, endpoint=False)
    return 1.2 + 0.3 * np.cos(s), 0.3 * np.sin(s)


area = analysis.polygon_area


def step_cloud(integrator, u0, v0, h: float = H, steps: int = STEPS):
    """Every state of the cloud after `steps` steps (one rollout per state, vmapped)."""
    return analysis.final_states(PENDULUM, integrator, u0, v0, h, steps)


def area_ratios(n: int = N_RIM) -> dict[str, float]:
    u0, v0 = disk(n)
    a0 = area(u0, v0)
    return {name: area(*step_cloud(integ, u0, v0)) / a0 for name, integ in SCHEMES.items()}


def area_factors(h: float = H) -> dict[str, tuple[float, float]]:
    """(lecture's formula, det of lagnet's step matrix) on u'' = −u, per step."""
    return {
        name: (formula(h), analysis.area_factor(integ, h))
        for name, (integ, formula) in FACTOR_SCHEMES.items()
    }


def main():
    u0, v0 = disk()
    a0 = area(u0, v0)
    ue, ve = step_cloud(EXACT, u0, v0)
    th, w = np.meshgrid(np.linspace(-2.7, 2.7, 300), np.linspace(-1.7, 1.7, 300))
    energy = 0.5 * w**2 - np.cos(th)

    fig, axs = plt.subplots(1, 3, figsize=(10, 3.2), sharey=True)
    ratios = {}
    for ax, (name, integ) in zip(axs, SCHEMES.items(), strict=True):
        u, v = step_cloud(integ, u0, v0)
        ratios[name] = area(u, v) / a0
        ax.contour(
            th,
            w,
            energy,
            levels=np.linspace(-0.9, 2.0, 9),
            colors="0.85",
            linewidths=0.6,
            linestyles="solid",
        )
        ax.fill(u0, v0, color="0.6", alpha=0.6, lw=0, label="initial states")
        ax.plot(ue, ve, color="0.3", ls="--", lw=1, label="exact (diffrax)")
        ax.fill(u, v, color=COL[name], alpha=0.35, lw=0)
        ax.plot(u, v, color=COL[name], lw=1.2, label=f"{name}, {STEPS} steps")
        ax.set_title(
            f"{name}\n{STEPS} steps of h = {H}: area ×{ratios[name]:.2f}",
            fontsize=9,
            color=COL[name],
        )
        ax.set_xlabel("θ")
        ax.set_aspect("equal")
        ax.set_xlim(-2.7, 2.7)
        ax.set_ylim(-1.7, 1.7)
        ax.legend(fontsize=6.5, loc="lower left")
    axs[0].set_ylabel("θ'")
    fig.tight_layout()
    save(fig, "lecture_phase_area")

    rows = [(f"{n}: area ×", LECTURE_AREA[n], f"{r:.2f} ({r:.4f})") for n, r in ratios.items()]
    rows.append(("exact (diffrax): area ×", "1 (Liouville)", f"{area(ue, ve) / a0:.4f}"))
    report(f"phase-space area after {STEPS} steps of h = {H}", rows)
    report(
        f"area factor per step on u'' = -u, h = {H}: det(step matrix)",
        [(n, f"{f:.8f}", f"{d:.8f}") for n, (f, d) in area_factors().items()],
    )


if __name__ == "__main__":
    main()

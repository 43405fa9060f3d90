"""Thousands of periods later, who drifts? The lecture's energy-drift race and reversibility bars.

Pendulum θ'' = −sin θ from θ0 = 2 at rest, h = 0.3, to t = 3000 (about 349 periods): RK4, damped Newmark
(0.3025, 0.6), symplectic Euler, average-acceleration Newmark (¼, ½), leapfrog, and leapfrog at h/4 (four
accelerations per RK4 step: the same cost). Plotted: the worst |E − E0| in each block of 100 steps (400 at h/4).
Bars: 1000 steps forward, then 1000 with −h, and the distance |θ − θ0| + |θ'| from the start.

Every scheme is lagnet's (`lagnet.integrators`), stepped by `lagnet.rollout.rollout` on `lagnet.systems.Pendulum`.

Run:  .venv/bin/python experiments/lecture_energy_drift.py   → experiments/out/lecture_energy_drift.png
"""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _common import COL, report, save  # noqa: E402

from lagnet import integrator_analysis as analysis  # noqa: E402
from lagnet.integrators import (  # noqa: E402
    RK4,
    Leapfrog,
    Newmark,
    SymplecticEuler,
)
from lagnet.systems import Pendulum  # noqa: E402

TH0, H, T = 2.0, 0.3, 3000.0
BLOCK = 100
SCHEMES = {
    "RK4": RK4(),
    "damped Newmark (0.3025, 0.6)": Newmark(beta=0.3025, gamma=0.6),
    "symplectic Euler": SymplecticEuler(),
    "Newmark (1/4, 1/2)": Newmark(beta=0.25, gamma=0.5),
    "leapfrog": Leapfrog(),
}
COLOURS = {
    "RK4": COL["RK4"],
    "damped Newmark (0.3025, 0.6)": COL["damped Newmark"],
    "symplectic Euler": COL["symplectic Euler"],
    "Newmark (1/4, 1/2)": COL["average acceleration"],
    "leapfrog": COL["leapfrog"],
}

# From running the lecture's NumPy snippet ("Thousands of periods later: who drifts?"): the worst |E − E0| in the
# last block before t = 3000, and the distance from the start after 1000 steps forward and 1000 back.
LECTURE_ENERGY = {
    "RK4": 7.085e-02,
    "damped Newmark (0.3025, 0.6)": 1.416e00,
    "symplectic Euler": 1.901e-01,
    "Newmark (1/4, 1/2)": 1.459e-02,
    "leapfrog": 2.444e-02,
    "leapfrog, h/4": 1.522e-03,
}
LECTURE_RETURN = {
    "leapfrog": 6.98e-14,
    "Newmark (1/4, 1/2)": 1.73e-13,
    "RK4": 1.027e00,
    "symplectic Euler": 4.896e-01,
    "damped Newmark (0.3025, 0.6)": 2.000e00,
}

PENDULUM = Pendulum()
Q0, QD0 = jnp.array([TH0]), jnp.array([0.0])
block_max = analysis.block_max


def energy_error(integrator, h: float, steps: int) -> np.ndarray:
    """|E(θ_k, θ'_k) − E0| for k = 1 … steps, shape (steps,)."""
    return analysis.energy_error(PENDULUM, integrator, Q0, QD0, h, steps)


def return_distance(integrator, h: float, steps: int) -> float:
    """|θ − θ0| + |θ'| after `steps` steps of +h and then `steps` of −h."""
    # Floored like the lecture's, so an exact return still shows on a log axis.
    return max(analysis.return_distance(PENDULUM, integrator, Q0, QD0, h, steps), 1e-17)


def race(t_end: float = T, h: float = H) -> dict[str, np.ndarray]:
    """Energy errors of every scheme at h, and of leapfrog at h/4, to t_end."""
    n = int(round(t_end / h))
    errs = {name: energy_error(integ, h, n) for name, integ in SCHEMES.items()}
    errs["leapfrog, h/4"] = energy_error(Leapfrog(), h / 4, 4 * n)
    return errs


def reversibility(steps: int = 1000, h: float = H) -> dict[str, float]:
    return {name: return_distance(SCHEMES[name], h, steps) for name in LECTURE_RETURN}


def main():
    errs = race()
    back = reversibility()

    fig, axs = plt.subplots(1, 2, figsize=(10, 3.4), width_ratios=[1.7, 1])
    ax = axs[0]
    for name, err in errs.items():
        quarter = name == "leapfrog, h/4"
        hh, blk = (H / 4, 4 * BLOCK) if quarter else (H, BLOCK)
        curve = block_max(err, blk)
        t = hh * blk * np.arange(1, len(curve) + 1)
        col = "gray" if quarter else COLOURS[name]
        ax.semilogy(t, curve, color=col, lw=1.6, ls="--" if quarter else "-")
        label = f"leapfrog, h = {H / 4}\n(same cost as RK4)" if quarter else name
        ax.text(T * 1.02, curve[-1], label, color=col, fontsize=7, va="center")
    ax.set_xlim(0, 1.62 * T)
    ax.set_ylim(5e-4, 4)
    ax.set_xlabel("t")
    ax.set_ylabel("|energy error| (worst per block)")
    ax.set_title(f"lagnet: pendulum, θ0 = {TH0}, h = {H}, about {T / 8.6:.0f} periods", fontsize=9)

    names = list(LECTURE_RETURN)
    ax = axs[1]
    ax.barh(range(len(names)), [back[n] for n in names], color=[COLOURS[n] for n in names])
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=7.5)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("distance from the start, |θ − θ0| + |θ'|")
    ax.set_title("1000 steps forward, then 1000 with −h", fontsize=9)
    fig.tight_layout()
    save(fig, "lecture_energy_drift")

    report(
        "energy-drift race: worst |E - E0| in the last block before t = 3000",
        [(n, f"{LECTURE_ENERGY[n]:.3e}", f"{block_max(e, 400 if 'h/4' in n else 100)[-1]:.3e}")
         for n, e in errs.items()],
    )  # fmt: skip
    report(
        "reversibility: distance from the start after 1000 steps forward and 1000 back",
        [(n, f"{LECTURE_RETURN[n]:.3e}", f"{back[n]:.3e}") for n in names],
    )


if __name__ == "__main__":
    main()

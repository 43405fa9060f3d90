"""Chains of masses: the stiffest spring sets the pace. The stable explicit step shrinks like 1/N.

A rope of total mass 1 and unit stiffness, cut into N masses m = 1/N joined by N + 1 springs K_s = N + 1 (spring
stiffness ∝ 1/length), both ends fixed: M u'' = −K u, lagnet's `MassSpringChain(N, 1/N, N + 1)`. The explicit
scheme u^{n+1} = (2I − k² M⁻¹K) u^n − u^{n−1} is leapfrog, stable when every mode has ω_p k < 2, i.e.

    k ≤ k_max = 2 / √λ_max(M⁻¹K)   (lecture),

which here is k_max = 1 / (√(N(N + 1)) sin(Nπ / (2N + 2))) ≈ 1/N. Measured: the largest h for which a 4000-step
lagnet `Leapfrog` rollout from a random displacement stays bounded (bisection). Finer rope, smaller step: double N,
half the step, 4× the cost. Implicit average acceleration (`Newmark(¼, ½)`) has no limit: it runs at 10 k_max.

Run:  .venv/bin/python experiments/lecture_chain_step.py   → experiments/out/lecture_chain_step.png
"""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _common import COL, report, save  # noqa: E402

from lagnet import integrator_analysis as analysis  # noqa: E402
from lagnet.integrators import (  # noqa: E402
    Leapfrog,
    Newmark,
)
from lagnet.rollout import rollout_solution  # noqa: E402
from lagnet.systems import MassSpringChain  # noqa: E402

NS = (4, 8, 16, 32, 64, 128, 256)
STEPS = 4000
GROWTH = 1e3  # "blew up": max |u| over the rollout exceeds GROWTH × max |u0|


def rope(n: int) -> MassSpringChain:
    return MassSpringChain(n, mass=1.0 / n, stiffness=float(n + 1))


def k_max(chain: MassSpringChain) -> float:
    """2 / √λ_max(M⁻¹K), K = ∇²V (the chain's stiffness matrix)."""
    return analysis.explicit_step_limit(chain)


def initial_state(n: int, seed: int = 0):
    """A random displacement (every mode excited, the stiffest included), at rest."""
    return jnp.asarray(np.random.default_rng(seed).standard_normal(n)), jnp.zeros(n)


def bounded(chain, integrator, h: float, steps: int = STEPS) -> bool:
    q0, qd0 = initial_state(chain.n)
    return analysis.is_bounded(chain, integrator, q0, qd0, h, steps, GROWTH)


def measured_k_max(chain, iterations: int = 30, steps: int = STEPS) -> float:
    """The largest h with a bounded `Leapfrog` rollout, by bisection between 0.5 and 1.5 × the lecture's k_max."""
    q0, qd0 = initial_state(chain.n)
    bracket = (0.5 * k_max(chain), 1.5 * k_max(chain))
    return analysis.largest_stable_step(
        chain, Leapfrog(), q0, qd0, bracket, iterations=iterations, steps=steps, growth=GROWTH
    )


def slope(ns, ks) -> float:
    return float(np.polyfit(np.log(ns), np.log(ks), 1)[0])


def energy_history(chain, integrator, h: float, t_end: float):
    """(t, E/E0) up to t_end, cut at the first non-finite state."""
    q0, qd0 = initial_state(chain.n)
    steps = int(round(t_end / h))
    sol = rollout_solution(chain, integrator, q0, qd0, None, h, steps=steps)
    e = np.asarray(jax.vmap(chain.energy)(sol.qs, sol.qds))
    keep = np.isfinite(e) & (e < 1e30)
    last = len(e) if keep.all() else int(np.argmin(keep))
    return h * np.arange(last), e[:last] / e[0]


def main():
    theory = np.array([k_max(rope(n)) for n in NS])
    measured = np.array([measured_k_max(rope(n)) for n in NS])
    # Implicit steps solve a dense N×N Newton system (autodiff Jacobian): check them on the smaller ropes.
    big_h_ok = {
        n: bounded(rope(n), Newmark(0.25, 0.5), 10 * k, steps=400)
        for n, k in zip(NS, theory, strict=True)
        if n <= 64
    }

    fig, axs = plt.subplots(1, 2, figsize=(10, 3.8))
    ax = axs[0]
    ns = np.array(NS, float)
    ax.loglog(ns, theory, "-", color=COL["leapfrog"], lw=1.6, label="lecture: 2/√λmax(M⁻¹K)")
    ax.loglog(
        ns, measured, "o", color="k", mfc="none", ms=6, label="lagnet leapfrog: largest bounded h"
    )
    ax.loglog(ns, 1 / ns, ":", color="gray", lw=1, label="1/N")
    ax.set_xlabel("number of masses N")
    ax.set_ylabel("stable step k_max")
    ax.set_title("rope of N masses: k_max ∝ 1/N", fontsize=9)
    ax.legend(fontsize=7.5)

    n = 64
    chain, k = rope(n), k_max(rope(n))
    ax = axs[1]
    for integ, factor, col, label in [
        (Leapfrog(), 0.98, COL["leapfrog"], "leapfrog, h = 0.98 k_max"),
        (Leapfrog(), 1.02, COL["forward Euler"], "leapfrog, h = 1.02 k_max"),
        (Newmark(0.25, 0.5), 10.0, COL["average acceleration"], "Newmark (1/4, 1/2), h = 10 k_max"),
    ]:
        t, e = energy_history(chain, integ, factor * k, 400 * k)
        ax.semilogy(t, e, color=col, lw=1.3, label=label)
    ax.set_xlabel("t")
    ax.set_ylim(0.2, 1e6)
    ax.set_ylabel("E / E0")
    ax.set_title(f"N = {n}, k_max = {k:.4g}: just above the limit it explodes", fontsize=9)
    ax.legend(fontsize=7.5, loc="upper left")
    fig.tight_layout()
    save(fig, "lecture_chain_step")

    rows = [
        (f"N = {n}: k_max (theory | lagnet bisection)", f"{t:.6g}", f"{m:.6g} (×{m / t:.6f})")
        for n, t, m in zip(NS, theory, measured, strict=True)
    ]
    rows += [
        ("log-log slope of k_max vs N, N = 4 … 256", "-1 (k_max ∝ 1/N)", f"{slope(NS, measured):.3f}"),
        ("log-log slope of k_max vs N, N = 32 … 256", "-1", f"{slope(NS[3:], measured[3:]):.3f}"),
        ("k_max(128) / k_max(256): double N", "2 (half the step)", f"{measured[-2] / measured[-1]:.3f}"),
        ("cost to a fixed t, N = 256 vs 128 (N / k_max)", "4x",
         f"{(256 / measured[-1]) / (128 / measured[-2]):.2f}x"),
        ("Newmark (1/4, 1/2): 400 steps of 10 k_max bounded, N ≤ 64", "yes (no limit)",
         "yes" if all(big_h_ok.values()) else f"no: {big_h_ok}"),
    ]  # fmt: skip
    report("mass-spring rope: explicit stability limit", rows)


if __name__ == "__main__":
    main()

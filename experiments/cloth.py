"""Cloth as a mass-spring network: explicit symplectic Euler at small steps, explosion at a large one, and
backward Euler with one Newton step and a matrix-free CG solve at 1/60 s (the lecture's three panels).

`lagnet.systems.lecture.cloth.Cloth` (12 × 12 nodes, structural + shear springs, two pinned corners, gravity, drag;
m = 0.01, c = 0.002, K_s = 2000) rolled out to t = 0.6 s by `lagnet.rollout` with `SymplecticEuler` at
h = 1/2000 and 1/400 and with `lagnet.integrators.LinearlyImplicitEuler` at h = 1/60. A run "explodes" at the
first step where a node leaves |x| ≤ 5 or turns non-finite (the lecture's test). Compute times exclude the one-off
compilation (printed separately).

Run:  .venv/bin/python experiments/cloth.py   → experiments/out/cloth.png
"""

import time
from pathlib import Path

import jax
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from lagnet.integrators import (
    LinearlyImplicitEuler,  # noqa: E402
    SymplecticEuler,  # noqa: E402
)
from lagnet.rollout import rollout_solution  # noqa: E402
from lagnet.systems.lecture.cloth import Cloth  # noqa: E402

jax.config.update("jax_enable_x64", True)
OUT = Path(__file__).resolve().parent / "out"

T_END = 0.6
# The lecture's printed panel titles (numpy on its machine): steps, explosion step, seconds of compute.
LECTURE = {
    ("explicit", 2000): "1200 steps, 0.22 s",
    ("explicit", 400): "exploded after 15 steps",
    ("implicit", 60): "36 steps, 0.23 s",
}


def run(system, integrator, h):
    steps = int(round(T_END / h))
    q0, qd0 = system.initial_state()

    def go():
        sol = rollout_solution(system, integrator, q0, qd0, None, h, steps=steps)
        return jax.block_until_ready(sol)

    t0 = time.perf_counter()
    go()
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    sol = go()
    t_run = time.perf_counter() - t0
    positions = np.asarray(jax.vmap(system.positions)(sol.qs))
    bad = ~np.all(np.isfinite(positions), axis=(1, 2)) | (
        np.nanmax(np.abs(positions), axis=(1, 2)) > 5
    )
    blew = int(np.argmax(bad)) if bad.any() else None
    last = positions[blew - 1] if blew else positions[-1]
    energy = np.asarray(jax.vmap(system.energy)(sol.qs, sol.qds)) if blew is None else None
    return dict(
        steps=steps,
        blew=blew,
        positions=last,
        t_run=t_run,
        t_compile=t_first - t_run,
        converged=bool(sol.ok),
        energy=energy,
        lowest=float(last[:, 1].min()),
    )


def main():
    system = Cloth()
    runs = [
        ("explicit", SymplecticEuler(), 2000),
        ("explicit", SymplecticEuler(), 400),
        ("implicit", LinearlyImplicitEuler(), 60),
    ]
    t0 = time.perf_counter()
    results = [(name, rate, run(system, integ, 1.0 / rate)) for name, integ, rate in runs]
    total = time.perf_counter() - t0

    print(
        f"cloth: {system.n}×{system.n} nodes, {system.springs.shape[0]} springs, t = 0 … {T_END} s"
    )
    print(
        f"{'scheme':>9} {'h':>7} {'lecture':>26} {'lagnet':>34} {'compile s':>10} {'lowest y':>9}"
    )
    for name, rate, r in results:
        mine = (
            f"exploded after {r['blew']} steps"
            if r["blew"]
            else f"{r['steps']} steps, {r['t_run']:.3f} s"
        )
        print(
            f"{name:>9} {'1/' + str(rate):>7} {LECTURE[(name, rate)]:>26} {mine:>34} {r['t_compile']:10.2f}"
            f" {r['lowest']:9.3f}"
        )
    print(f"runtime {total:.1f} s (compile included)")

    fig, axs = plt.subplots(1, 3, figsize=(9, 3.4))
    yaw, pitch = -0.55, 0.32  # the lecture's rotated orthographic view
    springs = np.asarray(system.springs)[: system.n_structural]
    pins = np.asarray(system.pinned_nodes)
    for ax, (name, rate, r) in zip(axs, results, strict=True):
        P = r["positions"]
        x1 = np.cos(yaw) * P[:, 0] + np.sin(yaw) * P[:, 2]
        z1 = -np.sin(yaw) * P[:, 0] + np.cos(yaw) * P[:, 2]
        sx, sy = x1, np.cos(pitch) * P[:, 1] - np.sin(pitch) * z1
        colour = "steelblue" if r["blew"] is None else "firebrick"
        for a, b in springs:
            ax.plot(sx[[a, b]], sy[[a, b]], color=colour, lw=0.7)
        ax.plot(sx[pins], sy[pins], "ks", ms=4)
        msg = (
            f"exploded after {r['blew']} steps"
            if r["blew"]
            else f"{r['steps']} steps to $t=0.6$ s, {r['t_run']:.3f} s of compute"
        )
        ax.set_title(f"{name}, $h=1/{rate}$ s\n{msg}\nlecture: {LECTURE[(name, rate)]}", fontsize=8)
        ax.set_xlim(-0.6, 1.3)
        ax.set_ylim(-1.25, 0.35)
        ax.set_aspect("equal")
        ax.axis("off")
    fig.tight_layout()
    OUT.mkdir(exist_ok=True)
    fig.savefig(OUT / "cloth.png", dpi=130)
    print(f"wrote {OUT / 'cloth.png'}")


if __name__ == "__main__":
    main()

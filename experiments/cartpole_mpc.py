"""Swing the cart-pole rig up and balance it with MPC: lagnet's projected L-BFGS MPC against CasADi + IPOPT and
do-mpc.

The closed loops of benchmarks/mpc.py (same models, horizon, cost, bounds and initial states; see its docstring),
on the rig's true plant through its actuator, plotted: the pole's angle from upright, the cart's position and the
commanded force, lagnet solid, IPOPT dashed, do-mpc dash-dotted. On the PINODE one IPOPT solve takes seconds, so
IPOPT is timed at lagnet's states there, and IPOPT and do-mpc run closed loops of their own with their iterations
capped (dotted).

    python experiments/cartpole_mpc.py [--states 2] [--duration 5] [--bench-json benchmarks/results/mpc.json]

Trains (if absent) runs/control/cartpole_pinode; writes experiments/out/cartpole_mpc.{json,png}.
"""

import argparse
import json
import os
import sys
import time

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "benchmarks"))
import mpc as bench  # noqa: E402

from lagnet.data.angles import wrap  # noqa: E402

OUT = os.path.join(HERE, "out")
STYLE = {
    "lagnet": dict(color="#1f77b4", ls="-"),
    "IPOPT": dict(color="#d68910", ls="--"),
    "do-mpc": dict(color="#27ae60", ls="-."),
    # IPOPT and do-mpc with their iterations capped (closed loops of their own)
    bench.CAPPED: dict(color="#c0392b", ls=":"),
    bench.CAPPED_DO_MPC: dict(color="#8e44ad", ls=":"),
}


def plot(raw: dict, record: dict, path: str) -> None:
    labels = list(raw)
    fig, axes = plt.subplots(3, len(labels), figsize=(6 * len(labels), 8), sharex=True)
    axes = np.asarray(axes).reshape(3, len(labels))
    for col, label in enumerate(labels):
        for name, res in raw[label].items():
            if name.startswith("_") or name == bench.ALONE or not res["xs"]:
                continue
            r = record[label][name]
            for j, (xs, us) in enumerate(zip(res["xs"], res["us"], strict=True)):
                t = bench.DT * np.arange(len(xs))
                tag = f"{name}: {r['success']}/{r['runs']} up, cost {r['mean_cost']:.2f}"
                kw = dict(lw=1.0, alpha=1.0 if j == 0 else 0.6, label=tag if j == 0 else None)
                style = STYLE[name]
                axes[0, col].plot(t, wrap(xs[:, 1] - np.pi), **style, **kw)
                axes[1, col].plot(t, xs[:, 0], **style, **kw)
                axes[2, col].step(t[:-1], us[:, 0], where="post", **style, **kw)
        for y in (-bench.TOLERANCE, bench.TOLERANCE):
            axes[0, col].axhline(y, color="k", lw=0.5, ls=":")
        for y in (-bench.X_SAFE, bench.X_SAFE):
            axes[1, col].axhline(y, color="k", lw=0.5, ls=":")
        axes[0, col].set_ylim(-np.pi * 1.05, np.pi * 1.05)
        axes[1, col].set_ylim(-0.4, 0.4)
        axes[2, col].set_ylim(-bench.U_MAX * 1.1, bench.U_MAX * 1.1)
        axes[0, col].set_title(f"MPC on the {label}", fontsize=10)
        axes[0, col].legend(loc="lower right", fontsize=8)
        axes[2, col].set_xlabel("t (s)")
    axes[0, 0].set_ylabel("φ − π (rad), 0 upright")
    axes[1, 0].set_ylabel("cart x (m)")
    axes[2, 0].set_ylabel("command (N)")
    fig.suptitle(
        f"Cart-pole rig (true plant + drive): swing-up and balance, H = {bench.HORIZON} × {bench.DT} s, "
        f"|u| ≤ {bench.U_MAX} N; lagnet ProjectedMPC (≤ {bench.ITERATIONS} L-BFGS steps, "
        f"≤ {bench.MAX_EVALUATIONS} evaluations/sample) solid,\nIPOPT (multiple shooting) dashed, do-mpc "
        f"dash-dotted, IPOPT and do-mpc capped at {bench.CAPPED_IPOPT_ITER} iterations dotted",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {os.path.relpath(path)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=2)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument(
        "--bench-json",
        help="also write the benchmark's record here (benchmarks/results/mpc.json): one run for both",
    )
    args = parser.parse_args()
    load_before = bench.load()
    t0 = time.perf_counter()
    raw, record = bench.run(args.states, args.duration)
    if args.bench_json:
        ca = bench.casadi_or_none(False)
        result = bench.report(
            record, args.states, args.duration, ca, load_before, time.perf_counter() - t0
        )
        bench.write(args.bench_json, "mpc", result)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "cartpole_mpc.json"), "w") as f:
        json.dump(
            {"load": os.getloadavg(), "seconds": time.perf_counter() - t0, "results": record},
            f,
            indent=1,
        )
    for label, res in record.items():
        for name, v in res.items():
            if isinstance(v, dict):
                print(f"{label:<12} {name:<20} {json.dumps(v, default=float)}")
    plot(raw, record, os.path.join(OUT, "cartpole_mpc.png"))


if __name__ == "__main__":
    main()

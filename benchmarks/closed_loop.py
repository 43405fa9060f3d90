"""Closed loop on the simulated true cart-pole rig: which models control it?

Each row is a run trained by `lagnet train` and evaluated by `lagnet evaluate RUN --control`: LQR from 14 starts
within ±0.4 rad of upright, MPC swing-up from 6 starts (success: held within 0.1 rad for the last 2 s with the cart
inside the rail), the MPC's cost and solve times, the model's q̈ at rest upright, and the signs of its
linearisation at upright against the rig's.

    python benchmarks/closed_loop.py [--out benchmarks/results/closed_loop.json]   # trains and evaluates (long)
    python benchmarks/closed_loop.py --collect NAME=RUN ...                       # tabulates evaluated runs
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

KNOWN = """name: cartpole_known
system: {name: cartpole}
model: {type: known}
integrator: {name: rk4}
data:
  train: %(root)s/data/sim/cartpole_train.npz
  test: %(root)s/data/sim/cartpole_control_test.npz
  mapping: {time: t, positions: [x, phi], velocities: [x_dot, phi_dot], inputs: [force]}
training: {epochs: 0}
"""

# Row name → (config, --set overrides).
ROWS = {
    "known model": (None, []),
    "pure ODE (cartpole_pure_ode)": ("configs/cartpole_pure_ode.yaml", []),
    "PINODE (cartpole_pinode)": ("configs/cartpole_pinode.yaml", []),
    **{
        f"PINODE (cartpole_control, seed {s})": ("configs/cartpole_control.yaml", [f"seed={s}"])
        for s in (0, 1, 2)
    },
}


def lagnet(*args):
    subprocess.run([sys.executable, "-m", "lagnet.cli", *args], check=True, cwd=ROOT)


def train_and_evaluate(folder) -> dict:
    runs = {}
    for i, (row, (config, sets)) in enumerate(ROWS.items()):
        if config is None:
            config = os.path.join(folder, "known.yaml")
            with open(config, "w") as f:
                f.write(KNOWN % {"root": ROOT})
        run = os.path.join(folder, f"run{i}")
        extra = [a for s in sets for a in ("--set", s)]
        lagnet("train", config, "--out", run, "--overwrite", "--quiet", *extra)
        lagnet("evaluate", run, "--control", "--no-plots")
        runs[row] = run
    return runs


def row_of(run: str) -> dict:
    with open(os.path.join(run, "evaluation", "metrics.json")) as f:
        control = json.load(f)["control"]
    entries = control["linearisation"]["entries"]
    return {
        "lqr": control["lqr"],
        "mpc": {k: control["mpc"][k] for k in ("success", "starts", "cost", "median_ms", "p99_ms")},
        "upright_qdd_at_rest": control["equilibrium"]["upright"]["norm"],
        "linearisation_signs": f"{sum(e['same_sign'] for e in entries)}/{len(entries)}",
    }


def table(rows: dict) -> str:
    lines = [
        "| model | LQR held | MPC swing-up held | MPC cost | solve median / p99 (ms) | "
        "‖q̈‖ at rest upright | linearisation signs as the rig's |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, r in rows.items():
        lqr, mpc = r["lqr"], r["mpc"]
        lines.append(
            f"| {name} | {lqr['success']}/{lqr['starts']} | {mpc['success']}/{mpc['starts']} | "
            f"{mpc['cost']:.2f} | {mpc['median_ms']:.1f} / {mpc['p99_ms']:.1f} | "
            f"{r['upright_qdd_at_rest']:.3f} | {r['linearisation_signs']} |"
        )
    for name, group in seed_groups(rows).items():
        lqr = sum(r["lqr"]["success"] for r in group), sum(r["lqr"]["starts"] for r in group)
        mpc = sum(r["mpc"]["success"] for r in group), sum(r["mpc"]["starts"] for r in group)
        lines.append(
            f"| {name}, {len(group)} seeds together | {lqr[0]}/{lqr[1]} | {mpc[0]}/{mpc[1]} | "
            f"{sum(r['mpc']['cost'] for r in group) / len(group):.2f} | | | |"
        )
    return "\n".join(lines)


def seed_groups(rows: dict) -> dict:
    """Rows named "... seed N)" grouped by the rest of their name (only groups of two or more)."""
    groups: dict = {}
    for name, r in rows.items():
        head, sep, _ = name.rpartition(", seed ")
        if sep:
            groups.setdefault(head + ")", []).append(r)
    return {k: v for k, v in groups.items() if len(v) > 1}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--collect", nargs="*", metavar="NAME=RUN", help="evaluated runs to tabulate"
    )
    parser.add_argument("--out", default=os.path.join(HERE, "results", "closed_loop.json"))
    parser.add_argument(
        "--runs", metavar="FOLDER", help="keep the trained runs here (default: a temporary folder)"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        if args.collect:
            runs = dict(item.rsplit("=", 1) for item in args.collect)
        else:
            if args.runs:
                os.makedirs(args.runs, exist_ok=True)
            runs = train_and_evaluate(args.runs or folder)
        rows = {name: row_of(run) for name, run in runs.items()}
    record = {
        "benchmark": "closed_loop",
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}",
        "command": f"python benchmarks/{os.path.basename(__file__)}"
        + ("" if not args.collect else " --collect " + " ".join(f"'{n}=RUN'" for n in runs)),
        "rows": rows,
    }
    text = table(rows)
    print(text)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(record, f, indent=1)
    with open(os.path.splitext(args.out)[0] + ".md", "w") as f:
        f.write(
            f"Measured {record['date']} on {record['machine']}: `{record['command']}` "
            "(`lagnet evaluate RUN --control` on each run).\n\n" + text + "\n"
        )


if __name__ == "__main__":
    main()

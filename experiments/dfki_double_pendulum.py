"""The DFKI double pendulum (measured, design A.0): learned models against the lab's identified model.

Windows on the recorded time grid (uneven steps, the measured torques held over each interval), starting every
`--stride` rows of the test runs 01, 05 and 13; the mean |error| at the window's end after 0.1 s and 0.5 s (the
number of recorded steps whose median length gives that time; the table says the windows' actual mean length).
Rows: holding the initial state, the lab's model (`configs/dfki_double_pendulum_known.yaml`), and the trained
runs given (pure ODE, PINODE, black box). Per test run too, with its torque sizes, so an outlier run shows.

    lagnet train configs/dfki_double_pendulum_known.yaml --out runs/dfki_known   # (and _pure_ode, _pinode, _blackbox)
    python experiments/dfki_double_pendulum.py --runs runs/dfki_known runs/dfki_pure_ode runs/dfki_pinode ...
"""

import argparse
import json
import os

import equinox as eqx
import jax
import numpy as np

from lagnet.data.windows import make_windows
from lagnet.evaluate.metrics import hold_errors, window_errors
from lagnet.run.load import load_run
from lagnet.run.recordings import load_recordings

HERE = os.path.dirname(os.path.abspath(__file__))
HORIZONS = (0.1, 0.5)
LABELS = {
    "known": "lab's model",
    "pure_ode": "pure ODE",
    "pinode": "PINODE",
    "blackbox": "black box",
}


def end_errors(run, trajs, steps: int, stride: int):
    """(W, 2n) |error| at the end of every window, and the windows' durations; also the hold baseline."""
    windows = make_windows(trajs, steps, skip_short=True, dtype=np.float64)
    w = windows.all()
    starts = np.arange(0, w.q.shape[0], stride)
    w = jax.tree.map(lambda x: x[starts], w)
    angles = run.model.angles
    errors = eqx.filter_jit(window_errors)(run.model, run.integrator, w, angles)
    return np.asarray(errors[:, -1]), np.asarray(hold_errors(w, angles)[:, -1]), np.asarray(w.dt)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", nargs="+", required=True, help="run directories (their model type labels them)"
    )
    parser.add_argument(
        "--which", default="best", help="checkpoint of the trained runs: best or last"
    )
    parser.add_argument("--stride", type=int, default=5, help="rows between window starts")
    parser.add_argument("--out", default=os.path.join(HERE, "out", "dfki_double_pendulum.json"))
    args = parser.parse_args()

    jax.config.update(
        "jax_enable_x64", True
    )  # the lab's model run is float64; compare all in float64
    # A run trained for 0 epochs (the lab's model, the pure ODE) has only its best checkpoint.
    runs = [
        load_run(
            path,
            args.which if os.path.isfile(f"{path}/checkpoints/{args.which}.eqx") else "best",
            dtype="float64",
        )
        for path in args.runs
    ]
    reference = runs[0]
    system = reference.model.system
    names = reference.model.state_names
    results = {"horizons": {}, "per_file": {}}
    # Rows by model type; a type given twice (e.g. two pure ODEs) is told apart by its run directory's name.
    types = [LABELS.get(r.config.model.type, r.config.model.type) for r in runs]
    labels = {
        id(r): t if types.count(t) == 1 else f"{t} ({os.path.basename(os.path.normpath(r.path))})"
        for r, t in zip(runs, types, strict=True)
    }
    files = reference.config.data.test
    recordings = {
        os.path.basename(p): load_recordings(reference.config, system, [p]) for p in files
    }
    for f, trajs in recordings.items():
        torque = np.abs(np.concatenate([t.u for t in trajs])).mean(axis=0)
        results["per_file"][f] = {"mean |torque|": torque.tolist()}
    for horizon in HORIZONS:
        steps = int(round(horizon / reference.dt))
        table, parts = {}, {}
        for run in runs:
            label = labels[id(run)]
            for f, trajs in recordings.items():
                errors, hold, dts = end_errors(run, trajs, steps, args.stride)
                parts.setdefault(label, []).append(errors)
                if run is reference:
                    parts.setdefault("hold", []).append(hold)
                    parts.setdefault("_duration", []).append(dts.sum(axis=1))
                results["per_file"][f][f"{label} @ {horizon} s"] = errors.mean(axis=0).tolist()
        durations = np.concatenate(parts.pop("_duration"))
        table = {k: np.concatenate(v).mean(axis=0).tolist() for k, v in parts.items()}
        results["horizons"][str(horizon)] = {
            "steps": steps,
            "mean_duration_s": float(durations.mean()),
            "windows": int(durations.size),
            "mean_abs_error_at_end": table,
        }
        print(
            f"\nmean |error| at the window's end, {steps} recorded steps "
            f"({durations.mean():.3f} s ± {durations.std():.3f}), {durations.size} windows"
        )
        width = max(len(k) for k in table) + 2
        print(" " * width + "".join(f"{n:>12s}" for n in names))
        lab = table.get("lab's model")
        for k in ["hold"] + [k for k in table if k != "hold"]:
            row = k.ljust(width) + "".join(f"{v:12.4g}" for v in table[k])
            if lab is not None and k not in ("hold", "lab's model"):
                row += "   vs lab: " + " ".join(
                    f"{100 * (v / r - 1):+.0f}%" for v, r in zip(table[k], lab, strict=True)
                )
            print(row)
    print("\nper test run (mean |error| at the end; mean |torque| per joint):")
    for f, entries in results["per_file"].items():
        print(f"  {f}: " + "; ".join(f"{k} {np.round(v, 4).tolist()}" for k, v in entries.items()))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()

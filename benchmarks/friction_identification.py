"""Friction identification: does `lagnet train` find a rig's friction coefficients?

A simulated cart-pole whose true forces are the known mechanics plus viscous and Coulomb friction on both joints
(the terms the model lists, nothing else), forced by multisines, 6 runs of 10 s at 50 Hz. The model's
coefficients start at 0 (`friction.fit: none`). Rows: the pure ODE (identification only) and the PINODE (its
identified physics, and its physics after training with the network, `refine: true`). Targets: the pure ODE within
10 % of every true coefficient, the PINODE's identified physics within 20 %.

    python benchmarks/friction_identification.py [--out benchmarks/results/friction_identification.json]
"""

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import warnings

import jax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from distribution_shift import RIGS, config, make_runs, write_runs  # noqa: E402

from lagnet.run.training import train_run  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def relative_errors(found: dict, names) -> dict:
    rig = RIGS["cartpole"]
    out = {}
    for term in ("viscous", "coulomb"):
        for name, true in zip(names, rig[term], strict=True):
            got = found[term][name]
            out[f"{term}.{name}"] = {"true": true, "found": got, "error": abs(got - true) / true}
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", default=os.path.join(HERE, "results", "friction_identification.json")
    )
    args = parser.parse_args(argv)
    # Only the listed terms: no drag.
    RIGS["cartpole"]["drag"] = [0.0, 0.0]
    names = RIGS["cartpole"]["coordinates"]
    rows = {}
    with tempfile.TemporaryDirectory() as folder:
        train = write_runs(folder, "cartpole", make_runs("cartpole", "hanging", 6, 10.0, 7), "run")
        for row, model in (("pure ODE", {"type": "pure_ode"}), ("PINODE", {"type": "pinode"})):
            cfg = config("cartpole", train, train, model, epochs=20)
            cfg = cfg.replace(model={"friction": {"fit": "none"}})
            t = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                train_run(cfg, os.path.join(folder, row.replace(" ", "_")), progress=False)
            with open(os.path.join(folder, row.replace(" ", "_"), "summary.json")) as f:
                summary = json.load(f)
            rows[row] = {
                "identified": relative_errors(
                    summary["identification"]["physics"]["friction"], names
                ),
                "after_training": relative_errors(summary["physics"]["friction"], names),
                "seconds": time.perf_counter() - t,
            }
    worst = {
        row: {k: max(e["error"] for e in v[k].values()) for k in ("identified", "after_training")}
        for row, v in rows.items()
    }
    record = {
        "benchmark": "friction_identification",
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}",
        "command": f"python benchmarks/{os.path.basename(__file__)}",
        "jax": jax.__version__,
        "rows": rows,
        "worst_relative_error": worst,
        "targets_met": {
            "pure_ode_within_10pct": worst["pure ODE"]["after_training"] <= 0.10,
            "pinode_identified_within_20pct": worst["PINODE"]["identified"] <= 0.20,
        },
    }
    for row, v in rows.items():
        for stage in ("identified", "after_training"):
            cells = ", ".join(
                f"{k} {e['found']:.4g} ({100 * e['error']:.1f} %)" for k, e in v[stage].items()
            )
            print(f"{row:9s} {stage:15s} {cells}")
    print(json.dumps(record["targets_met"]))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()

"""Memory while loading a large CSV recording: the peak of reading and mapping it, against its float32 size.

A cart-pole CSV in the shipped format (t, x, phi, x_dot, phi_dot, force; 50 Hz) of `--rows` rows is written, then
each way of loading it runs in its own Python process, which reports the peak of traced allocations (tracemalloc:
numpy arrays and Python objects) and the growth of its peak resident set (ru_maxrss) while loading:

- `read_table float32`: `lagnet.data.read_table`'s CSV reader into float32 columns (time in float64), as
  `lagnet train` reads a float32 run's data;
- `load_trajectories storage=float32`: mapped into trajectories whose q, q̇ and u are float32 (`lagnet train`);
- `load_trajectories` (float64): the library default, q, q̇, u in float64.

The float32 size is rows × 6 columns × 4 bytes; "arrays" is the size of what the call returns.

    .venv/bin/python benchmarks/loading_memory.py [--rows 1000000] [--csv /tmp/cartpole_big.csv] [--json out.json]
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np

COLUMNS = ("t", "x", "phi", "x_dot", "phi_dot", "force")
MAPPING = {
    "time": "t",
    "positions": ["x", "phi"],
    "velocities": ["x_dot", "phi_dot"],
    "inputs": ["force"],
}


def write_cartpole_csv(path: str, rows: int, dt: float = 0.02, block: int = 500_000) -> None:
    """A smooth cart-pole recording of `rows` rows: sums of sines, velocities their exact derivatives."""
    with open(path, "w") as f:
        f.write(",".join(COLUMNS) + "\n")
        for start in range(0, rows, block):
            t = dt * np.arange(start, min(rows, start + block))
            x = 0.5 * np.sin(0.7 * t) + 0.2 * np.sin(1.9 * t + 1.0)
            xd = 0.35 * np.cos(0.7 * t) + 0.38 * np.cos(1.9 * t + 1.0)
            phi = np.pi + 0.8 * np.sin(1.3 * t) + 0.1 * np.sin(4.1 * t)
            phid = 1.04 * np.cos(1.3 * t) + 0.41 * np.cos(4.1 * t)
            force = 3.0 * np.sin(0.9 * t) * np.cos(0.31 * t)
            table = np.stack([t, x, phi, xd, phid, force], axis=1)
            np.savetxt(f, table, fmt=["%.2f"] + ["%.7g"] * 5, delimiter=",")


_MEASURE = r"""
import json, resource, sys, tracemalloc
import numpy as np
from lagnet.data import loader
from lagnet.systems import CartPole
path, how, mapping = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
tracemalloc.start()
if how == "read_table float32":
    out = list(loader._read(path, np.float32, ("t",)).columns.values())
else:
    storage = "float32" if how.endswith("float32") else None
    trajs = loader.load_trajectories(path, mapping, system=CartPole(), storage=storage)
    out = [a for tr in trajs for a in (tr.t, tr.q, tr.qd, tr.u)]
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"peak": peak, "rss_growth": (after - before) * 1024,
                  "arrays": sum(a.nbytes for a in out), "rows": int(out[0].shape[0])}))
"""

WAYS = ("read_table float32", "load_trajectories storage=float32", "load_trajectories float64")


def measure(path: str, how: str) -> dict:
    """One way of loading `path`, in a fresh process: its peaks in bytes."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": here + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, path, how, json.dumps(MAPPING)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument(
        "--csv", default=None, help="the file to write (and keep); default a temporary one"
    )
    p.add_argument("--json", default=None)
    args = p.parse_args()
    path = args.csv or f"/tmp/lagnet_loading_memory_{args.rows}.csv"
    if not os.path.exists(path):
        write_cartpole_csv(path, args.rows)
    float32 = args.rows * len(COLUMNS) * 4
    print(
        f"{path}: {args.rows} rows, {os.path.getsize(path) / 1e6:.0f} MB of text, float32 size "
        f"{float32 / 1e6:.0f} MB"
    )
    results = {}
    for how in WAYS:
        r = measure(path, how)
        results[how] = {**r, "float32_size": float32}
        print(
            f"{how:36s} traced peak {r['peak'] / 1e6:7.0f} MB = {r['peak'] / float32:4.2f}x float32 size, "
            f"{r['peak'] / r['arrays']:4.2f}x its arrays ({r['arrays'] / 1e6:.0f} MB); "
            f"RSS grew {r['rss_growth'] / 1e6:.0f} MB"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {"rows": args.rows, "csv_bytes": os.path.getsize(path), **results}, f, indent=1
            )


if __name__ == "__main__":
    main()

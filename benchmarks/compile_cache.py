"""Compile time of lagnet's training step cold and from the persistent compilation cache (`lagnet train`'s).

Two fresh processes build the train_step benchmark's lagnet step (batch 128, 30-step RK4 loss, Adam, batch split
over every core) with `lagnet.compilation_cache.use_compilation_cache` on an empty folder: the first compiles and
stores, the second loads. Compile = first call − a steady call, in each process.

    .venv/bin/python benchmarks/compile_cache.py [--json out.json]
"""

import json
import os
import subprocess
import sys
import tempfile

from _common import load, parser, write

CHILD = """
import json, sys, time
sys.path.insert(0, {here!r})
from lagnet.compilation_cache import use_compilation_cache
use_compilation_cache({cache!r})
import jax
from _common import block, first_call, make_model
from train_step import jax_steps, make_data
model = make_model()
data, stacked = make_data(128, 30, 1)
params, opt_states, steps, _ = jax_steps(model, data, 30, 128)
step, opt_state = steps["lagnet"], opt_states["lagnet"]
first, _ = first_call(lambda: step(params, opt_state, None))
t = time.perf_counter()
block(step(params, opt_state, None))
print(json.dumps({{"first_call_s": first, "steady_s": time.perf_counter() - t}}))
"""


def main():
    args = parser(__doc__).parse_args()
    load_before = load()
    here = os.path.dirname(os.path.abspath(__file__))
    runs = []
    with tempfile.TemporaryDirectory() as cache:
        for _ in range(2):
            out = subprocess.run(
                [sys.executable, "-c", CHILD.format(here=here, cache=cache)],
                capture_output=True,
                text=True,
                check=True,
            )
            r = json.loads(out.stdout.strip().splitlines()[-1])
            runs.append({**r, "compile_s": r["first_call_s"] - r["steady_s"]})
    write(
        args.json,
        "compile_cache",
        {
            "load_before": load_before,
            "load_after": load(),
            "cold": runs[0],
            "cached": runs[1],
        },
    )


if __name__ == "__main__":
    main()

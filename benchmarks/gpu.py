"""The accelerator table: RK4 rollouts, training steps and time to accuracy on a GPU (or TPU), in one short run.

On a machine whose JAX has a GPU or TPU backend this runs the benchmarks `make bench` runs on the CPU, with the
same scripts (so every row is measured as its CPU row is), at the CPU's sizes and at sizes that fill an
accelerator, one after another in fresh processes:

| part | what |
| --- | --- |
| rollout_b1024, rollout_b16384 | rollout_rk4.py: lagnet's RK4 rollout against a hand-written scan and diffrax |
| train_step_b128, train_step_b4096 | train_step.py: a 30-step training step against the scan and diffrax |
| time_to_accuracy | time_to_accuracy.py: cold `lagnet train` of the cart-pole and the DFKI double pendulum |

Each part writes its record (the script's own JSON) to --out; a part that fails or outlasts the time left of
--budget-s (default 480 s: the whole run fits in one 10-minute command) is recorded with its status and the end
of its output, and the rest still run (the exit status is 0 once the summary is written). `gpu.json` in --out
summarises the run; `run_all.py` reads benchmarks/results/gpu/ into the "Accelerator" section of RESULTS.md.
Without a GPU or TPU it says so and writes nothing, so that a CPU machine's `make bench` never replaces an
accelerator's records.

    python benchmarks/gpu.py [--out benchmarks/results/gpu] [--budget-s 480] [--quick] [--allow-cpu]
    python3 benchmarks/gpu.py --out DIR     # lagnet need not be installed: the parts import this checkout's

`--allow-cpu` runs the same sequence on the CPU: a smoke test of this script (with --quick, the CPU-sized parts
at their smoke sizes, about 2 minutes on 2 cores; the whole sequence at --quick sizes took 6 minutes there).
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# (name, script, arguments): the CPU's sizes first, then an accelerator's, so that a run cut short by its budget
# still has the comparison with the CPU table. Neither torch (it would run on the CPU here) nor numpy at 16384.
PARTS = [
    ("rollout_b1024", "rollout_rk4", ["--batch", "1024", "--steps", "1000", "--no-torch"]),
    ("train_step_b128", "train_step", ["--batch", "128", "--horizon", "30", "--no-torch"]),
    ("time_to_accuracy", "time_to_accuracy", []),
    (
        "rollout_b16384",
        "rollout_rk4",
        ["--batch", "16384", "--steps", "1000", "--no-torch", "--no-numpy"],
    ),
    ("train_step_b4096", "train_step", ["--batch", "4096", "--horizon", "30", "--no-torch"]),
]


def probe() -> dict:
    """JAX's default backend and device in a separate process: this one must not take the accelerator's memory
    (JAX preallocates most of a GPU's) before the parts run."""
    code = (
        "import json, jax; d = jax.devices()[0]; print(json.dumps({'backend': jax.default_backend(), "
        "'device': getattr(d, 'device_kind', str(d)), 'devices': len(jax.devices()), "
        "'jax': jax.__version__}))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode:
        raise SystemExit(f"could not start JAX:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_part(name, script, args, out, timeout, quick) -> dict:
    """One part in a fresh process; its status, wall time and (on failure) the end of its output."""
    path = os.path.join(out, f"{name}.json")
    cmd = [sys.executable, os.path.join(HERE, f"{script}.py"), "--json", path, *args]
    if quick:
        cmd.append("--quick")
    if timeout <= 0:
        return {"part": name, "status": "not run: the budget was spent"}
    t = time.perf_counter()
    # Memory on demand: time_to_accuracy.py's process and the `lagnet train` it starts share the device (by
    # default JAX takes 75 % of a GPU's memory when it starts).
    env = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false", **os.environ}
    # This checkout's lagnet, installed or not (a device machine runs the scripts from a copy of the tree).
    env["PYTHONPATH"] = os.pathsep.join(x for x in (ROOT, os.environ.get("PYTHONPATH")) if x)
    # A session of its own, so that a part stopped at the budget takes the processes it started along.
    proc = subprocess.Popen(
        cmd,
        cwd=HERE,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        return {
            "part": name,
            "status": f"stopped after {timeout:.0f} s (budget)",
            "seconds": time.perf_counter() - t,
            "output": output[-3000:],
        }
    seconds = time.perf_counter() - t
    if proc.returncode:
        return {
            "part": name,
            "status": f"failed (exit {proc.returncode})",
            "seconds": seconds,
            "output": output[-3000:],
        }
    return {"part": name, "status": "ok", "seconds": seconds, "record": os.path.basename(path)}


def against_peers(results: dict, speed: str) -> str:
    """lagnet's row of a rollout or training-step record: its speed, its ratios to the scan and diffrax, its compile."""
    lag, dfx = results["lagnet"], results.get("diffrax")
    versus_diffrax = f", {dfx['seconds'] / lag['seconds']:.2f}× diffrax" if dfx else ""
    return (
        f"{speed}, {lag['vs_scan']:.2f}× the scan{versus_diffrax}; compile {lag['compile_s']:.2f} s"
    )


def summary_table(out: str, parts: list[dict]) -> list[str]:
    """The accelerator's rows, read back from the parts' records (the same fields run_all.py's CPU tables use)."""

    def rec(name):
        path = os.path.join(out, f"{name}.json")
        if not os.path.exists(path):
            return None
        with open(path) as f:
            return json.load(f)

    lines = ["| measurement | result |", "| --- | --- |"]
    for part in parts:
        name, r = part["part"], rec(part["part"])
        if part["status"] != "ok" or r is None:
            lines.append(f"| {name} | {part['status']} |")
            continue
        if name.startswith("rollout"):
            speed = f"{r['results']['lagnet']['sample_steps_per_s']:.3g} sample-steps/s"
            row = f"RK4 rollout, {r['batch']} × {r['steps']} steps"
            lines.append(f"| {row} | {against_peers(r['results'], speed)} |")
        elif name.startswith("train_step"):
            speed = f"{r['results']['lagnet']['ms_per_step']:.3g} ms/step"
            row = f"training step, batch {r['batch']}, {r['horizon']}-step windows"
            lines.append(f"| {row} | {against_peers(r['results'], speed)} |")
        else:
            for x in [r] + ([r["real"]] if r.get("real") else []):
                lines.append(
                    f"| time to accuracy, {x['config']} | {x['time_to_accuracy_s']:.1f} s (compile "
                    f"{x['compile_s']:.2f} s, train {x['train_to_accuracy_s']:.1f} s) at validation "
                    f"loss {x['validation_loss_reached']:.3g} (best {x['best_validation_loss']:.3g}) |"
                )
            lines.append(
                f"| whole-run compile, 3-stage curriculum against 1 stage | "
                f"{r['three_stage_compile_s']:.2f} s against {r['one_stage_compile_s']:.2f} s |"
            )
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.path.join(HERE, "results", "gpu"))
    p.add_argument("--budget-s", type=float, default=480.0, help="wall-clock budget of all parts")
    p.add_argument("--quick", action="store_true", help="the first three parts at smoke sizes")
    p.add_argument("--allow-cpu", action="store_true", help="run on the CPU too (a smoke test)")
    args = p.parse_args(argv)
    info = probe()
    if info["backend"] == "cpu" and not args.allow_cpu:
        print(
            f"benchmarks/gpu.py: JAX's backend here is {info['backend']} ({info['device']}): no GPU or TPU, "
            "nothing measured (the accelerator's records, if any, are left as they are)."
        )
        return 0
    os.makedirs(args.out, exist_ok=True)
    start = time.perf_counter()
    parts = []
    # Quick: the CPU-sized parts at their smoke sizes (the accelerator-sized ones are the point of a real run).
    for name, script, extra in PARTS[:3] if args.quick else PARTS:
        left = args.budget_s - (time.perf_counter() - start)
        parts.append(run_part(name, script, extra, args.out, left, args.quick))
        print(f"{name}: {parts[-1]['status']} ({parts[-1].get('seconds', 0):.0f} s)", flush=True)
    lines = summary_table(args.out, parts)
    record = {
        "benchmark": "gpu",
        **info,
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "quick": args.quick,
        "budget_s": args.budget_s,
        "seconds": time.perf_counter() - start,
        "parts": parts,
        "table": lines,
    }
    with open(os.path.join(args.out, "gpu.json"), "w") as f:
        json.dump(record, f, indent=1)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

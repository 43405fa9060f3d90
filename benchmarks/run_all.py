"""Run every benchmark (each a separate script, run alone with the same flags) and write benchmarks/RESULTS.md.

    .venv/bin/python benchmarks/run_all.py            # everything, about 5 minutes on 2 CPU cores
    .venv/bin/python benchmarks/run_all.py --quick    # small sizes, a smoke run of a few minutes
    .venv/bin/python benchmarks/run_all.py --only rollout_rk4 train_step --no-torch

Each script writes its record to benchmarks/results/<name>.json; the table is rebuilt from whatever records are
there, so a part can be rerun alone. The machine's load average is recorded before and after each part: on a
shared machine the ratios (measured interleaved in one process) are the numbers to trust, not the absolutes.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
PARTS = [
    "peak",
    "rollout_rk4",
    "rollout_other",
    "train_step",
    "compile_cache",
    "scaling",
    "train_config",
    "time_to_accuracy",
    "long_horizon",
    "mpc",
    "robot_dynamics",
    "gpu",  # benchmarks/gpu.py: measures only where JAX has a GPU or TPU, else leaves its records as they are
]

TARGETS = {  # the targets, and (indented) the same comparison like for like
    "rollout_vs_scan": 1.0,
    "  rollout_vs_scan, both split over the cores": 1.0,
    "train_vs_scan": 1.0,
    "  train_vs_scan, both on 1 device": 1.0,
    "rollout_vs_torch": 2.0,
    "train_vs_torch": 5.0,
    "peak_fraction": 0.35,
    "rollout_compile_s": 1.0,
    "train_compile_s": 3.0,
    "  train_compile_s, from the compilation cache": 3.0,
    "time_to_accuracy_s": 15.0,
    "time_to_accuracy_s, DFKI double pendulum": 60.0,
    "run_compile_s": 3.0,
    "curriculum_compile_ratio": 1.5,
    "long_horizon_vs_scan, 250 steps": 1.0,
    "long_horizon_vs_diffrax, 250 steps": 2.0,
    "mpc_p99_rate_hz, PINODE": 50.0,
    "  mpc_p99_rate_hz, PINODE, interleaved with the peers": 50.0,
    "mpc_vs_ipopt_median, PINODE (IPOPT unconverged, no loop)": 5.0,
    "  mpc_vs_ipopt_median, PINODE (IPOPT capped, closed loop)": 5.0,
    "  mpc_vs_do_mpc_median, PINODE (do-mpc capped, closed loop)": 5.0,
    "  mpc_vs_ipopt_median, known model (both in closed loop)": 5.0,
    "  mpc_vs_do_mpc_median, known model (both in closed loop)": 5.0,
    "robot_grad_vs_closed_form, DFKI double pendulum": 2.0,
    "robot_grad_vs_pinocchio, 7-joint arm": 3.0,
    "robot_grad_mjx_vs_tree, slowest ratio": 1.0,
    "robot_train_vs_closed_form, DFKI URDF config": 1.5,
}


def run(parts, quick: bool, no_torch: bool) -> None:
    os.makedirs(RESULTS, exist_ok=True)
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    for name in parts:
        path = record_path(name)
        cmd = [sys.executable, os.path.join(HERE, f"{name}.py")]
        cmd += ["--out", os.path.dirname(path)] if name == "gpu" else ["--json", path]
        if quick:
            cmd.append("--quick")
        if no_torch and name in ("rollout_rk4", "train_step"):
            cmd.append("--no-torch")
        print(f"== {name}: {' '.join(cmd[1:])}", flush=True)
        t = time.perf_counter()
        proc = subprocess.run(cmd, env=env, cwd=HERE, capture_output=True, text=True)
        if proc.returncode:
            sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
            raise SystemExit(f"{name} failed (exit {proc.returncode})")
        print(f"   done in {time.perf_counter() - t:.0f} s", flush=True)


def record_path(name: str) -> str:
    """A part's record; gpu.py writes several to a folder of their own, gpu.json summarising them."""
    return os.path.join(RESULTS, *(("gpu", "gpu.json") if name == "gpu" else (f"{name}.json",)))


def records() -> dict:
    out = {}
    for name in PARTS:
        path = record_path(name)
        if os.path.exists(path):
            with open(path) as f:
                out[name] = json.load(f)
    return out


def fmt(x, digits=3):
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "**no**"
    if abs(x) >= 1e5:
        return f"{x:.3g}"
    return f"{x:.{digits}g}"


def table(header, rows) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += [
        "| " + " | ".join(fmt(c) if not isinstance(c, str) else c for c in r) + " |" for r in rows
    ]
    return lines + [""]


def robot_targets(rec: dict) -> dict:
    """The robot benchmark's targets: the tree's rollout gradient against the closed form (DFKI) and Pinocchio
    (the arm), MJX's against the tree's (the smallest ratio over the robots), and the URDF config's training time
    against the closed form's."""
    grad = {(r["robot"], r["implementation"]): r for r in rec["rows"] if r["program"] == "grad"}
    out = {}
    for (robot, impl), r in grad.items():
        if impl != "RigidBodyTree":
            continue
        if robot.startswith("DFKI") and r["vs_closed_form"] is not None:
            out["robot_grad_vs_closed_form, DFKI double pendulum"] = r["vs_closed_form"]
        if "7 joints" in robot and r["vs_pinocchio"] is not None:
            out["robot_grad_vs_pinocchio, 7-joint arm"] = r["vs_pinocchio"]
        if (robot, "MJX") in grad:
            ratio = grad[robot, "MJX"]["ms"] / r["ms"]
            key = "robot_grad_mjx_vs_tree, slowest ratio"
            out[key] = min(ratio, out.get(key, ratio))
    if rec.get("training"):
        out["robot_train_vs_closed_form, DFKI URDF config"] = rec["training"]["ratio"]
    return out


def robot_section(rec: dict) -> list[str]:
    """robot_dynamics.py: lagnet's RigidBodyTree from description files against the closed form and the peers."""
    lines = [
        f"## Robots from description files: M + q̈ and the gradient of a {rec['steps']}-step rollout loss, batch "
        f"{rec['batch']}, float64 (mujoco {rec.get('mujoco')}, pinocchio {rec.get('pinocchio', 'absent')}; "
        f"measured {rec.get('date', 'on an earlier date')})",
        "",
    ]
    keys = [
        "robot",
        "program",
        "implementation",
        "ms",
        "vs_closed_form",
        "vs_pinocchio",
        "compile_s",
        "peak_mb",
    ]
    rows = [[r.get(k) for k in keys] for r in rec["rows"]]
    header = [
        "robot",
        "program",
        "implementation",
        "ms",
        "× closed form",
        "× Pinocchio",
        "compile s",
        "peak MiB",
    ]
    notes = list(rec.get("notes", []))
    if not any(r["implementation"] == "MJX" for r in rec["rows"]):
        notes.append("MJX not measured in this record (`--no-mjx`, or mujoco-mjx absent)")
    training = rec.get("training")
    if training:
        closed, urdf = (training["seconds"][k] for k in ("closed form", "URDF"))
        notes.append(
            f"`lagnet train` cold, {len(urdf)} runs each interleaved: {training['configs']['URDF'][0]} "
            f"{', '.join(f'{x:.1f}' for x in urdf)} s against the same model on the closed form "
            f"({training['configs']['closed form'][0]} with {', '.join(training['configs']['closed form'][1:])}) "
            f"{', '.join(f'{x:.1f}' for x in closed)} s: {training['ratio']:.2f}× (medians)"
        )
    return lines + table(header, rows)[:-1] + [""] + [f"- {note}" for note in notes] + [""]


def report(recs: dict, command: str, date: str | None = None) -> str:
    env = {}
    # Each script imports only what it compares; the accelerator's run has its own line below.
    for r in recs.values():
        env.update({k: v for k, v in r.get("environment", {}).items() if v is not None})
    lines = [
        "# Benchmarks",
        "",
        f"Produced by `{command}` ({date or time.strftime('%Y-%m-%d')}). "
        f"jax {env.get('jax')} on {env.get('backend')} ({env.get('cpus')} cores), diffrax "
        f"{env.get('diffrax')}, torch {env.get('torch', 'absent')}, torchdiffeq "
        f"{env.get('torchdiffeq', 'absent')}; float32. Medians of interleaved repeats after a warm-up; "
        "compile = first call − steady call.",
        "",
    ]
    measured = {}
    peak = recs.get("peak")
    if "rollout_rk4" in recs:
        r = recs["rollout_rk4"]
        res = r["results"]
        lines += [
            f"## RK4 rollouts: {r['batch']} cart-poles + 2×64 tanh MLP force, {r['steps']} steps "
            f"(torch threads: "
            f"{r.get('torch_threads')})",
            "",
        ]
        if r.get("peak_gflops"):
            lines += [
                f"Fractions of the float32 2048² matmul at {r['peak_gflops']:.0f} GFLOP/s, timed in the same "
                "interleaved rounds.",
                "",
            ]
        rows = []
        for name, v in res.items():
            frac = None
            bound = r.get("peak_gflops") or (peak and peak["peak_gflops"])  # same run, else peak.py
            if bound:
                frac = v["sample_steps_per_s"] * r["flops_per_sample_step"] / (bound * 1e9)
            check = r["max_abs_difference"].get(name)
            if check is None:
                check = next(
                    (c for k, c in r["max_abs_difference"].items() if k.startswith(name)), 0.0
                )
            rows.append([name, v["sample_steps_per_s"], v["vs_scan"], frac, v["compile_s"], check])
        lines += table(
            [
                "implementation",
                "sample-steps/s",
                "× scan",
                "of matmul peak",
                "compile s",
                "max |Δ| vs lagnet, 100 steps",
            ],
            rows,
        )
        measured["rollout_vs_scan"] = res["lagnet"]["vs_scan"]
        split_scan = next((v for k, v in res.items() if k.startswith("hand-written scan,")), None)
        if split_scan:
            measured["  rollout_vs_scan, both split over the cores"] = (
                split_scan["seconds"] / res["lagnet"]["seconds"]
            )
        measured["rollout_compile_s"] = res["lagnet"]["compile_s"]
        if "torchdiffeq" in res:
            measured["rollout_vs_torch"] = res["torchdiffeq"]["seconds"] / res["lagnet"]["seconds"]
        measured["peak_fraction"] = rows[0][3]
    if "rollout_other" in recs:
        r = recs["rollout_other"]
        lines += [
            f"## Leapfrog and Newmark(¼, ½) rollouts, same model, {r['batch']} × {r['steps']} steps",
            "",
        ]
        rows = []
        for method, res in r["results"].items():
            for name, v in res.items():
                rows.append(
                    [f"{method}: {name}", v["sample_steps_per_s"], v["vs_scan"], v["compile_s"]]
                )
        lines += table(["implementation", "sample-steps/s", "× its scan", "compile s"], rows)
        lines += [
            "The hand-written Newmark uses a fixed 8 Newton iterations; lagnet's Newton stops at the first "
            "correction below √ε and differentiates the root implicitly.",
            "",
        ]
    if "train_step" in recs:
        r = recs["train_step"]
        res = r["results"]
        lines += [
            f"## Training steps: {r['horizon']}-step RK4 rollout loss, batch {r['batch']}, value-and-grad, "
            f"Adam, time per step in runs of {r.get('steps_per_call', 1)} steps (torch threads: "
            f"{r['torch_threads']})",
            "",
        ]
        rows = [
            [
                n,
                v["ms_per_step"],
                v["vs_scan"],
                v["compile_s"],
                r["cross_check"].get(n, {}).get("grad", r["cross_check"].get(n, {}).get("params")),
            ]
            for n, v in res.items()
        ]
        lines += table(
            [
                "implementation",
                "ms / step",
                "× scan",
                "compile s",
                "max |Δ grad| (split: |Δ params|, 10 steps)",
            ],
            rows,
        )
        measured["train_vs_scan"] = res["lagnet"]["vs_scan"]
        if "lagnet, 1 device" in res:
            measured["  train_vs_scan, both on 1 device"] = res["lagnet, 1 device"]["vs_scan"]
        measured["train_compile_s"] = res["lagnet"]["compile_s"]
        if "torchdiffeq" in res:
            measured["train_vs_torch"] = res["torchdiffeq"]["seconds"] / res["lagnet"]["seconds"]
    if "compile_cache" in recs:
        r = recs["compile_cache"]
        lines += [
            "## Compilation cache",
            "",
            f"lagnet's training step compiles in {r['cold']['compile_s']:.2f} s in a fresh process and in "
            f"{r['cached']['compile_s']:.2f} s in the next one, which finds it in the persistent cache "
            "(`lagnet train` keeps one in ~/.cache/lagnet/xla; `LAGNET_COMPILATION_CACHE=off` disables it).",
            "",
        ]
        measured["  train_compile_s, from the compilation cache"] = r["cached"]["compile_s"]
    if "train_config" in recs:
        r = recs["train_config"]
        lines += [
            f"## The paper's config to target accuracy ({r['config']})",
            "",
            f"{r['epochs_run']} epochs in {r['train_seconds']:.1f} s wall (first epoch, mostly compilation, "
            f"{fmt(r['first_epoch_seconds'])} s; later epochs {fmt(r['median_epoch_seconds'])} s each); "
            f"evaluation {r['evaluate_seconds']:.1f} s.",
            "",
        ]
        rows = [[k, r["errors"][k], r["target"][k], r["met"][k]] for k in r["target"]]
        lines += table(["state", "mean window error", "target (pure ODE / 2)", "met"], rows)
    if "mpc" in recs:
        r = recs["mpc"]
        lines += [
            f"## MPC per control step: lagnet vs CasADi + IPOPT and do-mpc, cart-pole swing-up on the true rig, "
            f"H = {r['horizon']}{r['note'] or ''}",
            "",
        ]
        rows = []
        for model, res in r["results"].items():
            for name, v in res.items():
                if isinstance(v, dict):
                    ok = "–" if v["success"] is None else f"{v['success']}/{v['runs']}"
                    rows.append(
                        [f"{model}: {name}", v["median_ms"], v["p99_ms"], ok, v["mean_cost"]]
                    )
        lines += table(["model: solver", "median ms", "p99 ms", "swung up", "cost"], rows)
        pinode = r["results"].get("PINODE", {})
        # The real-time figure: lagnet's loop alone in the process, as deployed (older records: interleaved).
        alone = pinode.get("lagnet, alone", pinode.get("lagnet"))
        if alone:
            measured["mpc_p99_rate_hz, PINODE"] = 1e3 / alone["p99_ms"]
        if "lagnet, alone" in pinode:
            measured["  mpc_p99_rate_hz, PINODE, interleaved with the peers"] = (
                1e3 / pinode["lagnet"]["p99_ms"]
            )
        ratios = r.get("ratios", {})
        if "PINODE" in ratios:
            measured["mpc_vs_ipopt_median, PINODE (IPOPT unconverged, no loop)"] = ratios["PINODE"][
                "median_speedup"
            ]
        for peer, key in (
            ("IPOPT, ", "  mpc_vs_ipopt_median, PINODE (IPOPT capped, closed loop)"),
            ("do-mpc, ", "  mpc_vs_do_mpc_median, PINODE (do-mpc capped, closed loop)"),
        ):
            capped = [v for k, v in ratios.items() if k.startswith(f"PINODE vs {peer}")]
            if capped:
                measured[key] = capped[0]["median_speedup"]
        if "known model" in ratios:
            measured["  mpc_vs_ipopt_median, known model (both in closed loop)"] = ratios[
                "known model"
            ]["median_speedup"]
        if "known model vs do-mpc" in ratios:
            measured["  mpc_vs_do_mpc_median, known model (both in closed loop)"] = ratios[
                "known model vs do-mpc"
            ]["median_speedup"]
    if "long_horizon" in recs:
        r = recs["long_horizon"]
        lines += [
            "## Training steps at long horizons: ms per step / peak MB",
            "",
        ]
        names = list(next(iter(r["results"].values())))
        rows = [
            [cell.replace("x", " × ")]
            + [f"{v[n]['ms_per_step']:.1f} / {v[n]['peak_mb']:.1f}" for n in names]
            for cell, v in r["results"].items()
        ]
        lines += table(["horizon × batch"] + names, rows)
        at250 = [v for cell, v in r["results"].items() if cell.startswith("250x")]
        if at250:
            measured["long_horizon_vs_scan, 250 steps"] = min(v["lagnet"]["vs_scan"] for v in at250)
            measured["long_horizon_vs_diffrax, 250 steps"] = min(
                v["lagnet"]["vs_diffrax"] for v in at250
            )
    if "time_to_accuracy" in recs:
        r = recs["time_to_accuracy"]
        runs = [r] + ([r["real"]] if r.get("real") else [])
        lines += [
            "## Time to accuracy: `lagnet train CONFIG`, cold",
            "",
            f"Wall time until the validation loss is within {r['within']:.0%} of the run's best. The compile "
            f"time of 3 epochs with a curriculum 5 → 10 → 20 steps is {fmt(r['three_stage_compile_s'])} s "
            f"against {fmt(r['one_stage_compile_s'])} s for one stage ({fmt(r['compile_ratio'])}×); medians of "
            f"{len(r['one_stage_compile_runs_s'])} interleaved cold runs each "
            f"({', '.join(fmt(x) for x in r['three_stage_compile_runs_s'])} s against "
            f"{', '.join(fmt(x) for x in r['one_stage_compile_runs_s'])} s). The cart-pole's cold compile, "
            f"the median over every cold run of its one-stage program (the full run first): "
            f"{fmt(r['cold_compile_median_s'])} s ({', '.join(fmt(x) for x in r['cold_compile_runs_s'])} s).",
            "",
        ]
        lines += table(
            [
                "config",
                "time to accuracy s",
                "start-up s",
                "load s",
                "compile s",
                "train s",
                "validation loss reached (best)",
                "epoch reached / run",
                "whole run s",
            ],
            [
                [
                    x["config"],
                    x["time_to_accuracy_s"],
                    x["startup_s"],
                    x["load_s"],
                    x["compile_s"],
                    x["train_to_accuracy_s"],
                    f"{fmt(x['validation_loss_reached'])} ({fmt(x['best_validation_loss'])})",
                    f"{x['epoch_reached']} / {x['epochs_run']}",
                    x["total_s"],
                ]
                for x in runs
            ],
        )
        measured["time_to_accuracy_s"] = r["time_to_accuracy_s"]
        if r.get("real"):
            measured["time_to_accuracy_s, DFKI double pendulum"] = r["real"]["time_to_accuracy_s"]
        measured["run_compile_s"] = r["cold_compile_median_s"]  # a single run varies by ±25 % here
        measured["curriculum_compile_ratio"] = r["compile_ratio"]
    if "scaling" in recs:
        r = recs["scaling"]
        lines += ["## Scaling, one device", ""]
        lines += table(
            ["batch", "µs / step", "sample-steps/s"],
            [[x["batch"], x["us_per_step"], x["sample_steps_per_s"]] for x in r["batch"]],
        )
        lines += table(
            [f"horizon (batch {r['horizon'][0]['batch']})", "µs / step", "sample-steps/s"],
            [[x["steps"], x["us_per_step"], x["sample_steps_per_s"]] for x in r["horizon"]],
        )
        lines += table(
            [
                f"chain N (batch {r['dof'][0]['batch']})",
                "leapfrog µs/step",
                "RK4 µs/step",
                "Newmark µs/step",
            ],
            [
                [
                    x["n"],
                    x["leapfrog_us_per_step"],
                    x["rk4_us_per_step"],
                    x.get("newmark_us_per_step"),
                ]
                for x in r["dof"]
            ],
        )
        m = r["memory"]
        lines += table(
            [f"{m['steps']}-step training step, batch {m['batch']}", "XLA buffers MB", "seconds"],
            [
                [k, v["total_bytes"] / 1e6, v["seconds"]]
                for k, v in m.items()
                if isinstance(v, dict)
            ],
        )
    if "robot_dynamics" in recs:
        lines += robot_section(recs["robot_dynamics"])
        measured.update(robot_targets(recs["robot_dynamics"]))
    if peak:
        lines += [
            f"## Hardware bound: float32 matmul {peak['n']}² at {peak['peak_gflops']:.0f} GFLOP/s; the MLP's "
            f"(batch × 64) @ (64 × 64) at {peak['results']['mlp-shaped']['gflops']:.0f} GFLOP/s in float32, "
            f"{peak['results'].get('mlp-shaped bfloat16', {}).get('gflops', float('nan')):.0f} GFLOP/s in "
            "bfloat16. The model's "
            "matmul work is 4 × 2 × (5·64 + 64·64 + 64·2) = 36,352 FLOPs per sample-step.",
            "",
        ]
    gpu = recs.get("gpu")
    lines += ["## Accelerator (`benchmarks/gpu.py`)", ""]
    if gpu:
        lines += [
            f"{gpu['device']} ({gpu['backend']}, {gpu['devices']} device(s)), jax {gpu['jax']}, "
            f"{gpu['date'][:10]}{', smoke sizes (--quick)' if gpu['quick'] else ''}; each row the CPU benchmark "
            "of the same name, run there. Records: `benchmarks/results/gpu/`.",
            "",
            *gpu["table"],
            "",
        ]
    else:
        lines += [
            "Not measured: no GPU or TPU was available where this was run. On a machine with one, "
            "`python benchmarks/gpu.py` (within its 8-minute budget) measures the rollout, training-step and "
            "time-to-accuracy rows there and this section shows them.",
            "",
        ]
    rows = []
    for key, goal in TARGETS.items():
        value = measured.get(key)
        lower_better = any(
            k in key
            for k in (
                "compile_s",
                "compile_ratio",
                "time_to_accuracy_s",
                "_vs_closed_form",
                "_vs_pin",
            )
        )
        met = None if value is None else (value <= goal if lower_better else value >= goal)
        rows.append(
            [key, ("≤ " if lower_better else "≥ ") + fmt(goal), value, "–" if met is None else met]
        )
    lines = (
        lines[:4]
        + ["## Targets", ""]
        + table(["target", "goal", "measured", "met"], rows)
        + lines[4:]
    )
    return "\n".join(lines)


def measured_on(path: str) -> str | None:
    """The date in an existing RESULTS.md's first line of results, or None."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        found = re.search(r"^Produced by `[^`]*` \((\d{4}-\d{2}-\d{2})\)", f.read(), re.MULTILINE)
    return found.group(1) if found else None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes, few repeats (a smoke run)")
    p.add_argument("--only", nargs="*", choices=PARTS, help="run only these parts")
    p.add_argument("--skip", nargs="*", choices=PARTS, default=[], help="skip these parts")
    p.add_argument("--no-torch", action="store_true", help="skip the torch comparisons")
    p.add_argument("--report-only", action="store_true", help="rebuild RESULTS.md from results/")
    args = p.parse_args()
    parts = [x for x in (args.only or PARTS) if x not in args.skip]
    if not args.report_only:
        run(parts, args.quick, args.no_torch)
    command = "python benchmarks/run_all.py" + (" --quick" if args.quick else "")
    path = os.path.join(HERE, "RESULTS.md")
    # --report-only measures nothing: the CPU tables keep the date they were measured on (an accelerator's run,
    # benchmarks/gpu.py, brings its own).
    text = report(records(), command, measured_on(path) if args.report_only else None)
    with open(path, "w") as f:
        f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()

"""Every named task with the controller `lagnet evaluate --control` designs for it: does it succeed, and how fast
does it solve?

For each task (`lagnet.control.tasks.TASKS`), the controller designed on a model (the iLQR with the task's
options, `lagnet.control.ilqr.TASK_OPTIONS`, for a swing-up; the LQR for the reach) runs from the task's own
starts on two plants: the system's simulated rig read by its sensors (the default; the double pendulum's is the
lab's identified model with its joint friction, read by its motors' encoders) and the task's nominal system with
the true state. The model is the task's nominal system ("known"), a trained run's (`--run NAME=RUN_DIR`), or for
the double pendulum the rig's own model with its friction smoothed as a trained model's (`--lab-model`).

`--validate` measures the candidate options (`CANDIDATES`) on the validation starts (seed 1) instead: that is how
`TASK_OPTIONS` were chosen. The evaluation's starts are seed 0.

    python benchmarks/control_tasks.py [--tasks NAME ...] [--starts 4] [--run NAME=RUN_DIR]
    python benchmarks/control_tasks.py --validate --tasks pendubot-swingup acrobot-swingup
    python benchmarks/control_tasks.py --paced --tasks pendubot-swingup --plants known --starts 2

`--paced` holds the plant to the wall clock (`PacedPlant`): each period lasts dt of real time, and a controller
call that overruns it is a missed deadline, counted per run (each start's first call is a cold solve).
"""

import argparse
import json
import os
import platform
import shlex
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")

# Per controller, the options measured against the ones chosen per task: the iLQR's own defaults (a 1.5 s horizon,
# the task's running cost, no energy term, the LQR's cost-to-go at the end and the LQR taking over near the goal);
# the LQR with integral action of two weights against the plain LQR chosen.
CANDIDATES = {
    "ilqr": {
        "ilqr defaults": dict(running=1.0, terminal=None, catch=None, energy=0.0, wall=0.0),
        "chosen": {},
    },
    "lqr": {
        "integral 10": dict(integral=10.0),
        "integral 100": dict(integral=100.0),
        "chosen": {},
    },
}


def measure(model_name, dyn, t, plant, starts, seed, options=None, paced=False):
    from lagnet.control import task_evaluation

    start = time.perf_counter()
    summary, _ = task_evaluation.evaluate_task(
        dyn, t, plant, starts=starts, seed=seed, options=options, paced=paced
    )
    row = {"task": t.name, "model": model_name, **summary}
    row["wall_s"] = round(time.perf_counter() - start, 1)
    print(json.dumps(row), flush=True)
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", nargs="+", default=None)
    p.add_argument("--plants", nargs="+", default=["rig", "known"])
    p.add_argument("--starts", type=int, default=4)
    p.add_argument("--run", action="append", default=[], metavar="NAME=RUN_DIR")
    p.add_argument("--validate", action="store_true")
    p.add_argument(
        "--models", nargs="+", default=None, help="only these of the models (by their row name)"
    )
    p.add_argument(
        "--lab-model",
        action="store_true",
        help="also the double pendulum's controllers designed on the lab's model with its friction",
    )
    p.add_argument(
        "--paced",
        action="store_true",
        help="the plant held to the wall clock (PacedPlant, as a rig's driver): counts the missed deadlines",
    )
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)

    from lagnet.control import Dynamics, load, task_evaluation
    from lagnet.control.tasks import TASKS, TaskMismatch, dfki_plant, task
    from lagnet.integrators import RK4
    from lagnet.systems import DoublePendulum

    names = args.tasks or list(TASKS)
    rows = []
    for name in names:
        t = task(name)
        models = {"known": Dynamics(t.system, RK4(), 0.01)}
        if args.lab_model and isinstance(t.system, DoublePendulum):
            # The rig's own friction, smoothed over 0.1 rad/s as a trained model's is (configs' epsilon).
            lab = dfki_plant(t.system.actuated, smoothing=0.1)
            models["lab model with friction"] = Dynamics(lab, RK4(), 0.01)
        for spec in args.run:
            label, run_dir = spec.split("=", 1)
            run = load(run_dir)
            try:
                task_evaluation.for_task(run, t)
            except TaskMismatch:
                continue  # a run of another system
            models[label] = run
        for model_name, dyn in models.items():
            if args.models and model_name not in args.models:
                continue
            for plant in args.plants:
                if args.validate:
                    kind = "ilqr" if t.name.endswith("-swingup") else "lqr"
                    for label, options in CANDIDATES[kind].items():
                        row = measure(model_name, dyn, t, plant, args.starts, 1, options)
                        rows.append(row | {"options": label})
                else:
                    rows.append(
                        measure(model_name, dyn, t, plant, args.starts, 0, paced=args.paced)
                    )
    kind = "validation" if args.validate else "evaluation"
    record = {
        "what": f"named control tasks, {kind} starts (seed {1 if args.validate else 0})",
        "command": shlex.join(["python", "benchmarks/control_tasks.py", *(argv or sys.argv[1:])]),
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "rows": rows,
    }
    out = args.out or os.path.join(RESULTS, f"control_tasks_{kind}.json")
    with open(out, "w") as f:
        json.dump(record, f, indent=1)
    with open(out.replace(".json", ".md"), "w") as f:
        f.write(markdown(record))
    return 0


def markdown(record) -> str:
    lines = [
        f"# {record['what']}",
        "",
        f"{record['date']}, {record['machine']}: `{record['command']}`",
        "",
        "| task | model | options | plant | read | controller | success | median ms | p99 ms | late periods |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in record["rows"]:
        late = f"{r['late']} of {r['periods']}" if r.get("paced") else "not paced"
        lines.append(
            f"| {r['task']} | {r['model']} | {r.get('options', 'chosen')} | {r['plant']} | {r['sensing']} | "
            f"{r['controller']} | {r['success']}/{r['starts']} | {r['median_ms']:.1f} | {r['p99_ms']:.1f} | "
            f"{late} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())

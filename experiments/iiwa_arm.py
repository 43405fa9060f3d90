"""A 7-joint arm end to end: the simulated KUKA iiwa 14 (MuJoCo, with armature and friction its description lacks),
the description alone, the pure ODE (description + identified armature and friction) and the PINODE (+ a residual
network), trained with `lagnet train`'s machinery, measured against the description's physics, and exported.

Errors: windows starting every `--stride` samples of the test recording, the |error| at the window's end after
0.1 s and 0.5 s per coordinate; each model's mean divided by the description's (the prior), then averaged over the
seven joints for q and for q̇. Train time: the wall time of `train_run` (loading, identification, compilation and
training) on this machine.

    lagnet data generate iiwa --overwrite          # data/sim/iiwa_{train,test}.npz (in the repo already)
    python experiments/iiwa_arm.py                 # trains into runs/iiwa_*, writes experiments/out/iiwa_arm.{md,json}
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
import zipfile

import equinox as eqx
import jax
import numpy as np

from lagnet.config import load_config
from lagnet.data.windows import make_windows
from lagnet.evaluate.metrics import window_errors
from lagnet.run.load import load_run
from lagnet.run.recordings import load_recordings
from lagnet.run.training import train_run
from lagnet.simulate.generate import rig_from_meta

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
HORIZONS = (0.1, 0.5)
# In training order: the PINODE starts from the pure ODE run's physics (`model.start_from`).
MODELS = {
    "description (prior)": ("iiwa_known.yaml", "runs/iiwa_known"),
    "pure ODE": ("iiwa_pure_ode.yaml", "runs/iiwa_pure_ode"),
    "PINODE": ("iiwa_pinode.yaml", "runs/iiwa_pinode"),
}


def end_errors(run, trajs, steps: int, stride: int) -> np.ndarray:
    """(W, 2n) |error| at the end of windows of `steps` steps starting every `stride` samples."""
    windows = make_windows(trajs, steps, skip_short=True, dtype=np.float64)
    w = windows.all()
    w = jax.tree.map(lambda x: x[np.arange(0, w.q.shape[0], stride)], w)
    errors = eqx.filter_jit(window_errors)(run.model, run.integrator, w, run.model.angles)
    return np.asarray(errors[:, -1])


def export_check(run_dir: str) -> dict:
    """`lagnet export` the run, then step the archive with JAX alone and compare with `lagnet.load`."""
    import jax.numpy as jnp

    import lagnet

    # Beside the run, not in it: a run folder holds only what lagnet train wrote (or --overwrite refuses it).
    path = f"{os.path.normpath(run_dir)}.jaxexport"
    cmd = [sys.executable, "-m", "lagnet.cli", "export", run_dir, "--out", path, "--overwrite"]
    subprocess.run(cmd, check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT})
    with zipfile.ZipFile(path) as z:
        meta = json.loads(z.read("metadata.json"))
        step = jax.export.deserialize(z.read("step.jaxexport")).call
    x = jnp.concatenate([jnp.array([0.0, 0.5, 0.0, -1.2, 0.0, 0.8, 0.0]), jnp.full(7, 0.3)])
    x, u = x.astype(meta["dtype"]), jnp.full(7, 1.0, dtype=meta["dtype"])
    difference = float(jnp.max(jnp.abs(step(x, u) - lagnet.load(run_dir).step(x, u))))
    return {
        "command": f"lagnet export {run_dir} --out {path}",
        "bytes": os.path.getsize(path),
        "dtype": meta["dtype"],
        "max |exported step − lagnet.load step|": difference,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stride", type=int, default=5, help="samples between window starts")
    parser.add_argument(
        "--no-train", action="store_true", help="evaluate the runs already in runs/"
    )
    parser.add_argument("--out", default=os.path.join(HERE, "out", "iiwa_arm"))
    args = parser.parse_args()
    os.chdir(ROOT)

    train_seconds, summaries = {}, {}
    for label, (config_file, run_dir) in MODELS.items():
        if not args.no_train:
            config = load_config(os.path.join("configs", config_file))
            t0 = time.perf_counter()
            train_run(config, run_dir, progress=False, overwrite=True)
            train_seconds[label] = time.perf_counter() - t0
        with open(os.path.join(run_dir, "summary.json")) as f:
            summaries[label] = json.load(f)
        train_seconds.setdefault(label, summaries[label]["seconds"])

    # Compare all in float64 (the training ran in the configs' float32).
    jax.config.update("jax_enable_x64", True)
    runs = {
        label: load_run(run_dir, "best", dtype="float64") for label, (_, run_dir) in MODELS.items()
    }
    reference = runs["description (prior)"]
    trajs = load_recordings(reference.config, reference.model.system, reference.config.data.test)
    n = reference.model.system.n_dof
    results = {"horizons": {}, "train_seconds": train_seconds}
    for horizon in HORIZONS:
        steps = int(round(horizon / reference.dt))
        errors = {label: end_errors(r, trajs, steps, args.stride) for label, r in runs.items()}
        prior = errors["description (prior)"].mean(axis=0)
        entry = {"steps": steps, "windows": int(errors["PINODE"].shape[0]), "models": {}}
        for label, e in errors.items():
            ratio = e.mean(axis=0) / prior
            entry["models"][label] = {
                "mean_abs_error_at_end": e.mean(axis=0).tolist(),
                "ratio_to_prior": ratio.tolist(),
                "ratio_q": float(ratio[:n].mean()),
                "ratio_qd": float(ratio[n:].mean()),
            }
        results["horizons"][str(horizon)] = entry

    rig = rig_from_meta(trajs[0].meta)
    physics = summaries["pure ODE"]["physics"]
    pinode_physics = summaries["PINODE"]["physics"]
    names = reference.model.system.coordinate_names
    results["parameters"] = {
        "joints": list(names),
        "armature": {
            "true": list(rig.armature),
            "pure ODE": physics["learned_parameters"]["armature"],
            "PINODE": pinode_physics["learned_parameters"]["armature"],
        },
        "viscous": {
            "true": list(rig.damping),
            "pure ODE": [physics["friction"]["viscous"][j] for j in names],
            "PINODE": [pinode_physics["friction"]["viscous"][j] for j in names],
        },
        "coulomb": {
            "true": list(rig.frictionloss),
            "pure ODE": [physics["friction"]["coulomb"][j] for j in names],
            "PINODE": [pinode_physics["friction"]["coulomb"][j] for j in names],
        },
    }
    results["pinode"] = {
        k: summaries["PINODE"].get(k)
        for k in ("best_epoch", "epochs_run", "fallback", "stop_reason")
    }
    results["identification"] = {
        k: summaries["pure ODE"]["identification"][k]
        for k in ("horizon", "loss_before", "loss", "evaluations", "seconds")
    }
    results["export"] = export_check(MODELS["PINODE"][1])
    results["machine"] = {
        "date": datetime.date.today().isoformat(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "jax": jax.__version__,
    }
    write(results, args.out)


def write(results: dict, out: str) -> None:
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(f"{out}.json", "w") as f:
        json.dump(results, f, indent=1)
    h = [str(x) for x in HORIZONS]
    lines = [
        "| model | q ÷ prior, 0.1 s | q̇ ÷ prior, 0.1 s | q ÷ prior, 0.5 s | q̇ ÷ prior, 0.5 s "
        "| mean \\|q error\\|, 0.1 s / 0.5 s (mrad) "
        "| mean \\|q̇ error\\|, 0.1 s / 0.5 s (rad/s) | train time |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label in MODELS:
        r = [results["horizons"][x]["models"][label] for x in h]
        q = [1e3 * np.mean(e["mean_abs_error_at_end"][:7]) for e in r]
        qd = [np.mean(e["mean_abs_error_at_end"][7:]) for e in r]
        lines.append(
            f"| {label} | {r[0]['ratio_q']:.4f} | {r[0]['ratio_qd']:.4f} | {r[1]['ratio_q']:.4f} | "
            f"{r[1]['ratio_qd']:.4f} | {q[0]:.3g} / {q[1]:.3g} | {qd[0]:.3g} / {qd[1]:.3g} | "
            f"{results['train_seconds'][label]:.0f} s |"
        )
    lines += ["", "| joint | " + " | ".join(results["parameters"]["joints"]) + " |"]
    lines.append("| --- |" + " ---: |" * len(results["parameters"]["joints"]))
    for term, unit in (("armature", "kg·m²"), ("viscous", "N·m·s/rad"), ("coulomb", "N·m")):
        for who in ("true", "pure ODE", "PINODE"):
            values = results["parameters"][term][who]
            lines.append(
                f"| {term} ({unit}), {who} | " + " | ".join(f"{v:.3f}" for v in values) + " |"
            )
    prior = {x: results["horizons"][x]["models"]["description (prior)"] for x in h}
    lines += [
        "",
        "Errors: the mean |error| at the end of "
        + ", ".join(f"{results['horizons'][x]['windows']} test windows of {x} s" for x in h)
        + ", divided by the description's per coordinate and averaged over the seven joints (1 = the prior). "
        + "The prior's own mean |error| over the joints: "
        + "; ".join(
            f"{x} s: q {np.mean(prior[x]['mean_abs_error_at_end'][:7]):.3g} rad, "
            f"q̇ {np.mean(prior[x]['mean_abs_error_at_end'][7:]):.3g} rad/s"
            for x in h
        )
        + ".",
    ]
    with open(f"{out}.md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"\nwrote {out}.md, {out}.json")


if __name__ == "__main__":
    main()

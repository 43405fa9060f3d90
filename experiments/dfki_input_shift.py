"""Does the DFKI double pendulum's measured torque trail (or lead) the torque that acts? Shifted copies of the
recordings and the lab's physics on them.

`copies S [S ...] --out DIR`: DIR/s{S:+d}/ holds every recording of data/real/dfki_double_pendulum_A0 with
tau_meas1 and tau_meas2 read S rows later (S > 0: the model at row i sees the torque of row i + S, the input
leads), the rows kept (the last S rows, or the first |S|, repeat the edge value) so that `lagnet cv`'s random
windows are the same rows in every copy; DIR/configs/s{S:+d}/ holds the shipped known, PINODE and
least-squares configs pointed at them (absolute paths), for `lagnet cv` on the shifted data.

`check S [S ...] --out DIR`: on the six training runs of the copies (never the test runs), per shift: the lab
model's inverse-dynamics equation error per joint, RMS of M(q) (q̈ − a(q, q̇, u)) in N·m with q̈ the smoothed
derivative over data.derivative_window (0.1 s), with u as recorded and with u averaged over the same 0.1 s;
the same after the lab's least-squares refit (configs/dfki_double_pendulum_least_squares.yaml's recipe) on the
six shifted runs; the mean |error| at 0.1 s and 0.5 s of both models over 1000 random windows per run (seed 0).
Writes DIR/check.json.
"""

import argparse
import gzip
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import yaml

jax.config.update("jax_enable_x64", True)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "data", "real", "dfki_double_pendulum_A0")
CONFIGS = (
    "dfki_double_pendulum_known",
    "dfki_double_pendulum_pinode",
    "dfki_double_pendulum_least_squares",
)
RUNS = ("00", "01", "02", "03", "04", "05", "11", "12", "13")
TRAINING = ("00", "02", "03", "04", "11", "12")
INPUTS = ("tau_meas1", "tau_meas2")


def file_name(run: str) -> str:
    return f"sys_id_20220815_trajectory_{run}.csv.gz"


def copies(shift: int, out: str) -> str:
    folder = os.path.join(out, f"s{shift:+d}")
    os.makedirs(folder, exist_ok=True)
    for run in RUNS:
        path = os.path.join(DATA, file_name(run))
        with gzip.open(path, "rt") as f:
            header = f.readline().strip()
        table = np.loadtxt(path, delimiter=",", skiprows=1)
        rows = np.clip(np.arange(table.shape[0]) + shift, 0, table.shape[0] - 1)
        for name in INPUTS:
            j = header.split(",").index(name)
            table[:, j] = table[rows, j]
        with gzip.open(os.path.join(folder, file_name(run)), "wt") as f:
            f.write(header + "\n")
            np.savetxt(
                f, table, delimiter=",", fmt="%.18e"
            )  # the shipped files' format: shift 0 is identical
    configs = os.path.join(out, "configs", f"s{shift:+d}")
    os.makedirs(configs, exist_ok=True)
    for name in CONFIGS:
        with open(os.path.join(ROOT, "configs", f"{name}.yaml")) as f:
            config = yaml.safe_load(f)
        for key in ("train", "test"):
            config["data"][key] = [
                os.path.join(folder, os.path.basename(p)) for p in config["data"][key]
            ]
        with open(os.path.join(configs, f"{name}.yaml"), "w") as f:
            yaml.safe_dump(config, f, sort_keys=False, allow_unicode=True)
    return folder


def _averaged(u, t, window: float = 0.1):
    k = max(1, round(window / 2 / float(np.median(np.diff(t)))))
    kernel = np.ones(2 * k + 1) / (2 * k + 1)
    return np.stack(
        [
            np.convolve(np.pad(u[:, j], k, mode="edge"), kernel, mode="valid")
            for j in range(u.shape[1])
        ],
        1,
    )


def _equation_error(model, trajs, average: bool) -> list[float]:
    from lagnet.data.derivatives import smoothed_derivative

    q = jnp.asarray(np.concatenate([t.q for t in trajs]))
    qd = jnp.asarray(np.concatenate([t.qd for t in trajs]))
    qdd = jnp.asarray(np.concatenate([smoothed_derivative(t.qd, t.t, 0.1) for t in trajs]))
    u = jnp.asarray(np.concatenate([_averaged(t.u, t.t) if average else t.u for t in trajs]))

    def one(q, qd, qdd, u):
        return model.mass_matrix(q) @ (qdd - model.acceleration(q, qd, u))

    r = np.asarray(jax.vmap(one)(q, qd, qdd, u))
    return np.sqrt(np.mean(r**2, 0)).tolist()


def check(shift: int, out: str) -> dict:
    import lagnet
    from lagnet.config import build_integrator, build_model, build_system
    from lagnet.data.horizons import cut_windows, parse_horizon
    from lagnet.evaluate.run import end_errors
    from lagnet.run.recordings import load_recordings, sample_statistics
    from lagnet.train.identify import identify_equation_error

    files = [os.path.join(out, f"s{shift:+d}", file_name(r)) for r in TRAINING]
    listed = "[" + ", ".join(files) + "]"
    data = [f"data.train={listed}", f"data.test={listed}"]
    known = lagnet.load_config(
        os.path.join(ROOT, "configs", "dfki_double_pendulum_known.yaml"), data
    )
    system = build_system(known)
    lab = build_model(known, system, None, key=jax.random.PRNGKey(0))
    trajs = load_recordings(known, system, files)
    ls = lagnet.load_config(
        os.path.join(ROOT, "configs", "dfki_double_pendulum_least_squares.yaml"), data
    )
    stats = sample_statistics(
        load_recordings(ls, build_system(ls), files), window=ls.data.derivative_window
    )
    start = build_model(ls, build_system(ls), stats, key=jax.random.PRNGKey(0)).physics_prior()
    refit = identify_equation_error(
        start.with_physics_trainable(True), stats["q"], stats["qd"], stats["qdd"], stats["u"][:, :2]
    ).model
    result = {
        "equation_error_lab": _equation_error(lab, trajs, False),
        "equation_error_lab_u_averaged": _equation_error(lab, trajs, True),
        "equation_error_refit": _equation_error(refit, trajs, False),
    }
    for h in ("0.1s", "0.5s"):
        cut = cut_windows(trajs, [parse_horizon(h, "horizon")], count=1000 * len(files), seed=0)
        result[f"rollout_{h}"] = end_errors(
            {"lab": lab, "refit": refit}, build_integrator(known), cut
        )
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("copies", "check"))
    parser.add_argument("shifts", nargs="+", type=int)
    parser.add_argument("--out", default="/tmp/dfki_input_shift")
    args = parser.parse_args()
    if args.what == "copies":
        for s in args.shifts:
            print(copies(s, args.out))
        return
    results = {}
    for s in args.shifts:
        if not os.path.isdir(os.path.join(args.out, f"s{s:+d}")):
            copies(s, args.out)
        results[s] = r = check(s, args.out)
        cells = [f"{x:.4f}" for x in r["equation_error_lab"] + r["equation_error_refit"]]
        for h in ("0.1s", "0.5s"):
            cells += [f"{x:.4f}" for m in ("lab", "refit") for x in r[f"rollout_{h}"][m].values()]
        print(f"{s:+d}", " ".join(cells), flush=True)
    with open(os.path.join(args.out, "check.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()

"""Which identification horizon gives a cart-pole model that controls the rig? Chosen on closed-loop validation.

The control config's data is mostly closed-loop: a feedback law keeps correcting the unstable pole. Identified over
long rollout windows, the physics can pass those corrections off as damping (the cart's viscous friction comes out
3-4x the rig's and its Coulomb friction at its bound of 0); over one or two steps it is fitted close to the
equation error, where the feedback's corrections cannot accumulate. For each `model.identification.horizon` and
training seed this trains configs/cartpole_control.yaml and runs the swing-up MPC on the simulated rig from
validation starts (other cart positions and tilts than `lagnet evaluate --control`'s) and from the test starts, and
LQR from its 14 starts.

The horizon is chosen by the validation successes over the seeds (ties: the lower mean validation cost); the test
starts are reported, never used to choose.

    python experiments/identification_horizon.py [--horizons 2 training 1 4] [--seeds 0 1 2]

`--variant 2:model.zero_at_rest=true` adds a row of a horizon with config overrides; `--name` names the table.
Runs go to runs/identification_horizon/NAME/h{H}_s{S}/ (each evaluated once, cached in its
identification_horizon.json); the table to experiments/out/NAME.{json,md}.
"""

import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CONFIG = os.path.join(ROOT, "configs", "cartpole_control.yaml")


def validation_starts() -> np.ndarray:
    """Hanging near rest, apart from `swing_up_starts`: the cart over ±0.08 m, tilts of 0.05 and 0.15 rad."""
    x = np.linspace(-0.08, 0.08, 6)
    tilts = np.array([0.15, -0.05, 0.05, -0.15, 0.15, -0.05])
    return np.stack([x, tilts, np.zeros(6), np.zeros(6)], axis=1)


def run_one(out: str, horizon: str, seed: int, sets: tuple[str, ...] = (), tag: str = "") -> dict:
    """The closed-loop results of the config identified over `horizon` with `sets`, trained with `seed` (trained
    and evaluated into `out` once, then read from there)."""
    from lagnet.config import load_config
    from lagnet.control import load
    from lagnet.control.cartpole_evaluation import evaluate_lqr, evaluate_mpc, swing_up_starts
    from lagnet.run.training import train_run
    from lagnet.simulate import CartPoleRig

    run_dir = os.path.join(out, f"h{horizon}{tag}_s{seed}")
    cache = os.path.join(run_dir, "identification_horizon.json")
    if os.path.exists(cache):
        with open(cache) as f:
            return json.load(f)
    if not os.path.exists(os.path.join(run_dir, "summary.json")):
        sets = [f"seed={seed}", f"model.identification.horizon={horizon}", *sets]
        train_run(load_config(CONFIG, sets), run_dir, progress=False, overwrite=True)
    dyn, rig = load(run_dir), CartPoleRig()
    result = {"lqr": evaluate_lqr(dyn, rig)[0]}
    for name, starts in (("validation", validation_starts()), ("test", swing_up_starts(6))):
        mpc, xs = evaluate_mpc(dyn, rig, x0s=starts)
        result[name] = {"success": mpc["success"], "cost": mpc["cost"]}
        result[name]["max_abs_x"] = float(np.max(np.abs(xs[:, :, 0])))
    with open(os.path.join(run_dir, "summary.json")) as f:
        physics = json.load(f)["identification"]["physics"]
    result["friction"] = physics.get("friction")
    with open(cache, "w") as f:
        json.dump(result, f, indent=1)
    return result


def _mean_cost(seeds: dict, starts: str) -> float:
    return float(np.mean([r[starts]["cost"] for r in seeds.values()]))


def table(results: dict, chosen: str) -> str:
    lines = [
        "| identification horizon | validation MPC by seed | validation cost | test MPC by seed | test cost "
        "| LQR by seed | identified cart viscous, Coulomb |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for horizon, seeds in results.items():
        val = [r["validation"]["success"] for r in seeds.values()]
        test = [r["test"]["success"] for r in seeds.values()]
        lqr = [r["lqr"] for r in seeds.values()]
        first = next(iter(seeds.values()))["friction"] or {}
        fx = (first.get("viscous", {}).get("x"), first.get("coulomb", {}).get("x"))
        mark = " (chosen)" if horizon == chosen else ""
        lines.append(
            f"| {horizon}{mark} | {', '.join(map(str, val))} ({sum(val)}/{6 * len(val)}) | "
            f"{_mean_cost(seeds, 'validation'):.2f} | {', '.join(map(str, test))} ({sum(test)}/{6 * len(test)}) | "
            f"{_mean_cost(seeds, 'test'):.2f} | {', '.join(map(str, lqr))} | "
            f"{fx[0]:.3g}, {fx[1]:.3g} |"
        )
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizons", nargs="+", default=["2", "training", "1", "4"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--variant",
        nargs="+",
        default=[],
        metavar="HORIZON:KEY=VALUE",
        help="also a horizon with config overrides (e.g. 2:model.zero_at_rest=true), a row of its own",
    )
    parser.add_argument("--name", default="identification_horizon", help="the table's file name")
    args = parser.parse_args()
    rows = [(h, h, ()) for h in args.horizons]
    for item in args.variant:
        horizon, sets = item.split(":", 1)
        rows.append((f"{horizon}, {sets}", horizon, tuple(sets.split(","))))
    results = {}
    out = os.path.join(ROOT, "runs", "identification_horizon", args.name)
    for row, horizon, sets in rows:
        results[row] = {}
        tag = "".join("_" + s.rsplit(".", 1)[-1].replace("=", "-") for s in sets)
        for seed in args.seeds:
            results[row][str(seed)] = r = run_one(out, horizon, seed, sets, tag)
            print(f"{row} seed {seed}: {json.dumps(r)}", file=sys.stderr, flush=True)

    def validation(row):
        successes = sum(r["validation"]["success"] for r in results[row].values())
        return successes, -_mean_cost(results[row], "validation")

    chosen = max(results, key=validation)
    with open(os.path.join(HERE, "out", f"{args.name}.json"), "w") as f:
        json.dump({"chosen": chosen, "results": results}, f, indent=1)
    text = table(results, chosen)
    with open(os.path.join(HERE, "out", f"{args.name}.md"), "w") as f:
        f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()

"""How much of the PINODE's LQR result is the training run: the cart-pole PINODE trained with several seeds, with
the cart's position hidden from its network (the default) and shown, each designed on and balanced like
`cartpole_lqr.py` (averaged Jacobians; discrete LQR with the input history, with the input held, continuous).

Per run: the learned damping terms of the averaged Jacobians (∂ẍ/∂ẋ, ∂φ̈/∂ẋ; the rig's are −1.66 and −10.85), the
validation loss, and per design the tilts balanced and the mean cost over the tilts it balances.

    python experiments/cartpole_lqr_seeds.py [--seeds 0 1 2]     # ~40 s per run to train, runs/control/seeds/

Writes experiments/out/cartpole_lqr_seeds.json.
"""

import argparse
import json
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cartpole_lqr as lqr_experiment  # noqa: E402  (its design, loop and score, reused)

from lagnet.config import load_config  # noqa: E402
from lagnet.control import linearise_averaged, load  # noqa: E402
from lagnet.run.training import train_run  # noqa: E402
from lagnet.simulate import CartPoleRig  # noqa: E402

VARIANTS = {"x hidden": ["model.hide_position=cyclic"], "x shown": []}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    t0 = time.perf_counter()
    rig = CartPoleRig()
    samples = int(round(lqr_experiment.DURATION / rig.dt))
    up = jnp.asarray(lqr_experiment.UPRIGHT)
    results = []
    for variant, overrides in VARIANTS.items():
        for seed in args.seeds:
            run_dir = os.path.join(
                lqr_experiment.ROOT,
                "runs",
                "control",
                "seeds",
                f"{variant.replace(' ', '_')}_{seed}",
            )
            if not os.path.exists(os.path.join(run_dir, "summary.json")):
                config = load_config(
                    os.path.join(lqr_experiment.ROOT, "configs", "cartpole_pinode.yaml"),
                    [*overrides, f"seed={seed}"],
                )
                train_run(config, run_dir, progress=False, overwrite=True)
            with open(os.path.join(run_dir, "summary.json")) as f:
                val = json.load(f)["best_validation_loss"]
            dyn = load(run_dir)
            a, _ = linearise_averaged(
                dyn.f, up, jnp.zeros(1), lqr_experiment.SPREAD, key=jax.random.key(0)
            )
            a = np.asarray(a)
            designs = {variant: lqr_experiment.design(dyn)}
            cases, xs, us = lqr_experiment.run_all(rig, designs, samples)
            ok, cost = lqr_experiment.score(xs, us, rig.dt)
            row = {
                "variant": variant,
                "seed": seed,
                "validation_loss": val,
                "dxdd_dxd": float(a[2, 2]),
                "dphidd_dxd": float(a[3, 2]),
                "dphidd_dx": float(a[3, 0]),
                "designs": {
                    f"{lin}, {riccati}": {
                        "balanced": int(ok[i].sum()),
                        "mean_cost_balanced": float(np.mean(cost[i][ok[i]]))
                        if ok[i].any()
                        else None,
                    }
                    for i, (_, (lin, riccati)) in enumerate(cases)
                    if lin == "averaged"
                },
            }
            results.append(row)
            shown = {k.split(", ")[1]: v["balanced"] for k, v in row["designs"].items()}
            print(
                f"{variant:9s} seed {seed}: val {val:.5f}  ∂ẍ/∂ẋ {row['dxdd_dxd']:6.2f}  ∂φ̈/∂ẋ "
                f"{row['dphidd_dxd']:7.2f}  ∂φ̈/∂x {row['dphidd_dx']:6.2f}  balanced {shown}",
                flush=True,
            )
    os.makedirs(lqr_experiment.OUT, exist_ok=True)
    out = os.path.join(lqr_experiment.OUT, "cartpole_lqr_seeds.json")
    with open(out, "w") as f:
        json.dump(
            {"seeds": args.seeds, "runs": results, "seconds": time.perf_counter() - t0}, f, indent=1
        )
    print(f"wrote {os.path.relpath(out)} in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()

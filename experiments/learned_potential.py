"""The lecture's closing experiment: neural ODE + RK4 versus learned potential V_θ + leapfrog on the pendulum.

Both are trained on the same 400 one-step pairs 0.1 s apart (configs/pendulum_neural_ode_rk4.yaml,
configs/pendulum_potential_leapfrog.yaml), then rolled out 3000 steps (about 40 periods) from θ = 1.5, θ̇ = 0
with h = 0.1; the true energy H = ½ θ̇² − cos θ along each rollout shows who drifts.

    python experiments/learned_potential.py

Writes experiments/out/learned_potential.{png,json}; runs go to runs/learned_potential/.
"""

import json
import os
import sys

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from lagnet.config import load_config  # noqa: E402
from lagnet.rollout import rollout  # noqa: E402
from lagnet.run import build_integrator  # noqa: E402
from lagnet.run.training import train_run as train  # noqa: E402
from lagnet.systems import Pendulum  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RUNS = {
    "neural ODE $f_\\theta$ + RK4": "pendulum_neural_ode_rk4.yaml",
    "learned $V_\\theta$ + leapfrog": "pendulum_potential_leapfrog.yaml",
}


def energy_drift(model, integrator, steps=3000, h=0.1, theta0=1.5):
    """True energy error H(t) − H(0) along a rollout of the model from (θ0, 0)."""
    qs, qds = rollout(
        model, integrator, jnp.array([theta0]), jnp.zeros(1), None, h, steps=steps, throw=False
    )
    energy = jax.vmap(Pendulum().energy)(qs, qds)
    return np.asarray(energy - energy[0])


def main(epochs=None):
    out = os.path.join(HERE, "out")
    os.makedirs(out, exist_ok=True)
    results, curves = {}, {}
    for label, file in RUNS.items():
        sets = [f"training.epochs={epochs}"] if epochs else []
        config = load_config(os.path.join(ROOT, "configs", file), sets)
        result = train(
            config,
            os.path.join(ROOT, "runs", "learned_potential", config.name),
            progress=False,
            overwrite=True,
        )
        de = energy_drift(result.model, build_integrator(config))
        curves[label] = de
        slope = np.polyfit(np.arange(de.size), de, 1)[0]
        results[config.name] = {
            "validation_loss": result.best_validation,
            "train_seconds": result.seconds,
            "max_abs_energy_error_first_300": float(np.abs(de[:300]).max()),
            "max_abs_energy_error_last_300": float(np.abs(de[-300:]).max()),
            "energy_error_at_end": float(de[-1]),
            "drift_per_1000_steps": float(slope * 1000),
        }
        r = results[config.name]
        print(
            f"{config.name:>28}: val loss {r['validation_loss']:.2e}; max|ΔH| first 300 steps "
            f"{r['max_abs_energy_error_first_300']:.2e}, last 300 {r['max_abs_energy_error_last_300']:.2e}; "
            f"drift {r['drift_per_1000_steps']:+.2e} per 1000 steps ({r['train_seconds']:.0f} s)"
        )
    fig, ax = plt.subplots(figsize=(5.2, 2.8))
    t = 0.1 * np.arange(3001)
    for label, de in curves.items():
        ax.plot(t, de, lw=1.3, label=label)
    ax.axhline(0, color="gray", lw=0.5)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("energy error $H - H_0$")
    ax.set_title("pendulum, trained on one-step pairs, rolled out 3000 steps", fontsize=9)
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "learned_potential.png"), dpi=120)
    with open(os.path.join(out, "learned_potential.json"), "w") as f:
        json.dump(results, f, indent=1)
    return results


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else None)

"""The DFKI double pendulum: candidate recipes chosen by leave-one-run-out cross-validation, then the choice tested.

The cross-validation is the library's (`lagnet.cross_validate`, what `lagnet cv` runs); this script only names the
candidates and, once one is chosen, looks at the test runs (01, 05, 13) for the first time.

Candidates: the shipped configs (the lab's model `configs/dfki_double_pendulum_known.yaml` first, so that the
physics as given, every ratio's denominator, is the lab's model; the PINODE; the pure ODE) and variants of the
PINODE config (`VARIANTS`: `--set` overrides). Each fold holds one of the six training runs (00, 02, 03, 04, 11, 12)
out whole; it is scored on windows starting every `--stride` rows of the held-out run (as the test script
`experiments/dfki_double_pendulum.py` scores the test runs), the mean |error| at `--horizon` divided per coordinate
by the lab's model's, and tabled also against the least-squares refit of each fold (`--reference`). The choice is
the library's: the lowest worst ratio over folds and coordinates, then the lowest mean, ties to the simpler.

With `--test`, the chosen config is trained on all six training runs and scored the same way on the test runs.

    python experiments/dfki_cross_validation.py --work runs/dfki_cv_recipes --test
    python experiments/dfki_cv_table.py --record experiments/out/dfki_cv_recipes.json \\
        --out experiments/out/dfki_cv_recipes.md
    python experiments/dfki_cross_validation.py --variants pure_ode --folds F1 --epochs 1   # a quick check

The default candidates and the reference are 13 configs × 6 folds, 78 trainings: try `--folds F1 --epochs 1` first.
"""

import argparse
import json
import os
import sys

import jax
import jax.numpy as jnp

import lagnet
from lagnet.config import load_config
from lagnet.config.sources import trust_code
from lagnet.cross_validation import format_cv
from lagnet.data.horizons import cut_windows, parse_horizon
from lagnet.evaluate.run import end_errors
from lagnet.models import physics_prior
from lagnet.run import build_integrator, build_model, build_system, load_recordings, load_run
from lagnet.run.training import train_run

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = os.path.join(os.path.dirname(HERE), "configs")
# Relative to the working folder, as the record names them (`configs/...` from the repository root).
KNOWN, PINODE, PURE_ODE, LEAST_SQUARES = (
    os.path.relpath(os.path.join(CONFIGS, f"dfki_double_pendulum_{kind}.yaml"))
    for kind in ("known", "pinode", "pure_ode", "least_squares")
)
# A config's paths are relative to its file (configs/).
_GAIN_SYSTEM = ["system.name=python", "system.source=../experiments/dfki_torque_gains.py:build"]
_LEARNED = "I1: {}, I2: {}, m2: {}, r2: {}, Ir: {}"  # the shipped config's, default bounds (>= 0)
_GAINS = "k1: {lower: 0.5, upper: 2.0}, k2: {lower: 0.5, upper: 2.0}"
_OFFSETS = "b1: {lower: -0.2, upper: 0.2}, b2: {lower: -0.2, upper: 0.2}"

# Variants of the shipped PINODE config: overrides (YAML values; floats with a decimal point).
VARIANTS = {
    "lr_3e-3": ["training.learning_rate=3.0e-3"],
    "output_scale_0.1": ["model.output_scale=0.1"],
    "pure_ode": ["model.type=pure_ode"],
    "epochs_10": ["training.epochs=10"],
    "horizon_100": ["training.horizon=100"],
    "width_32": ["model.width=32"],
    # Richer identification without a network: the first link's mass and centre of mass learned too; a Stribeck
    # term on top of atan Coulomb + viscous; twice the epochs.
    "pure_ode_m1_r1": [
        "model.type=pure_ode",
        "model.learn_parameters=[I1, I2, m2, r2, Ir, m1, r1]",
    ],
    "pure_ode_stribeck": [
        "model.type=pure_ode",
        "model.friction.shape=stribeck",
        "model.friction.stribeck=[q1, q2]",
    ],
    "pure_ode_epochs_10": ["model.type=pure_ode", "training.epochs=10"],
    # Torque gains k (in [0.5, 2]) and offsets b (|b| <= 0.2 N·m) per joint refined with the physics
    # (experiments/dfki_torque_gains.py, the lab's model with k = 1, b = 0).
    "pure_ode_gain": [
        *_GAIN_SYSTEM,
        "model.type=pure_ode",
        "training.epochs=10",
        f"model.learn_parameters={{{_LEARNED}, {_GAINS}}}",
    ],
    "pure_ode_gain_offset": [
        *_GAIN_SYSTEM,
        "model.type=pure_ode",
        "training.epochs=10",
        f"model.learn_parameters={{{_LEARNED}, {_GAINS}, {_OFFSETS}}}",
    ],
    "pinode_gain": [*_GAIN_SYSTEM, f"model.learn_parameters={{{_LEARNED}, {_GAINS}}}"],
}
DEFAULT_VARIANTS = [
    "lr_3e-3",
    "output_scale_0.1",
    "pure_ode",
    "pure_ode_m1_r1",
    "pure_ode_stribeck",
    "pure_ode_epochs_10",
    "pure_ode_gain",
    "pure_ode_gain_offset",
    "pinode_gain",
]


def candidates(variants: list[str]) -> list:
    """The configs `lagnet.cross_validate` compares: the shipped files, then the PINODE's variants by name."""
    return [KNOWN, PINODE, PURE_ODE] + [(PINODE, [f"name={v}", *VARIANTS[v]]) for v in variants]


def score_choice_on_test_runs(report: dict, work: str, horizon: str, stride: str, epochs) -> dict:
    """The chosen config trained on all six training runs (WORK/chosen), and its chosen prediction (the trained
    model, or its physics) scored on each test run as the folds were: mean |error| at the horizon / the lab's."""
    choice = report["choice"]
    entry = next(e for e in report["configs"] if e["name"] == choice["config"])
    extra = [] if epochs is None else [f"training.epochs={epochs}"]
    config = load_config(entry["config"], [*entry.get("overrides", []), *extra])
    folder = os.path.join(work, "chosen")
    train_run(config, folder, overwrite=True)
    run = load_run(folder, dtype="float64")
    chosen = run.model if choice["prediction"] == "model" else physics_prior(run.model)
    known = load_config(KNOWN)
    lab = build_model(known, build_system(known), None, key=jax.random.key(0))
    integrators = {"chosen": run.integrator, "lab": build_integrator(known)}
    h, every = parse_horizon(horizon, "--horizon"), parse_horizon(stride, "--stride")
    result = {"config": entry["name"], "prediction": choice["prediction"], "run": folder}
    for path in config.data.test:
        test = load_recordings(run.config, run.model.system, [path])
        cut = cut_windows(test, [h], stride=every, dtype=jnp.float64)
        errors = end_errors({"chosen": chosen, "lab": lab}, integrators, cut)
        ratios = {n: errors["chosen"][n] / errors["lab"][n] for n in errors["lab"]}
        result.setdefault("test_runs", {})[path] = {
            "windows": len(cut.sources),
            "errors": errors,
            "ratios": ratios,
        }
        print(f"test {os.path.basename(path)}: / lab's " + json.dumps(ratios), flush=True)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--variants",
        nargs="*",
        default=DEFAULT_VARIANTS,
        choices=sorted(VARIANTS),
        help="variants of the PINODE config beside the shipped configs",
    )
    parser.add_argument("--folds", help="only these folds, as lagnet cv's --folds (F1,F3)")
    parser.add_argument(
        "--epochs", type=int, help="training.epochs for every training (quick checks)"
    )
    parser.add_argument("--horizon", default="0.5s", help="seconds ('0.5s') or steps")
    parser.add_argument(
        "--stride", default="10", help="rows ('10') or seconds between window starts"
    )
    parser.add_argument("--reference", default=LEAST_SQUARES, help="lagnet cv's --reference")
    parser.add_argument("--work", default=os.path.join("runs", "dfki_cv_recipes"))
    parser.add_argument("--out", default=os.path.join(HERE, "out", "dfki_cv_recipes.json"))
    parser.add_argument("--test", action="store_true", help="then train the choice and test it")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    args = parser.parse_args()

    command = " ".join(["python experiments/dfki_cross_validation.py", *sys.argv[1:]])
    # The torque-gain variants' system is this folder's Python source (dfki_torque_gains.py).
    with trust_code():
        report = lagnet.cross_validate(
            candidates(args.variants),
            args.work,
            folds=args.folds,
            epochs=args.epochs,
            horizon=args.horizon,
            stride=args.stride,
            progress=not args.quiet,
            command=command,
            overwrite=True,
            reference_config=args.reference,
        )
        print(format_cv(report))
        if args.test:
            report["test"] = score_choice_on_test_runs(
                report, args.work, args.horizon, args.stride, args.epochs
            )
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

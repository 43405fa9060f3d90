"""Learning to control Gymnasium's Pendulum-v1 through `lagnet.control.GymPlant`, with `lagnet.learn_to_control`.

The env is the plant, the pendulum's structure is the prior: lagnet's `Pendulum` (a rigid link, J θ̈ + m g r sin θ
= u) with its mass and inertia started 20 % off and learned from the interaction. Everything Pendulum-v1-specific
is here, in the maps between the env and lagnet: its observation (cos θ, sin θ, θ̇) with θ = 0 upright becomes
lagnet's (q, q̇) with q = θ + π (q = 0 hangs), its torque is the input, its 0.05 s step the period.

Per seed: 3 s (60 steps) of random excitation from hanging, then rounds of train → one 5 s (100-step) iLQR
swing-up episode from near hanging → record, until an episode holds the pole within 0.1 rad of upright for its
last 2 s; at most 5 episodes (28 s, 560 steps ≤ the 600 allowed). Then the final model's iLQR is scored on 10
episodes of the env itself (200 steps each, the env's own random starts, `env.reset(seed=...)`, its own reward
−(θ² + 0.1 θ̇² + 0.001 u²) per step), and the mean return reported; the target is a median over 5 seeds
≥ −200.

    python experiments/gym_pendulum.py [--seeds 5] [--model pure_ode|pinode] [--integrator symplectic_euler|rk4]

Writes experiments/out/gym_pendulum.{json,md} (other variants: gym_pendulum_<model>_<integrator>.{json,md}); the
runs and recordings go to experiments/out/gym_pendulum/ (not kept in the repository).
"""

import argparse
import json
import os
import platform
import time

import gymnasium
import numpy as np
from _common import OUT, write_record

import lagnet
from lagnet.config.schema import validate
from lagnet.control import GymPlant, Task
from lagnet.learn import ILQRFactory
from lagnet.systems import Pendulum

DT = 0.05  # Pendulum-v1's step
STEPS_ALLOWED = 600
EVALUATION_EPISODES = 10
# The prior: a uniform rod (m = 1, r = 0.5, I_com = 1/12) with its mass and inertia 20 % over.
PRIOR = {"mass": 1.2, "com": 0.5, "inertia": 0.1, "g": 10.0}
CONTROLLER = ILQRFactory(horizon=40, iterations=3, first_iterations=60)


def state(obs) -> np.ndarray:
    """Pendulum-v1's observation (cos θ, sin θ, θ̇), θ = 0 upright, as lagnet's (q, q̇), q = 0 hanging."""
    return np.array([np.arctan2(obs[1], obs[0]) + np.pi, obs[2]], dtype=float)


def set_state(env, x) -> None:
    env.unwrapped.state = np.array([x[0] - np.pi, x[1]])


def plant(seed: int) -> GymPlant:
    env = gymnasium.make("Pendulum-v1")
    return GymPlant(env, state, n_dof=1, dt=DT, set_state=set_state, seed=seed)


def task() -> Task:
    """Swing up from near hanging and hold within 0.1 rad for the last 2 s of 5; the cost is the env's reward
    negated (Q = diag(1, 0.1), R = 0.001), |u| ≤ 2."""
    return Task(
        "gym-pendulum-swingup",
        Pendulum(**PRIOR),
        goal=[np.pi, 0.0],
        q=np.diag([1.0, 0.1]),
        r=0.001 * np.eye(1),
        u_max=2.0,
        tolerance=[0.1, np.inf],
        hold=2.0,
        seconds=5.0,
        start=[0.0, 0.0],
        start_spread=[0.3, 0.5],
    )


def config(model: str, integrator: str, seed: int):
    """A model of lagnet's pendulum with the prior's values, its mass and inertia learned (pure ODE), plus a
    small residual network (PINODE). No data section: `learn_to_control` trains on its recordings."""
    model_section = {"type": model, "learn_parameters": ["mass", "inertia"]}
    if model == "pinode":
        model_section.update(width=16, depth=2, activation="tanh", final_activation="tanh")
    return validate(
        {
            "name": f"gym_pendulum_{model}",
            "seed": seed,
            "dtype": "float64",
            "system": {"name": "pendulum", "params": PRIOR},
            "model": model_section,
            # By default the env's own scheme at its own step (semi-implicit Euler: the velocity first, then
            # the angle with it), part of the structure given, as the mechanics are; --integrator rk4 leaves
            # it to the learned parameters.
            "integrator": {"name": integrator},
            "training": {
                "epochs": 60,
                "batch_size": 32,
                "horizon": 10,
                "learning_rate": 3e-3,
                "schedule": "cosine",
                "patience": 20,
                # The validation windows of 5 steps: 3 s of excitation holds few long ones.
                "validation_horizon": 5,
            },
        }
    )


def evaluate(run_dir: str, seed: int) -> list[float]:
    """The returns of EVALUATION_EPISODES episodes of Pendulum-v1 (its own starts and reward) under the run's
    iLQR."""
    dyn = lagnet.load(run_dir)
    controller = CONTROLLER(dyn, task(), DT)
    env = gymnasium.make("Pendulum-v1")
    returns = []
    for i in range(EVALUATION_EPISODES):
        obs, _ = env.reset(seed=10_000 * (seed + 1) + i)
        x = state(obs)
        controller.reset(x)
        total, done, k = 0.0, False, 0
        while not done:
            u = np.asarray(controller(x, k * DT), np.float32).reshape(1)
            obs, reward, terminated, truncated, _ = env.step(u)
            total += float(reward)
            x, done, k = state(obs), terminated or truncated, k + 1
        returns.append(total)
    return returns


def variant(model: str, integrator: str) -> str:
    """The name of a (model, integrator) variant's files: "" for the default (pure ODE, symplectic Euler)."""
    return (
        "" if (model, integrator) == ("pure_ode", "symplectic_euler") else f"_{model}_{integrator}"
    )


def one_seed(model: str, integrator: str, seed: int, max_episodes: int) -> dict:
    out = OUT / "gym_pendulum" / f"{model}_{integrator}" / f"seed-{seed}"
    t0 = time.perf_counter()
    result = lagnet.learn_to_control(
        config(model, integrator, seed),
        plant(seed),
        task(),
        out,
        controller=CONTROLLER,
        seed=seed,
        excitation_seconds=3.0,
        max_episodes=max_episodes,
        progress=True,
    )
    steps = int(round(sum(e.seconds for e in result.episodes) / DT))
    run = [e.run for e in result.episodes if e.run][-1]
    returns = evaluate(run, seed)
    learned = lagnet.load(run).model.known_system
    return {
        "seed": seed,
        "success": result.success,
        "episodes": result.controls,
        "interaction_steps": steps,
        "interaction_s": steps * DT,
        "returns": returns,
        "mean_return": float(np.mean(returns)),
        "learned": {
            "J": float(learned.inertia + learned.mass * learned.com**2),
            "mgr": float(learned.mass * learned.g * learned.com),
        },
        "wall_s": time.perf_counter() - t0,
    }


def write(rows: list[dict], args, t0: float) -> None:
    """experiments/out/gym_pendulum.{json,md}."""
    means = [r["mean_return"] for r in rows]
    record = {
        "experiment": "gym_pendulum",
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}",
        "command": f"python experiments/gym_pendulum.py --seeds {args.seeds} --model {args.model} "
        f"--integrator {args.integrator}",
        "model": args.model,
        "integrator": args.integrator,
        "prior": PRIOR,
        "truth": {"J": 1 / 3, "mgr": 5.0},
        "controller": CONTROLLER.__dict__ | {"catch": None},
        "steps_allowed": STEPS_ALLOWED,
        "target_mean_return": -200.0,
        "median_mean_return": float(np.median(means)),
        "seeds": rows,
        "wall_s": time.perf_counter() - t0,
    }
    lines = [
        f"Measured {record['date']} on {record['machine']} (`{record['command']}`). Gymnasium "
        f"{gymnasium.__version__} Pendulum-v1 through `GymPlant`; the {args.model} model "
        f"({args.integrator}) of lagnet's `Pendulum` starts 20 % off (J = 0.4 and m g r = 6, the env's 1/3 "
        "and 5). Interaction: 3 s of excitation, then 5 s iLQR episodes until one holds upright (at most "
        f"{args.max_episodes}); "
        f"evaluation: {EVALUATION_EPISODES} env episodes of 200 steps from the env's own random starts.",
        "",
        "| seed | held | episodes | interaction (steps) | learned J | learned m g r | mean return | worst |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['seed']} | {'yes' if r['success'] else 'no'} | {r['episodes']} | "
            f"{r['interaction_steps']} | {r['learned']['J']:.3f} | {r['learned']['mgr']:.2f} | "
            f"{r['mean_return']:.1f} | {min(r['returns']):.1f} |"
        )
    lines += [
        "",
        f"Median over seeds of the mean return: **{record['median_mean_return']:.1f}** (target ≥ −200, "
        f"within {STEPS_ALLOWED} steps of interaction).",
    ]
    name = f"gym_pendulum{variant(args.model, args.integrator)}"
    write_record(name, record, "\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--model", default="pure_ode", choices=("pure_ode", "pinode"))
    parser.add_argument(
        "--integrator", default="symplectic_euler", choices=("symplectic_euler", "rk4")
    )
    parser.add_argument("--max-episodes", type=int, default=5)
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    rows = []
    for seed in range(args.seeds):
        rows.append(one_seed(args.model, args.integrator, seed, args.max_episodes))
        assert rows[-1]["interaction_steps"] <= STEPS_ALLOWED, rows[-1]
        print(json.dumps({k: v for k, v in rows[-1].items() if k != "returns"}), flush=True)
    write(rows, args, t0)


if __name__ == "__main__":
    main()

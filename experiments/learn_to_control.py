"""Learning the cart-pole swing-up from seconds of interaction (`lagnet.learn_to_control` on the rig's plant).

For each model type (its shipped config) and seed: 3 s of the rig's random identification excitation on the
simulated rig (the paper's cart-pole with its heavier cart, Stribeck friction, actuator lag and dead time, sensor
noise), then rounds of train → one 7 s MPC swing-up episode on the rig (the MPC reads the true state) → add
its recording, until an episode holds the pole within 0.1 rad of upright for its last 5 s with the cart inside
the rail (`lagnet.learn.cartpole.cartpole_swingup`: the plant, task, controller and excitation). Reports the
seconds of interaction to success (median and max over seeds) beside PILCO's 17.5 s, and a figure of one run's
episodes.

    python experiments/learn_to_control.py [--seeds 5] [--types pinode,pure_ode,blackbox]

Writes experiments/out/learn_to_control.{json,md,png}; the runs and recordings go to experiments/out/
learn_to_control/ (not kept in the repository).
"""

import argparse
import json
import os
import platform
import time

import numpy as np
from _common import OUT, plt, save, write_record

from lagnet.learn import learn_to_control
from lagnet.learn.cartpole import cartpole_swingup

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = {
    "pinode": "configs/cartpole_control.yaml",
    "pure_ode": "configs/cartpole_pure_ode.yaml",
    "blackbox": "configs/cartpole_blackbox.yaml",
}
LABELS = {"pinode": "PINODE", "pure_ode": "pure ODE", "blackbox": "black box"}
PILCO_SECONDS = 17.5


def finite_or_none(x) -> float | None:
    return float(x) if np.isfinite(x) else None


def seconds_text(x) -> str:
    return "∞" if x is None else f"{x:g}"


def figure(episodes: list[tuple[str, np.ndarray, np.ndarray]], title: str, dt: float):
    """The pole's angle from upright and the cart's position over each (name, x, φ) episode."""
    fig, axes = plt.subplots(2, 1, figsize=(8, 5), sharex=True)
    for name, x, phi in episodes:
        t = dt * np.arange(len(x))
        from_upright = np.abs(np.mod(phi, 2 * np.pi) - np.pi)
        axes[0].plot(t, np.degrees(from_upright), label=name)
        axes[1].plot(t, x)
    axes[0].axhspan(0, np.degrees(0.1), color="0.85")
    axes[0].set_ylabel("|φ − π| (deg): 0 upright")
    axes[1].axhspan(-0.3, 0.3, color="0.92")
    axes[1].set_ylabel("cart x (m)")
    axes[1].set_xlabel("time in the episode (s)")
    axes[0].legend(fontsize=8)
    axes[0].set_title(title)
    fig.tight_layout()
    return fig


def result_episodes(result) -> list[tuple[str, np.ndarray, np.ndarray]]:
    out = []
    for i, e in enumerate(result.episodes):
        name = (
            "excitation"
            if e.kind == "excitation"
            else f"episode {i} ({'held' if e.success else 'not held'})"
        )
        out.append((name, e.xs[:, 0], e.xs[:, 1]))
    return out


def write(rows: dict, t0: float) -> None:
    """experiments/out/learn_to_control.{json,md} of the rows so far."""
    record = {
        "experiment": "learn_to_control",
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}",
        "pilco_seconds": PILCO_SECONDS,
        "rows": rows,
        "wall_s": time.perf_counter() - t0,
    }
    lines = [
        f"Measured {record['date']} on {record['machine']}. Seconds of interaction until the rig swings up "
        "and holds 5 s: 3 s of excitation, then 7 s "
        "episodes; ∞: not within the row's episodes.",
        "",
        "| model | succeeded | median (s) | max (s) | per seed (s) | episodes allowed |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for kind, r in rows.items():
        per = ", ".join(f"{s['seconds']:g}" if s["success"] else "∞" for s in r["seeds"])
        lines.append(
            f"| {LABELS[kind]} | {r['successes']}/{len(r['seeds'])} | {seconds_text(r['median_s'])} | "
            f"{seconds_text(r['max_s'])} | {per} | {r['max_episodes']} |"
        )
    lines.append(f"| PILCO (Deisenroth & Rasmussen, 2011) | | {PILCO_SECONDS:g} | | | |")
    lines += ["", "Rows measured with:", ""] + [
        f"- {LABELS[k]}: `{r['command']}`" for k, r in rows.items()
    ]
    write_record("learn_to_control", record, "\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--types", default="pinode,pure_ode,blackbox")
    parser.add_argument("--max-episodes", type=int, default=5)
    parser.add_argument(
        "--report-only", action="store_true", help="rewrite the Markdown from the JSON record only"
    )
    args = parser.parse_args(argv)
    types = args.types.split(",")
    t0 = time.perf_counter()
    if args.report_only:
        record = json.loads((OUT / "learn_to_control.json").read_text())
        write(record["rows"], t0 - record["wall_s"])
        return
    # Rows of types not rerun now are kept from the last record.
    previous = OUT / "learn_to_control.json"
    rows = json.loads(previous.read_text())["rows"] if previous.exists() else {}
    rows = {k: v for k, v in rows.items() if k not in types}
    shown = None
    for kind in types:
        per_seed = []
        for seed in range(args.seeds):
            result = learn_to_control(
                os.path.join(ROOT, CONFIGS[kind]),
                out=OUT / "learn_to_control" / kind / f"seed-{seed}",
                seed=seed,
                excitation_seconds=3.0,
                max_episodes=args.max_episodes,
                progress=True,
                **cartpole_swingup(seed=seed),
            )
            per_seed.append(
                {
                    "seed": seed,
                    "success": result.success,
                    "seconds": result.seconds,
                    "episodes": result.controls,
                }
            )
            # The figure: the first run that needed more than one episode (else the PINODE's first).
            more = result.controls > 1
            if shown is None or (more and not shown[2]):
                shown = (result, LABELS[kind] + f", seed {seed}", more)
        seconds = np.array([r["seconds"] if r["success"] else np.inf for r in per_seed])
        rows[kind] = {
            "command": f"python experiments/learn_to_control.py --seeds {args.seeds} --types {kind} "
            f"--max-episodes {args.max_episodes}",
            "max_episodes": args.max_episodes,
            "seeds": per_seed,
            "successes": int(np.isfinite(seconds).sum()),
            # None: not every seed succeeded within the episodes allowed (the median or max is unbounded).
            "median_s": finite_or_none(np.median(seconds)),
            "max_s": finite_or_none(np.max(seconds)),
        }
        write(rows, t0)
    if shown is not None:
        result, label, _ = shown
        title = f"learn_to_control, {label}: {result.seconds:g} s of interaction"
        save(figure(result_episodes(result), title, 0.02), "learn_to_control")


if __name__ == "__main__":
    main()

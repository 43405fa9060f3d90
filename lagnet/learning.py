"""Learning to control from seconds of interaction: excite the rig, identify and train, run MPC on it, add what it
recorded, retrain, until the pole swings up and stays up.

The loop of PILCO-style model-based reinforcement learning, with lagnet's models:

1. a few seconds of random excitation on the rig (a PRBS, a chirp or a multisine force on a rail PD, from
   hanging: `CartPoleControlRig` with identification segments only), measured by the rig's sensors;
2. `lagnet train` of the config on every recording so far (a PINODE or pure ODE starts its physics from the
   previous round's run, `model.start_from`);
3. one swing-up episode on the rig with the model's MPC (`SwingUp`: the model's swing-up MPC, its upright LQR
   near the top), recorded by the same sensors;
4. success when the pole is held within 0.1 rad of upright over the episode's last `hold` seconds with the cart
   inside the rail; otherwise add the episode's recording and repeat from 2.

The interaction counted is every second the rig ran: the excitation and every episode, the successful one
included.
"""

import dataclasses
import os
from pathlib import Path
from typing import Any

import numpy as np

from .config import load_config
from .control import evaluation
from .control.evaluation import RAIL, SwingUp, held
from .control.load import load
from .data.npz import write_npz
from .run.folder import SEEDS_DIR
from .run.load import CONFIG_FILE, read_config
from .run.training import train_run
from .simulate import CartPoleRig, rig_sampler, run_controller
from .simulate.rigs.cartpole_control import CartPoleControlRig


@dataclasses.dataclass(frozen=True)
class Episode:
    """One stretch of interaction with the rig.

    Attributes:
        kind: "excitation" or "mpc".
        seconds: how long the rig ran.
        interaction: the seconds of interaction up to the end of this episode.
        held: whether the pole was held up over the last `hold` seconds with the cart inside the rail.
        recording: the file it was recorded to (None for a successful last episode, which nothing learns from).
        run: the run whose model controlled it (None for the excitation).
        xs: (N + 1, 4) the rig's true states.
    """

    kind: str
    seconds: float
    interaction: float
    held: bool
    recording: str | None
    run: str | None
    xs: np.ndarray


@dataclasses.dataclass(frozen=True)
class LearningResult:
    """`learn_to_control`'s episodes; `success`, and `seconds`: the interaction up to the first held episode
    (or all of it, without success)."""

    episodes: list[Episode]
    success: bool
    seconds: float


def excitation_recording(rig: CartPoleRig, seconds: float, seed: int) -> dict[str, np.ndarray]:
    """`seconds` of random identification input from hanging near rest (no feedback segments), measured: the
    recording's columns."""
    explore = CartPoleControlRig(
        **{f.name: getattr(rig, f.name) for f in dataclasses.fields(CartPoleRig)},
        feedback_prob=0.0,
        excite_time=(seconds, seconds),
    )
    cols, _ = explore.record(seconds, seed=seed, recording="excitation", truth=True)
    return cols


def episode_recording(rig: CartPoleRig, xs, us, seed: int) -> dict[str, np.ndarray]:
    """A controlled episode (xs (N + 1, 4), us (N, 1)) as the rig's sensors read it, up to its first non-finite
    state (a run that diverged ends there)."""
    finite = np.all(np.isfinite(xs[:-1]), axis=1) & np.all(np.isfinite(us), axis=1)
    n = len(finite) if finite.all() else int(np.argmin(finite))
    run = {
        "t": rig.dt * np.arange(n),
        "q": xs[:n, :2],
        "qd": xs[:n, 2:],
        "u_cmd": us,
    }
    return rig.measure(run, np.random.default_rng(seed))


def train_round(
    config, recordings: list[str], previous: str | None, run_dir: str, *, name: str, seed: int
):
    """`lagnet train` of `config` on `recordings` (the last one also its test file) into `run_dir`; a model with
    physics (PINODE, pure ODE) starts it from the `previous` round's run."""
    changes = {
        "name": name,
        "seed": seed,
        "data": {"train": recordings, "validation": [], "test": [recordings[-1]]},
    }
    trusted = ()
    if previous is not None and config.model.reads("start_from"):
        changes["model"] = {"start_from": previous}
        # The previous round is a run this loop trained from the same config: its code is the config's own.
        trusted = (previous,)
    train_run(config.replace(changes), run_dir, progress=False, overwrite=True, trust_runs=trusted)


def learn_to_control(
    config,
    out: str | os.PathLike,
    *,
    rig: CartPoleRig | None = None,
    seed: int = 0,
    excitation_seconds: float = 3.0,
    episode_seconds: float = 7.0,
    hold: float = 5.0,
    max_episodes: int = 8,
    progress: bool = False,
) -> LearningResult:
    """Learn a cart-pole model that swings the rig up and holds it, from as little interaction as it takes.

    `config`: a `lagnet.config.Config` (or a YAML path) of a cart-pole model; its data section's mapping is used,
    its files are replaced by the recordings made here. Runs and recordings go to `out`. Stops at the first
    episode held over its last `hold` seconds, or after `max_episodes` MPC episodes."""
    if isinstance(config, (str, os.PathLike)):
        config = load_config(config)
    rig = CartPoleRig() if rig is None else rig
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    meta = rig.recording_metadata(seed=seed, recording="learn_to_control", duration=0.0)
    rng = np.random.default_rng(seed)

    cols = excitation_recording(rig, excitation_seconds, seed)
    first = out / "recording-0.npz"
    write_npz(first, {k: v for k, v in cols.items() if not k.startswith("true_")}, meta)
    true_xs = np.stack([cols[k] for k in ("true_x", "true_phi", "true_x_dot", "true_phi_dot")], 1)
    interaction = excitation_seconds
    episodes = [
        Episode("excitation", excitation_seconds, interaction, False, str(first), None, true_xs)
    ]
    recordings, previous = [str(first)], None
    sampler = rig_sampler(rig)
    samples = int(round(episode_seconds / rig.dt))
    for k in range(1, max_episodes + 1):
        run_dir = str(out / f"run-{k}")
        train_round(
            config, recordings, previous, run_dir, name=f"{config.name}-round-{k}", seed=seed
        )
        swing = SwingUp(load(run_dir), rig)
        x0 = np.array([rng.uniform(-0.05, 0.05), rng.uniform(-0.1, 0.1), 0.0, 0.0])
        swing.compile(x0)
        run = run_controller(
            sampler, swing.controller, swing.memory0, x0, samples=samples, u_limit=swing.u_max
        )
        interaction += episode_seconds
        ok = bool(held(run.xs, rig.dt, hold))
        path = None
        if not ok:
            path = out / f"recording-{k}.npz"
            write_npz(path, episode_recording(rig, run.xs, run.us, seed + k), meta)
            recordings.append(str(path))
        episodes.append(
            Episode("mpc", episode_seconds, interaction, ok, path and str(path), run_dir, run.xs)
        )
        previous = run_dir
        if progress:
            reach = float(np.max(np.abs(run.xs[:, 0])))
            print(
                f"learn_to_control {config.name} seed {seed} episode {k}: "
                f"{'held' if ok else 'not held'} (cart reach {reach:.2f} m, rail {RAIL} m), "
                f"{interaction:g} s of interaction",
                flush=True,
            )
        if ok:
            return LearningResult(episodes, True, interaction)
    return LearningResult(episodes, False, interaction)


# --- closed loops over training seeds (`lagnet evaluate RUN --control --seeds`) ----------------------------


def seed_run(run_dir: str, seed: int, *, progress: bool = False) -> str:
    """The run folder of `run_dir`'s config trained with `seed`: `run_dir` itself for its own seed, otherwise
    RUN_DIR/seeds/seed-K, trained now (resumed if a training there was interrupted; a finished one is reused)."""
    config = read_config(run_dir)
    if seed == config.seed:
        return run_dir
    folder = os.path.join(run_dir, SEEDS_DIR, f"seed-{seed}")
    if not os.path.exists(os.path.join(folder, "summary.json")):
        resume = os.path.exists(os.path.join(folder, CONFIG_FILE))
        train_run(
            config.replace(seed=seed),
            folder,
            progress=progress,
            resume=resume,
            overwrite=not resume,
        )
    return folder


def evaluate_run_control_seeds(
    run_dir: str, seeds: list[int], out: str | None = None, *, progress: bool = False, **kwargs
) -> dict[str, Any]:
    """`evaluation.evaluate_run_control` over training seeds (`lagnet evaluate RUN --control --seeds K ...`).

    Each seed's run (`seed_run`) is evaluated on the rig as the run is (`evaluate_control(..., **kwargs)`; the
    run's own results in OUT/metrics.json are reused for its seed, and made first if missing). Its "control"
    gains "seeds" {K: results} and "over_seeds" (`over_seeds`), and OUT/report.md a table; returns "control".
    """
    control = evaluation.read_control(run_dir, out) or evaluation.evaluate_run_control(
        run_dir, out, **kwargs
    )
    own = {k: v for k, v in control.items() if k not in ("seeds", "over_seeds")}
    per_seed = {}
    for seed in seeds:
        folder = seed_run(run_dir, seed, progress=progress)
        per_seed[str(seed)] = (
            own if folder == run_dir else evaluation.evaluate_control(load(folder), **kwargs)
        )
    control = {**own, "seeds": per_seed, "over_seeds": evaluation.over_seeds(per_seed)}
    evaluation.write_control(run_dir, out, control, evaluation.seeds_section(control))
    return control

"""`learn_to_control`: learn a model that does a task on a plant, from as little interaction as it takes.

The loop of model-based reinforcement learning, with lagnet's models, for any system, plant and task:

1. excitation: a few seconds of feedback-free random input (`RandomExcitation`, or the caller's), recorded
   through the plant as a controller would see it;
2. `lagnet train` of the config on every recording so far (a model with physics starts it from the previous
   round's run, `model.start_from`);
3. a controller built on the trained run (default: receding-horizon iLQR, `ILQRFactory`), run for one episode
   with `run_task` from a start drawn from the task's distribution, and recorded;
4. stop when the episode passes the task's test, else repeat from 2 with its recording added.

The interaction counted is every second the plant ran: the excitation and every episode, the successful one
included. Everything stays in the output folder, and an interrupted call resumes from its last finished round:

    OUT/state.json                 the call's arguments and every finished stretch (what a resume reads)
    OUT/round-0/recording.npz      the excitation, in the data layer's format (`recording.mapping`)
    OUT/round-K/run/               round K's run, trained on the recordings of rounds 0 … K − 1
    OUT/round-K/controller.json    the controller built on it: its class, its factory and the factory's options
    OUT/round-K/recording.npz      its episode
    OUT/round-K/states.npy         the plant's true states over the stretch (for figures; not trained on)
"""

import dataclasses
import inspect
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import RunFolderError
from ..config import load_config
from ..config.bounded import read_json
from ..config.schema import Config, validate
from ..config.sources import trust_code as trusting_code
from ..control.ilqr import ILQRController
from ..control.load import load
from ..control.plant import AbstractPlant
from ..control.task_loop import run_task
from ..control.tasks import Task, TaskMismatch
from ..run.build import build_system
from ..run.training import train_run
from ..systems.base import AbstractSystem
from .recording import RandomExcitation, Recording, mapping, write_recording

STATE_FILE = "state.json"


@dataclasses.dataclass(frozen=True)
class ILQRFactory:
    """The default controller of a trained run: `ILQRController(dyn, task, dt, ...)` with these options (see
    `lagnet.control.ILQRController`; `catch` None: its default)."""

    horizon: int = 100
    iterations: int = 3
    first_iterations: int = 60
    substeps: int = 1
    catch: tuple[float, ...] | None = None

    def __call__(self, dyn, task: Task, dt: float) -> ILQRController:
        options = dataclasses.asdict(self)
        catch = options.pop("catch")
        return ILQRController(
            dyn, task, dt, catch=None if catch is None else np.asarray(catch, float), **options
        )


@dataclasses.dataclass(frozen=True)
class Episode:
    """One stretch of interaction with the plant.

    Attributes:
        kind: "excitation" or "control".
        round: 0 for the excitation, K for round K's control episode.
        seconds: how long the plant ran.
        interaction: the seconds of interaction up to the end of this stretch.
        success: whether it passed the task's test (never for the excitation).
        recording: its recording (an NPZ file `lagnet train` reads).
        run: the run whose model controlled it (None for the excitation).
        xs: the plant's true states over it (None where the plant does not know them).
    """

    kind: str
    round: int
    seconds: float
    interaction: float
    success: bool
    recording: str
    run: str | None
    xs: np.ndarray | None


@dataclasses.dataclass(frozen=True)
class LearningResult:
    """`learn_to_control`'s stretches; `success`, and `seconds`: the interaction up to the first successful
    episode (all of it, without success)."""

    episodes: list[Episode]
    success: bool
    seconds: float

    @property
    def controls(self) -> int:
        """The control episodes run."""
        return sum(e.kind == "control" for e in self.episodes)


def describe(obj) -> dict[str, Any]:
    """A JSON description of a factory or an excitation: its type and, for a dataclass, its fields."""
    kind = obj if inspect.isfunction(obj) or isinstance(obj, type) else type(obj)
    out: dict[str, Any] = {"type": f"{kind.__module__}.{kind.__qualname__}"}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out["options"] = {f.name: _plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    return out


def _plain(value):
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return np.asarray(value).tolist() if isinstance(value, np.ndarray) else repr(value)


def _episode_task(task: Task, seconds: float | None) -> Task:
    if seconds is None:
        return task
    if not seconds > 0:
        raise ValueError(f"learn_to_control: episode_seconds must be > 0, got {seconds}")
    return dataclasses.replace(task, seconds=seconds, hold=min(task.hold, seconds))


def _checked(
    config, plant, task, controller, excitation, excitation_seconds, max_episodes, trust_code
) -> tuple[Config, AbstractSystem]:
    """The config (read from a path), and its system, once everything fits: a `TaskMismatch` for a config or
    plant of another system than the task's, `TypeError` / `ValueError` for the rest."""
    if isinstance(config, (str, os.PathLike)):
        config = load_config(config)
    if not isinstance(config, Config):
        raise TypeError(
            f"learn_to_control: config must be a lagnet Config or a YAML path, got {type(config).__name__}"
        )
    if not isinstance(task, Task):
        raise TypeError(f"learn_to_control: task must be a lagnet Task, got {type(task).__name__}")
    if not isinstance(plant, AbstractPlant):
        raise TypeError(
            f"learn_to_control: plant must be a lagnet AbstractPlant, got {type(plant).__name__}"
        )
    for name, value in (("controller", controller), ("excitation", excitation)):
        if not callable(value):
            raise TypeError(
                f"learn_to_control: {name} must be callable, got {type(value).__name__}"
            )
    if not (excitation_seconds > 0 and max_episodes >= 1):
        raise ValueError(
            f"learn_to_control: need excitation_seconds > 0 and max_episodes ≥ 1, got "
            f"{excitation_seconds} and {max_episodes}"
        )
    with trusting_code(trust_code):
        system = build_system(config)
    task.check(system, f"the config's system ({config.name!r}: system.name {config.system.name!r})")
    if plant.system is not None:
        task.check(plant.system, f"the plant's system ({type(plant).__name__})")
    if (plant.n_dof, plant.n_inputs) != (system.n_dof, system.n_inputs):
        raise TaskMismatch(
            f"task {task.name!r}: the plant ({type(plant).__name__}) has {plant.n_dof} coordinates and "
            f"{plant.n_inputs} inputs, the config's system {system.n_dof} and {system.n_inputs}"
        )
    return config, system


class _State:
    """OUT/state.json: the call's arguments and the finished stretches (dicts of `Episode`'s fields but xs,
    paths relative to OUT)."""

    def __init__(self, out: Path, arguments: dict):
        self.out, self.path = out, out / STATE_FILE
        self.arguments = json.loads(json.dumps(arguments, default=repr))
        self.episodes: list[dict] = []
        if self.path.exists():
            saved = read_json(self.path, "a learn_to_control state")
            if not isinstance(saved, dict) or not isinstance(saved.get("episodes"), list):
                raise RunFolderError(
                    f"{self.path}: not a learn_to_control state (arguments, episodes)"
                )
            old = saved.get("arguments")
            old = old if isinstance(old, dict) else {}
            if old != self.arguments:
                changed = sorted(
                    k for k in set(old) | set(self.arguments) if old.get(k) != self.arguments.get(k)
                )
                raise RunFolderError(
                    f"{self.path}: this folder holds a learn_to_control of other arguments (differing: "
                    f"{', '.join(changed)}); resume it with the same ones, or give another folder"
                )
            self.episodes = saved["episodes"]

    @property
    def success(self) -> bool:
        return any(e["success"] for e in self.episodes)

    @property
    def interaction(self) -> float:
        return self.episodes[-1]["interaction"] if self.episodes else 0.0

    def add(self, episode: dict) -> None:
        self.episodes.append(episode)
        tmp = self.path.with_suffix(".json.tmp")
        with open(tmp, "w") as f:
            json.dump({"arguments": self.arguments, "episodes": self.episodes}, f, indent=1)
        os.replace(tmp, self.path)

    def result(self) -> LearningResult:
        episodes = []
        for e in self.episodes:
            states = self.out / f"round-{e['round']}" / "states.npy"
            xs = np.load(states, allow_pickle=False) if states.exists() else None
            paths = {k: e[k] and str(self.out / e[k]) for k in ("recording", "run")}
            episodes.append(Episode(**{**e, **paths, "xs": xs}))
        held = [e.interaction for e in episodes if e.success]
        seconds = held[0] if held else (episodes[-1].interaction if episodes else 0.0)
        return LearningResult(episodes, bool(held), float(seconds))


def _save_stretch(out: Path, k: int, rec: Recording, system, meta: dict) -> str:
    """Round k's recording (and true states) in OUT/round-k; the recording's path relative to OUT."""
    folder = out / f"round-{k}"
    folder.mkdir(parents=True, exist_ok=True)
    write_recording(folder / "recording.npz", rec, system, meta)
    if rec.xs is not None:
        np.save(folder / "states.npy", np.asarray(rec.xs, float), allow_pickle=False)
    return f"round-{k}/recording.npz"


def _train(config: Config, recordings, previous, run_dir, system, *, name, seed, trust_code):
    """`lagnet train` of `config` on `recordings` (the last one also its test file, read with the loop's own
    mapping) into `run_dir`; a model with physics (PINODE, pure ODE) starts from the `previous` round's run."""
    changes = config.to_dict()
    changes.update(name=name, seed=seed)
    changes["data"] = {
        **changes["data"],
        "train": list(recordings),
        "validation": [],
        "test": [recordings[-1]],
        "mapping": mapping(system),
        "max_duration": None,
    }
    trusted = ()
    if previous is not None and config.model.reads("start_from"):
        changes["model"]["start_from"] = previous
        # The previous round is a run this loop trained from the same config: its code is the config's own.
        trusted = (previous,)
    train_run(
        validate(changes),
        str(run_dir),
        progress=False,
        overwrite=True,
        trust_code=trust_code,
        trust_runs=trusted,
    )


def _round_seed(seed: int, k: int) -> int:
    return int(np.random.default_rng([seed, k]).integers(2**31))


def _control_round(
    config, plant, task, factory, out: Path, k: int, state, *, seed, system, meta, trust_code
) -> dict:
    """Round k: train on every recording so far, build the controller, run one episode and record it."""
    folder = out / f"round-{k}"
    run_dir = folder / "run"
    previous = [e["run"] for e in state.episodes if e["run"]]
    _train(
        config,
        [str(out / e["recording"]) for e in state.episodes],
        str(out / previous[-1]) if previous else None,
        run_dir,
        system,
        name=f"{config.name}-round-{k}",
        seed=seed,
        trust_code=trust_code,
    )
    controller = factory(load(str(run_dir), trust_code=trust_code), task, plant.dt)
    x0 = task.starts(1, _round_seed(seed, k))[0]
    with open(folder / "controller.json", "w") as f:
        json.dump(
            {
                "controller": type(controller).__qualname__,
                "factory": describe(factory),
                "run": "run",
                "task": task.name,
                "dt": plant.dt,
                "start": x0.tolist(),
            },
            f,
            indent=1,
        )
    run = run_task(controller, plant, task, x0[None])
    rec = Recording.from_run(run.ys[0], run.us[0], plant.dt, run.xs[0])
    recording = _save_stretch(out, k, rec, system, {**meta, "recording": f"round {k}"})
    return {
        "kind": "control",
        "round": k,
        "seconds": rec.seconds,
        "interaction": state.interaction + rec.seconds,
        "success": bool(run.success[0]),
        "recording": recording,
        "run": f"round-{k}/run",
    }


def learn_to_control(
    config: Config | str | os.PathLike,
    plant: AbstractPlant,
    task: Task,
    out: str | os.PathLike,
    *,
    controller: Callable | None = None,
    excitation: Callable | None = None,
    seed: int = 0,
    excitation_seconds: float = 3.0,
    episode_seconds: float | None = None,
    max_episodes: int = 5,
    progress: bool = False,
    trust_code: bool = False,
) -> LearningResult:
    """Learn a model of `config` that does `task` on `plant`: excitation, then rounds of train → one control
    episode → record, until an episode passes the task's test or `max_episodes` episodes have run.

    Arguments:
        config: a `lagnet.config.Config` or a YAML path, of a model of the task's system; its data section's
            files and mapping are replaced by the recordings made here.
        plant: what is controlled and recorded (`lagnet.control`: a rig, a system, a Gymnasium env, ...).
        task: the goal, cost, input limits, starts and success test; episodes start from `task.starts`.
        out: the folder everything goes to (see the module's docstring); a call with the same arguments on a
            folder an interrupted call left resumes after its last finished round (`max_episodes` may grow).
        controller: `(dyn, task, dt) -> controller` on a trained run's `Dynamics` (default `ILQRFactory()`).
        excitation: `(plant, task, seconds, seed) -> Recording` (default `RandomExcitation()`).
        episode_seconds: an episode's length (default `task.seconds`; the hold shortened to fit).
        trust_code: let a config's Python system source run (docs/guides/security.md).

    A config whose system is not the task's, or a plant of another system, raises `TaskMismatch` before
    anything runs; a folder holding a loop of other arguments raises `RunFolderError`.
    """
    controller = ILQRFactory() if controller is None else controller
    excitation = RandomExcitation() if excitation is None else excitation
    args = (controller, excitation, excitation_seconds, max_episodes, trust_code)
    config, system = _checked(config, plant, task, *args)
    task = _episode_task(task, episode_seconds)
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    arguments = {
        "config": config.to_dict(),
        "task": task.name,
        "plant": type(plant).__name__,
        "dt": plant.dt,
        "seed": seed,
        "excitation_seconds": excitation_seconds,
        "episode_seconds": task.seconds,
        "controller": describe(controller),
        "excitation": describe(excitation),
    }
    state = _State(out, arguments)
    meta = {"generator": "lagnet.learn", "seed": seed, "task": task.name, "dt": plant.dt}
    if not state.episodes:
        rec = excitation(plant, task, excitation_seconds, seed)
        path = _save_stretch(out, 0, rec, system, {**meta, "recording": "excitation"})
        state.add(
            dict(
                kind="excitation",
                round=0,
                seconds=rec.seconds,
                interaction=rec.seconds,
                success=False,
                recording=path,
                run=None,
            )
        )
    while not state.success and len(state.episodes) <= max_episodes:
        k = len(state.episodes)
        common = dict(seed=seed, system=system, meta=meta, trust_code=trust_code)
        state.add(_control_round(config, plant, task, controller, out, k, state, **common))
        if progress:
            e = state.episodes[-1]
            print(
                f"learn_to_control {config.name} seed {seed} round {k}: "
                f"{'success' if e['success'] else 'no success'}, {e['interaction']:g} s of interaction",
                flush=True,
            )
    return state.result()

"""A run's model judged on a named task (`lagnet evaluate RUN --control --task NAME [--plant SPEC]`).

For every system that has a task (`lagnet.control.tasks.TASKS`), a controller designed on the run's model runs on
a plant for the task, from the task's own starts, with `run_task`: the receding-horizon iLQR
(`ILQRController.for_task`, the task's chosen options) for a swing-up, the discrete LQR (`LQRController.design`,
linearised at the goal) for a reach.

The plants (`PLANTS`): `rig` (the default: the system's simulated rig read by its sensors: `PendulumRig`,
`CartPoleRig`, `ArmRig`, and for the double pendulum the lab's identified model with its joint friction,
`dfki_rig`), `known` (the run's known system integrated, the true state) and `model` (the learned model itself
integrated, the true state: the controller on its own model).

A double pendulum trained with both joints driven (the DFKI recordings) is controlled through one input at a
time (`SelectedInputs`): as the pendubot and as the acrobot, its default tasks.

The cart-pole's LQR + MPC evaluation on its rig (`lagnet.control.cartpole_evaluation`) stays the default for a
cart-pole run; this is what `--task` or `--plant` ask for.
"""

import dataclasses
import inspect
import json
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..config.bounded import read_json
from ..simulate import ArmRig, CartPoleRig, PendulumRig
from ..systems import CartPole, DoublePendulum, Pendulum
from ..systems.base import AbstractSystem
from .controllers import IntegralLQRController, LQRController
from .dynamics import Dynamics, SelectedInputs
from .ilqr import ILQRController
from .plant import AbstractPlant, PacedPlant, RigPlant, SystemPlant
from .task_loop import TaskRun, run_task
from .tasks import TASKS, Task, TaskMismatch, dfki_rig, task

# s: the control period of a plant integrated here (a simulated rig has its own).
CONTROL_PERIOD = 0.01
PLANTS = {
    "rig": "the system's simulated rig (the double pendulum: the lab's model with its joint friction), read by "
    "its sensors",
    "known": "the run's known system integrated, the true state",
    "model": "the learned model itself integrated, the true state",
}
_DOUBLE_PENDULUM_TASKS = {"shoulder": "pendubot-swingup", "elbow": "acrobot-swingup"}


def default_tasks(system: AbstractSystem) -> list[str]:
    """The tasks made for `system`'s kind (a double pendulum driving both joints: as the pendubot and as the
    acrobot); a `TaskMismatch` naming the tasks where there is none."""
    if isinstance(system, Pendulum):
        return ["pendulum-swingup"]
    if isinstance(system, CartPole):
        return ["cartpole-swingup"]
    if isinstance(system, DoublePendulum):
        if system.actuated in _DOUBLE_PENDULUM_TASKS:
            return [_DOUBLE_PENDULUM_TASKS[system.actuated]]
        return list(_DOUBLE_PENDULUM_TASKS.values())
    if type(system).__name__ == "RigidBodyTree" and system.n_dof == 7:
        return ["arm-reach"]
    raise TaskMismatch(
        f"no task is made for a {type(system).__name__} system; the tasks are {', '.join(sorted(TASKS))}"
    )


def _through_one_joint(system: AbstractSystem, t: Task) -> bool:
    """Whether task `t` drives `system`, a double pendulum driving both joints, through one of them."""
    return (
        isinstance(system, DoublePendulum)
        and system.actuated == "both"
        and isinstance(t.system, DoublePendulum)
        and t.system.actuated != "both"
    )


def for_task(dyn: Dynamics, t: Task) -> Dynamics:
    """`dyn` as task `t` drives it: itself when its system is the task's kind; a double pendulum driving both
    joints through the task's joint alone (`SelectedInputs`); else a `TaskMismatch` naming the difference."""
    system = dyn.system
    if not _through_one_joint(system, t):
        t.check(system, "the run's model")
        return dyn
    if dyn.history.lags:
        raise TaskMismatch(
            f"task {t.name!r}: the run's model reads an input history; it cannot be driven through one joint"
        )
    column = {"shoulder": 0, "elbow": 1}[t.system.actuated]
    selected = SelectedInputs(dyn.model, system.with_actuation(t.system.actuated), (column,))
    return dataclasses.replace(dyn, model=selected)


def check_plant_spec(spec: str | None) -> None:
    """A `TaskMismatch` naming `spec` unless it is one of `PLANTS` (or None: the default)."""
    if spec is not None and spec not in PLANTS:
        raise TaskMismatch(
            f"unknown plant {spec!r}; the plants are "
            + "; ".join(f"{k} ({v})" for k, v in PLANTS.items())
        )


def resolve_tasks(system: AbstractSystem, names: list | None) -> list[Task]:
    """The tasks `names` (default: `default_tasks(system)`), each checked against `system` (`for_task`'s
    rule): a `TaskMismatch` naming an unknown task or one posed for another system, before anything runs.
    An entry may also be a mapping of a `Task`'s fields (a config's `control.tasks`), posed on `system`."""
    tasks = [
        task(entry) if isinstance(entry, str) else _own_task(system, entry, i)
        for i, entry in enumerate(names or default_tasks(system))
    ]
    for t in tasks:
        if not _through_one_joint(system, t):
            t.check(system, "the run's model")
    return tasks


def _own_task(system: AbstractSystem, fields, i: int) -> Task:
    if isinstance(fields, Task):
        return fields
    fields = dict(fields)
    fields["knocks"] = tuple(tuple(k) for k in fields.get("knocks", ()))
    try:
        return Task(system=system, **fields)
    except (TypeError, ValueError) as e:
        raise TaskMismatch(f"control.tasks[{i}]: {e}") from None


def _rig(t: Task, seed: int):
    if isinstance(t.system, Pendulum):
        return RigPlant(PendulumRig(), seed=seed)
    if isinstance(t.system, CartPole):
        return RigPlant(CartPoleRig(), seed=seed)
    if isinstance(t.system, DoublePendulum):
        return dfki_rig(t.system.actuated, CONTROL_PERIOD, seed=seed)
    if t.name == "arm-reach":
        return RigPlant(ArmRig(), seed=seed)
    return None


def make_plant(
    dyn: Dynamics, t: Task, spec: str | None, seed: int = 0
) -> tuple[str, AbstractPlant]:
    """(its name, the plant) `spec` (`PLANTS`; None: the rig where the task's system has one, else `known`) for
    task `t`; `dyn` as `for_task` gives it."""
    check_plant_spec(spec)
    rig = _rig(t, seed) if spec in (None, "rig") else None
    if spec == "rig" and rig is None:
        raise TaskMismatch(
            f"task {t.name!r}: its system ({type(t.system).__name__}) has no simulated rig; use --plant known "
            "or --plant model"
        )
    if rig is not None:
        return "rig", rig
    spec = spec or "known"
    dynamics = dyn.system if spec == "known" else dyn.model
    return spec, SystemPlant(dynamics, CONTROL_PERIOD, t.u_max, substeps=8)


def check_controller_options(t: Task, options: dict) -> None:
    """A `TaskMismatch` naming the options that `controller_for` would not take for task `t`, before anything
    runs."""
    if t.name.endswith("-swingup"):
        known = set(inspect.signature(ILQRController).parameters) - {"dyn", "task", "dt"} | {
            "horizon_s"
        }
        kind = "the iLQR"
    else:
        known, kind = {"integral"}, "the LQR"
    unknown = set(options) - known
    if unknown:
        raise TaskMismatch(
            f"control.options for {t.name!r}: {kind} takes {', '.join(sorted(known))}; not {', '.join(sorted(unknown))}"
        )


def controller_for(dyn: Dynamics, t: Task, dt: float, **options):
    """(name, controller) designed on `dyn` for task `t` at period dt: the iLQR with the task's options (those
    `options` does not override) for a swing-up; for anything else the LQR, with integral action
    (`IntegralLQRController`) when `options` give it a weight `integral`. (On the arm's reach integral action was
    measured and not chosen: on the validation starts it held no start the plain LQR did not.)"""
    check_controller_options(t, options)
    if t.name.endswith("-swingup"):
        return "ilqr", ILQRController.for_task(dyn, t, dt, **options)
    if options.get("integral"):
        return "lqi", IntegralLQRController.design(dyn, t, dt, options["integral"])
    return "lqr", LQRController.design(dyn, t, dt)


def evaluate_task(
    dyn: Dynamics,
    t: Task,
    plant_spec: str | None = None,
    *,
    starts: int = 6,
    seconds: float | None = None,
    seed: int = 0,
    options: dict | None = None,
    paced: bool = False,
) -> tuple[dict[str, Any], TaskRun]:
    """(`TaskRun.summary()` (success, starts, median_ms, p99_ms, sensing) with the plant and the controller,
    the runs) of the controller designed on `dyn` for task `t` on the plant `plant_spec`, from `starts` of the
    task's starts (drawn with `seed`); `options` overrides the controller's. `seconds` shortens the task (its
    hold kept, or the second half of the run when shorter). `paced`: the plant held to the wall clock
    (`PacedPlant`), as a rig's driver is; the summary then counts the periods whose deadline was missed
    (`late`)."""
    dyn = for_task(dyn, t)
    plant_name, plant = make_plant(dyn, t, plant_spec, seed)
    if paced:
        plant = PacedPlant(plant)
    if seconds is not None:
        t = dataclasses.replace(t, seconds=seconds, hold=min(t.hold, seconds / 2))
    name, controller = controller_for(dyn, t, plant.dt, **(options or {}))
    run = run_task(controller, plant, t, count=starts, seed=seed)
    summary = run.summary() | {
        "plant": plant_name,
        "controller": name,
        "from": "the task's starts",
        "seconds": t.seconds,
        "hold": t.hold,
    }
    if options:
        summary["options"] = dict(options)
    if paced:
        summary |= {
            "paced": True,
            "late": plant.late,
            "periods": int(run.us.shape[0] * run.us.shape[1]),
        }
    return summary, run


def evaluate_tasks(
    dyn: Dynamics, names: list | None = None, plant_spec: str | None = None, **kwargs
) -> dict[str, tuple[dict[str, Any], TaskRun]]:
    """{task name: `evaluate_task`} of a model on the tasks `names` (`resolve_tasks`; default: its system's)."""
    check_plant_spec(plant_spec)
    return {
        t.name: evaluate_task(dyn, t, plant_spec, **kwargs)
        for t in resolve_tasks(dyn.system, names)
    }


_READ = {"true": "the true state", "sensors": "the sensors"}


def write_control(run_dir: str, out: str | None, control: dict[str, Any], section: str) -> None:
    """metrics.json's "control" replaced by `control`, and `section` appended to report.md."""
    folder = Path(out) if out else Path(run_dir) / "evaluation"
    folder.mkdir(parents=True, exist_ok=True)
    metrics_path = folder / "metrics.json"
    metrics = read_json(metrics_path, "an evaluation's metrics") if metrics_path.exists() else {}
    if not isinstance(metrics, dict):
        raise ValueError(f"{metrics_path}: not an evaluation's metrics (a JSON object)")
    metrics["control"] = control
    metrics_path.write_text(json.dumps(metrics, indent=1, sort_keys=True))
    with open(folder / "report.md", "a") as f:
        f.write("\n" + section)


def evaluate_run_tasks(
    run_dir: str, out: str | None, dyn: Dynamics, names=None, plant_spec=None, **kwargs
) -> dict[str, dict[str, Any]]:
    """`evaluate_task` of a run's loaded model `dyn` on each of the tasks `names` (`resolve_tasks`), written
    into OUT/metrics.json's "control", with a closed-loop figure per task (OUT/control_TASK.png) and a section
    appended to OUT/report.md (OUT: `out` or RUN_DIR/evaluation); returns the control metrics."""
    check_plant_spec(plant_spec)
    folder = Path(out) if out else Path(run_dir) / "evaluation"
    control, figures = {}, {}
    for t in resolve_tasks(dyn.system, names):
        control[t.name], run = evaluate_task(dyn, t, plant_spec, **kwargs)
        folder.mkdir(parents=True, exist_ok=True)
        figures[t.name] = f"control_{t.name}.png"
        closed_loop_figure(run, t, for_task(dyn, t).system, folder / figures[t.name])
    write_control(run_dir, out, control, tasks_section(control, figures))
    return control


def closed_loop_figure(run: TaskRun, t: Task, system: AbstractSystem, path) -> None:
    """The first start's closed loop against time: the coordinates' errors from the goal, the input and the
    energy E = T + V of `system`, with the task's success window (its last `hold` s) shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs, us, n = run.xs[0], run.us[0], system.n_dof
    time_s = run.dt * np.arange(xs.shape[0])
    finite = np.all(np.isfinite(xs), axis=1)
    energy = np.full(xs.shape[0], np.nan)
    energy[finite] = np.asarray(
        jax.vmap(system.energy)(jnp.asarray(xs[finite, :n]), jnp.asarray(xs[finite, n:]))
    )
    fig, axes = plt.subplots(3, 1, figsize=(7, 6), sharex=True)
    error = np.asarray(t.error(xs))[:, :n]
    for i, label in enumerate(system.state_names[:n]):
        axes[0].plot(time_s, error[:, i], label=label)
    axes[0].set_ylabel("q − q* (wrapped)")
    axes[0].legend(loc="upper right", fontsize=7)
    axes[1].step(time_s[:-1], us, where="post")
    axes[1].set_ylabel("u")
    axes[2].plot(time_s, energy)
    axes[2].set_ylabel("E = T + V")
    axes[2].set_xlabel("t (s)")
    for ax in axes:
        ax.axvspan(t.seconds - t.hold, t.seconds, color="green", alpha=0.1)
    axes[0].set_title(
        f"{t.name}: start 1 of {run.xs.shape[0]}, {'held' if run.success[0] else 'not held'} "
        "(shaded: the success window)"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def tasks_section(control: dict[str, dict[str, Any]], figures: dict[str, str] | None = None) -> str:
    """The report.md section of the task evaluation: a line per task, and its figure (markdown)."""
    lines = ["## Control on named tasks", ""]
    for name, c in control.items():
        lines.append(
            f"- {name}: {c['controller'].upper()} on the {c['plant']} plant, from {c['from']}: "
            f"{c['success']}/{c['starts']} succeeded; solve time median {c['median_ms']:.2f} ms, "
            f"p99 {c['p99_ms']:.2f} ms; the controller read {_READ[c['sensing']]}"
            + (
                f"; paced at the wall clock, {c['late']} of {c['periods']} deadlines missed"
                if c.get("paced")
                else ""
            )
            + (f"; options {json.dumps(c['options'])}" if c.get("options") else "")
        )
    for name, figure in (figures or {}).items():
        lines += ["", f"![{name}: the closed loop]({figure})"]
    return "\n".join(lines) + "\n"

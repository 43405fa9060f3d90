"""A run's model judged on a named task (`lagnet evaluate RUN --control --task NAME [--plant SPEC]`).

For every system that has a task (`lagnet.control.tasks.TASKS`): the discrete LQR designed on the run's model
(`LQRController.design`, linearised at the task's goal, stepped at the plant's period) runs on a plant for the
task, with `run_task`. A swing-up task is judged as a balance: the LQR is a balancing controller, so its starts
are the task's goal tilted by up to `BALANCE_TILT` rad on each angle, at rest, with the task's success test.
Other tasks (the arm's reach) run from their own starts.

The plants (`PLANTS`): `rig` (the default where the system has a simulated rig: `PendulumRig`, `CartPoleRig`,
`ArmRig`; the controller reads the rig's sensors), `known` (the run's known system integrated, the true state;
the default for a system without a rig, such as the double pendulum) and `model` (the learned model itself
integrated, the true state: the controller on its own model).

The cart-pole's LQR + MPC evaluation on its rig (`lagnet.control.evaluation`) stays the default for a cart-pole
run; this is what `--task` or `--plant` ask for.
"""

import dataclasses
from typing import Any

import numpy as np

from ..simulate import ArmRig, CartPoleRig, PendulumRig
from ..systems import CartPole, DoublePendulum, Pendulum
from ..systems.base import AbstractSystem
from .controllers import LQRController
from .dynamics import Dynamics
from .evaluation import write_control
from .plant import AbstractPlant, RigPlant, SystemPlant
from .task_loop import run_task
from .tasks import TASKS, Task, TaskMismatch, task

# rad: a balance starts within this of the goal on each angle, at rest.
BALANCE_TILT = 0.1
PLANTS = {
    "rig": "the system's simulated rig, read by its sensors",
    "known": "the run's known system integrated, the true state",
    "model": "the learned model itself integrated, the true state",
}
_DOUBLE_PENDULUM_TASKS = {"shoulder": "pendubot-swingup", "elbow": "acrobot-swingup"}


def default_task(system: AbstractSystem) -> str:
    """The task made for `system`'s kind; a `TaskMismatch` naming what to do where there is none."""
    if isinstance(system, Pendulum):
        return "pendulum-swingup"
    if isinstance(system, CartPole):
        return "cartpole-swingup"
    if isinstance(system, DoublePendulum):
        if system.actuated in _DOUBLE_PENDULUM_TASKS:
            return _DOUBLE_PENDULUM_TASKS[system.actuated]
        raise TaskMismatch(
            f"the run's double pendulum drives both joints (actuated={system.actuated!r}); the double "
            "pendulum's tasks are under-actuated: pendubot-swingup (joint 1 driven) and acrobot-swingup "
            "(joint 2 driven). Train a model that drives joint 1 (system.name: pendubot) and evaluate it "
            "with --task pendubot-swingup (or joint 2, system.name: acrobot, and --task acrobot-swingup)"
        )
    if type(system).__name__ == "RigidBodyTree" and system.n_dof == 7:
        return "arm-reach"
    raise TaskMismatch(
        f"no task is made for a {type(system).__name__} system; the tasks are {', '.join(sorted(TASKS))}"
    )


def check_plant_spec(spec: str | None) -> None:
    """A `TaskMismatch` naming `spec` unless it is one of `PLANTS` (or None: the default)."""
    if spec is not None and spec not in PLANTS:
        raise TaskMismatch(
            f"unknown plant {spec!r}; the plants are "
            + "; ".join(f"{k} ({v})" for k, v in PLANTS.items())
        )


def resolve_tasks(system: AbstractSystem, names: list[str] | None) -> list[Task]:
    """The tasks `names` (default: `default_task(system)`), each checked against `system`: a `TaskMismatch`
    naming an unknown task or one posed for another system, before anything runs."""
    tasks = [task(name) for name in (names or [default_task(system)])]
    if isinstance(system, DoublePendulum):
        default_task(system)  # a fully actuated one has no task: say what to do instead
    for t in tasks:
        t.check(system, "the run's model")
    return tasks


def _rig(t: Task):
    if isinstance(t.system, Pendulum):
        return PendulumRig()
    if isinstance(t.system, CartPole):
        return CartPoleRig()
    if t.name == "arm-reach":
        return ArmRig()
    return None


def make_plant(dyn: Dynamics, t: Task, spec: str | None) -> AbstractPlant:
    """The plant `spec` (`PLANTS`; None: the rig where the task's system has one, else `known`) for task `t`."""
    check_plant_spec(spec)
    rig = _rig(t)
    if spec == "rig" and rig is None:
        raise TaskMismatch(
            f"task {t.name!r}: its system ({type(t.system).__name__}) has no simulated rig; use --plant known "
            "or --plant model"
        )
    if spec in (None, "rig") and rig is not None:
        return RigPlant(rig)
    dynamics = dyn.system if spec in (None, "known") else dyn.model
    return SystemPlant(dynamics, dyn.dt, t.u_max)


def balance(t: Task) -> Task:
    """The task posed as a balance at its goal: starts within ±BALANCE_TILT of the goal's angles, at rest."""
    spread = np.where(t.angles, BALANCE_TILT, 0.0)
    return dataclasses.replace(t, start=t.goal, start_spread=spread)


def evaluate_task(
    dyn: Dynamics,
    t: Task,
    plant_spec: str | None = None,
    *,
    starts: int = 6,
    seconds: float | None = None,
) -> dict[str, Any]:
    """The LQR designed on `dyn` for task `t` run on the plant `plant_spec`: `TaskRun.summary()` (success,
    starts, median_ms, p99_ms, sensing) with the plant, the controller and where the runs started. `seconds`
    shortens the task (its hold kept, or the second half of the run when shorter)."""
    plant = make_plant(dyn, t, plant_spec)
    swing = t.name.endswith("-swingup")
    posed = balance(t) if swing else t
    if seconds is not None:
        posed = dataclasses.replace(posed, seconds=seconds, hold=min(posed.hold, seconds / 2))
    controller = LQRController.design(dyn, posed, plant.dt)
    run = run_task(controller, plant, posed, count=starts)
    return run.summary() | {
        "plant": plant_spec or ("rig" if isinstance(plant, RigPlant) else "known"),
        "controller": "lqr",
        "from": f"within {BALANCE_TILT} rad of the goal (balance)"
        if swing
        else "the task's starts",
    }


def evaluate_tasks(
    dyn: Dynamics, names: list[str] | None = None, plant_spec: str | None = None, **kwargs
) -> dict[str, dict[str, Any]]:
    """metrics["control"] of a model on tasks `names` (default: its system's): {task name: `evaluate_task`}."""
    check_plant_spec(plant_spec)
    return {
        t.name: evaluate_task(dyn, t, plant_spec, **kwargs)
        for t in resolve_tasks(dyn.system, names)
    }


_READ = {"true": "the true state", "sensors": "the sensors"}


def evaluate_run_tasks(
    run_dir: str, out: str | None, dyn: Dynamics, names=None, plant_spec=None, **kwargs
) -> dict[str, dict[str, Any]]:
    """`evaluate_tasks` of a run's loaded model `dyn`, written into OUT/metrics.json's "control" and appended to
    OUT/report.md (OUT: `out` or RUN_DIR/evaluation); returns the control metrics."""
    control = evaluate_tasks(dyn, names, plant_spec, **kwargs)
    write_control(run_dir, out, control, tasks_section(control))
    return control


def tasks_section(control: dict[str, dict[str, Any]]) -> str:
    """The report.md section of the task evaluation: a line per task (markdown)."""
    lines = ["## Control on named tasks", ""]
    for name, c in control.items():
        lines.append(
            f"- {name}: {c['controller'].upper()} on the {c['plant']} plant, from {c['from']}: "
            f"{c['success']}/{c['starts']} succeeded; solve time median {c['median_ms']:.2f} ms, "
            f"p99 {c['p99_ms']:.2f} ms; the controller read {_READ[c['sensing']]}"
        )
    return "\n".join(lines) + "\n"

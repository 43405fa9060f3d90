"""A controller on a plant for a task: the closed loop from each start, success by the task's test, solve times.

One loop for every plant (`AbstractPlant`): at t_k = k dt the controller sees the plant's measurement y_k and
returns u_k (timed, including waiting for its result), clipped to the task's and the plant's limits and held
over the period; the task's knocks kick the plant at their times. The loop steps the plant once per period and
never rewinds it, so a plant that paces itself at the wall clock (or real hardware) runs the same way.
"""

import dataclasses
import time

import jax
import numpy as np

from .controllers import as_controller
from .plant import AbstractPlant
from .tasks import Task, TaskMismatch


@dataclasses.dataclass(frozen=True)
class TaskRun:
    """The runs of `run_task` from S starts over N periods of dt.

    Attributes:
        success: (S,) the task's success test on each run's states (a plant that ended early fails).
        xs: (S, N + 1, 2n) the plant's states (true in a simulation, else measured); NaN after an early end.
        ys: (S, N, 2n) what the controller saw.
        us: (S, N, m) the inputs applied (after clipping).
        solve_times: (S, N) wall-clock seconds per controller call.
        dt: the control period; sensing: "true" or "sensors" (what the controller saw).
    """

    success: np.ndarray
    xs: np.ndarray
    ys: np.ndarray
    us: np.ndarray
    solve_times: np.ndarray
    dt: float
    sensing: str

    @property
    def successes(self) -> int:
        return int(np.sum(self.success))

    def solve_ms(self) -> tuple[float, float]:
        """(median, p99) of the warm solve times in ms: each run's first call (compilation, a cold solve) left
        out; NaN without any."""
        warm = 1e3 * self.solve_times[:, 1:]
        warm = warm[np.isfinite(warm)]
        if warm.size == 0:
            return float("nan"), float("nan")
        return float(np.median(warm)), float(np.percentile(warm, 99))

    def summary(self) -> dict:
        median, p99 = self.solve_ms()
        return {
            "success": self.successes,
            "starts": int(self.success.size),
            "median_ms": median,
            "p99_ms": p99,
            "sensing": self.sensing,
        }


def _check_plant(plant: AbstractPlant, task: Task) -> None:
    if not isinstance(plant, AbstractPlant):
        raise TypeError(
            f"run_task: plant must be a lagnet AbstractPlant, got {type(plant).__name__}"
        )
    system = getattr(plant, "system", None)
    if system is not None:
        task.check(system, f"the plant's system ({type(plant).__name__})")
    mine = (task.system.n_dof, task.system.n_inputs)
    if (plant.n_dof, plant.n_inputs) != mine:
        raise TaskMismatch(
            f"task {task.name!r}: the plant ({type(plant).__name__}) has {plant.n_dof} coordinates and "
            f"{plant.n_inputs} inputs, the task's system {mine[0]} and {mine[1]}"
        )
    beyond = np.asarray(task.u_max) > np.asarray(plant.u_max) * (1 + 1e-9)
    if np.any(beyond):
        names = [n for n, b in zip(task.system.input_names, beyond, strict=True) if b]
        raise TaskMismatch(
            f"task {task.name!r} allows inputs beyond the plant's limits on {', '.join(names)}: |u| ≤ "
            f"{np.asarray(task.u_max).tolist()} against the plant's {np.asarray(plant.u_max).tolist()}; pose "
            "the task within them (dataclasses.replace(task, u_max=...))"
        )


def _measured(task: Task, plant: AbstractPlant, y) -> np.ndarray:
    y = np.asarray(y, dtype=float)
    if y.shape != task.goal.shape:
        raise TaskMismatch(
            f"task {task.name!r}: the plant ({type(plant).__name__}) returned a state of shape {y.shape}, "
            f"not the system's (q, q̇) {task.goal.shape}"
        )
    return y


def _one_run(controller, plant: AbstractPlant, task: Task, x0, samples: int, u_max) -> tuple:
    n2, m = task.goal.size, task.u_max.size
    xs, ys = np.full((samples + 1, n2), np.nan), np.full((samples, n2), np.nan)
    us, times = np.full((samples, m), np.nan), np.full(samples, np.nan)
    knocks = {int(round(t / plant.dt)): dx for t, dx in task.knocks}
    controller.reset(x0)
    y = _measured(task, plant, plant.reset(x0))
    xs[0] = plant.true_state
    for k in range(samples):
        start = time.perf_counter()
        u = np.asarray(jax.block_until_ready(controller(y, k * plant.dt)), float).reshape(m)
        times[k] = time.perf_counter() - start
        ys[k], us[k] = y, np.clip(u, -u_max, u_max)
        if k in knocks:
            plant.perturb(knocks[k])
        y = _measured(task, plant, plant.step(us[k]))
        xs[k + 1] = plant.true_state
        if plant.ended or not np.all(np.isfinite(xs[k + 1])):
            return xs, ys, us, times, False
    return xs, ys, us, times, True


def run_task(
    controller, plant: AbstractPlant, task: Task, starts=None, *, count: int = 6, seed: int = 0
) -> TaskRun:
    """Run `controller` (an `AbstractController`, or a callable (x, t) → u) on `plant` for `task` from each of
    `starts` ((S, 2n); default `task.starts(count, seed)`), `task.seconds` long at the plant's period.

    A task that allows inputs beyond the plant's limits is refused (a `TaskMismatch`); the controller's inputs
    are clipped to the task's limits (the actuator saturates). Success is the task's test on the
    plant's states (`plant.true_state`: the true state of a simulation even when the controller reads sensors).
    """
    _check_plant(plant, task)
    controller = as_controller(controller)
    starts = task.starts(count, seed) if starts is None else np.asarray(starts, dtype=float)
    if starts.ndim != 2 or starts.shape[1] != task.goal.size:
        raise TaskMismatch(
            f"task {task.name!r}: starts must be (S, {task.goal.size}) states (q, q̇), got {starts.shape}"
        )
    samples = int(round(task.seconds / plant.dt))
    u_max = np.minimum(task.u_max, plant.u_max)
    runs = [_one_run(controller, plant, task, x0, samples, u_max) for x0 in starts]
    xs, ys, us, times, finished = (np.stack(v) for v in zip(*runs, strict=True))
    success = task.success(xs, plant.dt) & finished
    return TaskRun(success, xs, ys, us, times, float(plant.dt), plant.sensing)

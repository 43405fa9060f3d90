"""Controllers as a task's closed loop calls them: u = controller(x, t) once per control period.

`AbstractController` is the interface (`reset(x0)` before each run: warm starts, memories, compilation outside
the timed solves); the final controllers wrap a plain function, an LQR and a controller that threads a memory
(an MPC's warm start).
"""

import abc
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .dynamics import Dynamics, linearise
from .lqr import dlqr
from .tasks import Task


class AbstractController(abc.ABC):
    """u (m,) = controller(x (2n,), t) at each control period; `reset(x0)` before a run from x0."""

    @abc.abstractmethod
    def reset(self, x0) -> None:
        """Prepare a run from x0: clear memories, compile (so that the timed solves are warm)."""

    @abc.abstractmethod
    def __call__(self, x, t: float):
        """The input (m,) at the measured state x and time t (s since the run's start)."""


class FunctionController(AbstractController):
    """A plain function `fn(x, t) -> u` with nothing to reset."""

    def __init__(self, fn: Callable):
        if not callable(fn):
            raise TypeError(f"FunctionController: fn must be callable, got {type(fn).__name__}")
        self.fn = fn

    def reset(self, x0) -> None:
        return None

    def __call__(self, x, t: float):
        return self.fn(x, t)


class MemoryController(AbstractController):
    """`fn(y, memory) -> (u, memory, info)` threading its memory from `memory0` (an MPC's plan, a filter's
    state); `prepare(x0)`, if given, runs at each reset (e.g. compiling the solver before anything is timed)."""

    def __init__(self, fn: Callable, memory0: Any, prepare: Callable | None = None):
        self.fn, self.memory0, self.prepare = fn, memory0, prepare
        self.memory, self.info = memory0, []

    def reset(self, x0) -> None:
        if self.prepare is not None:
            self.prepare(x0)
        self.memory, self.info = self.memory0, []

    def __call__(self, x, t: float):
        u, self.memory, info = self.fn(x, self.memory)
        self.info.append(info)
        return u


class LQRController(AbstractController):
    """u = clip(u* − K e(x), −u_max, u_max), e(x) = x − x* with angles wrapped (the task's error), compiled."""

    def __init__(self, k, task: Task, x_eq=None, u_eq=None):
        self.task = task
        self.k = jnp.asarray(k)
        x_eq = task.goal if x_eq is None else x_eq
        u_eq = task.u_goal if u_eq is None else u_eq
        # The gain acts on the error from the task's goal; a trimmed equilibrium elsewhere shifts it.
        offset = jnp.asarray(np.asarray(task.error(np.asarray(x_eq, float))))
        lim = jnp.asarray(task.u_max)
        error, u_eq = task.error, jnp.asarray(u_eq)

        @jax.jit
        def law(x):
            return jnp.clip(u_eq - self.k @ (error(x) - offset), -lim, lim)

        self._law = law

    @classmethod
    def design(cls, dyn: Dynamics, task: Task, dt: float) -> "LQRController":
        """The discrete LQR (the task's Q and R) of `dyn` stepped at the control period dt, linearised at the
        task's goal and holding input."""
        x, u = jnp.asarray(task.goal), jnp.asarray(task.u_goal)
        a, b = linearise(lambda x, u: dyn.step(x, u, dt), x, u)
        k, _ = dlqr(a, b, task.q, task.r)
        return cls(k, task)

    def reset(self, x0) -> None:
        return None

    def __call__(self, x, t: float):
        return self._law(jnp.asarray(x))


class IntegralLQRController(AbstractController):
    """LQR with integral action (LQI) on the coordinates' errors: u = clip(u* − K e − K_z z, −u_max, u_max),
    z ← z + dt e_q after each period, z = 0 at reset.

    A constant force the model lacks (a joint's Coulomb friction, a torque offset, a load) stalls the plain LQR
    where K e balances it, short of the goal; z grows until it is balanced at e = 0. [K K_z] is the discrete LQR
    of the model augmented with z (z⁺ = z + dt e_q), its cost the task's Q on e and `integral`·Q_qq on z. z is
    not integrated while the input is saturated (anti-windup)."""

    def __init__(self, k, k_integral, task: Task, dt: float):
        self.task, self.dt = task, float(dt)
        self.k, self.k_integral = jnp.asarray(k), jnp.asarray(k_integral)
        n = task.goal.size // 2
        lim, u_goal, error = jnp.asarray(task.u_max), jnp.asarray(task.u_goal), task.error

        @jax.jit
        def law(x, z):
            e = error(x)
            u = u_goal - self.k @ e - self.k_integral @ z
            clipped = jnp.clip(u, -lim, lim)
            z_next = jnp.where(jnp.all(clipped == u), z + self.dt * e[:n], z)
            return clipped, z_next

        self._law = law
        self.z = jnp.zeros(n)

    @classmethod
    def design(
        cls, dyn: Dynamics, task: Task, dt: float, integral: float = 1.0
    ) -> "IntegralLQRController":
        """The gains of the discrete LQR of `dyn` stepped at dt, linearised at the task's goal and holding
        input, with its coordinates' errors integrated (their cost `integral`·Q_qq)."""
        x, u = jnp.asarray(task.goal), jnp.asarray(task.u_goal)
        a, b = (np.asarray(m, float) for m in linearise(lambda x, u: dyn.step(x, u, dt), x, u))
        n2, m = b.shape
        n = n2 // 2
        a_z = np.block([[a, np.zeros((n2, n))], [dt * np.eye(n, n2), np.eye(n)]])
        b_z = np.vstack([b, np.zeros((n, m))])
        q = np.asarray(task.q, float)
        q_z = np.block([[q, np.zeros((n2, n))], [np.zeros((n, n2)), integral * q[:n, :n]]])
        k, _ = dlqr(a_z, b_z, q_z, task.r)
        return cls(k[:, :n2], k[:, n2:], task, dt)

    def reset(self, x0) -> None:
        self.z = jnp.zeros_like(self.z)
        self._law(jnp.asarray(x0), self.z)  # compiled before the timed calls

    def __call__(self, x, t: float):
        u, self.z = self._law(jnp.asarray(x), self.z)
        return u


def as_controller(controller) -> AbstractController:
    """An `AbstractController` as it is; a plain callable `(x, t) -> u` wrapped."""
    if isinstance(controller, AbstractController):
        return controller
    if callable(controller):
        return FunctionController(controller)
    raise TypeError(
        f"a controller is an AbstractController or a callable (x, t) -> u, got {type(controller).__name__}"
    )

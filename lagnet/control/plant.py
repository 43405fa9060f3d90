"""Plants a controller runs on: something that is `reset` to a state and `step`ped one control period at a time.

`AbstractPlant` is the interface; the final plants adapt what lagnet can drive:

- `RigPlant`: a simulated rig (`PendulumRig`, `CartPoleRig`, `ArmRig`, ...): its true plant, actuator and sub-steps,
  read by its sensors (or, with `sensors=False`, the true state);
- `SystemPlant`: any dynamics integrated in sub-steps (a known system with friction, a loaded model), for a system
  without a rig;
- `GymPlant`: a Gymnasium environment with Box spaces, through maps observation → (q, q̇) and u → action;
- `FunctionPlant`: a plain `step(x, u) -> x_next`.

A plant is a stateful object, not a pure function: real hardware (or `PacedPlant`, which holds every step to the
wall clock) cannot be rewound, so nothing here assumes a step is instant or repeatable.
"""

import abc
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..integrators import RK4
from ..rollout import rollout
from ..simulate.host_controller_loop import rig_sampler
from ..simulate.rigs.base import AbstractRig
from ..simulate.sensors import StateSensors
from ..systems.base import AbstractDynamics, AbstractSystem


def _limits(owner: str, u_max, m: int) -> np.ndarray:
    """u_max as one positive bound per input (m,) (inf: unbounded)."""
    u_max = np.broadcast_to(np.asarray(u_max, dtype=float), (m,)).copy()
    if np.any(np.isnan(u_max)) or np.any(u_max <= 0):
        raise ValueError(f"{owner}: u_max must be > 0 per input (inf for none), got {u_max}")
    return u_max


def _state(owner: str, x, n_dof: int, what: str = "the state") -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.shape != (2 * n_dof,):
        raise ValueError(
            f"{owner}: {what} must be (q, q̇) of shape ({2 * n_dof},) for {n_dof} coordinates, got "
            f"shape {x.shape}"
        )
    return x


class AbstractPlant(abc.ABC):
    """A plant under control: `reset(x0)` puts it at the state x0 = (q0, q̇0) and `step(u)` holds the input u
    over one control period `dt`; both return the state as the controller measures it (q, q̇), shape (2n,).

    `u_max` (m,) bounds the inputs (|u| ≤ u_max; inf where unbounded); `perturb(dx)` kicks the state by dx (a
    knock) before the next step; `sensing` says what the controller sees ("true" state or "sensors");
    `true_state` is the state itself where the plant knows it (a simulation), else the last measurement.
    """

    n_dof: int
    n_inputs: int
    dt: float
    u_max: np.ndarray
    sensing: str
    # The known system the plant realises, where it has one (a task checks it is the task's kind).
    system: AbstractSystem | None = None
    # Whether the plant stopped by itself (a Gymnasium episode's end); a run stops there.
    ended: bool = False

    @abc.abstractmethod
    def reset(self, x0) -> np.ndarray:
        """Put the plant at x0 (2n,) (at rest inside: actuator, filters); returns the measured state."""

    @abc.abstractmethod
    def step(self, u) -> np.ndarray:
        """Hold u (m,) over one period; returns the measured state after it."""

    @abc.abstractmethod
    def perturb(self, dx) -> None:
        """Add dx (2n,) to the plant's state now (a knock on the pole, a kick to a joint)."""

    @property
    @abc.abstractmethod
    def true_state(self) -> np.ndarray:
        """The plant's state (2n,): exact in a simulation, the last measurement otherwise."""


class _Sensing:
    """Reads a true state through `StateSensors` (or exactly, without), keeping the previous reading."""

    def __init__(self, sensors: StateSensors | None, dt: float, seed: int):
        self.sensors, self.dt = sensors, dt
        self.rng = np.random.default_rng(seed)
        self.previous = None

    def start(self, x: np.ndarray) -> np.ndarray:
        if self.sensors is None:
            return x.copy()
        n = x.shape[0] // 2
        self.previous = self.sensors.read_positions(x[:n], self.rng)
        # The velocity estimate starts at rest: one reading has nothing to be differenced with.
        return np.concatenate([self.previous, np.zeros(n)])

    def read(self, x: np.ndarray) -> np.ndarray:
        if self.sensors is None:
            return x.copy()
        n = x.shape[0] // 2
        q = self.sensors.read_positions(x[:n], self.rng)
        qd = self.sensors.velocities(q, self.previous, self.dt)
        self.previous = q
        return np.concatenate([q, qd])


class RigPlant(AbstractPlant):
    """A simulated rig: its true plant (the known system and the forces it leaves out) and actuator, integrated
    with RK4 in the rig's sub-steps over each period `rig.dt`, commands limited to `rig.input_limit()`.

    With `sensors=True` (the default) the controller reads the rig's sensors (`rig.sensors()`: encoder
    quantisation, noise, velocities by backward differences, seeded by `seed`); with False, the true state.
    """

    def __init__(self, rig: AbstractRig, *, sensors: bool = True, seed: int = 0):
        if not isinstance(rig, AbstractRig):
            raise TypeError(f"RigPlant: rig must be a lagnet AbstractRig, got {type(rig).__name__}")
        self.rig, self.system = rig, rig.known_system()
        self.sampler = rig_sampler(rig)
        self.n_dof, self.n_inputs = self.sampler.plant.n_dof, self.sampler.n_inputs
        self.dt = float(rig.dt)
        self.u_max = _limits(type(rig).__name__, rig.input_limit(), self.n_inputs)
        self.sensing = "sensors" if sensors else "true"
        self._sensing = _Sensing(rig.sensors() if sensors else None, self.dt, seed)
        self._x, self._act = None, None

    def reset(self, x0) -> np.ndarray:
        self._x = _state("RigPlant.reset", x0, self.n_dof)
        self._act = self.sampler.init()
        return self._sensing.start(self._x)

    def step(self, u) -> np.ndarray:
        if self._x is None:
            raise RuntimeError("RigPlant: call reset(x0) before step(u)")
        u = np.clip(np.asarray(u, float).reshape(self.n_inputs), -self.u_max, self.u_max)
        x, self._act = self.sampler.sample(jnp.asarray(self._x), self._act, jnp.asarray(u))
        self._x = np.asarray(x, dtype=float)
        return self._sensing.read(self._x)

    def perturb(self, dx) -> None:
        self._x = self._x + _state("RigPlant.perturb", dx, self.n_dof, "the kick dx")

    @property
    def true_state(self) -> np.ndarray:
        return self._x.copy()


def _sub_steps(dynamics: AbstractDynamics, substeps: int):
    """x⁺ = x after `substeps` RK4 steps of h = dt / substeps with u held, compiled once."""
    n = dynamics.n_dof

    @jax.jit
    def advance(x, u, dt):
        h = jnp.full((substeps,), dt / substeps)
        us = jnp.broadcast_to(u, (substeps, u.shape[0]))
        qs, qds = rollout(dynamics, RK4(), x[:n], x[n:], us, h, throw=False)
        return jnp.concatenate([qs[-1], qds[-1]])

    return advance


class _StatePlant(AbstractPlant):
    """A plant that keeps its state x itself (a simulation here, not a rig's driver): knocks add to it, the true
    state is it, and each step holds u clipped to ±u_max."""

    _x: np.ndarray | None = None

    def _held(self, u) -> np.ndarray:
        """u (m,) clipped to the plant's limits; a `RuntimeError` before the first `reset`."""
        if self._x is None:
            raise RuntimeError(f"{type(self).__name__}: call reset(x0) before step(u)")
        return np.clip(np.asarray(u, float).reshape(self.n_inputs), -self.u_max, self.u_max)

    def perturb(self, dx) -> None:
        self._x = self._x + _state(f"{type(self).__name__}.perturb", dx, self.n_dof, "the kick dx")

    @property
    def true_state(self) -> np.ndarray:
        return self._x.copy()


class SystemPlant(_StatePlant):
    """Dynamics integrated as the plant: `dynamics` (a known system, a `lagnet.simulate.Plant` with friction
    forces, a trained model) stepped with RK4 in `substeps` sub-steps per period `dt`, the input held and
    clipped to ±`u_max`. For a system without a simulated rig (the DFKI double pendulum); the controller reads
    the state through `sensors` (a `StateSensors`, seeded by `seed`), or exactly when None."""

    def __init__(
        self,
        dynamics: AbstractDynamics,
        dt: float,
        u_max,
        *,
        substeps: int = 10,
        sensors: StateSensors | None = None,
        seed: int = 0,
    ):
        if not isinstance(dynamics, AbstractDynamics):
            raise TypeError(
                f"SystemPlant: dynamics must be a lagnet AbstractDynamics (a system, a Plant, a model), "
                f"got {type(dynamics).__name__}"
            )
        if not dt > 0 or substeps < 1:
            raise ValueError(
                f"SystemPlant: dt > 0 and substeps ≥ 1, got dt={dt}, substeps={substeps}"
            )
        self.dynamics = dynamics
        self.system = (
            dynamics if isinstance(dynamics, AbstractSystem) else getattr(dynamics, "system", None)
        )
        self.n_dof, self.n_inputs = dynamics.n_dof, dynamics.n_inputs
        self.dt = float(dt)
        self.u_max = _limits("SystemPlant", u_max, self.n_inputs)
        self.sensing = "true" if sensors is None else "sensors"
        self._sensing = _Sensing(sensors, self.dt, seed)
        self._advance = _sub_steps(dynamics, substeps)

    def reset(self, x0) -> np.ndarray:
        self._x = _state("SystemPlant.reset", x0, self.n_dof)
        return self._sensing.start(self._x)

    def step(self, u) -> np.ndarray:
        u = self._held(u)
        self._x = np.asarray(self._advance(jnp.asarray(self._x), jnp.asarray(u), self.dt), float)
        return self._sensing.read(self._x)


class FunctionPlant(_StatePlant):
    """A plain function as the plant: x_{k+1} = step(x_k, u_k) over each period `dt`, u clipped to ±`u_max`;
    the controller sees x itself."""

    def __init__(self, step: Callable, *, n_dof: int, n_inputs: int, dt: float, u_max=np.inf):
        if not callable(step):
            raise TypeError(f"FunctionPlant: step must be callable, got {type(step).__name__}")
        self.fn, self.n_dof, self.n_inputs, self.dt = step, int(n_dof), int(n_inputs), float(dt)
        self.u_max = _limits("FunctionPlant", u_max, self.n_inputs)
        self.sensing = "true"

    def reset(self, x0) -> np.ndarray:
        self._x = _state("FunctionPlant.reset", x0, self.n_dof)
        return self._x.copy()

    def step(self, u) -> np.ndarray:
        x = self.fn(self._x, self._held(u))
        self._x = _state("FunctionPlant: step(x, u)", x, self.n_dof, "what it returned")
        return self._x.copy()


class GymPlant(AbstractPlant):
    """A Gymnasium environment with Box spaces as the plant: each `step(u)` is one `env.step(action(u))`, and
    the controller sees x = state(observation).

    Arguments:
        env: a `gymnasium.Env` whose action space is a `Box` (its bounds become `u_max`).
        state: observation → x = (q, q̇) (2n,), e.g. Pendulum-v1's (cos θ, sin θ, θ̇) → (atan2(sin, cos), θ̇).
        action: u (m,) → the env's action (default: u itself, as float32).
        n_dof, dt: the coordinates and the env's step (s).
        set_state: (env, x) → None, placing the env at x (Gymnasium has no standard way); without it
            `reset` takes only None (the env's own start) and `perturb` is refused.
        seed: passed to the env's first reset.

    A terminated or truncated episode sets `ended` (a task's run stops there, unsuccessful).
    """

    def __init__(
        self,
        env,
        state: Callable,
        *,
        n_dof: int,
        dt: float,
        action: Callable | None = None,
        set_state: Callable | None = None,
        seed: int | None = 0,
    ):
        space = getattr(env, "action_space", None)
        if type(space).__name__ != "Box":
            raise TypeError(
                f"GymPlant: the env's action space must be a gymnasium Box, got {type(space).__name__}"
            )
        self.env, self.map_state, self.set_state = env, state, set_state
        self.map_action = action or (lambda u: np.asarray(u, np.float32).reshape(space.shape))
        self.n_dof, self.n_inputs, self.dt = int(n_dof), int(np.prod(space.shape)), float(dt)
        self.u_max = np.minimum(np.abs(space.low), np.abs(space.high)).reshape(-1).astype(float)
        self.sensing = "true"
        self.ended = False
        self._seed, self._x = seed, None

    def _observe(self, obs) -> np.ndarray:
        return _state(
            "GymPlant: state(observation)", self.map_state(obs), self.n_dof, "what it returned"
        )

    def reset(self, x0=None) -> np.ndarray:
        if x0 is not None and self.set_state is None:
            raise ValueError(
                "GymPlant.reset: this env cannot be placed at a given state; pass set_state=(env, x) → None "
                "to GymPlant, or reset(None) for the env's own start"
            )
        obs, _ = self.env.reset(seed=self._seed)
        self._seed, self.ended = None, False  # seeded once: later episodes continue its stream
        if x0 is not None:
            self.set_state(self.env, _state("GymPlant.reset", x0, self.n_dof))
            self._x = np.asarray(x0, float).copy()
        else:
            self._x = self._observe(obs)
        return self._x.copy()

    def step(self, u) -> np.ndarray:
        if self._x is None:
            raise RuntimeError("GymPlant: call reset() before step(u)")
        u = np.clip(np.asarray(u, float).reshape(self.n_inputs), -self.u_max, self.u_max)
        obs, _, terminated, truncated, _ = self.env.step(self.map_action(u))
        self.ended = bool(terminated or truncated)
        self._x = self._observe(obs)
        return self._x.copy()

    def perturb(self, dx) -> None:
        if self.set_state is None:
            raise ValueError(
                "GymPlant.perturb: needs set_state=(env, x) → None to move the env's state"
            )
        self._x = self._x + _state("GymPlant.perturb", dx, self.n_dof, "the kick dx")
        self.set_state(self.env, self._x)

    @property
    def true_state(self) -> np.ndarray:
        return self._x.copy()


class PacedPlant(AbstractPlant):
    """`plant` held to the wall clock: each step returns no earlier than one period after the previous one
    (as hardware does), however fast the plant computes; `late` counts periods that overran (the controller
    and the step together took longer than dt), a missed deadline on a real rig."""

    def __init__(self, plant: AbstractPlant):
        self.plant = plant
        self.n_dof, self.n_inputs, self.dt = plant.n_dof, plant.n_inputs, plant.dt
        self.u_max, self.sensing, self.system = plant.u_max, plant.sensing, plant.system
        self.late, self._deadline = 0, None

    def reset(self, x0) -> np.ndarray:
        x = self.plant.reset(x0)
        self._deadline = time.perf_counter() + self.dt
        return x

    def step(self, u) -> np.ndarray:
        x = self.plant.step(u)
        wait = self._deadline - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        else:
            self.late += 1
        # The next period starts when this one ends (not when it was due: no catching up in bursts).
        self._deadline = max(self._deadline, time.perf_counter()) + self.dt
        return x

    def perturb(self, dx) -> None:
        self.plant.perturb(dx)

    @property
    def true_state(self) -> np.ndarray:
        return self.plant.true_state

"""Control tasks: a goal state, a quadratic cost, limits, where runs start, and what counts as success.

A `Task` is independent of the controller and of the plant it runs on; `run_task` (lagnet.control.run) runs a
controller on a plant for a task. The named tasks (`task(name)`, `TASKS`) are one per shipped system, each with the
nominal system it is posed on.
"""

import dataclasses
from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np

from .._errors import LagnetError
from ..data.catalog import DFKI_DOUBLE_PENDULUM_LINKS
from ..systems import CartPole, DoublePendulum, Pendulum
from ..systems.base import AbstractSystem

# Numbers, nested lists or arrays (numbers broadcast): a task's vectors and matrices as given.
Values = Any


class TaskMismatch(LagnetError, ValueError):
    """A task asked of a system, plant or state it does not fit (the wrong system, a state of the wrong shape)."""


def _vector(owner: str, name: str, value, size: int) -> np.ndarray:
    v = np.asarray(value, dtype=float)
    if v.size not in (1, size) or v.ndim > 1:
        raise ValueError(
            f"{owner}: {name} must have {size} entries (or one for all), got {v.tolist()}"
        )
    v = np.broadcast_to(v.reshape(-1), (size,)).copy()
    if np.any(np.isnan(v)):
        raise ValueError(f"{owner}: {name} must be numbers (inf for none), got {v}")
    return v


@dataclasses.dataclass(frozen=True, eq=False)
class Task:
    """Bring `system` to `goal` and hold it there.

        error e(x) = x − x* (angle coordinates wrapped to [−π, π)),
        cost l(x, u) = eᵀ Q e + (u − u*)ᵀ R (u − u*),   |u| ≤ u_max,   state_low ≤ x ≤ state_high throughout,

    success: every |e_i| ≤ tolerance_i over the last `hold` seconds of a `seconds`-long run, the state finite and
    inside its bounds throughout. Starts are drawn uniformly in `start` ± `start_spread`; `knocks` are (time s,
    dx (2n,)) kicks to the plant's state during the run.

    Attributes:
        name: the task's name.
        system: the nominal system the task is posed for (a plant must match its coordinates and inputs).
        goal: x* (2n,).
        u_goal: u* (m,), the input that holds x* (gravity compensation); default: the least-squares input with
            q̈(x*, u*) = 0 at rest.
    """

    name: str
    system: AbstractSystem
    # Stored as float arrays: goal, tolerance, start, bounds (2n,); u_max, u_goal (m,); q (2n, 2n), r (m, m).
    goal: Values
    q: Values
    r: Values
    u_max: Values
    tolerance: Values
    hold: float
    seconds: float
    start: Values
    start_spread: Values | None = None
    state_low: Values | None = None
    state_high: Values | None = None
    knocks: tuple = ()
    u_goal: Values | None = None

    def __post_init__(self):
        n2, m = 2 * self.system.n_dof, self.system.n_inputs
        owner = f"Task {self.name!r}"
        fields = {
            "goal": (self.goal, n2),
            "u_max": (self.u_max, m),
            "tolerance": (self.tolerance, n2),
            "start": (self.start, n2),
            "start_spread": (0.0 if self.start_spread is None else self.start_spread, n2),
            "state_low": (-np.inf if self.state_low is None else self.state_low, n2),
            "state_high": (np.inf if self.state_high is None else self.state_high, n2),
        }
        for name, (value, size) in fields.items():
            object.__setattr__(self, name, _vector(owner, name, value, size))
        for name, size in (("q", n2), ("r", m)):
            mat = np.asarray(getattr(self, name), dtype=float)
            if mat.shape != (size, size):
                raise ValueError(f"{owner}: {name} must be ({size}, {size}), got {mat.shape}")
            object.__setattr__(self, name, mat)
        if not (self.seconds > 0 and 0 < self.hold <= self.seconds):
            raise ValueError(
                f"{owner}: need 0 < hold ≤ seconds, got hold={self.hold}, seconds={self.seconds}"
            )
        if np.any(self.u_max <= 0):
            raise ValueError(f"{owner}: u_max must be > 0 per input, got {self.u_max}")
        knocks = tuple((float(t), _vector(owner, "a knock's dx", dx, n2)) for t, dx in self.knocks)
        object.__setattr__(self, "knocks", knocks)
        u_goal = holding_input(self.system, self.goal) if self.u_goal is None else self.u_goal
        object.__setattr__(self, "u_goal", _vector(owner, "u_goal", u_goal, m))

    @property
    def angles(self) -> np.ndarray:
        """(2n,) which state entries are angles (the coordinates the system says; their velocities are not)."""
        a = np.asarray(self.system.angles, dtype=bool)
        return np.concatenate([a, np.zeros_like(a)])

    def error(self, x):
        """e = x − x*, angles wrapped to [−π, π); works on (..., 2n) numpy or JAX arrays."""
        d = x - self.goal
        wrapped = jnp.mod(d + jnp.pi, 2 * jnp.pi) - jnp.pi
        return jnp.where(self.angles, wrapped, d)

    def cost(self, x, u):
        """l(x, u) = eᵀ Q e + (u − u*)ᵀ R (u − u*)."""
        e, du = self.error(x), u - self.u_goal
        return e @ self.q @ e + du @ self.r @ du

    def starts(self, count: int, seed: int = 0) -> np.ndarray:
        """(count, 2n) starts drawn uniformly in start ± start_spread."""
        rng = np.random.default_rng(seed)
        return self.start + self.start_spread * rng.uniform(-1, 1, (count, self.start.size))

    def success(self, xs: np.ndarray, dt: float) -> np.ndarray | np.bool_:
        """Per run (xs (..., N + 1, 2n) at steps of dt): finite and inside the bounds throughout, and within the
        tolerance of the goal over the last `hold` s."""
        xs = np.asarray(xs, dtype=float)
        last = max(int(round(self.hold / dt)), 1)
        with np.errstate(invalid="ignore"):
            err = np.abs(np.asarray(self.error(xs)))
            inside = np.all((xs >= self.state_low) & (xs <= self.state_high), axis=(-2, -1))
            held = np.all(err[..., -last:, :] <= self.tolerance, axis=(-2, -1))
        return np.all(np.isfinite(xs), axis=(-2, -1)) & inside & held

    def check(self, system: AbstractSystem, what: str = "the system") -> None:
        """A `TaskMismatch` naming the difference unless `system` is of the task's kind: the same class,
        coordinates and inputs, and the same input matrix B at q = 0 (a pendubot is not an acrobot)."""
        mine = self.system
        problems = []
        if type(system) is not type(mine):
            problems.append(f"a {type(system).__name__}, not a {type(mine).__name__}")
        elif (system.n_dof, system.n_inputs) != (mine.n_dof, mine.n_inputs):
            problems.append(
                f"{system.n_dof} coordinates and {system.n_inputs} inputs, not {mine.n_dof} and {mine.n_inputs}"
            )
        else:
            q0 = jnp.zeros(mine.n_dof)
            if not np.allclose(system.input_matrix(q0), mine.input_matrix(q0)):
                problems.append(
                    f"inputs on other coordinates (B = {np.asarray(system.input_matrix(q0)).tolist()})"
                )
        if problems:
            raise TaskMismatch(
                f"task {self.name!r} is for a {_describe(mine)}; {what} is {problems[0]}"
            )


def _describe(system: AbstractSystem) -> str:
    inputs = ", ".join(system.input_names) if system.n_inputs else "none"
    return f"{type(system).__name__} (inputs: {inputs})"


def holding_input(system: AbstractSystem, x) -> np.ndarray:
    """u* with B u* = G(q*) in the least-squares sense: what holds the system still at q* (zero at an
    unforced equilibrium)."""
    q = jnp.asarray(np.asarray(x, float)[: system.n_dof])
    b = np.asarray(system.input_matrix(q), float).reshape(system.n_dof, system.n_inputs)
    return np.linalg.lstsq(b, np.asarray(system.gravity(q), float), rcond=None)[0]


# --- The named tasks, one per shipped system. ---


def pendulum_swingup() -> Task:
    """The simulated pendulum rig's pendulum (`PendulumRig`'s known system) from hanging to upright, with a
    torque limit of 0.6 m g l: below what holds it horizontal, so it must be swung up."""
    system = Pendulum(0.25, 0.5, 9.81)
    mgl = 0.25 * 9.81 * 0.5
    return Task(
        "pendulum-swingup",
        system,
        goal=[np.pi, 0.0],
        q=np.diag([10.0, 1.0]),
        r=np.eye(1),
        u_max=0.6 * mgl,
        tolerance=[0.1, np.inf],
        hold=2.0,
        seconds=8.0,
        start=[0.0, 0.0],
        start_spread=[0.1, 0.0],
    )


def cartpole_swingup() -> Task:
    """The cart-pole rig's (`CartPoleRig`): the pole from hanging to upright and held within 0.1 rad for the last
    2 s of 5, the cart inside ±0.3 m throughout (the rig's end stops are at ±0.36 m), |F| ≤ 10 N."""
    return Task(
        "cartpole-swingup",
        CartPole(),
        goal=[0.0, np.pi, 0.0, 0.0],
        q=np.diag([300.0, 1000.0, 30.0, 10.0]),
        r=np.eye(1),
        u_max=10.0,
        tolerance=[np.inf, 0.1, np.inf, np.inf],
        hold=2.0,
        seconds=5.0,
        start=[0.0, 0.0, 0.0, 0.0],
        start_spread=[0.1, 0.1, 0.0, 0.0],
        state_low=[-0.3, -np.inf, -np.inf, -np.inf],
        state_high=[0.3, np.inf, np.inf, np.inf],
    )


# The DFKI double pendulum's identified model (data/real/dfki_double_pendulum_A0/model_2.0_parameters.yml): its
# links as the catalog has them, inertias about the joint axes, and the motor's rotor inertia and gear ratio.
DFKI = dict(DFKI_DOUBLE_PENDULUM_LINKS, inertia_about="joint", Ir=7.659297952841183e-05, gr=6.0)
DFKI_TORQUE_LIMIT = 10.0  # N m, tl1 = tl2 of the lab's model
DFKI_VISCOUS, DFKI_COULOMB = (0.001, 0.001), (0.093, 0.078)


def _double_pendulum_swingup(name: str, actuated: str) -> Task:
    return Task(
        name,
        DoublePendulum(**DFKI, actuated=actuated),
        goal=[np.pi, 0.0, 0.0, 0.0],
        q=np.diag([10.0, 10.0, 1.0, 1.0]),
        # Torque is cheap beside the angles: a swing-up uses the whole limit.
        r=0.1 * np.eye(1),
        u_max=DFKI_TORQUE_LIMIT,
        tolerance=[0.1, 0.1, np.inf, np.inf],
        hold=2.0,
        seconds=10.0,
        start=[0.0, 0.0, 0.0, 0.0],
        start_spread=[0.05, 0.05, 0.0, 0.0],
    )


def pendubot_swingup() -> Task:
    """The DFKI double pendulum driven at the shoulder only: from hanging to both links upright (q = (π, 0)),
    held within 0.1 rad for 2 s, |τ1| ≤ 10 N m (the rig's limit)."""
    return _double_pendulum_swingup("pendubot-swingup", "shoulder")


def acrobot_swingup() -> Task:
    """The DFKI double pendulum driven at the elbow only: from hanging to upright, |τ2| ≤ 10 N m."""
    return _double_pendulum_swingup("acrobot-swingup", "elbow")


def arm_reach() -> Task:
    """The 7-joint arm (`ArmRig`'s description): from near its home pose to a joint-space goal 0.3 rad away
    on each joint, held within 0.02 rad for 1 s of 3, within the iiwa's rated torques."""
    from ..simulate import ArmRig

    rig = ArmRig()
    home = np.asarray(rig.home)
    goal = home + np.array([0.3, -0.3, 0.3, 0.3, -0.3, 0.3, 0.3])
    return Task(
        "arm-reach",
        rig.known_system(),
        goal=np.concatenate([goal, np.zeros(7)]),
        q=np.diag(np.concatenate([np.full(7, 100.0), np.full(7, 1.0)])),
        r=np.eye(7) * 1e-3,
        u_max=rig.input_limit(),
        tolerance=np.concatenate([np.full(7, 0.02), np.full(7, np.inf)]),
        hold=1.0,
        seconds=3.0,
        start=np.concatenate([home, np.zeros(7)]),
        start_spread=np.concatenate([np.full(7, 0.02), np.zeros(7)]),
    )


TASKS: dict[str, Callable[[], Task]] = {
    "pendulum-swingup": pendulum_swingup,
    "cartpole-swingup": cartpole_swingup,
    "pendubot-swingup": pendubot_swingup,
    "acrobot-swingup": acrobot_swingup,
    "arm-reach": arm_reach,
}


def task(name: str) -> Task:
    """The named task (`TASKS`)."""
    if name not in TASKS:
        raise TaskMismatch(f"unknown task {name!r}; the tasks are {', '.join(sorted(TASKS))}")
    return TASKS[name]()


def dfki_plant(actuated: str, *, friction: bool = True, smoothing: float = 0.01):
    """The DFKI double pendulum as a plant to integrate (it has no simulated rig): the lab's identified model,
    with its viscous and Coulomb joint friction b q̇ + c σ(q̇) (σ a tanh over `smoothing` rad/s) unless
    `friction` is False. Run it with `SystemPlant(dfki_plant("shoulder"), dt, DFKI_TORQUE_LIMIT)`."""
    from ..simulate import Plant, StribeckFriction

    forces = ()
    if friction:
        forces = tuple(
            StribeckFriction(i, c, c, c, viscous=b, smoothing=smoothing)
            for i, (b, c) in enumerate(zip(DFKI_VISCOUS, DFKI_COULOMB, strict=True))
        )
    return Plant(DoublePendulum(**DFKI, actuated=actuated), forces)


# The rig's motors (CubeMars AK80-6) read a 14-bit encoder on the rotor, behind the 6:1 gear.
DFKI_ENCODER_COUNTS = 2**14 * 6


def dfki_rig(
    actuated: str, dt: float = 0.01, *, friction: bool = True, sensors: bool = True, seed: int = 0
):
    """The DFKI double pendulum as a simulated rig: `dfki_plant` integrated in periods of dt (RK4, 8 sub-steps
    for the friction's steep σ), the torque limited to the lab's, and read as the rig reads itself: each joint
    through its motor's encoder, velocities by differences (`sensors=False`: the true state)."""
    from ..simulate.sensors import OpticalEncoder, StateSensors
    from .plant import SystemPlant

    encoder = OpticalEncoder(DFKI_ENCODER_COUNTS, wrap_low=None)
    read = StateSensors((encoder, encoder), (True, True)) if sensors else None
    plant = dfki_plant(actuated, friction=friction)
    return SystemPlant(plant, dt, DFKI_TORQUE_LIMIT, substeps=8, sensors=read, seed=seed)

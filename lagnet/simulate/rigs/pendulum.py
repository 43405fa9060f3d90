"""A simulated torque-driven pendulum rig, loosely after the DFKI torque-limited pendulum test bed.

The known model is `Pendulum(mass, length, g)`; the rig adds viscous + direction-symmetric Coulomb friction with a
Stribeck peak (the test bed's identified Fv ≈ 0.047 N m s, Fc ≈ 0.18 N m), a constant torque offset of the motor's
current sensing (identified ≈ 0.076 N m), cogging of the motor, an actuator dead time, lag and torque limit, and an
encoder read out wrapped to [−π, π). The excitation alternates random target angles held by a PD "hand",
energy pumping (and braking) bursts and a random tremor torque, so the pendulum swings and sometimes turns over.
"""

from typing import ClassVar

import jax.numpy as jnp
import numpy as np

from ...data.angles import wrap
from ...systems import Pendulum
from ..actuator import Actuator
from ..plant import Plant
from ..sensors import OpticalEncoder, StateSensors, backward_velocity
from .base import AbstractRig
from .common import metadata, ou_noise, recording_rng, true_columns
from .forces import Cogging, ConstantForce, StribeckFriction

COLUMNS = {
    "t": "time of the sample",
    "theta": "pendulum angle, encoder, 0 hanging down, wrapped to [-pi, pi)",
    "theta_dot": "backward difference of measured (unwrapped) theta",
    "torque": "commanded torque, within the limit (before the actuator's delay and lag)",
}
UNITS = {"t": "s", "theta": "rad", "theta_dot": "rad/s", "torque": "N*m"}
MAPPING = {"time": "t", "positions": ["theta"], "velocities": ["theta_dot"], "inputs": ["torque"]}


class PendulumRig(AbstractRig):
    """Every parameter of the simulated pendulum rig (SI units)."""

    # Its recordings' `meta["generator"]`, the class path when data/sim was written (see `CartPoleRig`).
    GENERATOR: ClassVar[str] = "lagnet.data.rigs.pendulum.PendulumRig"

    mass: float = 0.25
    length: float = 0.5
    g: float = 9.81
    viscous: float = 0.047
    coulomb: float = 0.18
    static: float = 0.24
    stribeck_velocity: float = 0.1
    smoothing: float = 0.01
    torque_offset: float = 0.076
    cogging: float = 0.008
    cogging_periods: int = 42
    delay: float = 0.005
    time_constant: float = 0.003
    torque_limit: float = 1.5
    kp: float = 2.0
    kd: float = 0.15
    segment_time: tuple[float, float] = (1.0, 4.0)
    pump_prob: float = 0.45
    pump_gain: tuple[float, float] = (0.2, 1.0)
    tremor: float = 0.15
    tremor_time: float = 0.05
    encoder_counts: int = 4096
    dt: float = 0.01
    substeps: int = 20

    def known_system(self) -> Pendulum:
        return Pendulum(self.mass, self.length, self.g)

    def plant(self) -> Plant:
        forces = (
            StribeckFriction(
                0,
                self.coulomb,
                self.coulomb,
                self.static,
                self.stribeck_velocity,
                self.viscous,
                self.smoothing,
            ),
            ConstantForce(0, self.torque_offset),
            Cogging(0, self.cogging, self.cogging_periods),
        )
        return Plant(self.known_system(), forces)

    def actuator(self) -> Actuator:
        return Actuator(self.delay, self.time_constant, self.torque_limit)

    def input_limit(self) -> np.ndarray:
        return np.array([self.torque_limit])

    def sensors(self) -> StateSensors:
        return StateSensors((OpticalEncoder(self.encoder_counts, wrap_low=-np.pi),), (True,))

    def schedule(self, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        target, pump, hold = np.zeros(n), np.zeros(n), np.zeros(n)
        i = 0
        while i < n:
            length = int(rng.uniform(*self.segment_time) / self.dt)
            if rng.random() < self.pump_prob:
                pump[i : i + length] = rng.uniform(*self.pump_gain) * rng.choice([1.0, 1.0, -1.0])
            else:
                target[i : i + length] = rng.uniform(-np.pi, np.pi)
                hold[i : i + length] = rng.uniform(0.2, 1.0)
            i += length
        tremor = ou_noise(rng, n, self.dt, self.tremor, self.tremor_time)
        return {"target": target, "pump": pump, "hold": hold, "tremor": tremor}

    def policy(self, q, qd, s):
        err = wrap(s["target"] - q[0])
        pd = s["hold"] * (self.kp * err - self.kd * qd[0])
        pump = s["pump"] * jnp.tanh(qd[0] / 0.3)
        # The controller knows the motor's limit: the logged command stays within it.
        u = jnp.clip(pd + pump + s["tremor"], -self.torque_limit, self.torque_limit)
        return jnp.reshape(u, (1,))

    def initial_position(self, rng: np.random.Generator) -> np.ndarray:
        return np.array([rng.uniform(-0.2, 0.2)])

    def record(
        self, duration: float, *, seed: int, recording: str = "train", truth: bool = False
    ) -> tuple[dict[str, np.ndarray], dict]:
        """A measured recording of `duration` s and its metadata (see `CartPoleRig.record`)."""
        rng = recording_rng(seed, recording)
        run = self.simulate(duration, rng)
        theta = OpticalEncoder(self.encoder_counts, wrap_low=-np.pi).measure(run["q"][:, 0])
        cols = {
            "t": run["t"][1:] - run["t"][1],
            "theta": theta[1:],
            "theta_dot": backward_velocity(theta, self.dt, angle=True),
            "torque": run["u_cmd"][1:, 0],
        }
        if truth:
            cols.update(true_columns(run, MAPPING))
        meta = metadata(
            self.GENERATOR,
            self,
            seed=seed,
            recording=recording,
            duration=duration,
            columns=COLUMNS,
            units=UNITS,
            mapping=MAPPING,
            system="Pendulum",
            system_params={"mass": self.mass, "length": self.length, "g": self.g},
        )
        return cols, meta

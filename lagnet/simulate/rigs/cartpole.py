"""A simulated cart-pole test rig like the PINODE paper's (Roehrl et al. 2020, section 3.1, Tables 1-2).

The known model is `CartPole` with the Table 2 masses and length. The rig adds what a Lagrangian model with
Coulomb cart friction and viscous pole friction does not capture:

- cart: direction-dependent Coulomb friction with a Stribeck peak, viscous drag of the string drive, and the
  motor's rotor and pulley inertia reflected to the cart (`reflected_mass`: the cart is heavier than weighed);
- pole bearing: viscous + Coulomb friction with a small Stribeck peak;
- rail: rubber end stops at ±`stop_limit` (the guidance is about 0.8 m; the paper's x spans −0.33..0.28 m);
- actuator: dead time, first-order lag (motor current loop and the string's compliance) and a force limit;
- operator: a "hand" that moves the cart between random targets across the rail and now and then shakes it at
  the pole's swing to pump energy, so the pole swings hard and over the top (the paper: φ̇ from −23 to 18 rad/s);
- sensors: an ultrasonic distance sensor for x (noise, 1 mm steps, rare echo spikes) and an optical encoder for
  φ (2000 counts/rev, wrapped to [0, 2π) as in the paper's Table 1); velocities from backward differences of the
  measured positions, as the paper did. The logged input is the commanded force, not the applied one.

Integrated with RK4 at 1 ms (20 sub-steps per 50 Hz sample), in float64.
"""

from typing import ClassVar

import jax.numpy as jnp
import numpy as np

from ...systems import CartPole
from ..actuator import Actuator
from ..plant import Plant
from ..sensors import OpticalEncoder, StateSensors, UltrasonicSensor, backward_velocity
from .base import AbstractRig
from .common import metadata, ou_noise, recording_rng, smoothstep, true_columns
from .forces import EndStops, StribeckFriction

COLUMNS = {
    "t": "time of the sample",
    "x": "cart position, ultrasonic sensor",
    "phi": "pole angle, optical encoder, 0 hanging down, wrapped to [0, 2pi)",
    "x_dot": "backward difference of measured x",
    "phi_dot": "backward difference of measured (unwrapped) phi",
    "force": "commanded force on the cart (before the actuator's delay, lag and limit)",
}
UNITS = {"t": "s", "x": "m", "phi": "rad", "x_dot": "m/s", "phi_dot": "rad/s", "force": "N"}
MAPPING = {
    "time": "t",
    "positions": ["x", "phi"],
    "velocities": ["x_dot", "phi_dot"],
    "inputs": ["force"],
}


class AbstractCartPoleRig(AbstractRig):
    """What the simulated cart-poles share: every parameter of the rig (SI units; defaults: Table 2 plus the
    unmodelled parts), its plant, actuator and sensors. The hand (`schedule`, `policy`) is each rig's own: a
    person's (`CartPoleRig`) or feedback controllers' (`CartPoleControlRig`)."""

    # Table 2 (the known model).
    cart_mass: float = 0.466
    rod_mass: float = 0.06
    tip_mass: float = 0.012
    length: float = 0.201
    g: float = 9.81
    # Unmodelled inertia: motor rotor and pulley seen at the cart through the string.
    reflected_mass: float = 0.03
    # Cart on the rail (N, m/s, N s/m). Table 2's fit: μ_c m g = 0.0408 · 0.538 · 9.81 ≈ 0.215 N.
    cart_coulomb_pos: float = 0.18
    cart_coulomb_neg: float = 0.26
    cart_static: float = 0.42
    cart_stribeck_velocity: float = 0.04
    cart_viscous: float = 0.8
    cart_smoothing: float = 1e-3
    # Pole bearing (N m, rad/s, N m s). Table 2: μ_p = 0.002 N m s.
    pole_viscous: float = 0.0016
    pole_coulomb: float = 0.0025
    pole_static: float = 0.004
    pole_stribeck_velocity: float = 0.3
    pole_smoothing: float = 0.02
    # Rubber end stops.
    stop_limit: float = 0.36
    stop_stiffness: float = 2000.0
    stop_damping: float = 8.0
    # Actuator.
    delay: float = 0.01
    time_constant: float = 0.008
    force_limit: float = 10.0
    # The hand.
    kp: float = 14.0
    kd: float = 3.0
    target_range: float = 0.24
    move_time: tuple[float, float] = (0.35, 1.3)
    dwell_time: tuple[float, float] = (0.0, 0.5)
    swing_prob: float = 0.3
    swing_time: tuple[float, float] = (1.5, 5.0)
    swing_gain: tuple[float, float] = (1.5, 4.5)
    swing_center: float = 0.06
    hand_noise: float = 0.4
    hand_noise_time: float = 0.08
    # Sensors and sampling.
    ultrasonic_noise: float = 1.0e-3
    ultrasonic_resolution: float = 1.0e-3
    ultrasonic_outlier_prob: float = 1e-3
    ultrasonic_outlier_std: float = 0.03
    encoder_counts: int = 2000
    dt: float = 0.02
    substeps: int = 20

    def known_system(self) -> CartPole:
        """The model a PINODE starts from: Table 2, no friction."""
        return CartPole(self.cart_mass, self.rod_mass, self.tip_mass, self.length, self.g)

    def plant(self) -> Plant:
        """The true plant: the heavier cart, friction everywhere, end stops."""
        system = CartPole(
            self.cart_mass + self.reflected_mass, self.rod_mass, self.tip_mass, self.length, self.g
        )
        forces = (
            StribeckFriction(
                0,
                self.cart_coulomb_pos,
                self.cart_coulomb_neg,
                self.cart_static,
                self.cart_stribeck_velocity,
                self.cart_viscous,
                self.cart_smoothing,
            ),
            StribeckFriction(
                1,
                self.pole_coulomb,
                self.pole_coulomb,
                self.pole_static,
                self.pole_stribeck_velocity,
                self.pole_viscous,
                self.pole_smoothing,
            ),
            EndStops(0, self.stop_limit, self.stop_stiffness, self.stop_damping),
        )
        return Plant(system, forces)

    def actuator(self) -> Actuator:
        return Actuator(self.delay, self.time_constant, self.force_limit)

    def initial_position(self, rng: np.random.Generator) -> np.ndarray:
        """The cart within 5 cm of the middle, the pole hanging."""
        return np.array([rng.uniform(-0.05, 0.05), 0.0])

    def record(
        self, duration: float, *, seed: int, recording: str = "train", truth: bool = False
    ) -> tuple[dict[str, np.ndarray], dict]:
        """A measured recording of `duration` s: the columns of `COLUMNS` and the metadata to regenerate it.

        With `truth`, the columns also hold the true state and applied force (`true_x`, ..., `true_force`),
        aligned with the measured rows; the shipped files leave them out.
        """
        rng = recording_rng(seed, recording)
        run = self.simulate(duration, rng)
        cols = self.measure(run, rng)
        if truth:
            cols.update(true_columns(run, MAPPING))
        return cols, self.recording_metadata(seed=seed, recording=recording, duration=duration)

    def input_limit(self) -> np.ndarray:
        return np.array([self.force_limit])

    def sensors(self) -> StateSensors:
        """The ultrasonic cart position and the pole's encoder, wrapped to [0, 2π)."""
        ultrasonic = UltrasonicSensor(
            self.ultrasonic_noise,
            self.ultrasonic_resolution,
            self.ultrasonic_outlier_prob,
            self.ultrasonic_outlier_std,
        )
        return StateSensors(
            (ultrasonic, OpticalEncoder(self.encoder_counts, wrap_low=0.0)), (False, True)
        )

    def measure(
        self, run: dict[str, np.ndarray], rng: np.random.Generator
    ) -> dict[str, np.ndarray]:
        """The columns of `COLUMNS` as the rig's sensors read a true run (t, q, qd, u_cmd at N + 1 samples):
        ultrasonic cart position, encoder angle, backward-difference velocities (so the first sample is
        dropped), the commanded force."""
        ultrasonic, encoder = self.sensors().positions
        x = ultrasonic.measure(run["q"][:, 0], rng)
        phi = encoder.measure(run["q"][:, 1])
        # The first sample has no previous one to difference with: drop it.
        cols = {
            "t": run["t"][1:] - run["t"][1],
            "x": x[1:],
            "phi": phi[1:],
            "x_dot": backward_velocity(x, self.dt),
            "phi_dot": backward_velocity(phi, self.dt, angle=True),
            "force": run["u_cmd"][1:, 0],
        }
        return cols

    def recording_metadata(self, *, seed: int, recording: str, duration: float) -> dict:
        """A recording's metadata: what regenerates it, its columns and units, the known system."""
        names = ("cart_mass", "rod_mass", "tip_mass", "length", "g")
        return metadata(
            self.GENERATOR,
            self,
            seed=seed,
            recording=recording,
            duration=duration,
            columns=COLUMNS,
            units=UNITS,
            mapping=MAPPING,
            system="CartPole",
            system_params={k: getattr(self, k) for k in names},
        )


class CartPoleRig(AbstractCartPoleRig):
    """The simulated cart-pole rig driven by a person's hand: the paper's kind of recording."""

    # The name its recordings carry in `meta["generator"]`: the class path when the shipped files were written
    # (the rigs lived in `lagnet.data.rigs`). Kept, so that regenerating reproduces data/sim bit for bit.
    GENERATOR: ClassVar[str] = "lagnet.data.rigs.cartpole.CartPoleRig"

    def schedule(self, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """The hand's plan per sample: a target path (x_ref, v_ref), a swing gain and a tremor force."""
        dt = self.dt
        x_ref, v_ref, swing = np.zeros(n), np.zeros(n), np.zeros(n)
        i, x = 0, 0.0
        while i < n:
            if rng.random() < self.swing_prob:
                # Shake the pole: hold near the middle, pump energy for a while.
                length = int(rng.uniform(*self.swing_time) / dt)
                target = rng.uniform(-self.swing_center, self.swing_center)
                gain = rng.uniform(*self.swing_gain) * rng.choice([1.0, 1.0, 1.0, -0.5])
                s = smoothstep(np.arange(length) / max(int(0.3 / dt), 1))
                swing[i : i + length] = gain
            else:
                length = int(rng.uniform(*self.move_time) / dt)
                target = rng.uniform(-self.target_range, self.target_range)
                s = smoothstep(np.arange(length) / length)
            path = x + (target - x) * s
            stop = min(i + length, n)
            x_ref[i:stop] = path[: stop - i]
            v_ref[i:stop] = np.gradient(path, dt)[: stop - i] if length > 1 else 0.0
            i, x = stop, target
            dwell = int(rng.uniform(*self.dwell_time) / dt)
            x_ref[i : i + dwell] = x
            i += dwell
        tremor = ou_noise(rng, n, dt, self.hand_noise, self.hand_noise_time)
        return {"x_ref": x_ref, "v_ref": v_ref, "swing": swing, "tremor": tremor}

    def policy(self, q, qd, s):
        """The hand's command: track the target, pump (or damp) the pole's swing, tremble."""
        track = self.kp * (s["x_ref"] - q[0]) + self.kd * (s["v_ref"] - qd[0])
        # Cart acceleration ẍ feeds the pole −a cos φ ẍ: pushing against φ̇ cos φ adds energy.
        pump = -s["swing"] * jnp.tanh(qd[1] * jnp.cos(q[1]) / 0.5)
        return jnp.reshape(track + pump + s["tremor"], (1,))

"""A simulated 7-joint arm: the KUKA LBR iiwa 14 of data/robots/kuka_iiwa_14, run in MuJoCo with what its
description leaves out.

The known model is the description alone (`RigidBodyTree.from_mjcf`, torque inputs on all seven joints). The rig
adds per joint a reflected rotor inertia (MuJoCo's `armature`, on M's diagonal), viscous damping b q̇ and
Coulomb friction (MuJoCo's `frictionloss`, a friction constraint, not a smooth sign), and is integrated by
MuJoCo's RK4 at 1 ms with the command held over each 10 ms sample:

    (M(q) + diag(armature)) q̈ + C(q, q̇) q̇ + G(q) = τ − b q̇ − Q_loss(q̇).

The hand is a joint-space controller with gravity compensation from the description (exact: the parts it lacks
exert no force at rest) and PD tracking of minimum-jerk moves between random poses inside the joint ranges, plus a
coloured random torque, within the iiwa's torque limits. Sensors: 2²⁰-count joint encoders, velocities by the
servo's backward difference over its 1 ms step, the commanded torques as logged; 100 Hz, float32.
"""

import functools
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from ...data.catalog import IIWA_DESCRIPTION as DESCRIPTION
from ...data.catalog import IIWA_JOINTS as JOINTS
from ...data.catalog import data_root
from ...systems.robot import RigidBodyTree
from ..actuator import Actuator
from ..plant import Plant
from ..sensors import OpticalEncoder, StateSensors
from .base import AbstractRig
from .common import metadata, ou_noise, recording_rng, smoothstep, true_columns

COLUMNS = {
    "t": "time of the sample",
    **{f"q{i + 1}": f"{j} angle, 2^20-count encoder" for i, j in enumerate(JOINTS)},
    **{
        f"qd{i + 1}": f"{j} velocity, backward difference of the encoder over the 1 ms servo step"
        for i, j in enumerate(JOINTS)
    },
    **{f"tau{i + 1}": f"{j} commanded torque" for i, j in enumerate(JOINTS)},
}
UNITS = {
    "t": "s",
    **{f"q{i + 1}": "rad" for i in range(7)},
    **{f"qd{i + 1}": "rad/s" for i in range(7)},
    **{f"tau{i + 1}": "N*m" for i in range(7)},
}
MAPPING = {
    "time": "t",
    "positions": [f"q{i + 1}" for i in range(7)],
    "velocities": [f"qd{i + 1}" for i in range(7)],
    "inputs": [f"tau{i + 1}" for i in range(7)],
}


@functools.cache
def _joint_ranges(path: str) -> np.ndarray:
    """(7, 2) the description's joint ranges (rad)."""
    from ...systems.robot import mujoco_model

    return np.array(mujoco_model(path).jnt_range, dtype=float)


@functools.cache
def _description(path: str, x64: bool) -> RigidBodyTree:
    """The description's system, torque inputs on all joints; read once per file and precision (the hand's
    policy reads it under `jit`, where it must not be rebuilt from traced arrays)."""
    with jax.ensure_compile_time_eval():
        return RigidBodyTree.from_mjcf(path, actuated=JOINTS)


class ArmRig(AbstractRig):
    """Every parameter of the simulated arm (SI units, one entry per joint where a tuple).

    `record` runs MuJoCo (`simulate_mujoco`); `plant` is lagnet's smooth twin of that model (the friction loss as
    tanh(q̇/`epsilon`) Coulomb friction), which the inherited `simulate` integrates with lagnet's RK4.
    """

    GENERATOR: ClassVar[str] = "lagnet.simulate.rigs.arm.ArmRig"

    armature: tuple[float, ...] = (0.20, 0.20, 0.15, 0.15, 0.10, 0.08, 0.06)
    damping: tuple[float, ...] = (2.0, 2.0, 1.5, 1.5, 1.0, 0.5, 0.5)
    frictionloss: tuple[float, ...] = (1.0, 1.0, 0.6, 0.6, 0.4, 0.2, 0.2)
    epsilon: float = 0.05
    # The LBR iiwa 14's rated joint torques.
    torque_limit: tuple[float, ...] = (320.0, 320.0, 176.0, 176.0, 110.0, 40.0, 40.0)
    # About 8 rad/s of closed-loop bandwidth on each joint's typical inertia, damping ratio ~0.7.
    kp: tuple[float, ...] = (100.0, 150.0, 40.0, 60.0, 10.0, 10.0, 4.0)
    kd: tuple[float, ...] = (17.0, 25.0, 5.0, 8.0, 1.5, 1.5, 0.7)
    home: tuple[float, ...] = (0.0, 0.5, 0.0, -1.2, 0.0, 0.8, 0.0)
    start_spread: float = 0.05
    range_fraction: float = 0.6
    move_time: tuple[float, float] = (1.0, 2.5)
    tremor: tuple[float, ...] = (4.0, 4.0, 2.0, 2.0, 1.0, 0.4, 0.3)
    tremor_time: float = 0.05
    encoder_counts: int = 2**20
    timestep: float = 0.001
    dt: float = 0.01
    substeps: int = 10

    def __check_init__(self):
        for name in (
            "armature",
            "damping",
            "frictionloss",
            "torque_limit",
            "kp",
            "kd",
            "home",
            "tremor",
        ):
            if len(getattr(self, name)) != 7:
                raise ValueError(
                    f"ArmRig.{name} needs 7 entries (one per joint), got {getattr(self, name)}"
                )
        if abs(self.substeps * self.timestep - self.dt) > 1e-12:
            raise ValueError(
                f"ArmRig: substeps × timestep must be dt, got {self.substeps} × {self.timestep} ≠ {self.dt}"
            )

    @property
    def description(self) -> str:
        return str(data_root() / DESCRIPTION)

    def known_system(self) -> RigidBodyTree:
        return _description(self.description, bool(jax.config.jax_enable_x64))

    def mujoco_model(self, *, added: bool = True):
        """The `mujoco.MjModel` the recordings come from: the description with the rig's armature, damping and
        friction loss (`added`; without, the description alone), RK4 at `timestep`."""
        import mujoco

        model = mujoco.MjModel.from_xml_path(self.description)
        if added:
            model.dof_armature[:] = self.armature
            model.dof_damping[:] = self.damping
            model.dof_frictionloss[:] = self.frictionloss
        model.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
        model.opt.timestep = self.timestep
        return model

    def plant(self) -> Plant:
        # lagnet's reading of the rig's MuJoCo model: the friction loss as smooth Coulomb friction.
        system = RigidBodyTree.from_mujoco(
            self.mujoco_model(),
            actuated=JOINTS,
            friction_shape="tanh",
            friction_epsilon=self.epsilon,
        )
        return Plant(system, ())

    def input_limit(self) -> np.ndarray:
        return np.asarray(self.torque_limit, dtype=float)

    def sensors(self) -> StateSensors:
        """The joint encoders (unwrapped: the joints turn less than a revolution); velocities by differences
        over the controller's sample (the recordings difference over the 1 ms servo step instead)."""
        encoder = OpticalEncoder(self.encoder_counts, wrap_low=None)
        return StateSensors((encoder,) * 7, (False,) * 7)

    def actuator(self) -> Actuator:
        # The drives' torque loops are fast against 100 Hz: the command is applied as given.
        return Actuator()

    def schedule(self, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Minimum-jerk moves from `home` to random poses within `range_fraction` of each joint's range
        (reference position and velocity per sample), and the tremor torque."""
        ranges = _joint_ranges(self.description)
        centre, half = (
            ranges.mean(axis=1),
            0.5 * self.range_fraction * np.diff(ranges, axis=1)[:, 0],
        )
        ref, ref_dot = np.zeros((n, 7)), np.zeros((n, 7))
        start, i = np.asarray(self.home, float), 0
        while i < n:
            length = max(int(rng.uniform(*self.move_time) / self.dt), 2)
            goal = centre + half * rng.uniform(-1.0, 1.0, 7)
            s = np.arange(length) / length
            ds = 30 * s**2 * (1 - s) ** 2 / (length * self.dt)  # d smoothstep / dt
            ref[i : i + length] = (start + (goal - start) * smoothstep(s)[:, None])[: n - i]
            ref_dot[i : i + length] = ((goal - start) * ds[:, None])[: n - i]
            start, i = goal, i + length
        tremor = np.stack(
            [ou_noise(rng, n, self.dt, std, self.tremor_time) for std in self.tremor], axis=1
        )
        return {"ref": ref, "ref_dot": ref_dot, "tremor": tremor}

    def policy(self, q, qd, s):
        """τ = G(q) + K_p (q_ref − q) + K_d (q̇_ref − q̇) + tremor, within the torque limits."""
        g = self.known_system().gravity(q)
        kp, kd = jnp.asarray(self.kp), jnp.asarray(self.kd)
        u = g + kp * (s["ref"] - q) + kd * (s["ref_dot"] - qd) + s["tremor"]
        limit = jnp.asarray(self.torque_limit)
        return jnp.clip(u, -limit, limit)

    def initial_position(self, rng: np.random.Generator) -> np.ndarray:
        return np.asarray(self.home, float) + rng.uniform(-1.0, 1.0, 7) * self.start_spread

    def simulate_mujoco(self, duration: float, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """The true run in MuJoCo: t, q, qd, u_cmd, u_applied at the N = duration / dt + 1 samples (as
        `simulate`), and q_before (N, 7), the position one MuJoCo step before each sample (for the servo's
        velocity). The schedule is drawn before the initial position, as in `simulate`."""
        import mujoco

        n = int(round(duration / self.dt)) + 1
        schedule = self.schedule(n, rng)
        q0 = self.initial_position(rng)
        model = self.mujoco_model()
        data = mujoco.MjData(model)
        data.qpos[:] = q0
        with jax.enable_x64(True):
            policy = jax.jit(self.policy)
            q, qd, q_before = np.zeros((n, 7)), np.zeros((n, 7)), np.zeros((n, 7))
            u = np.zeros((n, 7))
            previous = q0.copy()
            for k in range(n):
                q[k], qd[k], q_before[k] = data.qpos, data.qvel, previous
                s = {key: jnp.asarray(v[k]) for key, v in schedule.items()}
                u[k] = np.asarray(policy(jnp.asarray(q[k]), jnp.asarray(qd[k]), s))
                data.qfrc_applied[:] = u[k]
                for _ in range(self.substeps - 1):
                    mujoco.mj_step(model, data)
                previous = data.qpos.copy()
                mujoco.mj_step(model, data)
        if not np.all(np.isfinite(q)):
            raise ValueError("ArmRig: the MuJoCo run became non-finite")
        return {
            "t": self.dt * np.arange(n),
            "q": q,
            "qd": qd,
            "q_before": q_before,
            "u_cmd": u,
            "u_applied": u,
        }

    def record(
        self, duration: float, *, seed: int, recording: str = "train", truth: bool = False
    ) -> tuple[dict[str, np.ndarray], dict]:
        """A measured recording of `duration` s and its metadata (see `CartPoleRig.record`); the first
        sample is dropped, as the other rigs' (their velocities need a previous sample)."""
        rng = recording_rng(seed, recording)
        run = self.simulate_mujoco(duration, rng)
        encoder = OpticalEncoder(self.encoder_counts, wrap_low=None)
        q, before = encoder.measure(run["q"]), encoder.measure(run["q_before"])
        cols = {"t": run["t"][1:] - run["t"][1]}
        # Stored in float32, which holds the encoder's 6e-6 rad steps (float32's spacing at π: 2.4e-7) and
        # keeps the two files under 1 MB; float64 samples of 2²⁰-count angles barely compress.
        for i in range(7):
            cols[f"q{i + 1}"] = q[1:, i].astype(np.float32)
            cols[f"qd{i + 1}"] = ((q[1:, i] - before[1:, i]) / self.timestep).astype(np.float32)
            cols[f"tau{i + 1}"] = run["u_cmd"][1:, i].astype(np.float32)
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
            system="mjcf",
            system_params={"source": DESCRIPTION, "actuated": list(JOINTS)},
        )
        return cols, meta

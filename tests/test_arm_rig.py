"""The simulated 7-joint arm (`ArmRig`): its MuJoCo model is lagnet's description plus what the rig adds, its
recordings are well-formed and stay inside the joint ranges, and the friction it adds is identifiable."""

import equinox as eqx
import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from lagnet.commands.train import describe_physics
from lagnet.models import fit_friction
from lagnet.simulate import GENERATORS, rig_from_meta
from lagnet.simulate.rigs.arm import MAPPING, ArmRig, _joint_ranges
from lagnet.systems.friction import JointFriction


@pytest.fixture(scope="module")
def short_recording():
    rig = ArmRig()
    cols, meta = rig.record(4.0, seed=3, recording="check", truth=True)
    return rig, cols, meta


def test_mujoco_without_the_additions_is_the_description():
    """q̈ of MuJoCo's model without armature, damping and friction loss = the known `RigidBodyTree`'s, in float64
    at random states and torques (the rig simulates the physics the prior is read from)."""
    rig = ArmRig()
    model = rig.mujoco_model(added=False)
    data = mujoco.MjData(model)
    rng = np.random.default_rng(0)
    ranges = _joint_ranges(rig.description)
    with jax.enable_x64(True):
        system = rig.known_system()
        accel = eqx.filter_jit(system.acceleration)
        for _ in range(5):
            q = rng.uniform(ranges[:, 0], ranges[:, 1])
            qd, u = rng.normal(0, 1.5, 7), rng.normal(0, 10, 7)
            data.qpos[:], data.qvel[:], data.qfrc_applied[:] = q, qd, u
            mujoco.mj_forward(model, data)
            ours = np.asarray(accel(jnp.asarray(q), jnp.asarray(qd), jnp.asarray(u)))
            np.testing.assert_allclose(ours, data.qacc, rtol=0, atol=1e-8 * np.abs(data.qacc).max())


def test_the_rig_adds_what_it_says():
    """With the additions, MuJoCo's smooth dynamics (no friction-loss constraint) = lagnet's twin (`plant`)
    without its Coulomb term: armature on M's diagonal and damping −b q̇."""
    rig = ArmRig()
    model = rig.mujoco_model()
    model.dof_frictionloss[:] = 0.0
    data = mujoco.MjData(model)
    rng = np.random.default_rng(1)
    with jax.enable_x64(True):
        system = rig.plant().system
        q, qd, u = rng.uniform(-1, 1, 7), rng.normal(0, 1.5, 7), rng.normal(0, 10, 7)
        data.qpos[:], data.qvel[:], data.qfrc_applied[:] = q, qd, u
        mujoco.mj_forward(model, data)
        coulomb = np.asarray(rig.frictionloss) * np.tanh(qd / rig.epsilon)
        ours = np.asarray(
            system.acceleration(
                jnp.asarray(q), jnp.asarray(qd), jnp.asarray(u), Q=jnp.asarray(coulomb)
            )
        )
        np.testing.assert_allclose(ours, data.qacc, rtol=0, atol=1e-8 * np.abs(data.qacc).max())
        # Without the armature the wrist would accelerate about 60x faster: the test can tell.
        assert np.abs(np.asarray(system.armature) - np.asarray(rig.armature)).max() == 0


def test_recording_columns_ranges_and_metadata(short_recording):
    rig, cols, meta = short_recording
    n = int(round(4.0 / rig.dt))
    names = [MAPPING["time"], *MAPPING["positions"], *MAPPING["velocities"], *MAPPING["inputs"]]
    assert set(names) <= set(cols) and all(cols[c].shape == (n,) for c in names)
    assert set(meta["columns"]) == set(names) and meta["mapping"] == MAPPING
    assert meta["generator"] == ArmRig.GENERATOR and GENERATORS["iiwa"].mapping == MAPPING
    np.testing.assert_allclose(np.diff(cols["t"]), rig.dt, atol=1e-12)
    q = np.stack([cols[c] for c in MAPPING["positions"]], axis=1)
    ranges = _joint_ranges(rig.description)
    assert np.all(q > ranges[:, 0]) and np.all(q < ranges[:, 1])
    # The arm moves: every joint swept some of its range.
    assert np.all(np.ptp(q, axis=0) > 0.1)
    tau = np.stack([cols[c] for c in MAPPING["inputs"]], axis=1)
    assert np.all(np.abs(tau) <= np.asarray(rig.torque_limit) + 1e-3)
    # Servo velocities: within the encoder's quantum over 1 ms (6e-3 rad/s) and 0.5 ms of lag of the truth.
    qd = np.stack([cols[c] for c in MAPPING["velocities"]], axis=1)
    true = np.stack([cols[f"true_{c}"] for c in MAPPING["velocities"]], axis=1)
    assert np.abs(qd - true).max() < 0.05


def test_rig_from_meta_rebuilds_the_rig(short_recording):
    rig, cols, meta = short_recording
    rebuilt = rig_from_meta(meta, strict=True)
    assert isinstance(rebuilt, ArmRig) and rebuilt == rig
    changed = rig_from_meta({**meta, "params": {**meta["params"], "damping": [0.1] * 7}})
    assert changed.damping == (0.1,) * 7


def test_friction_is_identifiable_from_a_clean_recording(short_recording):
    """Least squares on the true states (q̈ by differences of the true q̇) with the true armature finds the
    rig's damping and friction loss, the friction loss to within MuJoCo's constraint against tanh."""
    rig, cols, _ = short_recording
    true = {
        r: np.stack([cols[f"true_{c}"] for c in MAPPING[r]], axis=1) for r in MAPPING if r != "time"
    }
    q, qd, u = true["positions"], true["velocities"], true["inputs"]
    # Over each sample interval the torque is held: the mean q̈ there is the difference of q̇, at the midpoint.
    qdd = np.diff(qd, axis=0) / rig.dt
    q, qd, u = 0.5 * (q[1:] + q[:-1]), 0.5 * (qd[1:] + qd[:-1]), u[:-1]
    with jax.enable_x64(True):
        system = rig.known_system().with_parameters({"armature": jnp.asarray(rig.armature)})
        template = JointFriction(
            7,
            viscous=dict.fromkeys(range(7), 0.0),
            coulomb=dict.fromkeys(range(7), 0.0),
            epsilon=rig.epsilon,
        )
        fitted = fit_friction(system, q, qd, qdd, u, template)
    values = fitted.values_by_term()
    viscous = np.array([values["viscous"][i] for i in range(7)])
    coulomb = np.array([values["coulomb"][i] for i in range(7)])
    # On the heavy joints 1-2 the equation error of 100 Hz samples (midpoint states, torques changing each
    # sample) leaves a bias of up to 40 % in b; the solver's rollouts identify them to 2 % (docs/results/robot-arm.md).
    np.testing.assert_allclose(viscous[2:], rig.damping[2:], rtol=0.15)
    assert np.all(
        (viscous[:2] > 0.5 * np.asarray(rig.damping[:2]))
        & (viscous[:2] < 1.5 * np.asarray(rig.damping[:2]))
    )
    np.testing.assert_allclose(coulomb, rig.frictionloss, rtol=0.3)


def test_train_prints_a_vector_parameter():
    lines = describe_physics({"learned_parameters": {"armature": [0.2, 0.1]}})
    assert lines == ["learned parameters: armature [0.2, 0.1]"]

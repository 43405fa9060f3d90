"""Systems from robot descriptions: closed forms, MuJoCo's own dynamics, transformations, options and errors."""

import subprocess
import sys
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import mujoco  # a dependency of lagnet: without it these tests fail, never skip
import numpy as np
import pytest

from lagnet.data.catalog import dfki_double_pendulum
from lagnet.systems import CartPole, DoublePendulum, Pendulum, RigidBodyTree
from lagnet.systems.friction import JointFriction
from lagnet.systems.robot import mujoco_model

DATA = Path(__file__).parent / "data" / "robots"
DFKI = (
    Path(__file__).resolve().parents[1]
    / "data"
    / "real"
    / "dfki_double_pendulum_A0"
    / "model_2.1_pendubot.urdf"
)
TOL = 1e-10
# DoublePendulum(m1=1.2, m2=0.8, l1=1.1, l2=0.9, r1=0.5, r2=0.4, I1=0.1, I2=0.05) as in double_pendulum.urdf.
DP_PARAMS = dict(m1=1.2, m2=0.8, l1=1.1, l2=0.9, r1=0.5, r2=0.4, I1=0.1, I2=0.05, g=9.81)


def load(name, **options):
    path = DATA / name
    if path.suffix == ".urdf":
        return RigidBodyTree.from_urdf(path, **options)
    return RigidBodyTree.from_mjcf(path, **options)


def states(n, m, count=5, seed=0):
    """`count` random (q, q̇, u), stacked: shapes (count, n), (count, n), (count, m)."""
    rng = np.random.default_rng(seed)
    return (
        jnp.asarray(rng.uniform(-np.pi, np.pi, (count, n))),
        jnp.asarray(rng.normal(size=(count, n))),
        jnp.asarray(rng.normal(size=(count, m))),
    )


@eqx.filter_jit
def evaluate(system, q, qd, u, Q=None):
    """Everything the tests compare, for a batch of states, in one compiled program per system."""
    Q = jnp.zeros_like(q) if Q is None else Q

    def one(q, qd, u, Q):
        out = dict(
            M=system.mass_matrix(q),
            G=system.gravity(q),
            V=system.potential_energy(q) - system.potential_energy(jnp.zeros_like(q)),
            Cqd=system.coriolis(q, qd) @ qd,
            a=system.acceleration(q, qd, u, Q=Q),
        )
        if isinstance(system, RigidBodyTree):
            friction = system.friction_force(qd)
            viscous = 0.0 if system.friction is None else system.friction.coefficient("viscous")
            # MuJoCo's smooth acceleration has the passive damping but not the frictionloss constraint.
            coulomb = friction + viscous * qd
            positions, rotations = system.forward_kinematics(q)
            out.update(
                F=friction,
                a_smooth=system.acceleration(q, qd, u, Q=Q - coulomb),
                com=system.com_positions(q),
                xpos=positions,
                xmat=rotations,
            )
        return out

    return jax.vmap(one)(q, qd, u, Q)


def close(a, b, tol=TOL):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=tol)


# --- closed forms ------------------------------------------------------------------------------------------------

# (description, options, closed form, B of the closed form's input from the description's input)
CLOSED = {
    "pendulum.urdf": (
        dict(actuated=("theta",)),
        Pendulum(mass=0.7, length=1.3, g=9.81),
        np.eye(1),
    ),
    "pendulum.xml": ({}, Pendulum(mass=0.7, length=1.3, g=9.81), np.eye(1)),
    "cartpole.urdf": (dict(actuated=("x",)), CartPole(), np.eye(1)),
    "cartpole.xml": ({}, CartPole(), 2 * np.eye(1)),  # motor gear 2
    "double_pendulum.urdf": (
        dict(actuated=("shoulder", "elbow")),
        DoublePendulum(**DP_PARAMS),
        np.eye(2),
    ),
}


@pytest.mark.parametrize("name", CLOSED)
def test_matches_closed_form(name):
    options, closed, gear = CLOSED[name]
    system = load(name, **options)
    assert system.n_dof == closed.n_dof and system.n_inputs == closed.n_inputs
    assert system.angles == closed.angles
    q, qd, u = states(system.n_dof, system.n_inputs)
    ours = evaluate(system, q, qd, u)
    # The description's joint friction (double pendulum) is part of the system: add it to the closed form.
    theirs = evaluate(closed, q, qd, u @ jnp.asarray(gear).T, ours["F"])
    for key in ("M", "G", "V", "Cqd", "a"):
        close(ours[key], theirs[key])


def test_double_pendulum_mjcf_point_masses_gears_armature_damping():
    system = load("double_pendulum.xml")
    closed = DoublePendulum(g=9.81)
    armature = np.diag([0.01, 0.02])
    gear = np.diag([1.5, -2.0])
    assert system.input_names == ("shoulder", "elbow")
    close(system.input_matrix(jnp.zeros(2)), gear)
    assert system.friction.on == {"viscous": (1,)}
    q, qd, u = states(2, 2)
    ours = evaluate(system, q, qd, u)
    theirs = evaluate(closed, q, qd, u)
    for i in range(len(q)):
        m = theirs["M"][i] + armature
        close(ours["M"][i], m)
        rhs = gear @ u[i] - theirs["Cqd"][i] - theirs["G"][i] - np.array([0, 0.1]) * qd[i]
        close(ours["a"][i], np.linalg.solve(m, rhs))


def test_description_friction_becomes_joint_friction():
    system = load("double_pendulum.urdf", friction_shape="atan", friction_epsilon=0.02)
    assert isinstance(system.friction, JointFriction)
    assert system.friction.on == {"viscous": (0, 1), "coulomb": (0,)}
    summary = system.friction.summary(system.coordinate_names)
    assert summary["viscous"] == {"shoulder": 0.01, "elbow": 0.02}
    assert summary["coulomb"] == {"shoulder": 0.05}
    qd = jnp.array([0.3, -0.2])
    expected = -np.array([0.01, 0.02]) * qd - np.array([0.05, 0.0]) * np.arctan(qd / 0.02)
    close(system.friction_force(qd), expected)
    # Friction only takes energy out.
    assert float(system.power(jnp.zeros(2), qd)) < 0
    assert load("pendulum.xml").friction is None


# --- MuJoCo's own forward dynamics -----------------------------------------------------------------------------

# The same options as above, so that the compiled `evaluate` of each system is reused.
MUJOCO_CASES = {
    "pendulum.urdf": dict(actuated=("theta",)),
    "pendulum.xml": {},
    "cartpole.urdf": dict(actuated=("x",)),
    "cartpole.xml": {},
    "double_pendulum.urdf": dict(actuated=("shoulder", "elbow")),
    "double_pendulum.xml": {},
    "arm.xml": {},
}


@pytest.mark.parametrize(
    "name, expand",
    [(name, None) for name in MUJOCO_CASES]
    # The small trees are expanded by default (arm.xml, 5 joints, is not): the recursive form of two of them too.
    + [("cartpole.xml", False), ("double_pendulum.urdf", False)],
)
def test_matches_mujoco_forward(name, expand):
    system = load(name, **MUJOCO_CASES[name], expand=expand)
    assert (system.expansion is None) == (expand is False or name == "arm.xml")
    model = mujoco_model(DATA / name)
    data = mujoco.MjData(model)
    n = system.n_dof
    full = np.zeros((n, n))
    q, qd, u = states(n, system.n_inputs, seed=1)
    ours = evaluate(system, q, qd, u)
    for i in range(len(q)):
        data.qpos[:], data.qvel[:] = np.asarray(q[i]), np.asarray(qd[i])
        if model.nu:
            data.ctrl[:] = np.asarray(u[i])
        else:
            data.qfrc_applied[:] = np.asarray(system.input_matrix(q[i]) @ u[i])
        mujoco.mj_forward(model, data)
        mujoco.mj_fullM(model, data, full)
        close(ours["M"][i], full)
        close(ours["a_smooth"][i], data.qacc_smooth)
        # MuJoCo's bias force is C q̇ + G without the springs.
        close(ours["Cqd"][i] + ours["G"][i], data.qfrc_bias - data.qfrc_spring)
        close(ours["com"][i], data.xipos[1:])
        close(ours["xpos"][i], data.xpos[1:])
        close(ours["xmat"][i], data.xmat[1:].reshape(-1, 3, 3))


def test_arm_structure():
    system = load("arm.xml")
    assert system.coordinate_names == ("slide", "hinge_a", "hinge_b", "elbow", "side")
    assert system.angles == (False, True, True, True, True)
    assert system.input_names == ("push", "elbow_motor", "shoulder")
    assert system.body_names == ("base", "upper", "block", "lower", "side")
    assert system.parents == (-1, 0, 1, 2, -1)
    b = np.zeros((5, 3))
    b[0, 0], b[3, 1], b[1, 2] = 3.0, -0.5, 2.5
    close(system.input_matrix(jnp.zeros(5)), b)
    close(system.joint_ref, [0, np.deg2rad(15), 0, 0, 0])
    close(system.armature, [0.02, 0, 0, 0.003, 0])
    assert system.velocity_dependent
    hash(system.parents), hash(system.body_joints), hash(system.joint_types)


# --- transformations and dtypes ---------------------------------------------------------------------------------


def test_jit_vmap_grad():
    system = load("pendulum.xml")
    q, qd, u = states(1, 1)
    m_batch, a_batch = eqx.filter_jit(
        lambda s, q, qd, u: (jax.vmap(s.mass_matrix)(q), jax.vmap(s.acceleration)(q, qd, u))
    )(system, q, qd, u)
    close(m_batch, evaluate(system, q, qd, u)["M"], 1e-12)
    close(a_batch, evaluate(system, q, qd, u)["a"], 1e-12)

    @eqx.filter_jit
    def loss(s, q0):
        return jnp.sum(s.acceleration(q0, qd[0], u[0]) ** 2)

    grads, grad_q = eqx.filter_jit(eqx.filter_grad(lambda args: loss(*args)))((system, q[0]))
    eps = 1e-6
    numeric = (loss(system, q[0] + eps) - loss(system, q[0] - eps)) / (2 * eps)
    close(grad_q, numeric, 1e-6)
    # Gradients with respect to the physical parameters (the module's leaves), against finite differences.
    for field in ("body_mass", "body_ipos", "actuation"):
        value = np.asarray(getattr(grads, field))
        assert np.all(np.isfinite(value)) and np.any(value != 0), field
    mass = system.body_mass
    shifted = [eqx.tree_at(lambda s: s.body_mass, system, mass + d) for d in (eps, -eps)]
    numeric = (loss(shifted[0], q[0]) - loss(shifted[1], q[0])) / (2 * eps)
    close(grads.body_mass, numeric, 1e-6)


def test_float32_follows_state():
    system = load("pendulum.xml")
    q, qd, u = states(1, 1, seed=5)
    ours = evaluate(system, q.astype(jnp.float32), qd.astype(jnp.float32), u.astype(jnp.float32))
    for key in ("M", "G", "a", "com"):
        assert ours[key].dtype == jnp.float32, key
    close(ours["a"], evaluate(system, q, qd, u)["a"], 1e-3)


# --- options ----------------------------------------------------------------------------------------------------


def test_armature_and_inertia_offset_options():
    base = load("double_pendulum.urdf")
    offset = np.array([[0.3, -0.1], [-0.1, 0.2]])
    system = load(
        "double_pendulum.urdf", armature={"elbow": 0.05}, inertia_offset=offset, actuated="elbow"
    )
    q = jnp.array([0.7, -0.2])
    close(system.mass_matrix(q), base.mass_matrix(q) + np.diag([0.0, 0.05]) + offset)
    assert system.input_names == ("elbow_torque",)
    close(load("double_pendulum.xml", armature=0.5).armature, [0.5, 0.5])
    close(load("double_pendulum.xml", armature=[0.1, 0.2]).armature, [0.1, 0.2])
    close(load("double_pendulum.xml", armature={"q2": 0.3}).armature, [0.01, 0.3])


def test_actuated_replaces_description_actuators():
    system = load("cartpole.xml", actuated=("x", "phi"))
    assert system.input_names == ("x_force", "phi_torque")
    close(system.input_matrix(jnp.zeros(2)), np.eye(2))
    assert load("cartpole.urdf").n_inputs == 0  # URDF transmissions are not read


# --- errors -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "xml, match",
    [
        (
            '<mujoco><worldbody><body name="b"><freejoint name="float"/>'
            '<inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/></body></worldbody></mujoco>',
            "'float' is a free joint",
        ),
        (
            '<mujoco><worldbody><body name="b"><joint name="ball" type="ball"/>'
            '<inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/></body></worldbody></mujoco>',
            "'ball' is a ball joint",
        ),
        (
            '<robot name="r"><link name="base"/><link name="l"><inertial><mass value="1"/>'
            '<inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
            '<joint name="drift" type="floating"><parent link="base"/><child link="l"/></joint>'
            "</robot>",
            "'drift' is a free joint",
        ),
        (
            '<mujoco><worldbody><body><joint name="a"/><inertial pos="0 0 -1" mass="1" '
            'diaginertia="1 1 1"/></body></worldbody><actuator><position joint="a" name="servo" '
            'kp="10"/></actuator></mujoco>',
            "'servo' is not a plain joint motor",
        ),
        (
            '<robot name="r"><link name="base"/><link name="a"><inertial><mass value="1"/>'
            '<inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
            '<link name="b"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" '
            'ixz="0" iyz="0"/></inertial></link>'
            '<joint name="j1" type="continuous"><parent link="base"/><child link="a"/></joint>'
            '<joint name="j2" type="continuous"><parent link="a"/><child link="b"/>'
            '<mimic joint="j1"/></joint></robot>',
            "'j2' mimics",
        ),
        ("<sdf/>", "expected a URDF"),
        (
            '<mujoco><worldbody><body><joint name="idle" axis="1 0 0"/>'
            '<inertial pos="1 0 0" mass="1" diaginertia="0 1 1"/></body></worldbody></mujoco>',
            "singular",
        ),
    ],
)
def test_clear_errors(xml, match):
    with pytest.raises(ValueError, match=match):
        RigidBodyTree.from_xml_string(xml)


def test_bad_options():
    with pytest.raises(ValueError, match="unknown joints"):
        load("double_pendulum.xml", armature={"wrist": 0.1})
    with pytest.raises(ValueError, match="symmetric"):
        load("double_pendulum.xml", inertia_offset=[[0.1, 0.2], [0.0, 0.1]])
    with pytest.raises(ValueError, match="shape"):
        load("double_pendulum.xml", inertia_offset=np.eye(3))
    with pytest.raises(ValueError, match="actuated"):
        load("double_pendulum.xml", actuated=("q3",))
    with pytest.raises(ValueError, match=">= 0"):
        load("double_pendulum.xml", armature=-1.0)
    with pytest.raises(ValueError, match="not a URDF"):
        RigidBodyTree.from_urdf(DATA / "pendulum.xml")


def test_import_lagnet_does_not_import_mujoco():
    code = "import sys, lagnet, lagnet.systems; assert 'mujoco' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# --- the DFKI pendubot URDF -------------------------------------------------------------------------------------


def test_dfki_pendubot_urdf():
    lab = (
        dfki_double_pendulum()
    )  # the lab's identified model: inertias about the joint axes, motor rotor
    system = RigidBodyTree.from_urdf(DFKI, actuated=("Joint1",))
    assert system.coordinate_names == ("Joint1", "Joint2") and system.angles == (True, True)
    assert system.n_dof == 2 and system.friction is None
    # The URDF writes the elbow's rpy as -3.1416 (not -π): q2 there is the lab's q2 minus δ.
    delta = 3.1416 - np.pi
    links = {k: getattr(lab, k) for k in ("m1", "m2", "l1", "r1", "r2", "I1", "I2", "g")}
    as_written = DoublePendulum(**links)  # the axis inertias in the centre-of-mass slot, no rotor
    m1r1, m2r2 = float(lab.m1 * lab.r1**2), float(lab.m2 * lab.r2**2)
    ir, gr = float(lab.Ir), float(lab.gr)
    rotor = ir * np.array([[gr**2 + 1, -gr], [-gr, gr**2]])
    excess = np.array([[m1r1 + m2r2, m2r2], [m2r2, m2r2]]) - rotor
    q, qd, u = states(2, 2, seed=4)
    shifted = q - jnp.array([0.0, delta])
    ours, theirs = evaluate(system, q, qd, u[:, :1]), evaluate(as_written, shifted, qd, u)
    close(ours["M"], theirs["M"])
    close(ours["G"], theirs["G"])
    close(ours["M"] - evaluate(lab, shifted, qd, u)["M"], np.broadcast_to(excess, (len(q), 2, 2)))
    # Without the shift the differences are of order m2 l1 r2 δ ≈ 2.4e-7.
    close(ours["M"], evaluate(as_written, q, qd, u)["M"], 1e-6)


# --- the expansion of small trees ------------------------------------------------------------------------------


def rollout_loss(system, q0, qd0, us, dt=0.01):
    """Σ_t |q_t|² of a semi-implicit Euler rollout under the inputs `us` (T, m)."""

    def step(carry, u):
        q, qd = carry
        qd = qd + dt * system.acceleration(q, qd, u)
        q = q + dt * qd
        return (q, qd), jnp.sum(q**2)

    return jnp.sum(jax.lax.scan(step, (q0, qd0), us)[1])


def test_expansion_of_the_dfki_pendubot():
    """M(q) of the pendubot is a + b cos q2 + c sin q2: three terms; the expanded and the recursive tree give the
    same rollout gradients with respect to the state and the inertial parameters, which match finite
    differences; the kinematics are fixed in the expansion and asking to learn them says how not to."""
    expanded = RigidBodyTree.from_urdf(DFKI, actuated=("Joint1", "Joint2"))
    recursive = RigidBodyTree.from_urdf(DFKI, actuated=("Joint1", "Joint2"), expand=False)
    assert recursive.expansion is None
    np.testing.assert_array_equal(expanded.expansion.mass_index, [[0, 0], [0, 1], [0, 2]])
    q, qd, u = states(2, 2, count=1, seed=7)
    us = jnp.asarray(np.random.default_rng(3).normal(size=(20, 2)))
    grad = eqx.filter_jit(eqx.filter_grad(lambda a: rollout_loss(*a)))
    ge, gr = (grad((s, q[0], qd[0], us)) for s in (expanded, recursive))
    for a, b in [(ge[1], gr[1]), (ge[2], gr[2])] + [
        (getattr(ge[0], k), getattr(gr[0], k))
        for k in ("body_mass", "body_ipos", "body_inertia", "armature", "inertia_offset", "g")
    ]:
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-9)
    eps = 1e-6
    shifted = [
        eqx.tree_at(lambda s: s.body_mass, expanded, expanded.body_mass.at[1].add(d))
        for d in (eps, -eps)
    ]
    loss = eqx.filter_jit(rollout_loss)
    numeric = (loss(shifted[0], q[0], qd[0], us) - loss(shifted[1], q[0], qd[0], us)) / (2 * eps)
    np.testing.assert_allclose(float(ge[0].body_mass[1]), float(numeric), rtol=1e-6)
    with pytest.raises(ValueError, match="expand=False"):
        expanded.with_parameters({"joint_pos": expanded.joint_pos})
    recursive.with_parameters({"joint_pos": recursive.joint_pos})
    assert expanded.with_parameters({"body_mass": 2 * expanded.body_mass}).expansion is not None


def test_expansion_on_request_and_its_checks():
    """`expand=True` expands a tree of five joints with a slide (arm.xml: 3 · 5⁴ grid points), and the result
    agrees with the recursive algorithms; a wrong expansion (a term removed) fails the check that guards it."""
    recursive = load("arm.xml")
    expanded = load("arm.xml", expand=True)
    assert recursive.expansion is None and len(expanded.expansion.mass_index) > 3
    q, qd, u = states(5, 3, seed=2)
    ours, theirs = evaluate(expanded, q, qd, u), evaluate(recursive, q, qd, u)
    for key in ("M", "G", "Cqd", "a"):
        close(ours[key], theirs[key])
    e = expanded.expansion
    broken = type(e)(
        e.joint_types, e.mass_index[1:], e.mass_coef[1:], e.potential_index, e.potential_coef
    )
    assert expanded._checked(e, required=True) is e
    assert expanded._checked(broken, required=False) is None
    with pytest.raises(ValueError, match="disagree with the recursive ones"):
        expanded._checked(broken, required=True)

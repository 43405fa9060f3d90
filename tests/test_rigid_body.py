"""The tree's recursive Newton–Euler / composite-rigid-body dynamics against MuJoCo and the closed form, and its
derivatives (forward and reverse mode, through the inverse-dynamics rule) against finite differences."""

from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from lagnet.data.catalog import DFKI_DOUBLE_PENDULUM_LINKS
from lagnet.systems import DoublePendulum, RigidBodyTree
from lagnet.systems.robot import mujoco_model

ROOT = Path(__file__).resolve().parents[1]
IIWA = ROOT / "data" / "robots" / "kuka_iiwa_14" / "iiwa14.xml"
DFKI = ROOT / "data" / "real" / "dfki_double_pendulum_A0" / "model_2.1_pendubot.urdf"
TOL = 1e-10


def iiwa_model():
    """The arm with armature and damping the description lacks, as the MuJoCo model and the tree read from it."""
    model = mujoco_model(IIWA)
    model.dof_armature[:] = np.linspace(0.05, 0.2, 7)
    model.dof_damping[:] = np.linspace(0.5, 0.1, 7)
    names = tuple(f"joint{i + 1}" for i in range(7))
    return model, RigidBodyTree.from_mujoco(model, actuated=names)


@eqx.filter_jit
def evaluate(system, q, qd, u, qdd):
    tree = isinstance(system, RigidBodyTree)

    def one(q, qd, u, qdd):
        m = system.mass_matrix(q)
        bias = system.bias_force(q, qd) if tree else system.coriolis(q, qd) @ qd + system.gravity(q)
        out = dict(
            M=m,
            bias=bias,
            G=system.gravity(q),
            a=system.acceleration(q, qd, u),
            inverse=system.inverse_dynamics(q, qd, qdd) if tree else m @ qdd + bias,
        )
        if tree:
            # MuJoCo's smooth acceleration has the passive damping but not the frictionloss constraint.
            viscous = 0.0 if system.friction is None else system.friction.coefficient("viscous")
            coulomb = system.friction_force(qd) + viscous * qd
            out["a_smooth"] = system.acceleration(q, qd, u, Q=-coulomb)
        return out

    return jax.vmap(one)(q, qd, u, qdd)


def states(n, m, count=4, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(
        jnp.asarray(x)
        for x in (
            rng.uniform(-np.pi, np.pi, (count, n)),
            rng.normal(size=(count, n)),
            rng.normal(size=(count, m)),
            rng.normal(size=(count, n)),
        )
    )


def close(a, b, tol=TOL):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=tol)


def against_mujoco(model, system, seed):
    data = mujoco.MjData(model)
    n = system.n_dof
    q, qd, u, qdd = states(n, system.n_inputs, seed=seed)
    ours = evaluate(system, q, qd, u, qdd)
    full = np.zeros((n, n))
    for i in range(len(q)):
        data.qpos[:], data.qvel[:] = np.asarray(q[i]), np.asarray(qd[i])
        data.qfrc_applied[:] = np.asarray(system.input_matrix(q[i]) @ u[i])
        mujoco.mj_forward(model, data)
        mujoco.mj_fullM(model, data, full)
        close(ours["M"][i], full)
        close(ours["bias"][i], data.qfrc_bias)
        close(ours["a_smooth"][i], data.qacc_smooth)
        close(ours["inverse"][i], full @ np.asarray(qdd[i]) + data.qfrc_bias)
    return ours


def test_iiwa_matches_mujoco():
    model, system = iiwa_model()
    assert system.n_dof == 7 and system.angles == (True,) * 7
    ours = against_mujoco(model, system, seed=1)
    # The description's damping is the tree's viscous friction.
    close(system.friction.coefficient("viscous"), model.dof_damping)
    assert np.all(np.isfinite(np.asarray(ours["a"])))


def test_dfki_matches_mujoco_and_closed_form():
    system = RigidBodyTree.from_urdf(DFKI, actuated=("Joint1", "Joint2"))
    ours = against_mujoco(mujoco_model(DFKI), system, seed=2)
    # As written the URDF is the closed form with the axis inertias in the centre-of-mass slot, no rotor, and the
    # elbow's reference shifted by 3.1416 − π (see tests/test_robot.py::test_dfki_pendubot_urdf).
    closed = DoublePendulum(**DFKI_DOUBLE_PENDULUM_LINKS)
    q, qd, u, qdd = states(2, 2, seed=2)
    shifted = q - jnp.array([0.0, 3.1416 - np.pi])
    theirs = evaluate(closed, shifted, qd, u, qdd)
    for key in ("M", "bias", "G", "a", "inverse"):
        close(ours[key], theirs[key])


def loss(system, q, qd, u):
    """A short rollout (semi-implicit Euler), so the derivative passes through q̈ several times."""
    for _ in range(3):
        qd = qd + 0.01 * system.acceleration(q, qd, u)
        q = q + 0.01 * qd
    return jnp.sum(q**2) + jnp.sum(jnp.sin(qd))


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_gradients_match_finite_differences(mode):
    _, system = iiwa_model()
    q, qd, u, _ = (x[0] for x in states(7, 7, count=1, seed=3))
    fields = ("body_mass", "body_inertia", "body_ipos", "armature")

    def f(params, q, qd):
        return loss(
            eqx.tree_at(lambda s: [getattr(s, k) for k in fields], system, params), q, qd, u
        )

    params = [getattr(system, k) for k in fields]
    if mode == "reverse":
        grads = jax.jit(jax.grad(f, argnums=(0, 1, 2)))(params, q, qd)
    else:
        grads = jax.jit(jax.jacfwd(f, argnums=(0, 1, 2)))(params, q, qd)
    eps = 1e-6
    rng = np.random.default_rng(0)
    f = jax.jit(f)
    for which, grad in ((1, grads[1]), (2, grads[2])):
        direction = jnp.asarray(rng.normal(size=7))
        args = [params, q, qd]
        plus, minus = list(args), list(args)
        plus[which], minus[which] = args[which] + eps * direction, args[which] - eps * direction
        numeric = (f(*plus) - f(*minus)) / (2 * eps)
        close(jnp.dot(grad, direction), numeric, 1e-6)
    for k, grad in enumerate(grads[0]):
        direction = jnp.asarray(rng.normal(size=params[k].shape))
        plus = [p + eps * direction if i == k else p for i, p in enumerate(params)]
        minus = [p - eps * direction if i == k else p for i, p in enumerate(params)]
        numeric = (f(plus, q, qd) - f(minus, q, qd)) / (2 * eps)
        close(jnp.sum(grad * direction), numeric, 1e-6)

"""Shared test helpers: reference solutions, order fits, comparisons, test models."""

import os

import jax
import jax.numpy as jnp
import numpy as np
from scipy.integrate import solve_ivp

from lagnet.config import MODEL_SECTIONS, validate
from lagnet.integrators import RK4
from lagnet.models import PINODE
from lagnet.rollout import rollout
from lagnet.systems import JointFriction, Pendulum


def damped(system, damping):
    """The system with viscous friction Q = −c ⊙ q̇ added: a forced, damped, velocity-dependent model."""
    damping = np.broadcast_to(np.asarray(damping, float), (system.n_dof,))
    return PINODE(system, friction=JointFriction(system.n_dof, viscous=dict(enumerate(damping))))


def random_cartpole_pinode(input_history=0, **model):
    """A cart-pole PINODE with a small random (not zero) tanh network: arrays in the model, a residual that acts."""
    from lagnet.models import StateFeatures, make_mlp
    from lagnet.systems import CartPole

    system = CartPole()
    features = StateFeatures(system.angles, 1 + input_history)
    net = make_mlp(
        features.size,
        2,
        width=8,
        depth=1,
        activation="tanh",
        final_activation="identity",
        zero_output=False,
        key=jax.random.key(0),
    )
    return PINODE(system, network=net, features=features, input_history=input_history, **model)


# The columns `write_pendulum_csv` writes, as a config's `data.mapping`.
PENDULUM_MAPPING = {
    "time": "t",
    "positions": ["theta"],
    "velocities": ["theta_dot"],
    "inputs": ["torque"],
}


# The shipped cart-pole recordings' columns (data/sim/cartpole_*.npz), as a config's `data.mapping`.
CARTPOLE_MAPPING = {
    "time": "t",
    "positions": ["x", "phi"],
    "velocities": ["x_dot", "phi_dot"],
    "inputs": ["force"],
}


def write_pendulum_csv(
    path, *, steps, hold, seed=0, scale=0.8, friction=(0.05, 0.1), theta0=1.0, dt=0.05, substeps=5
):
    """A forced pendulum (Coulomb + viscous friction `friction`, or none) as a CSV t, theta, theta_dot, torque.

    Random torques of size `scale` held for `hold` samples, RK4 at dt / substeps, sampled every dt.
    """
    plant = PINODE(
        Pendulum(),
        friction=None
        if friction is None
        else JointFriction(1, coulomb={0: friction[0]}, viscous={0: friction[1]}),
    )
    rng = np.random.default_rng(seed)
    u = np.repeat(rng.normal(size=(steps // hold, 1)) * scale, hold, axis=0)
    qs, qds = rollout(
        plant,
        RK4(),
        jnp.array([theta0]),
        jnp.array([0.0]),
        jnp.repeat(jnp.asarray(u), substeps, 0),
        dt / substeps,
    )
    qs, qds = np.asarray(qs[::substeps]), np.asarray(qds[::substeps])
    t = dt * np.arange(steps + 1)
    u = np.concatenate([u, u[-1:]])
    data = np.column_stack([t, qs[:, 0], qds[:, 0], u[:, 0]])
    np.savetxt(path, data, delimiter=",", header="t,theta,theta_dot,torque", comments="")
    return str(path)


def reference_rollout(model, q0, qd0, us, dt, *, rtol=1e-13, atol=1e-13):
    """States at t_k = k·dt of q̈ = a(q, q̇, u) with us[k] held over [t_k, t_{k+1}], by scipy's DOP853.

    Steps with the same input are integrated as one segment, so piecewise-constant inputs on a coarse grid are
    solved accurately whatever dt. Returns numpy arrays qs, qds of shape (steps + 1, n).
    """
    us = np.asarray(us)
    n = np.shape(q0)[0]
    accel = jax.jit(lambda q, qd, u: model.acceleration(q, qd, u))

    def rhs(t, y, u):
        return np.concatenate([y[n:], np.asarray(accel(jnp.asarray(y[:n]), jnp.asarray(y[n:]), u))])

    y = np.concatenate([np.asarray(q0, float), np.asarray(qd0, float)])
    out = [y]
    k = 0
    while k < len(us):
        j = k
        while j + 1 < len(us) and np.array_equal(us[j + 1], us[k]):
            j += 1
        t_eval = dt * np.arange(k + 1, j + 2)
        sol = solve_ivp(
            rhs,
            (dt * k, dt * (j + 1)),
            y,
            method="DOP853",
            rtol=rtol,
            atol=atol,
            t_eval=t_eval,
            args=(jnp.asarray(us[k]),),
        )
        out.extend(sol.y.T)
        y = sol.y[:, -1]
        k = j + 1
    out = np.array(out)
    return out[:, :n], out[:, n:]


def fitted_order(hs, errors) -> float:
    """Slope of the least-squares line through (log h, log error)."""
    return float(np.polyfit(np.log(hs), np.log(errors), 1)[0])


def relative_error(a, b) -> float:
    """‖a − b‖ / ‖b‖ (flattened)."""
    a, b = np.ravel(np.asarray(a)), np.ravel(np.asarray(b))
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def model_section(type: str = "pinode", *, network: dict | None = None, **keys) -> dict:
    """A config's `model` section of `type` (a tagged union: each type reads only its own keys): `keys`, and for
    the types with a network its size `network` (default a small one, width 8)."""
    network = {"width": 8} if network is None else network
    small = network if MODEL_SECTIONS[type].reads("width") else {}
    return {"type": type, **small, **keys}


def tiny_pinode_config(path, input_history, name="control_test"):
    """A one-epoch PINODE run on a pendulum CSV (input history 0 or more): what the control and export tests load."""
    return validate(
        {
            "name": name,
            "dtype": "float64",
            "system": {"name": "pendulum"},
            "model": {
                "type": "pinode",
                "width": 8,
                "zero_init": False,
                "input_history": input_history,
                "friction": {"viscous": ["theta"]},
            },
            "data": {
                "train": [path],
                "test": [path],
                "mapping": dict(PENDULUM_MAPPING),
            },
            "training": {"epochs": 1, "batch_size": 32, "horizon": 3, "patience": 5},
            "evaluation": {"windows": 10, "horizon": 5, "long_horizon": 10},
        }
    )


def xla_flags_without_device_count() -> str:
    """The inherited XLA_FLAGS (the suite's compile settings, tests/conftest.py) without a CPU device count."""
    flags = os.environ.get("XLA_FLAGS", "").split()
    return " ".join(f for f in flags if not f.startswith("--xla_force_host_platform_device_count"))


def read_pendulum_csv(path):
    """The recording `write_pendulum_csv` wrote, as a `Trajectory` (θ an angle, the torque its input)."""
    from lagnet.data.trajectory import Trajectory

    t, theta, theta_dot, torque = np.loadtxt(path, delimiter=",", skiprows=1).T
    return Trajectory(
        t, theta[:, None], theta_dot[:, None], torque[:, None], ("theta",), ("torque",), (True,)
    )


def unit_pendulum_loss():
    """The pendulum's state loss with every scale and weight 1."""
    from lagnet.train.loss import StateLoss

    one = jnp.ones(1)
    return StateLoss((True,), one, one, one, one)


def load_benchmark(name: str):
    """The script benchmarks/NAME.py as a module (the benchmarks are scripts, not a package)."""
    import importlib.util

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = importlib.util.spec_from_file_location(
        f"lagnet_benchmarks_{name}", os.path.join(root, "benchmarks", f"{name}.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

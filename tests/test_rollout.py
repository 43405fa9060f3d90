"""The rollout engine: shapes, time steps, jit / vmap / grad, float32, windows, the diffrax reference."""

import jax

jax.config.update("jax_enable_x64", True)

import diffrax  # noqa: E402
import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from helpers import damped, reference_rollout, relative_error  # noqa: E402
from jax.flatten_util import ravel_pytree  # noqa: E402

from lagnet.data import Trajectory, make_windows  # noqa: E402
from lagnet.integrators import (  # noqa: E402
    RK4,
    BackwardEuler,
    DiffraxReference,
    ForwardEuler,
    Leapfrog,
    Newmark,
    SymplecticEuler,
    Variational,
)
from lagnet.rollout import rollout, rollout_solution  # noqa: E402
from lagnet.systems import CartPole, Pendulum  # noqa: E402
from lagnet.systems.base import AbstractDynamics  # noqa: E402

INTEGRATORS = {
    "ForwardEuler": ForwardEuler(),
    "SymplecticEuler": SymplecticEuler(),
    "Leapfrog": Leapfrog(),
    "Leapfrog-predicted": Leapfrog(implicit_kick=False),
    "RK4": RK4(),
    "RK4-looped": RK4().compact_form(),  # its stages a loop, which rematerialises the acceleration
    "BackwardEuler": BackwardEuler(),
    "Newmark(1/4,1/2)": Newmark(0.25, 0.5),
    "Newmark(0,1/2)": Newmark(0.0, 0.5),
    "Newmark(0.3025,0.6)": Newmark(0.3025, 0.6),
    "Variational": Variational(),
    "Variational-midpoint": Variational("midpoint"),
}
CARTPOLE = damped(CartPole(), jnp.array([0.3, 0.002]))
Q0, QD0 = jnp.array([0.1, 1.0]), jnp.array([0.0, -1.0])


def _inputs(steps, seed=0):
    return jnp.asarray(np.random.default_rng(seed).uniform(-1, 1, (steps, 1)))


# --- shapes and time steps ----------------------------------------------------------------------------------


def test_shapes_and_initial_state():
    qs, qds = rollout(CARTPOLE, RK4(), Q0, QD0, _inputs(7), 0.02)
    assert qs.shape == qds.shape == (8, 2)
    np.testing.assert_array_equal(qs[0], Q0)
    np.testing.assert_array_equal(qds[0], QD0)
    qs, qds = rollout(CARTPOLE, RK4(), Q0, QD0, _inputs(0), 0.02)
    assert qs.shape == (1, 2)
    qs, _ = rollout(Pendulum(), RK4(), jnp.ones(1), jnp.zeros(1), None, 0.1, steps=5)
    assert qs.shape == (6, 1)


@pytest.mark.parametrize("name", ["Leapfrog", "Newmark(1/4,1/2)", "BackwardEuler", "Variational"])
def test_jittery_time_steps_match_manual_stepping(name):
    integrator = INTEGRATORS[name]
    dts = 0.02 + 0.004 * jnp.asarray(np.random.default_rng(2).uniform(-1, 1, 12))
    us = _inputs(12)
    qs, qds = rollout(CARTPOLE, integrator, Q0, QD0, us, dts)
    q, qd = Q0, QD0
    state = integrator.init(CARTPOLE, q, qd, us[0])
    step = jax.jit(lambda *args: integrator.step(CARTPOLE, *args))
    for k in range(12):
        q, qd, state, info = step(q, qd, us[k], dts[k], state)
        assert bool(info.converged)
    np.testing.assert_allclose(qs[-1], q, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(qds[-1], qd, rtol=1e-12, atol=1e-13)


def test_shape_errors():
    with pytest.raises(ValueError, match="us must have shape"):
        rollout(CARTPOLE, RK4(), Q0, QD0, jnp.zeros(5), 0.02)
    with pytest.raises(ValueError, match="inconsistent"):
        rollout(CARTPOLE, RK4(), Q0, QD0, jnp.zeros((5, 1)), jnp.full(4, 0.02))
    with pytest.raises(ValueError, match="n_dof"):
        rollout(CARTPOLE, RK4(), jnp.zeros(3), jnp.zeros(3), jnp.zeros((5, 1)), 0.02)
    with pytest.raises(ValueError, match="n_inputs"):
        rollout(CARTPOLE, RK4(), Q0, QD0, jnp.zeros((5, 2)), 0.02)
    with pytest.raises(ValueError, match="steps="):
        rollout(CARTPOLE, RK4(), Q0, QD0, None, 0.02)
    # lagnet's own message (not a type checker's, which would also name the argument)
    with pytest.raises(TypeError, match="integrator must be a lagnet AbstractIntegrator"):
        rollout(CARTPOLE, "rk4", Q0, QD0, jnp.zeros((5, 1)), 0.02)


# --- jit, vmap, float32 -------------------------------------------------------------------------------------


def test_compiles_once_per_shape():
    traces = []

    class Counting(AbstractDynamics):
        n_dof = 1
        n_inputs = 1
        velocity_dependent = False

        def acceleration(self, q, qd, u):
            traces.append(None)  # runs only while tracing
            return -jnp.sin(q) + u

    model = Counting()
    rollout(model, Leapfrog(), jnp.ones(1), jnp.zeros(1), jnp.zeros((10, 1)), 0.1)
    n = len(traces)
    rollout(model, Leapfrog(), 2 * jnp.ones(1), jnp.ones(1), jnp.ones((10, 1)), 0.3)
    rollout(model, Leapfrog(), jnp.ones(1), jnp.zeros(1), jnp.zeros((10, 1)), jnp.full(10, 0.2))
    assert len(traces) == n  # scalar and (steps,) dt share the traced (steps,) array
    rollout(model, Leapfrog(), jnp.ones(1), jnp.zeros(1), jnp.zeros((11, 1)), 0.1)
    assert len(traces) > n  # a new shape compiles again


@pytest.mark.parametrize("name", list(INTEGRATORS))
def test_vmap_and_jit_match_single_rollouts(name):
    integrator = INTEGRATORS[name]
    rng = np.random.default_rng(3)
    q0s = Q0 + 0.1 * jnp.asarray(rng.normal(size=(3, 2)))
    qd0s = QD0 + 0.1 * jnp.asarray(rng.normal(size=(3, 2)))
    us = jnp.asarray(rng.uniform(-1, 1, (3, 20, 1)))
    batched = jax.jit(jax.vmap(lambda q0, qd0, u: rollout(CARTPOLE, integrator, q0, qd0, u, 0.02)))
    qs, qds = batched(q0s, qd0s, us)
    assert qs.shape == (3, 21, 2)
    for b in (0, 2):
        qs1, qds1 = rollout(CARTPOLE, integrator, q0s[b], qd0s[b], us[b], 0.02)
        np.testing.assert_allclose(qs[b], qs1, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(qds[b], qds1, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", list(INTEGRATORS))
def test_float32(name):
    integrator = INTEGRATORS[name]
    us = _inputs(50)
    sol32 = rollout_solution(
        CARTPOLE,
        integrator,
        Q0.astype(jnp.float32),
        QD0.astype(jnp.float32),
        us.astype(jnp.float32),
        0.02,
    )
    assert sol32.qs.dtype == sol32.qds.dtype == jnp.float32
    assert bool(sol32.ok)
    qs64, qds64 = rollout(CARTPOLE, integrator, Q0, QD0, us, 0.02)
    np.testing.assert_allclose(sol32.qs, qs64, atol=1e-4)
    np.testing.assert_allclose(sol32.qds, qds64, atol=2e-3)


# --- gradients ----------------------------------------------------------------------------------------------


def _loss_and_fd(model, integrator, q0, qd0, us, dt):
    """The 30-step rollout loss of (q0, q̇0, model parameters) as a function of one flat vector."""
    params, static = eqx.partition(model, eqx.is_inexact_array)
    flat, unravel = ravel_pytree((q0, qd0, params))
    weights = jnp.linspace(0.5, 1.5, 31)[:, None]

    def loss(theta):
        q0_, qd0_, p = unravel(theta)
        qs, qds = rollout(eqx.combine(p, static), integrator, q0_, qd0_, us, dt)
        return jnp.sum(weights * qs**2) + 0.1 * jnp.sum(weights * jnp.sin(qds))

    return loss, flat


_GRAD_CASES = {
    "cartpole": (CARTPOLE, Q0, QD0, _inputs(30, seed=4), 0.02),
    "pendulum": (
        Pendulum(mass=1.2, length=0.9, g=1.1),
        jnp.array([2.0]),
        jnp.array([0.1]),
        _inputs(30),
        0.1,
    ),
}


# Every integrator on the forced, damped (velocity-dependent) cart-pole; the q-only code paths (explicit
# leapfrog and central difference with the zero-order-hold acceleration reuse) on the pendulum.
_GRAD_RUNS = [("cartpole", name) for name in INTEGRATORS] + [
    ("pendulum", name) for name in ("Leapfrog", "Newmark(0,1/2)", "Newmark(1/4,1/2)", "Variational")
]


@pytest.mark.parametrize(("system", "name"), _GRAD_RUNS)
def test_gradients_match_finite_differences(system, name):
    loss, theta = _loss_and_fd(_GRAD_CASES[system][0], INTEGRATORS[name], *_GRAD_CASES[system][1:])
    grad = jax.jit(jax.grad(loss))(theta)
    # Central differences in one vmapped call. The step is small because the pole's damping (0.002, acting through
    # the pole's inertia 1.3e-3) has a large third derivative: FD truncation is ~2e-7 at 1e-6, ~2e-9 at 1e-7.
    eps = 1e-7 * (1.0 + jnp.abs(theta))
    basis = jnp.eye(theta.size) * eps[:, None]
    f = jax.jit(jax.vmap(loss))
    fd = (f(theta + basis) - f(theta - basis)) / (2 * eps)
    assert relative_error(grad, fd) < 1e-6, (name, relative_error(grad, fd))
    # The initial state and every parameter: the cart-pole's 5, its two viscous terms and their scale; the
    # pendulum's 4 (mass, centre of mass, inertia, g).
    assert theta.size == (12 if system == "cartpole" else 6)


# --- windows ------------------------------------------------------------------------------------------------


def _window_rollouts(model, integrator, windows, dt=None):
    """Every window of a `WindowDataset` batch rolled out from its first state: one vmapped `rollout`."""

    def one(w):
        return rollout(model, integrator, w.q[0], w.qd[0], w.u, w.dt if dt is None else dt)

    return jax.vmap(one)(windows)


def _recorded(T, seed=5):
    """A recorded trajectory of T steps (noisy positions, jittered steps) and its `make_windows` path."""
    t = np.concatenate(
        [[0.0], np.cumsum(0.02 + 0.003 * np.random.default_rng(seed).uniform(-1, 1, T))]
    )
    us = _inputs(T)
    qs, qds = rollout(CARTPOLE, RK4(), Q0, QD0, us, jnp.asarray(np.diff(t)))
    noisy = qs + 1e-3 * jnp.asarray(np.random.default_rng(seed + 1).normal(size=qs.shape))
    # A trajectory records an input at every sample; the last one is never stepped with.
    u = np.concatenate([np.asarray(us), np.zeros((1, 1))])
    return Trajectory(
        t=t, q=np.asarray(noisy), qd=np.asarray(qds), u=u, coordinate_names=("x", "phi"),
        input_names=("force",), angles=(False, True),
    )  # fmt: skip


def test_window_rollouts_match_single_rollouts():
    # Training's path: the data's windows (`make_windows`), each rolled out by the one `rollout`, vmapped.
    T, horizon, stride = 23, 5, 2
    traj = _recorded(T)
    ds = make_windows(traj, horizon, stride=stride)
    W = (T - horizon) // stride + 1
    assert len(ds) == W
    windows = ds.all()
    assert windows.q.shape == windows.qd.shape == (W, horizon + 1, 2)
    pred_qs, pred_qds = _window_rollouts(CARTPOLE, Leapfrog(), windows)
    assert pred_qs.shape == pred_qds.shape == (W, horizon + 1, 2)
    for w in range(W):  # the targets are the recorded rows s … s + horizon
        s = w * stride
        np.testing.assert_array_equal(windows.q[w], traj.q[s : s + horizon + 1])
        np.testing.assert_array_equal(windows.dt[w], traj.dt[s : s + horizon])
    for w in (0, 3, W - 1):
        s = w * stride
        q1, qd1 = rollout(
            CARTPOLE,
            Leapfrog(),
            traj.q[s],
            traj.qd[s],
            traj.u[s : s + horizon],
            traj.dt[s : s + horizon],
        )
        np.testing.assert_allclose(pred_qs[w], q1, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(pred_qds[w], qd1, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(pred_qs[:, 0], traj.q[: T - horizon + 1 : stride])
    # a scalar dt, and gradients flow through the windows (training)
    every = make_windows(traj, horizon).all()
    g = jax.grad(lambda m: jnp.sum(_window_rollouts(m, RK4(), every, 0.02)[0] ** 2))(CARTPOLE)
    assert np.isfinite(float(g.system.length))


def test_window_rollout_errors():
    traj = _recorded(10)
    with pytest.raises(ValueError, match="too few for a window of k=11"):
        make_windows(traj, 11)
    windows = make_windows(traj, 3).all()
    short = eqx.tree_at(lambda w: w.u, windows, windows.u[:, :2])
    with pytest.raises(ValueError, match="inconsistent numbers of steps"):
        _window_rollouts(CARTPOLE, RK4(), short)


# --- adaptive reference -------------------------------------------------------------------------------------


def test_diffrax_reference_matches_scipy():
    us = jnp.repeat(_inputs(10), 4, axis=0)  # piecewise constant on 0.04 s segments
    q_ref, qd_ref = reference_rollout(CARTPOLE, Q0, QD0, us, 0.01)
    for solver in (diffrax.Tsit5(), diffrax.Kvaerno5()):
        reference = DiffraxReference(solver, rtol=1e-11, atol=1e-11)
        sol = rollout_solution(CARTPOLE, reference, Q0, QD0, us, 0.01)
        assert bool(sol.ok)
        assert float(jnp.max(jnp.abs(sol.qs - q_ref))) < 1e-8, solver
        assert float(jnp.max(jnp.abs(sol.qds - qd_ref))) < 1e-7, solver
    # the one-line comparison of a fixed-step method against the reference
    qs, _ = rollout(CARTPOLE, RK4(), Q0, QD0, us, 0.01)
    qs_ref, _ = rollout(
        CARTPOLE, DiffraxReference(diffrax.Dopri8(), 1e-12, 1e-12), Q0, QD0, us, 0.01
    )
    assert 0 < float(jnp.max(jnp.abs(qs - qs_ref))) < 1e-5


def test_diffrax_reference_reports_failure():
    reference = DiffraxReference(diffrax.Tsit5(), rtol=1e-12, atol=1e-12, max_steps=2)
    sol = rollout_solution(CARTPOLE, reference, Q0, QD0, _inputs(5), 0.1)
    assert not bool(sol.ok) and int(sol.failed_step) == 0

"""Control: linearisation, LQR on the known cart-pole, shooting MPC, dynamics of a model."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from helpers import random_cartpole_pinode

from lagnet.control import (
    Dynamics,
    ShootingMPC,
    closed_loop_stable,
    dlqr,
    find_equilibrium,
    linearise,
    lqr,
)
from lagnet.integrators import RK4
from lagnet.models import PINODE
from lagnet.systems import CartPole, Pendulum

UPRIGHT = jnp.array([0.0, jnp.pi, 0.0, 0.0])


def cartpole_dynamics():
    return Dynamics(PINODE(CartPole()), RK4(), 0.02)


def test_linearisation_matches_finite_differences():
    dyn = cartpole_dynamics()
    x = jnp.array([0.1, 2.5, -0.3, 1.2])
    u = jnp.array([0.4])
    for fn in (dyn.f, dyn.step):
        a, b = linearise(fn, x, u)
        eps = 1e-6
        fd_a = jnp.stack(
            [(fn(x + eps * e, u) - fn(x - eps * e, u)) / (2 * eps) for e in jnp.eye(4)], axis=1
        )
        fd_b = ((fn(x, u + eps) - fn(x, u - eps)) / (2 * eps))[:, None]
        np.testing.assert_allclose(a, fd_a, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(b, fd_b, rtol=1e-6, atol=1e-7)


def test_equilibrium_upright():
    dyn = cartpole_dynamics()
    x, residual = find_equilibrium(dyn, jnp.array([0.05, 3.0, 0.1, -0.2]), jnp.zeros(1))
    assert residual < 1e-9
    np.testing.assert_allclose(x[1], jnp.pi, atol=1e-9)
    np.testing.assert_allclose(x[2:], 0.0, atol=1e-9)


def simulate(dyn, x0, policy, steps):
    def body(x, _):
        u = policy(x)
        return dyn.step(x, u), (x, u)

    return jax.lax.scan(body, x0, None, length=steps)


def test_lqr_stabilises_the_known_cartpole():
    dyn = cartpole_dynamics()
    q, r = jnp.diag(jnp.array([10.0, 10.0, 1.0, 1.0])), jnp.eye(1)
    a, b = linearise(dyn.f, UPRIGHT, jnp.zeros(1))
    k, _ = lqr(a, b, q, r)
    assert closed_loop_stable(a, b, k, discrete=False)
    ad, bd = linearise(dyn.step, UPRIGHT, jnp.zeros(1))
    kd, _ = dlqr(ad, bd, q * dyn.dt, r * dyn.dt)
    assert closed_loop_stable(ad, bd, kd, discrete=True)
    for gain in (jnp.asarray(k), jnp.asarray(kd)):
        for tilt in (-0.25, 0.1, 0.3):
            x0 = UPRIGHT + jnp.array([0.0, tilt, 0.0, 0.0])
            x_end, (xs, us) = simulate(dyn, x0, lambda x, g=gain: -g @ (x - UPRIGHT), 300)
            assert jnp.all(jnp.abs(x_end - UPRIGHT) < 1e-3), (tilt, x_end)


def test_mpc_lowers_the_cost_and_batches():
    dyn = Dynamics(PINODE(Pendulum()), RK4(), 0.1)
    target = jnp.array([0.0, 0.0])  # bring a swinging pendulum to rest

    def stage(x, u):
        return (1 - jnp.cos(x[0] - target[0])) + 0.1 * x[1] ** 2 + 0.01 * u[0] ** 2

    def terminal(x):
        return 10 * (1 - jnp.cos(x[0] - target[0])) + x[1] ** 2

    mpc = ShootingMPC(dyn, stage, terminal, horizon=30, iterations=60, learning_rate=0.2, u_max=0.6)
    x0 = jnp.array([1.2, 0.0])
    v0 = 0.1 * jax.random.normal(jax.random.key(0), (30, 1))
    v, cost = eqx.filter_jit(mpc.solve)(x0, v0)
    assert cost < 0.5 * mpc.cost(v0, x0)
    # In closed loop (receding horizon, warm-started by the shifted solution) the applied torques, bounded by
    # u_max, bring the undamped pendulum (whose energy is otherwise conserved) nearly to rest.
    control = eqx.filter_jit(mpc.control)
    x, v, applied = x0, v0, []
    for _ in range(40):
        u, v, _ = control(x, v)
        applied.append(float(u[0]))
        x = dyn.step(x, u)

    def energy(x):
        return (1 - jnp.cos(x[0])) + 0.5 * x[1] ** 2

    assert energy(x) < 0.05 * energy(x0)
    assert 0.5 < max(abs(a) for a in applied) <= 0.6  # the bound is reached and respected
    assert applied[0] * float(dyn.step(x0, jnp.zeros(1))[1]) > 0  # first, push towards θ = 0
    # Batched over initial states with vmap.
    xs = jnp.array([[0.0, 0.0], [0.5, 0.0], [-0.5, 0.2]])
    vb, costs = jax.vmap(mpc.solve)(xs, jnp.broadcast_to(v0, (3, 30, 1)))
    assert vb.shape == (3, 30, 1) and costs.shape == (3,)


def test_dynamics_step_matches_rollout_and_grad():
    dyn = cartpole_dynamics()
    x0 = jnp.array([0.0, 0.5, 0.0, 0.0])
    us = jnp.linspace(-1, 1, 10)[:, None]
    xs = dyn.rollout(x0, us)
    x = x0
    for k in range(10):
        x = dyn.step(x, us[k])
        np.testing.assert_array_equal(x, xs[k + 1])
    g = jax.grad(lambda u: jnp.sum(dyn.rollout(x0, u)[-1] ** 2))(us)
    assert g.shape == us.shape and jnp.all(jnp.isfinite(g))


def test_history_inputs_shift_in_the_past():
    dyn = Dynamics(PINODE(CartPole(), input_history=2), RK4(), 0.02)
    us = jnp.arange(1.0, 5.0)[:, None]
    np.testing.assert_array_equal(
        dyn.history_inputs(us, jnp.array([[-1.0], [-2.0]]))[1], [2.0, 1.0, -1.0]
    )
    np.testing.assert_array_equal(dyn.history_inputs(us, "held")[0], [1.0, 1.0, 1.0])
    # The MPC plans through the history: with a network that sees past inputs, the cost depends on them.
    dyn = Dynamics(random_cartpole_pinode(input_history=2), RK4(), 0.02)
    mpc = ShootingMPC(dyn, lambda x, u: jnp.sum(x**2), lambda x: 0.0, horizon=5, iterations=1)
    v = jnp.zeros((5, 1))
    x0 = UPRIGHT
    assert mpc.cost(v, x0, jnp.array([[5.0], [5.0]])) != mpc.cost(v, x0, jnp.zeros((2, 1)))


def test_trim_solves_for_the_input_and_averaged_linearisation():
    """A constant residual force on the cart: holding the pole upright at rest needs u* = −that force."""
    from lagnet.control import linearise_averaged, trim
    from lagnet.systems import JointFriction

    class Pushed(PINODE):
        def nonconservative_force(self, q, qd, u):
            return jnp.array([0.3, 0.0])

    dyn = Dynamics(Pushed(CartPole()), RK4(), 0.02)
    free = np.array([False, True, False, False])
    x, u, residual = trim(dyn, UPRIGHT + jnp.array([0.0, 0.05, 0.0, 0.0]), jnp.zeros(1), free)
    assert residual < 1e-10
    np.testing.assert_allclose(u, [-0.3], atol=1e-10)
    np.testing.assert_allclose(x[1], jnp.pi, atol=1e-10)
    # Zero spread: the averaged Jacobians are the point Jacobians; with friction they smooth the c/ε slope.
    a, b = linearise(dyn.f, UPRIGHT, jnp.zeros(1))
    a0, b0 = linearise_averaged(dyn.f, UPRIGHT, jnp.zeros(1), 0.0, key=jax.random.key(0), samples=4)
    np.testing.assert_allclose(a0, a, atol=1e-12)
    np.testing.assert_allclose(b0, b, atol=1e-12)
    rough = Dynamics(PINODE(CartPole(), friction=JointFriction(2, coulomb={0: 0.2})), RK4(), 0.02)
    spread = jnp.array([0.0, 0.0, 0.2, 0.0])
    at_zero = linearise(rough.f, UPRIGHT, jnp.zeros(1))[0][2, 2]
    averaged = linearise_averaged(rough.f, UPRIGHT, jnp.zeros(1), spread, key=jax.random.key(1))[0][
        2, 2
    ]
    assert abs(averaged) < 0.2 * abs(at_zero)

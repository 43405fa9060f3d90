"""MPC with hard state bounds, input rate limits and an LQR terminal cost, in closed loop with the true rig."""

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from lagnet.control import ConstrainedMPC, Dynamics, dlqr, linearise, lqr_terminal_cost
from lagnet.integrators import RK4
from lagnet.simulate import CartPoleRig, rig_sampler, run_controller

RIG = CartPoleRig()
DT = RIG.dt
TARGET = 0.45  # beyond the rail bound: the cost pulls the cart into the constraint
RAIL = 0.2
DU = 2.0  # N per sample


def stage_cost(x, u):
    return 20 * (x[0] - TARGET) ** 2 + 0.1 * x[2] ** 2 + 0.01 * u[0] ** 2


def terminal_cost(x):
    return 20 * (x[0] - TARGET) ** 2 + 0.5 * x[2] ** 2


def make_mpc(rail: float, du: float = np.inf) -> ConstrainedMPC:
    dyn = Dynamics(RIG.known_system(), RK4(), DT)
    inf = np.inf
    return ConstrainedMPC(
        dyn,
        stage_cost,
        terminal_cost,
        horizon=15,
        iterations=10,
        rounds=3,
        u_min=-RIG.force_limit,
        u_max=RIG.force_limit,
        du_max=du,
        x_min=jnp.array([-rail, -inf, -inf, -inf]),
        x_max=jnp.array([rail, inf, inf, inf]),
    )


@eqx.filter_jit
def control(mpc, x, plan, u_prev, lam):
    return mpc.control(x, plan, u_prev, lam)


def run(mpc, samples=40):
    def controller(y, memory):
        plan, u_prev, lam = memory
        u, plan, lam, sol = control(mpc, jnp.asarray(y), plan, u_prev, lam)
        return u, (plan, u, lam), float(sol.violation)

    # Multipliers from zeros (None first and an array after would compile twice).
    memory = (jnp.zeros((mpc.horizon, 1)), jnp.zeros(1), jnp.zeros((mpc.horizon, 8)))
    return run_controller(
        rig_sampler(RIG), controller, memory, np.zeros(4), samples=samples, u_limit=RIG.force_limit
    )


def test_rail_bound_holds_where_the_unconstrained_mpc_leaves_it():
    # The bounds are arrays (traced): both controllers run one compiled program.
    free = run(make_mpc(np.inf, DU))
    bound = run(make_mpc(RAIL, DU))
    assert free.xs[:, 0].max() > RAIL + 0.1
    assert bound.xs[:, 0].max() < RAIL + 0.01
    # ... and it goes to the bound, not timidly short of it.
    assert bound.xs[-10:, 0].min() > RAIL - 0.03
    # The rate limit holds on the commands applied (from rest: u_{−1} = 0).
    for r in (free, bound):
        assert np.max(np.abs(np.diff(r.us[:, 0], prepend=0.0))) <= DU + 1e-9
    assert np.max(np.abs(np.diff(free.us[:, 0]))) > 0.9 * DU  # and binds
    assert bound.solve_times.shape == (40,) and np.all(bound.solve_times > 0)


def test_feasible_map_keeps_box_and_rate_limits():
    mpc = make_mpc(RAIL, 0.5)
    us = jnp.array([[3.0], [-8.0], [20.0], [9.5], [9.9], [-20.0]])
    out = mpc.feasible(us, jnp.array([12.0]))
    steps = np.diff(
        np.concatenate([[10.0], np.asarray(out[:, 0])])
    )  # u_{−1} clipped into the box first
    assert np.all(np.abs(steps) <= 0.5 + 1e-12)
    assert np.all(np.abs(out) <= RIG.force_limit)
    np.testing.assert_allclose(out[:, 0], [9.5, 9.0, 9.5, 9.5, 9.9, 9.4])
    # A plan already feasible is left alone.
    np.testing.assert_array_equal(mpc.feasible(out, jnp.array([10.0])), out)


def test_lqr_terminal_cost_is_the_riccati_cost_to_go():
    dyn = Dynamics(RIG.known_system(), RK4(), DT)
    x_up = jnp.array([0.0, jnp.pi, 0.0, 0.0])
    q, r = np.diag([10.0, 50.0, 1.0, 1.0]), np.eye(1)
    vf, p, k = lqr_terminal_cost(dyn, x_up, jnp.zeros(1), q, r)
    a, b = linearise(dyn.step, x_up, jnp.zeros(1))
    k_ref, p_ref = dlqr(a, b, q, r)
    np.testing.assert_allclose(p, p_ref)
    np.testing.assert_allclose(k, k_ref)
    # P solves the Riccati equation: V(x) = δxᵀQδx + δuᵀRδu + V(A δx + B δu) with δu = −K δx.
    d = jnp.array([0.05, 0.1, -0.2, 0.3])
    du = -k @ d
    lhs = vf(x_up + d)
    rhs = d @ q @ d + du @ r @ du + vf(x_up + a @ d + b @ du)
    np.testing.assert_allclose(lhs, rhs, rtol=1e-9)
    # Angles are compared modulo 2π: the upright reached the other way round costs nothing.
    np.testing.assert_allclose(vf(x_up + jnp.array([0.0, 2 * jnp.pi, 0.0, 0.0])), 0.0, atol=1e-18)
    assert vf(x_up + d) > 0


def test_run_controller_sees_through_the_sensors():
    from lagnet.simulate import OpticalEncoder

    encoder = OpticalEncoder(2000, wrap_low=None)

    def observe(x, rng):
        return np.array(
            [x[0] + 1e-3 * rng.standard_normal(), encoder.measure(x[1:2])[0], x[2], x[3]]
        )

    def pd(y, memory):
        return np.array([-20.0 * y[0] - 5.0 * y[2]]), memory + 1, y[1]

    out = run_controller(
        rig_sampler(RIG), pd, 0, np.array([0.1, 0.2, 0.0, 0.0]), samples=10, observe=observe
    )
    # The controller saw the encoder's counts, not the true angle; the rig moved by the true physics.
    step = 2 * np.pi / 2000
    np.testing.assert_allclose(
        out.observations[:, 1] / step, np.round(out.observations[:, 1] / step)
    )
    np.testing.assert_array_equal(out.observations[:, 1], encoder.measure(out.xs[:-1, 1]))
    assert np.any(out.observations[:, 0] != out.xs[:-1, 0])
    np.testing.assert_array_equal(out.info, out.observations[:, 1])
    assert out.xs[-1, 0] < 0.1  # pulled towards the middle
    assert out.solve_times.shape == (10,)

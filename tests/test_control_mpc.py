"""MPC variants: projected (box-bounded) solves, the warm-start shift, batched solves, a fixed iteration budget."""

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
import scipy.optimize

from lagnet.control import Dynamics, MPCSolution, ProjectedMPC, ShootingMPC, shift
from lagnet.integrators import RK4
from lagnet.models import PINODE
from lagnet.systems import Pendulum

H = 12
U_MAX = 0.4


def stage(x, u):
    # Bring a swinging pendulum to rest at the bottom; a small input weight so the bound is active.
    return (1 - jnp.cos(x[0])) + 0.1 * x[1] ** 2 + 0.01 * u[0] ** 2


def terminal(x):
    return 10 * (1 - jnp.cos(x[0])) + x[1] ** 2


@pytest.fixture(scope="module")
def mpc():
    dyn = Dynamics(PINODE(Pendulum()), RK4(), 0.1)
    return ProjectedMPC(
        dyn,
        stage,
        terminal,
        horizon=H,
        iterations=60,
        u_min=-U_MAX,
        u_max=U_MAX,
        learning_rate=0.05,
    )


@pytest.fixture(scope="module")
def solve(mpc):
    return eqx.filter_jit(lambda m, x0, us: m.solve(x0, us))


X0 = jnp.array([1.0, 0.5])


def test_projected_solve_respects_bounds_and_reaches_the_box_optimum(mpc, solve):
    start = jnp.full((H, 1), 2.0)  # outside the box: projected before the first step
    sol = solve(mpc, X0, start)
    assert isinstance(sol, MPCSolution) and sol.us.shape == (H, 1) and sol.costs.shape == (60,)
    assert jnp.all(jnp.abs(sol.us) <= U_MAX)
    # The bound is active: an unbounded solution pushes harder than U_MAX on this swing.
    assert jnp.max(jnp.abs(sol.us)) == pytest.approx(U_MAX)
    np.testing.assert_allclose(sol.costs[0], mpc.cost(mpc.project(start), X0), rtol=1e-12)
    assert sol.cost <= jnp.min(sol.costs) and sol.cost < 0.7 * sol.costs[0]
    # Reference: L-BFGS-B (scipy) on the same cost and gradient, converged tightly.
    fg = jax.jit(jax.value_and_grad(lambda u: mpc.cost(u.reshape(H, 1), X0)))
    ref = scipy.optimize.minimize(
        lambda u: tuple(np.asarray(a, float) for a in fg(jnp.asarray(u))),
        np.zeros(H),
        jac=True,
        method="L-BFGS-B",
        bounds=[(-U_MAX, U_MAX)] * H,
        options={"ftol": 1e-14, "gtol": 1e-10},
    )
    assert sol.cost == pytest.approx(ref.fun, rel=2e-3)


def test_projected_lbfgs_respects_bounds_and_lowers_the_cost(mpc):
    lbfgs = dataclasses.replace(mpc, optimiser=optax.lbfgs(), iterations=15)
    sol = eqx.filter_jit(lbfgs.solve)(X0, jnp.zeros((H, 1)))
    assert jnp.all(jnp.abs(sol.us) <= U_MAX)
    assert sol.cost < 0.85 * sol.costs[0]


def test_best_iterate_is_never_worse_than_the_warm_start(mpc):
    # A step far too large: the iterates bounce between the bounds, the returned plan is still the best seen.
    wild = dataclasses.replace(mpc, learning_rate=50.0)
    start = jnp.zeros((H, 1))
    sol = eqx.filter_jit(wild.solve)(X0, start)
    assert sol.cost <= wild.cost(start, X0)
    np.testing.assert_allclose(sol.cost, wild.cost(sol.us, X0), rtol=1e-12)


def test_warm_start_shift_and_control(mpc, solve):
    plan = jnp.arange(1.0, 5.0)[:, None]
    np.testing.assert_array_equal(shift(plan)[:, 0], [2.0, 3.0, 4.0, 4.0])
    u0, nxt, sol = eqx.filter_jit(mpc.control)(X0, jnp.zeros((H, 1)))
    np.testing.assert_array_equal(u0, sol.us[0])
    np.testing.assert_array_equal(nxt, shift(sol.us))
    # Warm-started from the shifted plan one step later, the solver starts cheaper than from zeros.
    x1 = mpc.dynamics.step(X0, u0)
    assert mpc.cost(nxt, x1) < 0.9 * mpc.cost(jnp.zeros((H, 1)), x1)
    # ShootingMPC keeps its API: (u, shifted v, cost).
    shooting = ShootingMPC(mpc.dynamics, stage, terminal, horizon=H, iterations=3, u_max=U_MAX)
    u, v, c = shooting.control(X0, jnp.zeros((H, 1)))
    assert u.shape == (1,) and v.shape == (H, 1) and c.shape == ()


def test_batched_solve_equals_per_state_solves(mpc, solve):
    x0s = jnp.array([[1.0, 0.5], [-0.7, 0.0], [0.2, -1.5]])
    starts = 0.1 * jax.random.normal(jax.random.key(1), (3, H, 1))
    batch = eqx.filter_jit(mpc.solve_batch)(x0s, starts)
    assert batch.us.shape == (3, H, 1) and batch.cost.shape == (3,)
    for i in range(3):
        one = solve(mpc, x0s[i], starts[i])
        np.testing.assert_allclose(batch.us[i], one.us, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(batch.cost[i], one.cost, rtol=1e-9)
    # One shared warm start for every state.
    shared = mpc.solve_batch(x0s, starts[0])
    np.testing.assert_allclose(shared.us[0], solve(mpc, x0s[0], starts[0]).us, atol=1e-12)


def test_fixed_budget_jit_matches_eager(mpc, solve):
    short = dataclasses.replace(mpc, iterations=4)
    eager = short.solve(X0, jnp.zeros((H, 1)))
    jitted = eqx.filter_jit(short.solve)(X0, jnp.zeros((H, 1)))
    assert eager.costs.shape == (4,)
    np.testing.assert_allclose(jitted.us, eager.us, rtol=1e-10, atol=1e-12)


def test_invalid_bounds_and_budget_raise():
    dyn = Dynamics(PINODE(Pendulum()), RK4(), 0.1)
    with pytest.raises(ValueError, match="u_min must be <= u_max"):
        ProjectedMPC(dyn, stage, terminal, horizon=H, u_min=1.0, u_max=-1.0)
    with pytest.raises(ValueError, match="iterations must be >= 1"):
        ProjectedMPC(dyn, stage, terminal, horizon=H, iterations=0)
    with pytest.raises(ValueError, match="max_evaluations must be >= 2"):
        ProjectedMPC(dyn, stage, terminal, horizon=H, max_evaluations=1)


def counting_stage(calls):
    def stage_counted(x, u):
        jax.debug.callback(lambda _: calls.append(1), x[0])
        return stage(x, u)

    return stage_counted


def test_evaluation_budget_bounds_the_solve_and_counts_every_evaluation(mpc):
    calls = []
    search = optax.scale_by_zoom_linesearch(max_linesearch_steps=4, initial_guess_strategy="one")
    base = dataclasses.replace(
        mpc,
        stage_cost=counting_stage(calls),
        optimiser=optax.lbfgs(linesearch=search),
        iterations=10,
    )
    start = jnp.full((H, 1), 0.3)  # the bound is active from the first step

    def run(budget):
        calls.clear()
        sol = jax.block_until_ready(
            eqx.filter_jit(dataclasses.replace(base, max_evaluations=budget).solve)(X0, start)
        )
        # The stage cost runs once per step of the horizon in each evaluation of J.
        assert len(calls) == H * int(sol.evaluations)
        return sol

    free, capped, loose = run(None), run(5), run(1000)
    # No iteration starts once 5 are spent: at most max_evaluations + max_linesearch_steps in all.
    assert 5 <= int(capped.evaluations) <= 5 + 4 < int(free.evaluations)
    assert jnp.all(jnp.abs(capped.us) <= U_MAX) and capped.cost < capped.costs[0]
    assert free.cost <= capped.cost
    # A budget never reached changes nothing.
    assert int(loose.evaluations) == int(free.evaluations)
    np.testing.assert_allclose(loose.us, free.us, rtol=1e-12, atol=1e-14)
    # The J reused from the line search is the returned plan's own.
    for sol in (free, capped):
        np.testing.assert_allclose(sol.cost, base.cost(sol.us, X0), rtol=1e-12)

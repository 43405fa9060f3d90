"""Box-constrained iLQR (`lagnet.control.ilqr`): exact on linear–quadratic problems, inside its box, and a swing-up
where the LQR alone fails."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from lagnet.control import Dynamics, LQRController, SystemPlant, run_task, task
from lagnet.control.ilqr import ILQR, ILQRController
from lagnet.integrators import RK4

A = jnp.array([[1.0, 0.1], [0.0, 1.0]])
B = jnp.array([[0.005], [0.1]])


def linear_problem(u_max: float, regularisation: float = 0.0) -> ILQR:
    return ILQR(
        step=lambda x, u: A @ x + B @ u,
        stage=lambda x, u: x @ x + 0.1 * u @ u,
        terminal=lambda x: 10.0 * x @ x,
        u_min=jnp.array([-u_max]),
        u_max=jnp.array([u_max]),
        iterations=1,
        regularisation=regularisation,
    )


def test_one_iteration_solves_a_linear_quadratic_problem():
    # Linear dynamics and a quadratic cost: the Riccati step is Newton's step on an exact quadratic, so one
    # iteration (full step) lands on the optimum, where the cost's gradient in the inputs vanishes.
    solver = linear_problem(u_max=1e6)
    x0 = jnp.array([1.0, -0.5])
    us, cost = solver.solve(x0, jnp.zeros((30, 1)))
    grad = jax.grad(lambda us: solver.total(solver.rollout(x0, us), us))(us)
    assert np.max(np.abs(grad)) < 1e-4 * float(cost)
    assert cost < solver.total(solver.rollout(x0, jnp.zeros((30, 1))), jnp.zeros((30, 1)))


def test_the_plan_stays_in_its_box_and_the_cost_never_rises():
    solver = dataclasses.replace(linear_problem(u_max=0.5, regularisation=1e-3), iterations=5)
    x0 = jnp.array([2.0, 1.0])
    start = 0.4 * jnp.ones((30, 1))
    us, cost = solver.solve(x0, start)
    assert np.all(np.abs(np.asarray(us)) <= 0.5 + 1e-6)
    assert np.any(np.isclose(np.abs(np.asarray(us)), 0.5))  # the bound is active: the box matters
    assert cost <= solver.total(solver.rollout(x0, start), start)


def test_ilqr_swings_up_the_torque_limited_pendulum_that_lqr_cannot():
    swing = dataclasses.replace(task("pendulum-swingup"), seconds=5.0, hold=1.0)
    dt = 0.02
    model = Dynamics(swing.system, RK4(), dt)
    plant = SystemPlant(swing.system, dt, swing.u_max, substeps=4)
    hanging = np.array([[0.05, 0.0]])
    ilqr = ILQRController(model, swing, dt, horizon=80, iterations=3, first_iterations=50)
    assert run_task(ilqr, plant, swing, hanging).success.all()
    assert not run_task(LQRController.design(model, swing, dt), plant, swing, hanging).success.any()

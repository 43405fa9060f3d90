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


def test_a_wrapped_angle_cost_keeps_the_backward_pass_definite_on_the_acrobot():
    # From hanging, the wrapped cost 2(1 − cos d) curves downward (d ≈ π); through the acrobot's unstable
    # dynamics an indefinite curvature would make Q_uu indefinite everywhere. Its positive part keeps every
    # Q_uu definite, and the iterations descend.
    from lagnet.control.ilqr import smooth_cost

    t = task("acrobot-swingup")
    dyn = Dynamics(t.system, RK4(), 0.02)
    stage, error = smooth_cost(t, running=0.01)
    q = jnp.asarray(t.q)
    solver = ILQR(
        step=lambda x, u: dyn.step(x, u, 0.02),
        stage=stage,
        terminal=lambda x: 10.0 * error(x) @ q @ error(x),
        u_min=jnp.asarray(-t.u_max),
        u_max=jnp.asarray(t.u_max),
        iterations=20,
    )
    x0 = jnp.array([0.02, 0.0, 0.0, 0.0])
    plan = jnp.asarray(3.0 * np.random.default_rng(0).standard_normal((100, 1)))
    xs = solver.rollout(x0, plan)
    assert bool(solver.backward(xs, plan)[2])
    _, cost = solver.solve(x0, plan)
    assert cost < 0.5 * solver.total(xs, plan)


def test_a_steep_friction_at_rest_gets_the_substeps_that_keep_rk4_stable():
    from lagnet.control.ilqr import STABLE_STEP, stable_substeps
    from lagnet.control.tasks import dfki_plant

    t = task("pendubot-swingup")
    assert stable_substeps(Dynamics(t.system, RK4(), 0.01), t, 0.01) == 1
    # The lab's Coulomb friction, smoothed over 0.01 rad/s: a fast mode at rest (spectral radius ≈ 8·10² s⁻¹).
    stiff = Dynamics(dfki_plant("shoulder"), RK4(), 0.01)
    n = stable_substeps(stiff, t, 0.01)
    jac = jax.jacfwd(stiff.f)(jnp.asarray(t.goal), jnp.asarray(t.u_goal))
    rho = np.max(np.abs(np.linalg.eigvals(np.asarray(jac))))
    assert n > 1 and 0.01 / n * rho <= STABLE_STEP < 0.01 / (n - 1) * rho


def test_a_float32_reading_drives_a_float64_model():
    # A plant's raw reading (Gymnasium observations are float32) into a float64 model: planned in the model's
    # precision, not a solver that fails on its carried types.
    t = dataclasses.replace(task("pendulum-swingup"), seconds=0.2, hold=0.1)
    model = Dynamics(t.system, RK4(), 0.02)
    ilqr = ILQRController(model, t, 0.02, horizon=10, iterations=1, first_iterations=2)
    x = np.array([0.1, 0.0], np.float32)
    ilqr.reset(x)
    u = ilqr(x, 0.0)
    assert ilqr.dtype == jnp.float64 and u.dtype == jnp.float64 and np.isfinite(u).all()


def test_the_energy_term_swings_up_the_pendulum_rig_that_the_quadratic_cost_leaves_part_way_up():
    # On the rig (Coulomb and static friction, a torque offset, read through its encoder) the quadratic cost's
    # plan on the known model stalls, pushing against gravity part-way up; paying for the energy error pumps on.
    from lagnet.control import task_evaluation

    t = dataclasses.replace(task("pendulum-swingup"), seconds=6.0, hold=1.0)
    model = Dynamics(t.system, RK4(), 0.01)

    def swung_up(energy):
        summary, _ = task_evaluation.evaluate_task(
            model, t, "rig", starts=1, seed=1, options={"energy": energy}
        )
        assert summary["sensing"] == "sensors"
        return summary["success"] == 1

    assert swung_up(300.0) and not swung_up(0.0)


def test_an_energy_term_needs_a_goal_of_another_energy_than_the_start():
    t = dataclasses.replace(task("pendulum-swingup"), goal=np.array([0.0, 0.0]))
    model = Dynamics(t.system, RK4(), 0.02)
    with np.testing.assert_raises_regex(ValueError, "pendulum-swingup: an energy cost"):
        ILQRController(model, t, 0.02, horizon=5, energy=1.0)


def test_the_wall_costs_nothing_inside_half_the_bound_and_grows_quadratically_beyond():
    from lagnet.control.ilqr import _with_wall

    t = task("cartpole-swingup")  # the cart inside ±0.3 m
    stage = _with_wall(lambda x, u: 0.0, t, 100.0)
    u = jnp.zeros(1)
    at = [stage(jnp.array([x, 1.0, 2.0, 3.0]), u) for x in (0.0, 0.15, -0.2, 0.25)]
    np.testing.assert_allclose(at, [0.0, 0.0, 100.0 * 0.05**2, 100.0 * 0.1**2], atol=1e-12)
    with np.testing.assert_raises_regex(ValueError, "pendulum-swingup: a wall cost"):
        _with_wall(lambda x, u: 0.0, task("pendulum-swingup"), 1.0)


def test_a_spread_linearises_the_lqr_over_the_velocities_the_loop_visits():
    # The lab's Coulomb friction smoothed over 0.01 rad/s: at rest its slope is a damping of c / ε that a loop
    # reading velocities of ~0.1 rad/s never sees. With a spread the LQR is that of the averaged linearisation
    # (`linearise_averaged`, the controller's seed as its key); on a smooth system a tiny spread changes nothing.
    from lagnet.control import dlqr, linearise_averaged
    from lagnet.control.tasks import dfki_plant

    t, dt = task("pendubot-swingup"), 0.01
    spread = jnp.array([0.05, 0.05, 0.3, 0.3])

    def controller(model, **options):
        return ILQRController(Dynamics(model, RK4(), dt), t, dt, horizon=5, **options)

    smooth = controller(dfki_plant("shoulder", friction=False))
    tiny = controller(dfki_plant("shoulder", friction=False), spread=1e-6)
    np.testing.assert_allclose(np.asarray(tiny.lqr.k), np.asarray(smooth.lqr.k), rtol=1e-4)
    at_rest = controller(dfki_plant("shoulder"))
    averaged = controller(dfki_plant("shoulder"), spread=spread, seed=3)
    n = averaged.cold.step
    a, b = linearise_averaged(
        n, jnp.asarray(t.goal), jnp.asarray(t.u_goal), spread, key=jax.random.key(3)
    )
    np.testing.assert_allclose(
        np.asarray(averaged.lqr.k), np.asarray(dlqr(a, b, t.q, t.r)[0]), rtol=1e-6
    )
    # The passive joint's velocity damping over one period: near 1 (no damping) when averaged, far from it at
    # rest, where the friction's slope dominates.
    a_rest, _ = jax.jacfwd(n, argnums=(0, 1))(jnp.asarray(t.goal), jnp.asarray(t.u_goal))
    assert abs(1 - float(a[3, 3])) < 0.3 * abs(1 - float(a_rest[3, 3]))
    assert not np.allclose(np.asarray(averaged.lqr.k), np.asarray(at_rest.lqr.k), rtol=0.1)

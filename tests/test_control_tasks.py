"""Plants, tasks and the generic closed loop (`lagnet.control.plant`, `tasks`, `run_task`)."""

import dataclasses
import time

import jax.numpy as jnp
import numpy as np
import pytest

from lagnet.control import Dynamics
from lagnet.control.controllers import IntegralLQRController, LQRController
from lagnet.control.plant import FunctionPlant, GymPlant, PacedPlant, RigPlant, SystemPlant
from lagnet.control.task_loop import run_task
from lagnet.control.tasks import TASKS, Task, TaskMismatch, dfki_plant, holding_input, task
from lagnet.integrators import RK4
from lagnet.simulate import CartPoleRig, PendulumRig, rig_sampler
from lagnet.systems import DoublePendulum, Pendulum

PENDULUM = PendulumRig()
NEAR_UPRIGHT = np.array([[np.pi + 0.2, 0.0], [np.pi - 0.2, 0.0]])


def short(t: Task, seconds: float, hold: float) -> Task:
    return dataclasses.replace(t, seconds=seconds, hold=hold)


def pendulum_lqr(t: Task, dt: float) -> LQRController:
    return LQRController.design(Dynamics(t.system, RK4(), dt), t, dt)


def test_function_plant_steps_clips_and_kicks():
    plant = FunctionPlant(
        lambda x, u: x + np.concatenate([u, u]), n_dof=1, n_inputs=1, dt=0.1, u_max=0.5
    )
    assert np.allclose(plant.reset([1.0, 2.0]), [1.0, 2.0])
    assert np.allclose(plant.step([2.0]), [1.5, 2.5])  # u clipped to 0.5
    plant.perturb([0.0, 1.0])
    assert np.allclose(plant.step([-0.1]), [1.4, 3.4])
    with pytest.raises(ValueError, match=r"reset: the state must be \(q, q̇\) of shape \(2,\)"):
        plant.reset([1.0, 2.0, 3.0])
    bad = FunctionPlant(lambda x, u: x[:1], n_dof=1, n_inputs=1, dt=0.1)
    bad.reset([0.0, 0.0])
    with pytest.raises(ValueError, match="step\\(x, u\\): what it returned"):
        bad.step([0.0])


def test_rig_plant_is_the_rig_stepped_and_read_by_its_sensors():
    x0 = np.array([0.3, -0.5])
    true = RigPlant(PENDULUM, sensors=False)
    sensed = RigPlant(PENDULUM, seed=1)
    assert (true.sensing, sensed.sensing) == ("true", "sensors")
    assert np.allclose(true.u_max, PENDULUM.torque_limit)
    sampler = rig_sampler(PENDULUM)
    x, act = jnp.asarray(x0), sampler.init()
    true.reset(x0)
    sensed.reset(x0)
    step = 2 * np.pi / PENDULUM.encoder_counts
    previous = sensed.reset(x0)[0]
    for u in (0.5, -0.2, 3.0):  # 3.0 beyond the rig's limit: clipped by the actuator either way
        x, act = sampler.sample(x, act, jnp.asarray([u]))
        assert np.allclose(true.step([u]), np.asarray(x), atol=1e-6)
        y = sensed.step([u])
        assert np.allclose(sensed.true_state, np.asarray(x), atol=1e-6)
        # The encoder floors to whole counts; the velocity is the difference of readings over dt.
        assert 0 <= x[0] - y[0] < step + 1e-6
        assert np.isclose(y[1], (y[0] - previous) / PENDULUM.dt)
        previous = y[0]


def test_every_rig_has_its_limits_and_sensors():
    cart = RigPlant(CartPoleRig())
    assert cart.n_dof == 2 and np.allclose(cart.u_max, 10.0)
    y = cart.reset([0.05, np.pi - 0.01, 0.0, 0.0])
    # Cart: the ultrasonic sensor's millimetre steps; the pole: its encoder wrapped to [0, 2π); at rest.
    assert abs(y[0] - 0.05) < 0.01 and 0 <= y[1] < 2 * np.pi and np.allclose(y[2:], 0)


def test_arm_plant_steps_its_seven_joints():
    from lagnet.simulate import ArmRig

    rig = ArmRig()
    plant = RigPlant(rig, sensors=False)
    reach = task("arm-reach")
    assert plant.n_dof == 7 and np.allclose(plant.u_max, rig.torque_limit)
    reach.check(plant.system)
    x0 = reach.start
    plant.reset(x0)
    # Holding the task's input (gravity compensation at the start's pose) keeps the arm nearly still.
    x = plant.step(holding_input(reach.system, x0))
    assert np.max(np.abs(x[:7] - x0[:7])) < 1e-3


def test_gym_pendulum_maps_observation_and_action():
    gymnasium = pytest.importorskip("gymnasium")
    env = gymnasium.make("Pendulum-v1")

    def state(obs):  # Pendulum-v1: θ from upright, (cos θ, sin θ, θ̇); lagnet's θ is from hanging
        return np.array([np.arctan2(obs[1], obs[0]) + np.pi, obs[2]])

    def set_state(env, x):
        env.unwrapped.state = np.array([x[0] - np.pi, x[1]])

    plant = GymPlant(env, state, n_dof=1, dt=0.05, set_state=set_state)
    assert np.allclose(plant.u_max, 2.0)
    x = plant.reset([np.pi + 0.3, 0.1])
    x = plant.step([1.0])
    # Its semi-implicit Euler: θ̇⁺ = θ̇ + (3 g / 2 l sin θ + 3 u / m l²) dt, θ⁺ = θ + θ̇⁺ dt (g = 10, m = l = 1).
    rate = 0.1 + (15 * np.sin(0.3) + 3 * 1.0) * 0.05
    assert np.allclose(x, [np.pi + 0.3 + rate * 0.05, rate], atol=1e-5)
    with pytest.raises(ValueError, match="cannot be placed"):
        GymPlant(env, state, n_dof=1, dt=0.05).reset([0.0, 0.0])
    wrong = GymPlant(env, lambda obs: obs, n_dof=1, dt=0.05)
    with pytest.raises(ValueError, match=r"state\(observation\): what it returned"):
        wrong.reset()

    # A task posed on the env's own pendulum (θ̈ = −15 sin θ + 3 u: m = 1/3, l = 1, g = 15) from Python: LQR
    # balances it from near upright within the env's 2 N m.
    balance = Task(
        "gym-pendulum-balance",
        Pendulum(1 / 3, 1.0, 15.0),
        goal=[np.pi, 0.0],
        q=np.diag([10.0, 1.0]),
        r=np.eye(1),
        u_max=2.0,
        tolerance=[0.05, np.inf],
        hold=1.0,
        seconds=2.0,
        start=[np.pi, 0.0],
    )
    run = run_task(pendulum_lqr(balance, 0.05), plant, balance, NEAR_UPRIGHT)
    assert run.success.all()


def test_integral_action_removes_the_offset_that_a_constant_torque_leaves_the_lqr():
    # Upright against a constant torque the model lacks: the LQR settles where K e balances it, off the goal;
    # the integral of the error grows until the torque is balanced at e = 0.
    t = dataclasses.replace(
        short(task("pendulum-swingup"), seconds=4.0, hold=1.0),
        tolerance=np.array([0.005, np.inf]),
        start=np.array([np.pi, 0.0]),
        start_spread=np.array([0.05, 0.0]),
    )
    dt, offset = 0.01, 0.2
    model = Dynamics(t.system, RK4(), dt)

    def step(x, u):
        return np.asarray(model.step(jnp.asarray(x), jnp.asarray(u) + offset, dt))

    plant = FunctionPlant(step, n_dof=1, n_inputs=1, dt=dt, u_max=t.u_max)
    lqr = run_task(LQRController.design(model, t, dt), plant, t, count=1)
    lqi = run_task(IntegralLQRController.design(model, t, dt, integral=10.0), plant, t, count=1)
    assert abs(lqr.xs[0, -1, 0] - np.pi) > 0.005 and not lqr.success.any()
    assert abs(lqi.xs[0, -1, 0] - np.pi) < 1e-3 and lqi.success.all()


def test_lqr_balances_the_pendulum_rig_from_near_upright_but_cannot_swing_it_up():
    t = short(task("pendulum-swingup"), seconds=3.0, hold=1.0)
    lqr = pendulum_lqr(t, PENDULUM.dt)
    near = run_task(lqr, RigPlant(PENDULUM), t, NEAR_UPRIGHT)
    assert near.success.all() and near.sensing == "sensors"
    median, p99 = near.solve_ms()
    assert 0 < median <= p99
    # From hanging the torque limit (0.6 m g l) cannot lift it: the linear law saturates and fails.
    hanging = run_task(lqr, RigPlant(PENDULUM, sensors=False), t, count=2)
    assert not hanging.success.any() and hanging.sensing == "true"
    # A knock of 4 rad/s at 1 s is beyond what the limited torque can catch.
    knocked = dataclasses.replace(t, knocks=((1.0, [0.0, 4.0]),))
    assert not run_task(lqr, RigPlant(PENDULUM), knocked, NEAR_UPRIGHT[:1]).success.any()


def test_pendubot_lqr_balances_the_known_dfki_model():
    t = short(task("pendubot-swingup"), seconds=2.0, hold=1.0)
    plant = SystemPlant(dfki_plant("shoulder", friction=False), 0.01, 10.0, substeps=4)
    lqr = LQRController.design(Dynamics(t.system, RK4(), 0.01), t, 0.01)
    run = run_task(lqr, plant, t, np.array([[np.pi + 0.05, -0.05, 0.0, 0.0]]))
    assert run.success.all()


def test_tasks_build_for_their_systems_and_refuse_others():
    for name in TASKS:
        t = task(name)
        assert t.name == name
        t.check(t.system)
        assert t.starts(3).shape == (3, t.goal.size)
    with pytest.raises(TaskMismatch, match="unknown task 'pendulum-swingdown'; the tasks are"):
        task("pendulum-swingdown")
    with pytest.raises(
        TaskMismatch, match="task 'pendubot-swingup' is for a DoublePendulum.*inputs on other"
    ):
        task("pendubot-swingup").check(DoublePendulum(actuated="elbow"))
    with pytest.raises(
        TaskMismatch, match="task 'cartpole-swingup'.*the plant's system.*a Pendulum"
    ):
        run_task(lambda x, t: np.zeros(1), RigPlant(PENDULUM), task("cartpole-swingup"))
    gym_like = FunctionPlant(lambda x, u: x, n_dof=2, n_inputs=1, dt=0.1)
    with pytest.raises(
        TaskMismatch, match="has 2 coordinates and 1 inputs, the task's system 1 and 1"
    ):
        run_task(lambda x, t: np.zeros(1), gym_like, task("pendulum-swingup"))


def test_the_success_test_reads_wrapped_angles_bounds_and_hold():
    t = short(task("cartpole-swingup"), seconds=1.0, hold=0.5)
    up = np.tile([0.0, 3 * np.pi, 0.0, 0.0], (11, 1))  # upright one turn on
    assert t.success(up, 0.1)
    late = up.copy()
    late[5, 1] = 0.0  # fell before the last 0.5 s: still held
    assert t.success(late, 0.1)
    late[8, 1] = np.pi + 0.2
    assert not t.success(late, 0.1)
    off_rail = up.copy()
    off_rail[2, 0] = 0.31
    assert not t.success(off_rail, 0.1)


def test_a_paced_plant_keeps_the_wall_clock():
    plant = PacedPlant(FunctionPlant(lambda x, u: x, n_dof=1, n_inputs=1, dt=0.02))
    t = Task(
        "still",
        Pendulum(),
        goal=[0.0, 0.0],
        q=np.eye(2),
        r=np.eye(1),
        u_max=1.0,
        tolerance=[0.1, 0.1],
        hold=0.1,
        seconds=0.2,
        start=[0.0, 0.0],
    )
    start = time.perf_counter()
    run = run_task(lambda x, s: np.zeros(1), plant, t, np.zeros((1, 2)))
    assert time.perf_counter() - start >= 0.2 - 1e-3 and run.success.all() and plant.late == 0
    run_task(lambda x, s: time.sleep(0.03) or np.zeros(1), plant, t, np.zeros((1, 2)))
    assert plant.late == 10  # every period overran by a slow controller


def test_a_task_beyond_the_plants_limits_is_refused_before_it_runs():
    t = task("pendubot-swingup")
    plant = SystemPlant(dfki_plant("shoulder", friction=False), 0.01, 6.0)
    with pytest.raises(
        TaskMismatch, match=r"beyond the plant's limits on tau1: \|u\| ≤ \[10.0\] against .*\[6.0\]"
    ):
        run_task(lambda x, t: np.zeros(1), plant, t, count=1)

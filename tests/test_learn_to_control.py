"""`lagnet.learn_to_control`: the loop of excitation, then train → control episode → record, on any plant: what it
writes, what it counts, how it resumes, what it refuses before anything runs; the cart-pole rig's port, and a
Gymnasium env as the plant."""

import dataclasses
import json

import numpy as np
import pytest

import lagnet
from lagnet._errors import RunFolderError
from lagnet.config.schema import validate
from lagnet.control import FunctionPlant, SystemPlant, Task, TaskMismatch
from lagnet.data import load_trajectories
from lagnet.learn import (
    ILQRFactory,
    RandomExcitation,
    Recording,
    learn_to_control,
    mapping,
    write_recording,
)
from lagnet.learn.cartpole import cartpole_swingup
from lagnet.systems import Pendulum

DT = 0.05
TRUTH = Pendulum(1.0, 1.0, 9.81)
# Small iLQR problems: these tests check the loop, not the controller.
SMALL = ILQRFactory(horizon=15, first_iterations=10)


def pendulum_config(model: dict | None = None, params: dict | None = None, integrator: str = "rk4"):
    """A pendulum whose mass starts 20 % off and is learned (pure ODE), trained briefly in float64; no data
    section (the loop trains on its own recordings)."""
    return validate(
        {
            "name": "tiny",
            "dtype": "float64",
            "system": {
                "name": "pendulum",
                "params": params or {"mass": 1.2, "length": 1.0, "g": 9.81},
            },
            "model": model or {"type": "pure_ode", "learn_parameters": ["mass"]},
            "integrator": {"name": integrator},
            "training": {"epochs": 2, "batch_size": 16, "horizon": 3, "patience": 5},
            "evaluation": {"windows": 10, "horizon": 5, "long_horizon": 10},
        }
    )


def balance(tolerance: float = 0.1) -> Task:
    """Hold the pendulum upright from within 0.3 rad, for 1 s."""
    return Task(
        "balance",
        Pendulum(1.2, 1.0, 9.81),
        goal=[np.pi, 0.0],
        q=np.diag([10.0, 1.0]),
        r=0.1 * np.eye(1),
        u_max=4.0,
        tolerance=[tolerance, np.inf],
        hold=0.5,
        seconds=1.0,
        start=[np.pi, 0.0],
        start_spread=[0.3, 0.0],
    )


class Stop(Exception):
    pass


class Breaking(SystemPlant):
    """The true pendulum, which fails (`Stop`) at its next step once `broken`."""

    broken = False

    def step(self, u):
        if self.broken:
            raise Stop
        return super().step(u)


def test_rounds_are_kept_counted_and_resumed_after_an_interruption(tmp_path):
    # A tolerance no episode meets: every round runs. The plant fails in round 1's episode of the first call,
    # which interrupts it; the same call again redoes round 1, and a larger max_episodes adds round 2.
    plant = Breaking(TRUTH, DT, 4.0, substeps=2)
    excite = RandomExcitation()

    def excite_then_break(plant, task, seconds, seed):
        rec = excite(plant, task, seconds, seed)
        plant.broken = True
        return rec

    args = (pendulum_config(), plant, balance(tolerance=1e-9), tmp_path)
    kwargs = dict(controller=SMALL, excitation=excite_then_break, excitation_seconds=2.0, seed=3)
    with pytest.raises(Stop):
        learn_to_control(*args, max_episodes=1, **kwargs)
    saved = json.loads((tmp_path / "state.json").read_text())
    assert [e["kind"] for e in saved["episodes"]] == ["excitation"]
    excitation = (tmp_path / "round-0" / "recording.npz").read_bytes()

    plant.broken = False
    first = learn_to_control(*args, max_episodes=1, **kwargs)
    assert [e.kind for e in first.episodes] == ["excitation", "control"]
    assert not first.success and first.seconds == pytest.approx(3.0)
    assert (tmp_path / "round-0" / "recording.npz").read_bytes() == excitation  # not excited again
    round_1 = (tmp_path / "round-1" / "recording.npz").read_bytes()

    second = learn_to_control(*args, max_episodes=2, **kwargs)
    assert [e.round for e in second.episodes] == [0, 1, 2]
    assert [e.interaction for e in second.episodes] == pytest.approx([2.0, 3.0, 4.0])
    assert (tmp_path / "round-1" / "recording.npz").read_bytes() == round_1
    for k in (1, 2):
        folder = tmp_path / f"round-{k}"
        assert (folder / "run" / "summary.json").exists() and (folder / "states.npy").exists()
        controller = json.loads((folder / "controller.json").read_text())
        assert controller["controller"] == "ILQRController"
        assert controller["factory"]["options"]["horizon"] == 15
    # Round 2 started from round 1's physics and trained on both recordings before it.
    config = lagnet.load_config(tmp_path / "round-2" / "run" / "config.yaml", saved=True)
    assert config.model.start_from == str(tmp_path / "round-1" / "run")
    assert len(config.data.train) == 2


def test_an_episode_that_does_the_task_ends_the_loop_and_a_second_call_returns_it(tmp_path):
    plant = SystemPlant(TRUTH, DT, 4.0, substeps=2)
    args = (pendulum_config(), plant, balance(), tmp_path)
    result = learn_to_control(*args, controller=SMALL, excitation_seconds=2.0, max_episodes=3)
    assert result.success and result.controls == 1 and result.seconds == pytest.approx(3.0)
    # The mass is identified from the excitation (20 % off at the start).
    learned = lagnet.load(result.episodes[-1].run).model.known_system
    assert float(learned.mass) == pytest.approx(1.0, rel=0.02)
    again = learn_to_control(*args, controller=SMALL, excitation_seconds=2.0, max_episodes=3)
    assert again.seconds == result.seconds and again.controls == 1
    np.testing.assert_array_equal(again.episodes[1].xs, result.episodes[1].xs)


def test_a_recording_reads_back_as_the_system_trajectory(tmp_path):
    # A pendulum turning over at 2 rad/s, measured wrapped to [0, 2π), that diverged at its 21st sample.
    t = 0.1 * np.arange(30)
    ys = np.stack([np.mod(3.0 + 2.0 * t, 2 * np.pi), np.full_like(t, 2.0)], axis=1)
    us = np.sin(t)[:, None]
    ys[20] = np.nan
    rec = Recording.from_run(ys, us, 0.1)
    assert len(rec.t) == 20 and rec.seconds == pytest.approx(3.0)
    write_recording(tmp_path / "r.npz", rec, TRUTH, {"generator": "test"})
    (traj,) = load_trajectories(tmp_path / "r.npz", mapping(TRUTH), system=TRUTH, dtype="float64")
    np.testing.assert_allclose(traj.q[:, 0], 3.0 + 2.0 * t[:20])  # unwrapped
    np.testing.assert_allclose(traj.qd[:, 0], 2.0)
    np.testing.assert_allclose(traj.u, us[:20])


def test_random_excitation_stays_within_the_limits_and_stops_where_the_plant_ends():
    plant = SystemPlant(TRUTH, DT, 4.0)
    rec = RandomExcitation(amplitude=0.5)(plant, balance(), 2.0, seed=1)
    assert len(rec.t) == 40 and np.max(np.abs(rec.u)) <= 0.5 * 4.0
    assert len(np.unique(rec.u)) > 3  # held levels, redrawn

    class Ending(FunctionPlant):
        """Ends after 5 steps, as a Gymnasium episode does at its time limit."""

        steps = 0

        def step(self, u):
            self.steps += 1
            self.ended = self.steps >= 5
            return super().step(u)

    ending = Ending(lambda x, u: x, n_dof=1, n_inputs=1, dt=DT, u_max=1.0)
    rec = RandomExcitation()(ending, balance(), 2.0, seed=1)
    assert len(rec.t) == 5 and rec.seconds == pytest.approx(5 * DT)


def test_what_does_not_fit_is_refused_before_anything_runs(tmp_path):
    plant = SystemPlant(TRUTH, DT, 4.0)
    cartpole = validate({"system": {"name": "cartpole"}, "model": {"type": "known"}})
    with pytest.raises(TaskMismatch, match="config's system"):
        learn_to_control(cartpole, plant, balance(), tmp_path / "a")
    arm = FunctionPlant(lambda x, u: x, n_dof=2, n_inputs=1, dt=DT)
    with pytest.raises(TaskMismatch, match="2 coordinates"):
        learn_to_control(pendulum_config(), arm, balance(), tmp_path / "b")
    with pytest.raises(ValueError, match="excitation_seconds"):
        learn_to_control(
            pendulum_config(), plant, balance(), tmp_path / "c", excitation_seconds=0.0
        )
    with pytest.raises(TypeError, match="controller"):
        learn_to_control(pendulum_config(), plant, balance(), tmp_path / "d", controller=3)
    assert not any((tmp_path / k).exists() for k in "abcd")
    other = tmp_path / "other"
    other.mkdir()
    (other / "state.json").write_text(json.dumps({"arguments": {"seed": 7}, "episodes": []}))
    with pytest.raises(RunFolderError, match="other arguments"):
        learn_to_control(pendulum_config(), plant, balance(), other)
    assert not (other / "round-0").exists()


KNOWN_CARTPOLE = {
    "name": "cartpole_known",
    "system": {"name": "cartpole"},
    "model": {"type": "known"},
    "integrator": {"name": "rk4"},
    "training": {
        "epochs": 0,
        "horizon": 1,
    },  # one-step windows: a one-second excitation holds enough of them
}


def test_the_cartpole_rig_learns_through_the_same_loop(tmp_path):
    # The rig's identification excitation and its swing-up MPC through the generic loop; a hold as long as the
    # episode cannot succeed (the swing-up itself takes a second), so the episode is recorded and counted.
    setup = cartpole_swingup(episode_seconds=1.0, hold=1.0)
    result = learn_to_control(
        validate(KNOWN_CARTPOLE), out=tmp_path, excitation_seconds=1.0, max_episodes=1, **setup
    )
    assert [e.kind for e in result.episodes] == ["excitation", "control"]
    assert not result.success and result.seconds == pytest.approx(2.0)
    for e in result.episodes:
        with np.load(e.recording) as f:
            meta = json.loads(str(f["meta"]))
            assert np.all(np.isfinite(f["x"])) and len(f["t"]) >= 49
        assert meta["mapping"]["positions"] == ["x", "phi"]
    # The excitation moved the rig; the episode started hanging and swung.
    assert np.ptp(result.episodes[0].xs[:, 0]) > 0.01
    assert np.max(np.abs(result.episodes[1].xs[:, 3])) > 1.0


def test_a_gymnasium_env_is_a_plant_to_learn_on(tmp_path):
    # Pendulum-v1 through GymPlant, with its maps here (nothing of the env in lagnet): the excitation
    # identifies the rod's J and m g r, 20 % off at the start, to 1 %.
    gymnasium = pytest.importorskip("gymnasium")
    from lagnet.control import GymPlant

    def state(obs):
        return np.array([np.arctan2(obs[1], obs[0]) + np.pi, obs[2]], dtype=float)

    def set_state(env, x):
        env.unwrapped.state = np.array([x[0] - np.pi, x[1]])

    plant = GymPlant(gymnasium.make("Pendulum-v1"), state, n_dof=1, dt=DT, set_state=set_state)
    prior = {"mass": 1.2, "com": 0.5, "inertia": 0.1, "g": 10.0}
    # The env steps by semi-implicit Euler at 0.05 s: the model too.
    model = {"type": "pure_ode", "learn_parameters": ["mass", "inertia"]}
    config = pendulum_config(model, prior, integrator="symplectic_euler")
    task = dataclasses.replace(balance(), system=Pendulum(**prior), u_max=2.0)
    result = learn_to_control(
        config, plant, task, tmp_path, controller=SMALL, excitation_seconds=3.0, max_episodes=1
    )
    assert result.episodes[0].seconds == pytest.approx(3.0)
    learned = lagnet.load(result.episodes[1].run).model.known_system
    j = float(learned.inertia + learned.mass * learned.com**2)
    assert j == pytest.approx(1 / 3, rel=0.01)
    assert float(learned.mass * learned.g * learned.com) == pytest.approx(5.0, rel=0.01)

"""`lagnet evaluate RUN --control --task NAME --plant SPEC`: a controller designed on a run's model (the iLQR for a
swing-up), on a named task from the task's starts."""

import json

import jax.numpy as jnp
import numpy as np
import pytest

from lagnet.control import task_evaluation
from lagnet.control.dynamics import Dynamics
from lagnet.control.tasks import TaskMismatch
from lagnet.integrators import RK4
from lagnet.systems import CartPole, DoublePendulum, Pendulum

SMALL = dict(starts=2, seconds=1.0)


def test_known_pendulum_swings_up_on_itself_and_reads_the_rig_through_its_sensors():
    dyn = Dynamics(Pendulum(0.25, 0.5, 9.81), RK4(), 0.01)
    results = task_evaluation.evaluate_tasks(dyn, plant_spec="known", starts=2, seconds=5.0)
    assert list(results) == ["pendulum-swingup"]
    r, run = results["pendulum-swingup"]
    # From hanging, below the torque that holds it level: only a swing-up gets there.
    assert (r["success"], r["starts"], r["plant"], r["sensing"], r["controller"]) == (
        2,
        2,
        "known",
        "true",
        "ilqr",
    )
    assert 0 < r["median_ms"] <= r["p99_ms"]
    assert np.all(np.abs(run.xs[:, 0, 0]) < 0.2)
    rig, _ = task_evaluation.evaluate_tasks(dyn, starts=1, seconds=1.0)["pendulum-swingup"]
    assert (rig["plant"], rig["sensing"]) == ("rig", "sensors")


def test_a_paced_evaluation_holds_the_plant_to_the_wall_clock_and_counts_missed_deadlines():
    import time

    dyn = Dynamics(Pendulum(0.25, 0.5, 9.81), RK4(), 0.01)
    t = task_evaluation.resolve_tasks(dyn.system, None)[0]
    start = time.perf_counter()
    r, run = task_evaluation.evaluate_task(dyn, t, "known", starts=1, seconds=0.5, paced=True)
    # 50 periods of 10 ms: the loop cannot finish sooner than the plant's clock allows.
    assert time.perf_counter() - start >= 0.5
    assert r["paced"] and r["periods"] == run.us.size == 50
    assert 0 <= r["late"] <= r["periods"]
    unpaced, _ = task_evaluation.evaluate_task(dyn, t, "known", starts=1, seconds=0.5)
    assert "late" not in unpaced


def test_tasks_and_plants_are_checked_by_name():
    with pytest.raises(TaskMismatch, match="unknown task 'nope'; the tasks are acrobot-swingup"):
        task_evaluation.resolve_tasks(Pendulum(), ["nope"])
    with pytest.raises(TaskMismatch, match="'cartpole-swingup' is for a CartPole .* a Pendulum"):
        task_evaluation.resolve_tasks(Pendulum(), ["cartpole-swingup"])
    with pytest.raises(TaskMismatch, match="unknown plant 'hardware'; the plants are rig"):
        task_evaluation.check_plant_spec("hardware")
    assert task_evaluation.default_tasks(CartPole()) == ["cartpole-swingup"]
    assert task_evaluation.default_tasks(DoublePendulum.pendubot()) == ["pendubot-swingup"]
    assert task_evaluation.default_tasks(DoublePendulum.acrobot()) == ["acrobot-swingup"]
    # Both joints driven (the DFKI recordings): controlled through one joint at a time.
    both = [t.name for t in task_evaluation.resolve_tasks(DoublePendulum(), None)]
    assert both == ["pendubot-swingup", "acrobot-swingup"]
    with pytest.raises(TaskMismatch, match="'pendubot-swingup' is for a DoublePendulum.*inputs on"):
        task_evaluation.resolve_tasks(DoublePendulum.acrobot(), ["pendubot-swingup"])


def test_a_double_pendulum_driving_both_joints_swings_up_as_a_pendubot():
    from lagnet.control.tasks import DFKI, task

    both = Dynamics(DoublePendulum(**DFKI), RK4(), 0.002)
    t = task("pendubot-swingup")
    pendubot = task_evaluation.for_task(both, t)
    x, u = jnp.array([0.3, -0.2, 0.5, 0.1]), jnp.array([1.5])
    # Joint 1 driven, joint 2 free: the same as the pendubot built as one.
    expected = Dynamics(DoublePendulum.pendubot(**DFKI), RK4(), 0.002).f(x, u)
    np.testing.assert_allclose(pendubot.f(x, u), expected, rtol=1e-6)
    assert pendubot.system.actuated == "shoulder" and pendubot.n_inputs == 1
    r, _ = task_evaluation.evaluate_task(both, t, "known", starts=1, seconds=4.0)
    assert (r["success"], r["plant"], r["sensing"]) == (1, "known", "true")
    name, rig = task_evaluation.make_plant(pendubot, t, None)
    assert name == "rig"
    assert rig.sensing == "sensors" and rig.dt == task_evaluation.CONTROL_PERIOD


@pytest.fixture(scope="module")
def pendulum_run(tmp_path_factory):
    """A PINODE pendulum trained for one epoch on the small pendulum data."""
    import test_reliability
    from test_train import config_for

    from lagnet.run.training import train_run

    tmp = tmp_path_factory.mktemp("task_run")
    data = test_reliability.write_pendulum(tmp / "p.csv")
    train_run(config_for(data).replace(training={"epochs": 1}), str(tmp / "run"), progress=False)
    return tmp / "run"


def test_cli_writes_a_control_entry_per_task(pendulum_run, capsys, monkeypatch):
    from lagnet.cli import main

    run = str(pendulum_run)
    metrics = pendulum_run / "evaluation" / "metrics.json"
    # Bad options fail before any work: nothing is evaluated or written.
    bad = [
        (["--control", "--task", "nope"], "unknown task 'nope'"),
        (["--control", "--task", "cartpole-swingup"], "task 'cartpole-swingup' is for a CartPole"),
        (["--control", "--plant", "hardware"], "unknown plant 'hardware'"),
        (["--task", "pendulum-swingup"], "give --control too"),
        (["--control", "--seeds", "1"], "--seeds repeats the cart-pole's"),
    ]
    for options, message in bad:
        assert main(["evaluate", run, *options, "--no-plots"]) == 2, options
        assert message in capsys.readouterr().err
        assert not metrics.exists()
    original = task_evaluation.evaluate_task
    monkeypatch.setattr(
        task_evaluation, "evaluate_task", lambda *a, **k: original(*a, **(k | SMALL))
    )
    assert main(["evaluate", run, "--control", "--task", "pendulum-swingup", "--no-plots"]) == 0
    control = json.loads(metrics.read_text())["control"]
    entry = control["pendulum-swingup"]
    assert {"success", "starts", "median_ms", "p99_ms", "sensing"} <= set(entry)
    assert entry["starts"] == 2 and entry["sensing"] == "sensors" and entry["plant"] == "rig"
    report = (pendulum_run / "evaluation" / "report.md").read_text()
    assert "- pendulum-swingup: ILQR on the rig plant, from the task's starts: " in report
    assert (pendulum_run / "evaluation" / "control_pendulum-swingup.png").stat().st_size > 0
    assert f"{entry['success']}/2 succeeded" in report and "read the sensors" in report
    assert main(["evaluate", run, "--control", "--plant", "known", "--no-plots"]) == 0
    entry = json.loads(metrics.read_text())["control"]["pendulum-swingup"]
    assert entry["plant"] == "known" and entry["sensing"] == "true"


def test_a_task_of_your_own_comes_from_the_config():
    from lagnet.config import ConfigError
    from lagnet.config.schema import validate

    own = {
        "name": "hold-level",
        "goal": [1.5708, 0.0],
        "q": [[10.0, 0.0], [0.0, 1.0]],
        "r": [[1.0]],
        "u_max": 1.0,
        "tolerance": [0.05, 1e9],
        "hold": 1.0,
        "seconds": 2.0,
        "start": [1.4, 0.0],
        "knocks": [[0.5, [0.0, 0.2]]],
    }
    config = validate({"control": {"tasks": ["pendulum-swingup", own], "plant": "known"}})
    tasks = task_evaluation.resolve_tasks(Pendulum(0.25, 0.5, 9.81), config.control.tasks)
    assert [t.name for t in tasks] == ["pendulum-swingup", "hold-level"]
    level = tasks[1]
    # Held level by gravity compensation: u* = m g l sin(π/2).
    np.testing.assert_allclose(level.u_goal, [0.25 * 9.81 * 0.5], rtol=1e-4)
    assert level.knocks[0][0] == 0.5 and level.knocks[0][1].tolist() == [0.0, 0.2]
    with pytest.raises(TaskMismatch, match=r"control.tasks\[0\]: Task 'hold-level': goal"):
        task_evaluation.resolve_tasks(Pendulum(), [own | {"goal": [1.0, 0.0, 0.0]}])
    with pytest.raises(ConfigError, match=r"control.tasks \[0\]: unknown field\(s\) \['gaol'\]"):
        validate({"control": {"tasks": [{"gaol": [0, 0]}]}})
    with pytest.raises(ConfigError, match="control.plant must be one of"):
        validate({"control": {"plant": "hardware"}})


def run_with_control(pendulum_run, folder, monkeypatch, **control):
    """A copy of the pendulum run, unevaluated, whose config's `control` section has `control` set; its task
    evaluations shortened (SMALL)."""
    import shutil

    import yaml

    run = folder / "run"
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(pendulum_run, run, ignore=shutil.ignore_patterns("evaluation"))
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["control"] |= control
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    original = task_evaluation.evaluate_task
    monkeypatch.setattr(
        task_evaluation, "evaluate_task", lambda *a, **k: original(*a, **(k | SMALL))
    )
    return run


def test_a_run_whose_config_asks_for_pacing_is_evaluated_at_the_wall_clock(
    pendulum_run, tmp_path, monkeypatch
):
    from lagnet.cli import main

    run = run_with_control(pendulum_run, tmp_path, monkeypatch, paced=True)
    assert main(["evaluate", str(run), "--control", "--plant", "known", "--no-plots"]) == 0
    entry = json.loads((run / "evaluation" / "metrics.json").read_text())["control"]
    entry = entry["pendulum-swingup"]
    assert entry["paced"] and entry["periods"] == 2 * 100 and 0 <= entry["late"] <= 200
    assert "paced at the wall clock" in (run / "evaluation" / "report.md").read_text()


def test_a_run_whose_config_gives_controller_options_is_evaluated_with_them(
    pendulum_run, tmp_path, monkeypatch, capsys
):
    from lagnet.cli import main

    options = {"energy": 0.0, "iterations": 2}
    run = run_with_control(pendulum_run, tmp_path, monkeypatch, options=options)
    built = []
    original_for_task = task_evaluation.ILQRController.for_task
    monkeypatch.setattr(
        task_evaluation.ILQRController,
        "for_task",
        lambda *a, **k: built.append(k) or original_for_task(*a, **k),
    )
    assert main(["evaluate", str(run), "--control", "--plant", "known", "--no-plots"]) == 0
    assert built == [options]
    entry = json.loads((run / "evaluation" / "metrics.json").read_text())["control"]
    assert entry["pendulum-swingup"]["options"] == options
    assert (
        'options {"energy": 0.0, "iterations": 2}' in (run / "evaluation" / "report.md").read_text()
    )
    # An option the controller does not take fails before anything runs, naming it and what is taken.
    run = run_with_control(pendulum_run, tmp_path, monkeypatch, options={"integral": 1.0})
    capsys.readouterr()
    assert main(["evaluate", str(run), "--control", "--plant", "known", "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert (
        "control.options for 'pendulum-swingup': the iLQR takes" in err and "; not integral" in err
    )
    assert not (run / "evaluation" / "metrics.json").exists()

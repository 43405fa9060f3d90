"""`lagnet evaluate RUN --control --task NAME --plant SPEC`: the LQR designed on a run's model, on a named task."""

import functools
import json

import pytest

from lagnet.control import task_evaluation
from lagnet.control.dynamics import Dynamics
from lagnet.control.tasks import TaskMismatch
from lagnet.integrators import RK4
from lagnet.systems import CartPole, DoublePendulum, Pendulum

SMALL = dict(starts=2, seconds=1.0)


def test_known_pendulum_balances_on_its_rig_and_on_itself():
    dyn = Dynamics(Pendulum(0.25, 0.5, 9.81), RK4(), 0.01)
    rig = task_evaluation.evaluate_tasks(dyn, starts=3, seconds=2.0)
    assert list(rig) == ["pendulum-swingup"]
    r = rig["pendulum-swingup"]
    assert (r["success"], r["starts"], r["plant"], r["sensing"]) == (3, 3, "rig", "sensors")
    assert 0 < r["median_ms"] <= r["p99_ms"]
    model = task_evaluation.evaluate_tasks(dyn, plant_spec="model", **SMALL)["pendulum-swingup"]
    assert (model["success"], model["plant"], model["sensing"]) == (2, "model", "true")


def test_tasks_and_plants_are_checked_by_name():
    with pytest.raises(TaskMismatch, match="unknown task 'nope'; the tasks are acrobot-swingup"):
        task_evaluation.resolve_tasks(Pendulum(), ["nope"])
    with pytest.raises(TaskMismatch, match="'cartpole-swingup' is for a CartPole .* a Pendulum"):
        task_evaluation.resolve_tasks(Pendulum(), ["cartpole-swingup"])
    with pytest.raises(TaskMismatch, match="unknown plant 'hardware'; the plants are rig"):
        task_evaluation.check_plant_spec("hardware")
    assert task_evaluation.default_task(CartPole()) == "cartpole-swingup"
    assert task_evaluation.default_task(DoublePendulum.pendubot()) == "pendubot-swingup"
    assert task_evaluation.default_task(DoublePendulum.acrobot()) == "acrobot-swingup"
    for names in (None, ["pendubot-swingup"]):
        with pytest.raises(TaskMismatch, match="drives both joints.*--task pendubot-swingup"):
            task_evaluation.resolve_tasks(DoublePendulum(), names)


def test_double_pendulum_without_a_rig_runs_on_its_known_system():
    dyn = Dynamics(DoublePendulum.pendubot(**_dfki()), RK4(), 0.01)
    r = task_evaluation.evaluate_tasks(dyn, starts=2, seconds=2.0)["pendubot-swingup"]
    assert (r["plant"], r["sensing"], r["starts"]) == ("known", "true", 2)
    assert r["success"] == 2
    with pytest.raises(TaskMismatch, match="has no simulated rig; use --plant known"):
        task_evaluation.evaluate_tasks(dyn, plant_spec="rig", **SMALL)


def _dfki():
    from lagnet.control.tasks import DFKI

    return DFKI


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
    monkeypatch.setattr(
        task_evaluation, "evaluate_task", functools.partial(task_evaluation.evaluate_task, **SMALL)
    )
    assert main(["evaluate", run, "--control", "--task", "pendulum-swingup", "--no-plots"]) == 0
    control = json.loads(metrics.read_text())["control"]
    entry = control["pendulum-swingup"]
    assert {"success", "starts", "median_ms", "p99_ms", "sensing"} <= set(entry)
    assert entry["starts"] == 2 and entry["sensing"] == "sensors" and entry["plant"] == "rig"
    report = (pendulum_run / "evaluation" / "report.md").read_text()
    assert (
        "- pendulum-swingup: LQR on the rig plant, from within 0.1 rad of the goal (balance): "
        in report
    )
    assert f"{entry['success']}/2 succeeded" in report and "read the sensors" in report
    assert main(["evaluate", run, "--control", "--plant", "known", "--no-plots"]) == 0
    entry = json.loads(metrics.read_text())["control"]["pendulum-swingup"]
    assert entry["plant"] == "known" and entry["sensing"] == "true"

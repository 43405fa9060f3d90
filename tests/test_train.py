"""Training through the solver, configs and saved runs, on a small synthetic damped pendulum."""

import glob
import json
import os
import subprocess
import sys

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from helpers import PENDULUM_MAPPING, model_section, write_pendulum_csv

from lagnet.config import ConfigError, load_config, validate
from lagnet.integrators import RK4
from lagnet.rollout import rollout
from lagnet.run import build_model, build_system, load_run
from lagnet.run.training import train_run as train
from lagnet.systems import Pendulum
from lagnet.train.loss import StateLoss, batch_loss

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def pendulum_csv(tmp_path_factory):
    """A forced pendulum with viscous + Coulomb friction, simulated finely, sampled at 20 Hz."""
    folder = tmp_path_factory.mktemp("data")
    return write_pendulum_csv(folder / "pendulum.csv", steps=1200, hold=20)


def config_for(path, type="pinode", **model):
    return validate(
        {
            "name": "test",
            "dtype": "float64",
            "system": {"name": "pendulum"},
            "model": model_section(type, **model),
            "data": {
                "train": [path],
                "test": [path],
                "mapping": dict(PENDULUM_MAPPING),
            },
            "training": {
                "epochs": 4,
                "batch_size": 32,
                "horizon": 3,
                "learning_rate": 3e-3,
                "patience": 50,
            },
            "evaluation": {"windows": 50, "horizon": 10, "long_horizon": 40},
        }
    )


@pytest.mark.parametrize(
    "model",
    [
        {"type": "pinode", "zero_init": False},
        # Gradient training of the physics itself: identification (which solves these exactly) is off here and
        # tested in test_identify.py.
        {
            "type": "pinode",
            "friction": {"coulomb": ["theta"], "viscous": ["theta"], "fit": "none"},
            "identification": {"method": "none"},
        },
        {
            "type": "pure_ode",
            "friction": {"coulomb": ["theta"], "viscous": ["theta"], "fit": "none"},
            "identification": {"method": "none"},
        },
        {"type": "blackbox"},
        {"type": "potential", "dissipation": True, "activation": "tanh"},
    ],
    ids=["pinode", "pinode_friction", "pure_ode", "blackbox", "potential"],
)
def test_every_model_type_trains(pendulum_csv, tmp_path, model):
    result = train(config_for(pendulum_csv, **model), str(tmp_path / "run"), progress=False)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["best_validation_loss"] < 0.9 * summary["initial_validation_loss"]
    lines = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert lines[0]["epoch"] == -1 and len(lines) == 1 + result.epochs
    assert all(np.isfinite(x["validation_loss"]) for x in lines)


def test_lstsq_friction_recovers_the_plant(pendulum_csv, tmp_path):
    """The pure ODE model's least-squares friction fit already explains this data (exact model class)."""
    config = config_for(
        pendulum_csv, type="pure_ode", friction={"coulomb": ["theta"], "viscous": ["theta"]}
    )
    config = config.replace(training={"epochs": 0})
    result = train(config, str(tmp_path / "run"), progress=False)
    np.testing.assert_allclose(result.model.friction.coefficient("viscous"), [0.1], rtol=0.1)
    np.testing.assert_allclose(result.model.friction.coefficient("coulomb"), [0.05], rtol=0.2)


def test_saved_model_reloads_bit_for_bit(pendulum_csv, tmp_path):
    config = config_for(
        pendulum_csv,
        type="pinode",
        zero_init=False,
        friction={"coulomb": ["theta"]},
        input_history=1,
    )
    config = config.replace(training={"epochs": 1})
    result = train(config, str(tmp_path / "run"), progress=False)
    run = load_run(str(tmp_path / "run"))
    loaded = run.model
    assert run.config.model == config.model
    q0, qd0, us = jnp.array([0.3]), jnp.array([0.1]), jnp.linspace(-1, 1, 40).reshape(20, 2)
    a = rollout(result.model, RK4(), q0, qd0, us, 0.05)
    b = rollout(loaded, RK4(), q0, qd0, us, 0.05)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_checkpoint_of_another_model_is_refused(pendulum_csv, tmp_path):
    config = config_for(pendulum_csv, type="pinode")
    config = config.replace(training={"epochs": 0})
    train(config, str(tmp_path / "run"), progress=False)
    other = config.replace(model={"width": 9})
    (tmp_path / "run" / "config.yaml").write_text(yaml.safe_dump(other.to_dict()))
    with pytest.raises(ValueError, match="cannot be loaded into this model"):
        load_run(str(tmp_path / "run"))


def test_loss_gradient_matches_finite_differences():
    """d(loss)/dθ along a random direction against central differences, through a 10-step RK4 rollout."""
    system = Pendulum()
    config = validate({"system": {"name": "pendulum"}, "model": {"width": 6, "zero_init": False}})
    stats = {
        "q": np.random.default_rng(0).normal(size=(20, 1)),
        "qd": np.ones((20, 1)),
        "u": np.ones((20, 1)),
    }
    model = build_model(config, system, stats | {"qdd": np.zeros((20, 1))}, key=jax.random.key(1))
    model = jax.tree_util.tree_map(
        lambda x: x.astype(jnp.float64) if eqx.is_inexact_array(x) else x, model
    )
    params, static = eqx.partition(model, model.trainable())
    loss = StateLoss(system.angles, jnp.ones(1), jnp.ones(1), jnp.ones(1), jnp.ones(1))
    rng = np.random.default_rng(2)
    batch = (
        jnp.asarray(rng.normal(size=(4, 1))),
        jnp.asarray(rng.normal(size=(4, 1))),
        jnp.asarray(rng.normal(size=(4, 10, 1))),
        jnp.full((4, 10), 0.05),
        jnp.asarray(rng.normal(size=(4, 10, 1))),
        jnp.asarray(rng.normal(size=(4, 10, 1))),
    )

    def f(p):
        return batch_loss(eqx.combine(p, static), RK4(), loss, batch)

    grads = jax.grad(f)(params)
    direction = jax.tree_util.tree_map(lambda x: jnp.asarray(rng.normal(size=x.shape)), params)
    analytic = sum(
        jnp.vdot(g, d)
        for g, d in zip(
            jax.tree_util.tree_leaves(grads), jax.tree_util.tree_leaves(direction), strict=True
        )
    )
    eps = 1e-6
    shift = lambda s: jax.tree_util.tree_map(lambda p, d: p + s * d, params, direction)  # noqa: E731
    numeric = (f(shift(eps)) - f(shift(-eps))) / (2 * eps)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6)


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(ROOT, "configs", "*.yaml"))))
def test_shipped_configs_validate_and_build(path):
    config = load_config(path)
    system = build_system(config)
    build_model(config, system, None, key=jax.random.key(0))
    for f in config.data.train + config.data.test:
        assert os.path.exists(f), f"{path}: data file {f} is missing"


@pytest.mark.parametrize(
    "user, message",
    [
        (
            {"training": {"epoch": 3}},
            r"unknown key 'training.epoch'; did you mean 'training.epochs'\?",
        ),
        ({"integrator": {"dt": -0.02}}, r"integrator.dt must be > 0, got -0.02"),
        ({"integrator": {"name": "rk5"}}, r"integrator.name must be one of \['rk4'"),
        ({"model": {"width": "big"}}, r"model.width must be an integer, got 'big'"),
        ({"model": {"zero_init": 1}}, r"model.zero_init must be true/false, got 1"),
        (
            {"training": {"curriculum": [[0, 0]]}},
            r"training.curriculum\[0\] must be \[epoch, horizon\]",
        ),
        ({"data": {"validation_fraction": 1.5}}, r"data.validation_fraction must be in \[0, 1\)"),
        ({"trainig": {}}, r"unknown key 'trainig'; did you mean 'training'\?"),
        ([1, 2], r"config must be a mapping"),
    ],
)
def test_broken_configs_name_the_key(user, message):
    with pytest.raises(ConfigError, match=message):
        validate(user)


def test_config_file_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model:\n  width: 3\n   depth: 2\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: YAML syntax error at line 3"):
        load_config(bad)
    with pytest.raises(FileNotFoundError, match="config file not found"):
        load_config(tmp_path / "missing.yaml")
    ok = tmp_path / "ok.yaml"
    ok.write_text("data:\n  train: sub/file.csv\n")
    config = load_config(ok, ["training.epochs=7", "model.width=12"])
    assert config.training.epochs == 7 and config.model.width == 12
    assert config.data.train == [str(tmp_path / "sub" / "file.csv")]


def test_relu_potential_is_refused(pendulum_csv):
    config = config_for(pendulum_csv, type="potential")
    with pytest.raises(ConfigError, match=r"model.activation: relu is not smooth enough"):
        build_model(config, Pendulum(), None, key=jax.random.key(0))


def test_unknown_friction_coordinate_is_named(pendulum_csv):
    config = config_for(pendulum_csv, type="pure_ode", friction={"coulomb": ["x"]})
    with pytest.raises(
        ConfigError, match=r"model.friction.coulomb: 'x' is not a coordinate of Pendulum"
    ):
        build_model(config, Pendulum(), None, key=jax.random.key(0))


def test_system_identification_recovers_a_length(tmp_path):
    """Data from a pendulum 30 % longer than the model thinks: learning `length` alone recovers it."""
    true = Pendulum(length=1.3)
    rng = np.random.default_rng(4)
    u = np.repeat(rng.normal(size=(30, 1)), 20, axis=0)
    qs, qds = rollout(true, RK4(), jnp.array([1.0]), jnp.array([0.0]), jnp.asarray(u), 0.05)
    t = 0.05 * np.arange(601)
    path = tmp_path / "long.csv"
    data = np.column_stack(
        [t, np.asarray(qs)[:, 0], np.asarray(qds)[:, 0], np.append(u[:, 0], 0.0)]
    )
    np.savetxt(path, data, delimiter=",", header="t,theta,theta_dot,torque", comments="")
    config = config_for(str(path), type="pure_ode", learn_parameters=["com"])
    config = config.replace(training={"epochs": 60, "learning_rate": 2e-2, "horizon": 5})
    result = train(config, str(tmp_path / "run"), progress=False)
    np.testing.assert_allclose(result.model.known_system.com, 1.3, rtol=2e-3)


def test_curriculum_grows_the_horizon(pendulum_csv, tmp_path):
    config = config_for(pendulum_csv, type="pinode")
    config = config.replace(training={"epochs": 4, "horizon": 1, "curriculum": [[2, 4]]})
    train(config, str(tmp_path / "run"), progress=False)
    lines = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [x.get("horizon") for x in lines[1:]] == [1, 1, 4, 4]


def test_show_config_is_a_valid_template():
    """`lagnet train --show-config` prints YAML that loads back as the default config."""
    from lagnet.config import describe

    text = describe()
    assert "training:\n  epochs: 50  # passes over the training windows" in text
    assert validate(yaml.safe_load(text)) == validate({})


def test_config_is_typed_and_replace_revalidates():
    config = validate({"model": {"width": 12}})
    assert config.model.width == 12 and config.model.friction.epsilon == 0.01
    assert config.replace(training={"epochs": 3}).training.epochs == 3
    assert config.training.epochs == 50  # frozen: replace returns a new config
    with pytest.raises(ConfigError, match=r"training.epochs must be >= 0, got -1"):
        config.replace(training={"epochs": -1})


def test_registered_system_is_valid_in_configs():
    from lagnet.config import SYSTEMS, register_system

    register_system("long_pendulum_for_test", lambda length=2.0: Pendulum(length=length))
    try:
        config = validate({"system": {"name": "long_pendulum_for_test", "params": {"length": 3.0}}})
        assert float(build_system(config).com) == 3.0
        with pytest.raises(ValueError, match="already registered"):
            register_system("pendulum", Pendulum)
    finally:
        SYSTEMS.pop("long_pendulum_for_test")
    with pytest.raises(ConfigError, match="system.name must be one of"):
        validate({"system": {"name": "long_pendulum_for_test"}})


def test_a_fixed_dt_that_contradicts_the_data_is_a_config_error(pendulum_csv, tmp_path):
    """The data is sampled at 20 Hz: `integrator.dt: 0.02` must not silently rewrite its time stamps."""
    config = config_for(pendulum_csv).replace(integrator={"dt": 0.02}, training={"epochs": 0})
    with pytest.raises(
        ConfigError, match=r"integrator.dt = 0.02 s, but .*pendulum.csv was sampled every 0.05"
    ):
        train(config, str(tmp_path / "bad"), progress=False)
    agreeing = config_for(pendulum_csv).replace(integrator={"dt": 0.05}, training={"epochs": 0})
    train(agreeing, str(tmp_path / "ok"), progress=False)
    assert load_run(str(tmp_path / "ok")).dt == pytest.approx(0.05)


def test_loading_a_float64_run_asks_for_x64_instead_of_switching_it(pendulum_csv, tmp_path):
    config = config_for(pendulum_csv).replace(training={"epochs": 0})
    train(config, str(tmp_path / "run"), progress=False)
    code = (
        "import lagnet, jax\n"
        f"try:\n    lagnet.load({str(tmp_path / 'run')!r})\n"
        "except ValueError as e:\n    print('refused:', e)\n"
        "print('x64', jax.config.jax_enable_x64)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "refused: the run" in out.stdout and "is float64" in out.stdout, out.stdout + out.stderr
    assert "x64 False" in out.stdout


def test_a_run_that_never_improves_says_so(pendulum_csv, tmp_path):
    """A learning rate of 1e-30 "trains", but each update is below the weights' rounding, so the validation loss
    stays the untrained model's: a warning and the summary say so. (A rate of 1e6 made the run worse for some batch
    orders only.)"""
    config = config_for(pendulum_csv, type="pinode", zero_init=False)
    config = config.replace(training={"epochs": 2, "learning_rate": 1e-30, "clip_norm": None})
    with pytest.warns(UserWarning, match="never beat the untrained model's"):
        train(config, str(tmp_path / "run"), progress=False)
    summary = json.load(open(tmp_path / "run" / "summary.json"))
    assert summary["improved"] is False and summary["best_epoch"] == -1


def test_a_never_finite_run_fails_with_strict_json(pendulum_csv, tmp_path):
    """g = 1e30 overflows float32 at once: the run fails saying why, and summary.json has null, not NaN."""
    from lagnet.train.fit import TrainingDiverged

    config = config_for(pendulum_csv, type="pure_ode").replace(
        dtype="float32",
        system={"params": {"g": 1e30}},
        training={"epochs": 1, "max_skipped_steps": 10_000},
    )
    with pytest.raises(TrainingDiverged, match="never finite: the untrained model's rollouts"):
        train(config, str(tmp_path / "run"), progress=False)

    def refuse(name):
        raise ValueError(f"not strict JSON: {name}")

    summary = json.loads((tmp_path / "run" / "summary.json").read_text(), parse_constant=refuse)
    assert summary["best_validation_loss"] is None


def test_validation_on_whole_held_out_recordings(pendulum_csv, tmp_path):
    """`data.validation` files are the validation set; the training recordings are then used whole."""
    from lagnet.run.training import load_training_data

    other = write_pendulum_csv(tmp_path / "other.csv", steps=300, hold=10, seed=7)
    config = config_for(pendulum_csv, type="pure_ode").replace(data={"validation": other})
    system = build_system(config)
    train_trajs, val_trajs = load_training_data(config, system)
    assert sum(t.n_rows for t in train_trajs) == 1201  # no time block held out
    assert [t.n_rows for t in val_trajs] == [301]
    default_train, _ = load_training_data(config.replace(data={"validation": []}), system)
    assert sum(t.n_rows for t in default_train) < 1201


def test_step_budget_selection_metric_and_time_split_reach_the_run(pendulum_csv, tmp_path, capsys):
    """`training.max_steps` stops the run, `select_by: final_error` picks best.eqx, and summary.json and the
    console say where the time went (load / compile / train)."""
    config = config_for(pendulum_csv, type="pure_ode", friction={"viscous": ["theta"]})
    config = config.replace(training={"epochs": 50, "max_steps": 1, "select_by": "final_error"})
    result = train(config, str(tmp_path / "run"), progress=True)
    assert result.epochs == 1
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["stop_reason"] == "max_steps" and summary["select_by"] == "final_error"
    split = [summary[f"seconds_{k}"] for k in ("load", "compile", "train")]
    assert all(s > 0 for s in split) and sum(split) <= summary["seconds"] + 1e-6
    line = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[-1])
    assert len(line["validation_final_error"]) == 2 and line["steps"] == summary["steps_run"]
    assert "time: load " in capsys.readouterr().out
    with pytest.raises(ConfigError, match="training.select_by must be one of"):
        config.replace(training={"select_by": "val"})


def test_a_pinode_starts_from_the_physics_of_a_pure_ode_run(pendulum_csv, tmp_path):
    """Two stages: a pure ODE run learns friction and the centre-of-mass distance; a PINODE started from it begins
    with exactly those values (its network fresh), trains, and its identity names the run it started from."""
    friction = {"coulomb": ["theta"], "viscous": ["theta"], "fit": "none"}
    first = config_for(pendulum_csv, type="pure_ode", friction=friction, learn_parameters=["com"])
    physics = train(first, str(tmp_path / "physics"), progress=False).model
    assert physics.friction.values_by_term()["viscous"][0] > 0  # trained away from its start at 0
    second = config_for(pendulum_csv, friction=friction, learn_parameters=["com"])
    second = second.replace(model={"start_from": str(tmp_path / "physics")})
    from lagnet.run.load import start_from
    from lagnet.run.training import run_identity

    started = start_from(
        second.model.start_from, build_model(second, Pendulum(), None, key=jax.random.key(0))
    )
    assert started.friction.values_by_term() == physics.friction.values_by_term()
    np.testing.assert_array_equal(started.parameters["com"].value, physics.parameters["com"].value)
    assert run_identity(second)["model"]["start_from"]["sha256"] != "missing"
    result = train(second, str(tmp_path / "residual"), progress=False)
    assert result.epochs >= 1
    with pytest.raises(ConfigError, match="model.start_from.*no trained run"):
        start_from(str(tmp_path / "nowhere"), started)
    # A black box holds no physics to start from.
    train(config_for(pendulum_csv, type="blackbox"), str(tmp_path / "bb"), progress=False)
    with pytest.raises(ConfigError, match="model.start_from.*BlackBox, not a PINODE"):
        start_from(str(tmp_path / "bb"), started)

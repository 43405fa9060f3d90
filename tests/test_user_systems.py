"""Systems a config names by source: the user's Python file, a Lagrangian given as functions (trained, then loaded
from the run alone)."""

import os
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from helpers import PENDULUM_MAPPING, model_section, write_pendulum_csv

import lagnet
from lagnet.config import ConfigError, load_config
from lagnet.config.sources import trust_code
from lagnet.run import build_model, build_system
from lagnet.run.training import train_run
from lagnet.systems import Pendulum

RIG = """
import jax.numpy as jnp
from lagnet.systems import Pendulum, Lagrangian


def build(mass, com):
    return Pendulum(mass=mass, com=com, g=1.0)


def not_a_system():
    return 42


def kinetic(q, qd, p):
    return 0.5 * p["m"] * p["l"] ** 2 * qd[0] ** 2


def potential(q, p):
    return -p["m"] * p["g"] * p["l"] * jnp.cos(q[0])


def input_matrix(q, p):
    return jnp.ones((1, 1), q.dtype)
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rig")
    write_pendulum_csv(folder / "pendulum.csv", steps=400, hold=20)
    (folder / "my_rig.py").write_text(textwrap.dedent(RIG))
    return folder


def write_config(folder, system, type="pinode", **model):
    config = {
        "name": "user",
        "dtype": "float64",
        "system": system,
        "model": model_section(type, **model),
        "data": {"train": "pendulum.csv", "test": "pendulum.csv", "mapping": PENDULUM_MAPPING},
        "training": {"epochs": 1, "batch_size": 32, "horizon": 2},
    }
    path = folder / f"config_{len(list(folder.glob('config_*')))}.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


def _f_matches(run_dir, system, rtol=1e-10):
    """lagnet.load(run).f equals the known system's q̈ at random states (the network starts at zero output)."""
    dyn = lagnet.load(run_dir, trust_code=True)
    rng = np.random.default_rng(0)
    for _ in range(5):
        x, u = rng.normal(size=2), rng.normal(size=1)
        want = system.acceleration(jnp.asarray(x[:1]), jnp.asarray(x[1:]), jnp.asarray(u))
        np.testing.assert_allclose(dyn.f(jnp.asarray(x), jnp.asarray(u))[1:], want, rtol=rtol)


def test_python_source_trains_and_loads_from_the_run_alone(folder, tmp_path):
    path = write_config(
        folder,
        {"name": "python", "source": "my_rig.py:build", "params": {"mass": 1.0, "com": 1.0}},
        type="known",
    )
    config = load_config(path)
    run = str(tmp_path / "run")
    train_run(config, run, progress=False, trust_code=True)
    assert open(os.path.join(run, "system", "my_rig.py")).read() == textwrap.dedent(RIG)
    saved = yaml.safe_load(open(os.path.join(run, "config.yaml")))
    assert saved["system"]["source"] == "system/my_rig.py:build"  # the run's own copy
    moved = str(tmp_path / "moved")
    os.rename(run, moved)  # the run does not need the user's file, nor its first place
    _f_matches(moved, Pendulum(mass=1.0, com=1.0, g=1.0))


def test_lagrangian_source_trains_a_pinode_with_a_learned_parameter(folder, tmp_path):
    path = write_config(
        folder,
        {
            "name": "lagrangian",
            "source": "my_rig.py",
            "coordinates": ["theta"],
            "angles": ["theta"],
            "inputs": ["torque"],
            "params": {"m": 1.0, "l": 1.0, "g": 1.0},
        },
        learn_parameters=["l"],
    )
    config = load_config(path)
    with trust_code():
        system = build_system(config)
    assert system.coordinate_names == ("theta",) and system.angles == (True,)
    run = str(tmp_path / "run")
    result = train_run(config, run, progress=False, trust_code=True)
    learned = float(result.model.known_system.parameter("l"))
    assert learned != 1.0  # trained
    summary = yaml.safe_load(open(os.path.join(run, "summary.json")))
    assert summary["physics"]["learned_parameters"]["l"] == pytest.approx(learned)
    loaded = lagnet.load(run, trust_code=True)
    np.testing.assert_allclose(float(loaded.model.known_system.parameter("l")), learned)


@pytest.mark.parametrize(
    "system, match",
    [
        (
            {"name": "python", "source": "nowhere.py:build"},
            r"system.source: file not found: .*nowhere.py",
        ),
        ({"name": "python", "source": "my_rig.py:missing"}, r"my_rig.py defines no 'missing'"),
        (
            {"name": "python", "source": "my_rig.py:not_a_system"},
            r"returned int, expected a lagnet",
        ),
        (
            {"name": "python", "source": "my_rig.py"},
            r"expected file.py:function or module:function",
        ),
        (
            {"name": "python", "source": "my_rig.py:build", "params": {"mass": 1.0, "mas": 2}},
            r"system.params: .*'mas'",
        ),
        ({"name": "python"}, r"system.source is required for system.name 'python'"),
        (
            {"name": "pendulum", "source": "my_rig.py"},
            r"system.source is only read for system.name one of",
        ),
        (
            {"name": "lagrangian", "source": "my_rig.py"},
            r"system.coordinates: a lagrangian system needs",
        ),
    ],
)
def test_source_errors_name_the_key(folder, system, match, trusted_code):
    with pytest.raises(ConfigError, match=match):
        build_system(load_config(write_config(folder, system)))


def test_urdf_config_learns_kinematics_only_unexpanded():
    """The DFKI URDF is expanded (two hinges): its inertial parameters are learnable, a joint anchor is a
    ConfigError that names the key and the setting that allows it, and with that setting it builds."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    config = load_config(os.path.join(root, "configs", "dfki_double_pendulum_urdf.yaml"))
    system = build_system(config)
    assert system.expansion is not None
    build_model(
        config.replace(model={"learn_parameters": ["body_mass"]}), system, key=jax.random.key(0)
    )
    anchors = config.replace(model={"learn_parameters": ["joint_pos"]})
    with pytest.raises(
        ConfigError, match=r"model\.learn_parameters\.joint_pos: .*system\.params\.expand: false"
    ):
        build_model(anchors, system, key=jax.random.key(0))
    anchors = anchors.replace(system={"params": {**config.system.params, "expand": False}})
    recursive = build_system(anchors)
    assert recursive.expansion is None
    build_model(anchors, recursive, key=jax.random.key(0))


def test_urdf_config_trains_and_loads(tmp_path):
    """The DFKI rig from its URDF (configs/dfki_double_pendulum_urdf.yaml, one second of one run) through train_run,
    reloaded from the run (which keeps its copy of the description), f equals the system built from the config."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    config = load_config(os.path.join(root, "configs", "dfki_double_pendulum_urdf.yaml"))
    config = config.replace(
        dtype="float64",
        data={"train": config.data.train[:1], "max_duration": 1.0},
        training={"epochs": 0, "horizon": 1, "validation_horizon": 1},  # its grads: test_robot.py
        # Identification through the tree's rollouts compiled for 20 s here; it is tested on closed forms
        # (test_identify.py), and the tree's forward- and reverse-mode derivatives in test_rigid_body.py.
        model={"identification": {"method": "none"}},
    )
    run = str(tmp_path / "run")
    result = train_run(config, run, progress=False)
    assert os.path.isfile(os.path.join(run, "system", "model_2.1_pendubot.urdf"))
    dyn = lagnet.load(run)
    assert dyn.model.coordinate_names == ("Joint1", "Joint2")
    rng = np.random.default_rng(0)
    for _ in range(3):
        x, u = rng.normal(size=4), rng.normal(size=2)
        want = result.model.acceleration(jnp.asarray(x[:2]), jnp.asarray(x[2:]), jnp.asarray(u))
        np.testing.assert_allclose(dyn.f(x, u)[2:], want, rtol=1e-10, atol=1e-12)

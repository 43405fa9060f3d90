"""The DFKI double pendulum's identified model entered through a config alone equals the lab's plant equations."""

import os

import jax
import numpy as np
import pytest
import yaml

import lagnet
from lagnet.config import load_config
from lagnet.run.training import train_run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDER = os.path.join(ROOT, "data", "real", "dfki_double_pendulum_A0")


def lab_plant(x, tau, p):
    """The lab's published forward dynamics of design A.0 (model 2.0), written out independently of lagnet:

    M q̈ + C q̇ − G = τ − F with the rotor terms in M, G = −(gravity torques), F = b q̇ + cf atan(100 q̇).
    """
    q1, q2, qd1, qd2 = x
    m1, m2, l1, r1, r2 = p["m1"], p["m2"], p["l1"], p["r1"], p["r2"]
    I1, I2, Ir, gr, g = p["I1"], p["I2"], p["Ir"], p["gr"], p["g"]
    c2, s2 = np.cos(q2), np.sin(q2)
    m = np.array(
        [
            [
                I1 + I2 + m2 * l1**2 + 2 * m2 * l1 * r2 * c2 + gr**2 * Ir + Ir,
                I2 + m2 * l1 * r2 * c2 - gr * Ir,
            ],
            [I2 + m2 * l1 * r2 * c2 - gr * Ir, I2 + gr**2 * Ir],
        ]
    )
    c = np.array(
        [[-2 * m2 * l1 * r2 * s2 * qd2, -m2 * l1 * r2 * s2 * qd2], [m2 * l1 * r2 * s2 * qd1, 0.0]]
    )
    grav = np.array(
        [
            -m1 * g * r1 * np.sin(q1) - m2 * g * (l1 * np.sin(q1) + r2 * np.sin(q1 + q2)),
            -m2 * g * r2 * np.sin(q1 + q2),
        ]
    )
    qd = np.array([qd1, qd2])
    friction = np.array([p["b1"], p["b2"]]) * qd + np.array([p["cf1"], p["cf2"]]) * np.arctan(
        100 * qd
    )
    return np.linalg.solve(m, tau - c @ qd + grav - friction)


@pytest.fixture(scope="module")
def known_run(tmp_path_factory):
    with jax.enable_x64(True):
        config = load_config(os.path.join(ROOT, "configs", "dfki_double_pendulum_known.yaml"))
        config = config.replace(data={"train": config.data.train[:1]})
        run = str(tmp_path_factory.mktemp("runs") / "known")
        train_run(config, run, progress=False)
        yield run


def test_known_config_reproduces_the_lab_plant(known_run):
    with open(os.path.join(FOLDER, "model_2.0_parameters.yml")) as f:
        params = yaml.safe_load(f)
    with jax.enable_x64(True):
        dyn = lagnet.load(known_run)
        rng = np.random.default_rng(0)
        for _ in range(20):
            x = rng.uniform(-1, 1, 4) * np.array([np.pi, np.pi, 8.0, 8.0])
            if rng.random() < 0.3:
                x[2:] *= 1e-3  # where atan(100 q̇) is steep
            tau = rng.uniform(-5, 5, 2)
            want = lab_plant(x, tau, params)
            got = np.asarray(dyn.f(x, tau))
            np.testing.assert_allclose(got[:2], x[2:], rtol=0, atol=0)
            np.testing.assert_allclose(got[2:], want, rtol=1e-10, atol=1e-10)


def test_shipped_data_keeps_licence_and_provenance():
    for name in ("LICENSE", "PROVENANCE.md"):
        assert os.path.getsize(os.path.join(FOLDER, name)) > 100

"""Identified (lumped) parameter sets: taken as they are with `parameter_set: identified`, checked for M(q) ≻ 0."""

import os

import jax.numpy as jnp
import numpy as np
import pytest
import yaml

from lagnet.config import ConfigError, load_config
from lagnet.run import build_system
from lagnet.systems import DoublePendulum, Pendulum

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
A0 = os.path.join(ROOT, "data", "real", "dfki_double_pendulum_A0", "model_2.0_parameters.yml")

# The DFKI double pendulum's design C.0, model 3.0, as its lab identified it (dfki-ric-underactuated-lab/
# double_pendulum, BSD-3, data/system_identification/identified_parameters/design_C.0/model_3.0): I2 about the
# joint is 7 % below m2 r2² = 0.0582, which no rigid link has; the set is dynamically consistent all the same.
C0 = {
    "m1": 0.6416936775868083,
    "m2": 0.5639360564500752,
    "l1": 0.2,
    "r1": 0.2,
    "r2": 0.32126693265850237,
    "I1": 0.026710760905753486,
    "I2": 0.05387812962959988,
    "Ir": 9.937281204851094e-05,
    "gr": 6.0,
    "g": 9.81,
}
GRID = np.linspace(-np.pi, np.pi, 73)  # q2 every 5°


def _lab(path):
    with open(path) as f:
        p = yaml.safe_load(f)
    return {k: p[k] for k in ("m1", "m2", "l1", "r1", "r2", "I1", "I2", "Ir", "gr", "g")}


def _smallest_eigenvalue(system):
    return min(
        float(np.linalg.eigvalsh(np.asarray(system.mass_matrix(jnp.asarray([0.3, q2])))).min())
        for q2 in GRID
    )


def test_lab_sets_load_as_identified_with_the_same_equations():
    """A.0 (physically consistent) and C.0 (lumped, I2 < m2 r2²) load with the option, M(q) ≻ 0 on a grid; for
    A.0 the option changes only what is checked, not M."""
    a0 = _lab(A0)
    physical = DoublePendulum(**a0, inertia_about="joint")
    identified = DoublePendulum(**a0, inertia_about="joint", parameter_set="identified")
    for q2 in GRID[::6]:
        q = jnp.asarray([0.3, q2])
        np.testing.assert_array_equal(physical.mass_matrix(q), identified.mass_matrix(q))
    assert _smallest_eigenvalue(identified) > 1e-3
    c0 = DoublePendulum(**C0, inertia_about="joint", parameter_set="identified")
    assert c0.parameter_set == "identified" and float(c0.I2) == C0["I2"]  # taken as it is
    assert _smallest_eigenvalue(c0) > 1e-3
    assert float(C0["I2"]) < C0["m2"] * C0["r2"] ** 2


def test_lumped_set_is_refused_without_the_option_with_both_ways_out():
    with pytest.raises(ValueError) as refused:
        DoublePendulum(**C0, inertia_about="joint")
    message = str(refused.value)
    assert "DoublePendulum.I2 = 0.0538" in message and "m2 r2² = 0.0582" in message
    assert "identified (lumped) parameters" in message and "parameter_set: identified" in message
    assert "inertia_about: com only if" in message  # no longer the one suggestion
    # What `com` would do here: add m2 r2² to an inertia already about the joint (elbow's J2 nearly doubled).
    as_com = DoublePendulum(**C0)
    lumped = DoublePendulum(**C0, inertia_about="joint", parameter_set="identified")
    m_com, m_lumped = (np.asarray(s.mass_matrix(jnp.zeros(2))) for s in (as_com, lumped))
    assert m_com[1, 1] / m_lumped[1, 1] > 1.9


def _lab_mass_matrix(p, q2):
    """M(q2) of a double pendulum with inertias about the joints and no rotor, written out here."""
    h = p["m2"] * p["l1"] * p["r2"] * np.cos(q2)
    m12 = p["I2"] + h
    return np.array([[p["I1"] + p["I2"] + p["m2"] * p["l1"] ** 2 + 2 * h, m12], [m12, p["I2"]]])


def test_identified_sets_are_accepted_exactly_when_m_is_positive_definite_everywhere():
    """Random lumped sets: accepted iff M(q2) ≻ 0 at every q2 of a grid (eigenvalues of M written out here), and
    those refused say what was checked."""
    rng = np.random.default_rng(0)
    outcomes = set()
    for _ in range(40):
        p = dict(m1=1.0, m2=1.0, l1=1.0, r1=0.5, r2=float(rng.uniform(0.2, 1.0)), g=9.81)
        p.update(I1=float(rng.uniform(0.0, 1.5)), I2=float(rng.uniform(0.01, 1.0)))
        definite = min(np.linalg.eigvalsh(_lab_mass_matrix(p, q2)).min() for q2 in GRID) > 0
        try:
            DoublePendulum(**p, inertia_about="joint", parameter_set="identified")
            accepted = True
        except ValueError as e:
            assert "M(q) must be positive definite for every q" in str(e)
            accepted = False
        assert accepted == definite, p
        outcomes.add(accepted)
    assert outcomes == {True, False}  # both sides of the condition were drawn
    with pytest.raises(ValueError, match=r"M22 = 0\.1, det M = -0\.9 at q2 = 0"):
        DoublePendulum(
            m1=1.0, m2=1.0, l1=1.0, r1=1.0, r2=1.0, I1=0.0, I2=0.1, inertia_about="joint",
            parameter_set="identified",
        )  # fmt: skip


def test_the_condition_is_exact_at_its_boundary():
    """I2 where det M(q2 = 0) = 0: just above it accepted, just below refused (M singular at q2 = 0)."""
    base = dict(m1=1.0, m2=1.0, l1=1.0, r1=1.0, r2=1.0, I1=0.0, inertia_about="joint")
    # a = I1 + I2 + m2 l1² = I2 + 1, b = d = I2, h = 1: det(q2 = 0) = I2 (I2 + 3) − (I2 + 1)² = I2 − 1.
    DoublePendulum(**base, I2=1.0 + 1e-9, parameter_set="identified")
    with pytest.raises(ValueError, match="positive definite"):
        DoublePendulum(**base, I2=1.0 - 1e-9, parameter_set="identified")


def test_single_pendulum_identified_checks_j_positive_only():
    Pendulum(mass=1.0, com=0.5, inertia=0.2, inertia_about="joint", parameter_set="identified")
    with pytest.raises(
        ValueError, match=r"Pendulum\.I = 0\.2 about the joint axis .*parameter_set"
    ):
        Pendulum(mass=1.0, com=0.5, inertia=0.2, inertia_about="joint")
    with pytest.raises(ValueError, match=r"J = 0\.0 must be > 0"):
        Pendulum(mass=1.0, com=0.5, inertia=0.0, inertia_about="joint", parameter_set="identified")
    with pytest.raises(
        ValueError, match=r"parameter_set must be one of \['physical', 'identified'\]"
    ):
        DoublePendulum(parameter_set="lumped")


def test_the_option_through_a_config(tmp_path):
    """`system.params.parameter_set: identified` in a config; without it the config names the way out."""
    source = os.path.join(ROOT, "configs", "dfki_double_pendulum_known.yaml")
    with open(source) as f:
        user = yaml.safe_load(f)
    user["system"]["params"].update(C0)
    user["data"] = {
        k: [os.path.join(ROOT, "configs", p) for p in v] if k in ("train", "test") else v
        for k, v in user["data"].items()
    }
    path = tmp_path / "c0.yaml"
    path.write_text(yaml.safe_dump(user))
    with pytest.raises(ConfigError, match="set parameter_set: identified"):
        build_system(load_config(path))
    system = build_system(load_config(path, ["system.params.parameter_set=identified"]))
    assert isinstance(system, DoublePendulum) and system.parameter_set == "identified"

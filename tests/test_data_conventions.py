"""Angle conventions in the data mapping: sign, offsets, relative and absolute coordinates."""

import re

import jax.numpy as jnp
import numpy as np
import pytest
import yaml

import lagnet
import lagnet.data as ld
from lagnet.data.mapping import parse_offset
from lagnet.systems import CartPole, DoublePendulum, Pendulum


def write_csv(path, header, columns):
    """A CSV of `columns` (each (rows,)), every float written so that it reads back exactly."""
    rows = zip(*columns, strict=True)
    lines = [",".join(header)] + [",".join(repr(float(v)) for v in r) for r in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def double_pendulum_run():
    """A swinging double pendulum from lagnet, in its own convention (q1 absolute from hanging down, q2 relative
    to link 1), with a torque on each joint: (t, q, qd, u)."""
    steps, dt = 300, 0.01
    t = dt * np.arange(steps + 1)
    u = np.stack([0.3 * np.sin(2 * t), -0.2 * np.cos(3 * t)], axis=1)
    qs, qds = lagnet.rollout(
        DoublePendulum(),
        lagnet.RK4(),
        jnp.array([1.2, -0.8]),
        jnp.array([0.5, 1.0]),
        jnp.asarray(u[:-1]),
        dt,
    )
    q, qd = np.asarray(qs), np.asarray(qds)
    # The run stays continuous, well inside what unwrapping needs.
    assert np.max(np.abs(np.diff(q, axis=0))) < 0.5
    return t, q, qd, u


def absolute_pi_down(q, qd):
    """The run as recorded absolute, with each link's angle π hanging down (0 pointing up)."""
    phi = np.stack([q[:, 0] + np.pi, q[:, 0] + q[:, 1] + np.pi], axis=1)
    phid = np.stack([qd[:, 0], qd[:, 0] + qd[:, 1]], axis=1)
    return phi, phid


CONVERT = {"offsets": {"q1": "pi", "q2": "pi"}, "relative": {"q2": "q1"}}


# ---------------------------------------------------------------- round trip


def test_double_pendulum_recorded_absolute_pi_down_round_trips(tmp_path, double_pendulum_run):
    t, q, qd, u = double_pendulum_run
    phi, phid = absolute_pi_down(q, qd)
    path = write_csv(
        tmp_path / "dp.csv",
        ["t", "phi1", "phi2", "phi1_dot", "phi2_dot", "tau1", "tau2"],
        [t, *phi.T, *phid.T, *u.T],
    )
    mapping = {
        "positions": ["phi1", "phi2"],
        "velocities": ["phi1_dot", "phi2_dot"],
        "inputs": ["tau1", "tau2"],
        **CONVERT,
    }
    tr = ld.load_trajectory(path, mapping, system=DoublePendulum())
    assert tr.coordinate_names == ("q1", "q2")
    np.testing.assert_allclose(tr.q, q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(tr.qd, qd, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(tr.u, u)  # inputs are joint torques either way: untouched
    # Without the conventions the file reads as it was written.
    plain = {k: v for k, v in mapping.items() if k not in CONVERT}
    np.testing.assert_allclose(
        ld.load_trajectory(path, plain, system=DoublePendulum()).q, phi, atol=0
    )


@pytest.mark.parametrize("method", ["central", "backward"])
def test_derived_velocities_follow_the_conversion(tmp_path, double_pendulum_run, method):
    # The positions are converted before they are differenced: the velocities are those of q, not of phi.
    t, q, qd, _ = double_pendulum_run
    phi, _ = absolute_pi_down(q, qd)
    path = write_csv(tmp_path / "dp.csv", ["t", "phi1", "phi2"], [t, *phi.T])
    mapping = {"positions": ["phi1", "phi2"], "velocities": method, **CONVERT}
    tr = ld.load_trajectory(path, mapping, system=DoublePendulum())
    np.testing.assert_allclose(tr.q, q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(tr.qd, ld.finite_difference(q, t, method), rtol=0, atol=1e-10)
    assert tr.u.shape == (len(t), 2) and not tr.u.any()


def test_wrapped_absolute_recording_gives_continuous_angles(tmp_path, double_pendulum_run):
    # Recorded wrapped to [−π, π): each column is unwrapped, then converted, so the result is continuous and
    # equals the true angles modulo 2π.
    t, q, qd, _ = double_pendulum_run
    phi, _ = absolute_pi_down(q, qd)
    wrapped = ld.wrap(phi)
    assert np.max(np.abs(np.diff(wrapped, axis=0))) > np.pi  # the recording does wrap
    path = write_csv(tmp_path / "dpw.csv", ["t", "phi1", "phi2"], [t, *wrapped.T])
    tr = ld.load_trajectory(
        path, {"positions": ["phi1", "phi2"], **CONVERT}, system=DoublePendulum()
    )
    assert np.max(np.abs(np.diff(tr.q, axis=0))) < 0.5
    np.testing.assert_allclose(ld.angular_difference(tr.q, q), 0.0, atol=1e-12)
    np.testing.assert_allclose(tr.q - tr.q[0], q - q[0], atol=1e-12)


@pytest.mark.parametrize("low", [-np.pi, 0.0])
def test_offset_of_pi_on_wrapped_data_is_continuous(tmp_path, low):
    # A pendulum recorded with θ = π hanging down, spinning, wrapped to [low, low + 2π).
    t = 0.02 * np.arange(200)
    theta = 0.3 + 3.0 * t
    wrapped = ld.wrap(theta + np.pi, low)
    path = write_csv(tmp_path / "p.csv", ["t", "th"], [t, wrapped])
    tr = ld.load_trajectory(
        path, {"positions": ["th"], "offsets": {"theta": "pi"}}, system=Pendulum()
    )
    np.testing.assert_allclose(tr.q[:, 0], wrapped[0] - np.pi + 3.0 * t, atol=1e-12)
    np.testing.assert_allclose(ld.angular_difference(tr.q[:, 0], theta), 0.0, atol=1e-12)
    np.testing.assert_allclose(tr.qd[:, 0], 3.0, atol=1e-9)


# ---------------------------------------------------------------- each conversion


def test_absolute_from_relative_data_without_a_system(tmp_path, double_pendulum_run):
    # The inverse: the file holds lagnet's relative q2, a model wants absolute angles. Without a system the
    # coordinates are named by their columns; chains accumulate (a third link relative to the second).
    t, q, qd, _ = double_pendulum_run
    q3 = 0.5 * np.sin(t)
    path = write_csv(tmp_path / "rel.csv", ["t", "a", "b", "c"], [t, q[:, 0], q[:, 1], q3])
    tr = ld.load_trajectory(
        path,
        {"positions": ["a", "b", "c"], "absolute": {"b": "a", "c": "b"}},
        angles=[True, True, True],
    )
    assert tr.coordinate_names == ("a", "b", "c")
    np.testing.assert_allclose(tr.q[:, 0], q[:, 0], atol=0)
    np.testing.assert_allclose(tr.q[:, 1], q[:, 0] + q[:, 1], atol=1e-12)
    np.testing.assert_allclose(tr.q[:, 2], q[:, 0] + q[:, 1] + q3, atol=1e-12)


def test_relative_chain_uses_the_recorded_absolute_angles(tmp_path):
    # A triple pendulum recorded absolute: each link relative to the one before, from the recorded values.
    t = 0.01 * np.arange(50)
    a1, a2, a3 = 0.1 + t, 0.5 - 2 * t, 1.0 + 0.5 * t
    path = write_csv(tmp_path / "abs.csv", ["t", "a1", "a2", "a3"], [t, a1, a2, a3])
    tr = ld.load_trajectory(
        path,
        {"positions": ["a1", "a2", "a3"], "relative": {"a2": "a1", "a3": "a2"}},
        angles=[True] * 3,
    )
    np.testing.assert_allclose(tr.q, np.stack([a1, a2 - a1, a3 - a2], axis=1), atol=1e-12)
    np.testing.assert_allclose(tr.qd[:, 1:], [[-3.0, 2.5]] * len(t), atol=1e-9)


def test_sign_flips_positions_velocities_and_named_inputs(tmp_path):
    t = 0.01 * np.arange(40)
    x, phi = 0.2 * t, 0.5 + t
    path = write_csv(
        tmp_path / "cp.csv",
        ["t", "x", "phi", "x_dot", "phi_dot", "force"],
        [t, x, phi, 0.2 + 0 * t, 1.0 + 0 * t, np.cos(t)],
    )
    base = {
        "positions": ["x", "phi"],
        "velocities": ["x_dot", "phi_dot"],
        "inputs": ["force"],
    }
    tr = ld.load_trajectory(path, {**base, "sign": {"x": -1, "force": -1}}, system=CartPole())
    np.testing.assert_array_equal(tr.q, np.stack([-x, phi], axis=1))
    np.testing.assert_array_equal(tr.qd, [[-0.2, 1.0]] * len(t))
    np.testing.assert_array_equal(tr.u[:, 0], -np.cos(t))
    # sign before offset: the offset is the recorded reading at the system's zero, in the recorded direction.
    tr = ld.load_trajectory(
        path,
        # phi in degrees, so its rate in deg/s (lagnet checks that velocities are the positions' rate).
        {
            **base,
            "units": {"phi": "deg", "phi_dot": "deg/s"},
            "sign": {"phi": -1},
            "offsets": {"phi": "90 deg"},
        },
        system=CartPole(),
    )
    np.testing.assert_allclose(tr.q[:, 1], -(phi - 90.0) * np.pi / 180, atol=1e-12)
    np.testing.assert_allclose(
        tr.qd[:, 1], -np.pi / 180, rtol=1e-12
    )  # velocities: signed, not offset


def test_offsets_apply_after_unit_conversion_and_to_any_coordinate(tmp_path):
    t = 0.01 * np.arange(10)
    path = write_csv(tmp_path / "u.csv", ["t", "x_mm", "phi_deg"], [t, 500.0 + t, 180.0 + t])
    tr = ld.load_trajectory(
        path,
        {
            "positions": ["x_mm", "phi_deg"],
            "units": {"x_mm": "mm", "phi_deg": "deg"},
            "offsets": {"x": 0.5, "phi": "pi"},
        },
        system=CartPole(),
    )
    np.testing.assert_allclose(tr.q, np.stack([1e-3 * t, np.deg2rad(t)], axis=1), atol=1e-12)


@pytest.mark.parametrize(
    "value, expected",
    [
        ("pi", np.pi),
        ("-pi", -np.pi),
        ("pi/2", np.pi / 2),
        ("-pi/2", -np.pi / 2),
        ("2pi", 2 * np.pi),
        ("2*pi", 2 * np.pi),
        ("3*pi/4", 3 * np.pi / 4),
        ("π", np.pi),
        ("180 deg", np.pi),
        ("-5 mm", -5e-3),
        ("0.25", 0.25),
        (1, 1.0),
        (-0.5, -0.5),
    ],
)
def test_offset_values(value, expected):
    assert parse_offset(value, "x") == pytest.approx(expected, rel=1e-15)


def test_no_conventions_leave_the_data_untouched(tmp_path):
    t = 0.01 * np.arange(10)
    path = write_csv(tmp_path / "p.csv", ["t", "th", "thd"], [t, 0.1 + t, 1 + 0 * t])
    mapping = {"positions": ["th"], "velocities": ["thd"]}
    trivial = {**mapping, "sign": {"theta": 1}, "offsets": {"theta": 0}}
    a = ld.load_trajectory(path, mapping, system=Pendulum())
    b = ld.load_trajectory(path, trivial, system=Pendulum())
    np.testing.assert_array_equal(a.q, b.q)
    np.testing.assert_array_equal(a.qd, b.qd)


# ---------------------------------------------------------------- YAML


YAML = """
mapping:
  time: t
  positions: [phi1, phi2]
  velocities: central
  inputs: [tau1]
  sign: {q1: -1, tau1: -1}
  offsets: {q1: pi, q2: -pi/2}
  relative: {q2: q1}
"""


def test_conventions_round_trip_through_yaml():
    m = ld.ColumnMapping.from_dict(yaml.safe_load(YAML)["mapping"])
    assert m.sign == {"q1": -1, "tau1": -1}
    assert m.offsets == {"q1": "pi", "q2": "-pi/2"}  # kept as written ...
    assert m.offset_values == pytest.approx({"q1": np.pi, "q2": -np.pi / 2})  # ... read in SI
    assert m.relative == {"q2": "q1"} and m.absolute == {}
    d = m.to_dict()
    assert ld.ColumnMapping.from_dict(yaml.safe_load(yaml.safe_dump(d))) == m
    assert ld.ColumnMapping.from_dict(d) == m
    m2 = ld.ColumnMapping.from_dict({"positions": ["a", "b"], "absolute": {"b": "a"}})
    assert ld.ColumnMapping.from_dict(yaml.safe_load(yaml.safe_dump(m2.to_dict()))) == m2
    # Direct construction checks the same.
    assert ld.ColumnMapping(positions=("a",), offsets={"a": "2pi"}).offset_values == {
        "a": pytest.approx(2 * np.pi)
    }


# ---------------------------------------------------------------- errors


WHERE = "cfg.yaml: data.mapping"


@pytest.mark.parametrize(
    "conventions, message",
    [
        (
            {"offsets": {"q1": "pie"}},
            f"{WHERE}.offsets.q1 must be a number (in SI: rad or m), a multiple of pi",
        ),
        ({"offsets": {"q1": "2 s"}}, f"{WHERE}.offsets.q1 must be a number"),
        ({"offsets": {"q1": None}}, f"{WHERE}.offsets.q1 must be a number"),
        ({"sign": {"q1": 2}}, f"{WHERE}.sign.q1 must be 1 or -1, got 2"),
        ({"sign": {"q1": True}}, f"{WHERE}.sign.q1 must be 1 or -1, got True"),
        (
            {"relative": {"q2": "q2"}},
            f"{WHERE}.relative.q2: a coordinate cannot be relative to itself",
        ),
        ({"absolute": {"q2": 1}}, f"{WHERE}.absolute.q2 must name a coordinate"),
        (
            {"relative": {"q2": "q1"}, "absolute": {"q2": "q1"}},
            f"{WHERE}: coordinate(s) ['q2'] are in both relative and absolute",
        ),
        (
            {"absolute": {"q2": "q3", "q3": "q2"}},
            f"{WHERE}.absolute.q2: the references form a cycle q2 → q3 → q2",
        ),
        ({"offsets": ["q1", "pi"]}, f"{WHERE}.offsets must map coordinate names to values"),
    ],
)
def test_error_in_the_conventions_names_the_key(conventions, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        ld.ColumnMapping.from_dict({"positions": ["a", "b"], **conventions}, where=WHERE)


def test_error_constructing_with_a_bad_convention():
    with pytest.raises(ValueError, match=re.escape("ColumnMapping.sign.x must be 1 or -1")):
        ld.ColumnMapping(positions=("x",), sign={"x": 0})


@pytest.fixture
def dp_file(tmp_path, double_pendulum_run):
    t, q, qd, _ = double_pendulum_run
    phi, _ = absolute_pi_down(q, qd)
    return write_csv(tmp_path / "dp.csv", ["t", "phi1", "phi2"], [t, *phi.T])


@pytest.mark.parametrize(
    "conventions, message",
    [
        (
            {"offsets": {"phi1": "pi"}},
            "mapping.offsets: unknown coordinate 'phi1'; the coordinates are ['q1', 'q2'] (conventions "
            "name coordinates and inputs, not columns: column 'phi1' is 'q1')",
        ),
        ({"relative": {"q2": "q0"}}, "mapping.relative: unknown coordinate 'q0'"),
        ({"absolute": {"q3": "q1"}}, "mapping.absolute: unknown coordinate 'q3'"),
        (
            {"sign": {"tau": -1}},
            "mapping.sign: unknown coordinate or input 'tau'; the coordinates are ['q1', 'q2'], "
            "the inputs ['tau1', 'tau2']",
        ),
        (
            {"offsets": {"q1": "5 mm"}},
            "mapping.offsets.q1: '5 mm' is a length but coordinate 'q1' is an angle",
        ),
    ],
)
def test_error_convention_does_not_fit_the_coordinates(dp_file, conventions, message):
    with pytest.raises(ValueError, match=re.escape(f"{dp_file}: {message}")):
        ld.load_trajectory(
            dp_file, {"positions": ["phi1", "phi2"], **conventions}, system=DoublePendulum()
        )


def test_error_sign_names_an_input_column(tmp_path):
    t = 0.01 * np.arange(5)
    path = write_csv(tmp_path / "p.csv", ["t", "th", "tq"], [t, t, t])
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"{path}: mapping.sign: unknown coordinate or input 'tq'; the coordinates are ['theta'], the "
            "inputs ['torque'] (conventions name coordinates and inputs, not columns: column 'tq' is 'torque')"
        ),
    ):
        ld.load_trajectory(
            path,
            {"positions": ["th"], "inputs": ["tq"], "sign": {"tq": -1}},
            system=Pendulum(),
        )


def test_error_relative_between_an_angle_and_a_length(tmp_path):
    t = 0.01 * np.arange(5)
    path = write_csv(tmp_path / "cp.csv", ["t", "x", "phi"], [t, t, t])
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"{path}: mapping.relative.phi: coordinate 'phi' is an angle but 'x' is not; relative "
            "coordinates are both angles or both not"
        ),
    ):
        ld.load_trajectory(
            path, {"positions": ["x", "phi"], "relative": {"phi": "x"}}, system=CartPole()
        )
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"{path}: mapping.offsets.phi: 'pi' is an angle but coordinate 'phi' is not an angle "
            "(without a system, give `angles` or an angle unit)"
        ),
    ):
        ld.load_trajectory(path, {"positions": ["x", "phi"], "offsets": {"phi": "pi"}})

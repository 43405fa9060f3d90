"""The loader on the shipped files and on deliberately broken ones (every error message checked)."""

import gzip
import re

import numpy as np
import pytest

import lagnet.data as ld
from lagnet.systems import CartPole, Pendulum

CARTPOLE = {
    "time": "t",
    "positions": ["x", "phi"],
    "velocities": ["x_dot", "phi_dot"],
    "inputs": ["force"],
}


def write_csv(path, header, rows):
    lines = [",".join(header)] + [",".join(str(v) for v in r) for r in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def pendulum_rows(n=50, dt=0.02, omega=3.0):
    # θ(t) = ω t: a steady spin, so wrapped angles jump every revolution and the velocity is exactly ω.
    t = dt * np.arange(n)
    return t, omega * t


# ---------------------------------------------------------------- shipped files


@pytest.mark.parametrize("name", list(ld.datasets()))
def test_every_shipped_dataset_loads(name):
    trajs = ld.load_dataset(name)
    system = ld.dataset_system(name)
    assert trajs
    for tr in trajs:
        assert tr.q.shape == (tr.n_rows, system.n_dof)
        assert tr.u.shape[1] == system.n_inputs
        assert np.all(np.isfinite(tr.q)) and np.all(np.isfinite(tr.qd))
        assert np.all(tr.dt > 0)
        for i, is_angle in enumerate(tr.angles):
            if is_angle:  # unwrapped: no step of more than π between samples
                assert np.max(np.abs(np.diff(tr.q[:, i])), initial=0.0) < np.pi


def test_cartpole_train_matches_the_paper_setup():
    (tr,) = ld.load_dataset("cartpole_train")
    assert tr.coordinate_names == ("x", "phi") and tr.angles == (False, True)
    assert tr.n_rows == 24000 and tr.is_uniform and np.allclose(tr.dt, 0.02)
    assert 470 < tr.duration < 490
    assert tr.meta["generator"].endswith("CartPoleRig") and tr.meta["seed"] == 2020
    raw, _ = ld.read_table(ld.dataset_path("cartpole_train"))
    assert raw["phi"].min() >= 0 and raw["phi"].max() < 2 * np.pi  # stored wrapped, like Table 1
    assert np.ptp(tr.q[:, 1]) > 4 * np.pi  # ... and loaded unwrapped: the pole went over the top
    # The recorded velocities are backward differences of the measured positions.
    np.testing.assert_allclose(tr.qd[1:], np.diff(tr.q, axis=0) / 0.02, atol=1e-9)


def test_dfki_keeps_the_measured_non_uniform_steps():
    (tr,) = ld.load_dataset("dfki_gravity_compensation")
    assert not tr.is_uniform
    assert tr.dt.min() < 0.0011 and tr.dt.max() > 0.005
    raw = np.loadtxt(ld.dataset_path("dfki_gravity_compensation"), delimiter=",", skiprows=1)
    np.testing.assert_array_equal(tr.t, raw[:, 0])
    np.testing.assert_array_equal(tr.q[:, 0], raw[:, 1])
    np.testing.assert_array_equal(tr.u[:, 0], raw[:, 3])
    res = tr.resample(0.002)
    assert res.is_uniform and np.allclose(res.dt, 0.002)


def test_potential_pairs_are_episodes():
    trajs = ld.load_dataset("pendulum_potential_train")
    assert len(trajs) == 400 and all(t.n_rows == 2 and np.isclose(t.dt[0], 0.1) for t in trajs)
    assert trajs[0].u.shape == (2, 1) and not trajs[0].u.any()  # unforced: zero torque
    q = np.array([t.q[:, 0] for t in trajs])
    qd = np.array([t.qd[:, 0] for t in trajs])
    energy = 0.5 * qd**2 - np.cos(q)
    np.testing.assert_allclose(energy[:, 1], energy[:, 0], atol=1e-10)


# ---------------------------------------------------------------- features


@pytest.mark.parametrize("low", [-np.pi, 0.0])
@pytest.mark.parametrize("method", ["central", "backward"])
def test_wrapped_angles_are_unwrapped_before_differencing(tmp_path, low, method):
    t, theta = pendulum_rows()
    wrapped = ld.wrap(theta, low)
    path = write_csv(tmp_path / "p.csv", ["t", "th", "tau"], zip(t, wrapped, 0 * t, strict=True))
    tr = ld.load_trajectory(
        path, {"positions": ["th"], "velocities": method, "inputs": ["tau"]}, system=Pendulum()
    )
    np.testing.assert_allclose(tr.q[:, 0], theta + wrapped[0] - theta[0], atol=1e-12)
    np.testing.assert_allclose(tr.qd[:, 0], 3.0, atol=1e-9)
    # Compare angles as angles: the loaded and the stored angle are the same point on the circle.
    np.testing.assert_allclose(ld.angular_difference(tr.q[:, 0], wrapped), 0.0, atol=1e-12)


def test_central_differences_on_a_non_uniform_grid(tmp_path):
    t = np.cumsum(np.r_[0.0, np.random.default_rng(0).uniform(0.005, 0.02, 200)])
    x = np.sin(t)
    path = write_csv(tmp_path / "x.csv", ["time", "pos"], zip(t, x, strict=True))
    tr = ld.load_trajectory(
        path, {"time": "time", "positions": ["pos"], "velocities": "central"}, angles=[False]
    )
    np.testing.assert_allclose(tr.dt, np.diff(t))
    np.testing.assert_allclose(tr.qd[1:-1, 0], np.cos(t[1:-1]), atol=2e-4)


def test_units_are_converted_to_si(tmp_path):
    t = 10.0 * np.arange(20)  # ms
    path = write_csv(
        tmp_path / "u.csv",
        ["t", "x", "phi", "xd", "phid", "f"],
        [(ti, 100.0, 90.0, 0.0, 0.0, 1.0) for ti in t],
    )
    mapping = {
        "positions": ["x", "phi"],
        "velocities": ["xd", "phid"],
        "inputs": ["f"],
        "units": {"t": "ms", "x": "mm", "phi": "deg", "xd": "mm/s", "phid": "deg/s", "f": "N"},
    }
    tr = ld.load_trajectory(path, mapping, system=CartPole())
    np.testing.assert_allclose(tr.dt, 0.01)
    np.testing.assert_allclose(tr.q[0], [0.1, np.pi / 2])


def test_npz_two_dimensional_arrays_and_gzip_csv(tmp_path):
    t, theta = pendulum_rows()
    q = np.stack([0.1 * t, theta], axis=1)
    ld.write_npz(tmp_path / "a.npz", {"t": t, "q": q, "u": 0 * t}, {"units": {"t": "s"}})
    tr = ld.load_trajectory(
        tmp_path / "a.npz", {"positions": "q", "inputs": ["u"]}, system=CartPole()
    )
    np.testing.assert_allclose(tr.qd, [[0.1, 3.0]] * len(t), atol=1e-9)
    with gzip.open(tmp_path / "b.csv.gz", "wt") as f:
        f.write("t,th\n" + "".join(f"{a},{b}\n" for a, b in zip(t, theta, strict=True)))
    tr = ld.load_trajectory(tmp_path / "b.csv.gz", {"positions": ["th"]}, system=Pendulum())
    assert tr.u.shape == (len(t), 1)


def test_mapping_round_trips_through_its_dict():
    m = ld.ColumnMapping.from_dict({**CARTPOLE, "units": {"x": "mm"}, "resample": 0.01})
    assert ld.ColumnMapping.from_dict(m.to_dict()) == m


# ---------------------------------------------------------------- broken files


def broken(tmp_path, name, header, rows):
    return write_csv(tmp_path / name, header, rows)


def good_rows(n=10):
    return [(0.02 * i, 0.01 * i, 0.1 * i, 0.5, 5.0, 0.0) for i in range(n)]


HEADER = ["t", "x", "phi", "x_dot", "phi_dot", "force"]


def expect(path, message, mapping=CARTPOLE, system=None):
    with pytest.raises(ValueError, match=message):
        ld.load_trajectory(path, mapping, system=system or CartPole())


def test_error_missing_file():
    with pytest.raises(FileNotFoundError, match="nowhere.csv: no such file"):
        ld.load_trajectory("nowhere.csv", CARTPOLE)


def test_error_missing_column(tmp_path):
    path = broken(tmp_path, "m.csv", ["t", "x", "angle", "x_dot", "phi_dot", "force"], good_rows())
    expect(path, re.escape(f"{path}: column 'phi' (positions[1]) not found; the file has columns"))


@pytest.mark.parametrize("value, shown", [("nan", "nan"), ("inf", "inf"), ("", "nan")])
def test_error_non_finite_names_file_column_row(tmp_path, value, shown):
    rows = good_rows()
    rows[4] = (0.08, 0.04, value, 0.5, 5.0, 0.0)
    path = broken(tmp_path, "n.csv", HEADER, rows)
    expect(path, re.escape(f"{path}: column 'phi' row 4 (line 6) is {shown} (not finite)"))


def test_error_not_a_number(tmp_path):
    rows = good_rows()
    rows[2] = (0.04, "abc", 0.2, 0.5, 5.0, 0.0)
    path = broken(tmp_path, "s.csv", HEADER, rows)
    expect(path, re.escape(f"{path}: column 'x' row 2 (line 4): cannot read 'abc' as a number"))


def test_error_ragged_row(tmp_path):
    rows = good_rows()
    rows[3] = (0.06, 0.03)
    path = broken(tmp_path, "r.csv", HEADER, rows)
    expect(path, re.escape(f"{path}: row 3 (line 5) has 2 fields, the header has 6"))


@pytest.mark.parametrize("t5", [0.08, 0.07])
def test_error_non_increasing_time(tmp_path, t5):
    rows = good_rows()
    rows[5] = (t5, *rows[5][1:])
    path = broken(tmp_path, "t.csv", HEADER, rows)
    expect(
        path,
        re.escape(
            f"{path}: column 't' row 5 (line 7): time {t5} is not after the previous row's 0.08"
        ),
    )


def test_error_npz_rows_are_named(tmp_path):
    t = 0.02 * np.arange(10)
    x = np.zeros(10)
    x[7] = np.nan
    ld.write_npz(tmp_path / "n.npz", {"t": t, "th": x}, {})
    with pytest.raises(ValueError, match=re.escape("n.npz: column 'th' row 7 is nan")):
        ld.load_trajectory(tmp_path / "n.npz", {"positions": ["th"]}, system=Pendulum())


def test_error_too_few_rows_for_the_window(tmp_path):
    path = broken(tmp_path, "short.csv", HEADER, good_rows(10))
    tr = ld.load_trajectory(path, CARTPOLE, system=CartPole())
    with pytest.raises(
        ValueError,
        match=re.escape(f"{path}: 10 rows, too few for a window of k=30 steps (needs at least 31)"),
    ):
        ld.make_windows(tr, 30)


def test_error_a_single_row(tmp_path):
    path = broken(tmp_path, "one.csv", HEADER, good_rows(1))
    expect(path, re.escape(f"{path}: only 1 row(s); a trajectory needs at least 2"))


def test_error_number_of_columns_does_not_fit_the_system(tmp_path):
    path = broken(tmp_path, "c.csv", HEADER, good_rows())
    expect(
        path,
        re.escape(
            f"{path}: mapping.positions lists 1 column(s) ['x'], expected 2 for CartPole's 2 coordinate(s)"
        ),
        {**CARTPOLE, "positions": ["x"], "velocities": ["x_dot"]},
    )
    expect(
        path,
        re.escape(
            f"{path}: mapping.inputs lists 2 column(s) ['force', 'x'], expected 1 for CartPole's"
        ),
        {**CARTPOLE, "inputs": ["force", "x"]},
    )


def test_error_npz_array_width_does_not_fit(tmp_path):
    ld.write_npz(tmp_path / "w.npz", {"t": 0.1 * np.arange(5), "q": np.zeros((5, 3))}, {})
    with pytest.raises(
        ValueError, match=re.escape("array 'q' (positions) has shape (5, 3), expected (rows, 2)")
    ):
        ld.load_trajectory(tmp_path / "w.npz", {"positions": "q"}, system=CartPole())


def test_error_unit_does_not_fit_the_coordinate(tmp_path):
    path = broken(tmp_path, "swap.csv", HEADER, good_rows())
    swapped = {**CARTPOLE, "positions": ["phi", "x"], "units": {"x": "m", "phi": "rad"}}
    expect(
        path,
        re.escape(
            f"{path}: column 'phi' has unit 'rad' (angle) but coordinate 'x' (not an angle) needs "
            "length or dimensionless"
        ),
        swapped,
    )
    expect(
        path,
        re.escape(
            f"{path}: column 'phi_dot' has unit 'rad' (angle) but the velocity of coordinate 'phi'"
        ),
        {**CARTPOLE, "units": {"phi_dot": "rad"}},
    )
    expect(
        path,
        re.escape(f"{path}: column 'x': unknown unit 'furlong'"),
        {**CARTPOLE, "units": {"x": "furlong"}},
    )


def test_error_in_the_mapping_itself():
    with pytest.raises(
        ValueError, match=re.escape("cfg.yaml: data.mapping: unknown key(s) ['position']")
    ):
        ld.ColumnMapping.from_dict({"position": ["x"]}, where="cfg.yaml: data.mapping")
    with pytest.raises(ValueError, match="velocities must be columns .* or one of"):
        ld.ColumnMapping.from_dict({"positions": ["x"], "velocities": "diff"})
    with pytest.raises(ValueError, match=re.escape("mapping.positions is required")):
        ld.ColumnMapping.from_dict({"time": "t"})


def test_error_several_episodes_for_load_trajectory():
    path = ld.dataset_path("pendulum_potential_train")
    with pytest.raises(ValueError, match="holds 400 episodes; use load_trajectories"):
        ld.load_trajectory(path, ld.datasets()["pendulum_potential_train"].mapping)


def test_data_imports_nothing_above_it():
    # Loading stays below the simulation and the solvers: lagnet.data may use the systems (names, angles) only.
    import ast
    from pathlib import Path

    import lagnet.data

    above = (
        "simulate",
        "rollout",
        "integrators",
        "models",
        "train",
        "evaluate",
        "control",
        "run",
        "fit",
    )
    for path in Path(lagnet.data.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.ImportFrom) and node.level == 2
            ):  # from ..x import y, from .. import x
                names = [node.module] if node.module else [a.name for a in node.names]
                assert not {n.split(".")[0] for n in names} & set(above), (path.name, names)
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                assert not node.module.startswith(tuple(f"lagnet.{a}" for a in above)), path.name
            if isinstance(node, ast.Import):
                for alias in node.names:
                    assert not alias.name.startswith(tuple(f"lagnet.{a}" for a in above)), path.name


def test_a_registered_format_reads_its_files(tmp_path, monkeypatch):
    """One reader per format (`lagnet.data.formats`): a format registered for `.tsv` reads such files, through
    the same column mapping and checks as CSV and NPZ; an unregistered ending names the known ones."""
    from lagnet.data import formats, load_trajectories
    from lagnet.data.formats import base
    from lagnet.data.table import Table

    class TSVFormat(formats.AbstractFormat):
        suffixes = (".tsv",)

        def read(self, path):
            names, *rows = [line.split("\t") for line in open(path).read().splitlines()]
            cells = np.array(rows, dtype=float)
            return Table(path, {n: cells[:, i] for i, n in enumerate(names)}, {}, csv=False)

    monkeypatch.setattr(base, "_FORMATS", list(base._FORMATS))
    path = tmp_path / "p.tsv"
    with pytest.raises(ValueError, match=r"unknown file type; expected \.csv, \.csv\.gz or \.npz"):
        formats.format_for(str(path))
    formats.register_format(TSVFormat())
    t = np.arange(20) * 0.1
    path.write_text(
        "t\ttheta\ttheta_dot\n" + "\n".join(f"{a}\t{np.sin(a)}\t{np.cos(a)}" for a in t)
    )
    mapping = {"time": "t", "positions": ["theta"], "velocities": ["theta_dot"]}
    (traj,) = load_trajectories(str(path), mapping)
    np.testing.assert_allclose(traj.q[:, 0], np.sin(t))
    with pytest.raises(ValueError, match=r"expected \.csv, \.csv\.gz, \.npz or \.tsv"):
        formats.format_for(str(tmp_path / "p.xlsx"))

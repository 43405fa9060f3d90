"""Bad configs and data files as a new user makes them: each gives lagnet's own error, naming the file (and the key,
column or row), never a traceback or a silently wrong run. No training: the errors come before it."""

import gzip
import re
import zipfile

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lagnet.data as ld
from lagnet.cli import main
from lagnet.config import ConfigError, load_config, validate
from lagnet.run import build_system
from lagnet.run.training import load_training_data
from lagnet.systems import CartPole, Pendulum

CARTPOLE = {
    "time": "t",
    "positions": ["x", "phi"],
    "velocities": ["x_dot", "phi_dot"],
    "inputs": ["force"],
}
PENDULUM = {"time": "t", "positions": ["theta"], "velocities": ["theta_dot"], "inputs": ["torque"]}

pytestmark = pytest.mark.attack("data file", "traceback")


def cartpole_columns(n=200, dt=0.02):
    """A smooth cart-pole recording: x = 0.3 sin 2t (m), φ = sin 3t (rad), exact velocities."""
    t = dt * np.arange(n)
    return {
        "t": t,
        "x": 0.3 * np.sin(2 * t),
        "phi": np.sin(3 * t),
        "x_dot": 0.6 * np.cos(2 * t),
        "phi_dot": 3 * np.cos(3 * t),
        "force": np.cos(t),
    }


def write_csv(path, columns, header=None):
    names = list(columns)
    data = np.column_stack([columns[k] for k in names])
    lines = [",".join(header or names)] + [",".join(f"{v!r}" for v in row) for row in data.tolist()]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_config(tmp_path, data_file, **sections):
    user = {
        "system": {"name": "pendulum"},
        "data": {"train": str(data_file), "mapping": dict(PENDULUM)},
    }
    for key, value in sections.items():
        user[key] = {**user.get(key, {}), **value}
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(user))
    return path


def pendulum_csv(path, n=200, dt=0.05):
    t = dt * np.arange(n)
    cols = {"t": t, "theta": np.sin(t), "theta_dot": np.cos(t), "torque": 0.1 * np.sin(2 * t)}
    return write_csv(path, cols)


def cli_error(capsys, *argv) -> str:
    """`lagnet ARGV` must exit 2 with one line of error (no traceback); returns that line."""
    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


# ---------------------------------------------------------------- configs


@pytest.mark.attack("config", "traceback")
def test_config_that_is_a_directory(tmp_path, capsys):
    err = cli_error(capsys, "train", str(tmp_path), "--out", str(tmp_path / "run"))
    assert f"{tmp_path}: is a directory, expected a YAML config file" in err


@pytest.mark.attack("config", "traceback")
def test_config_that_is_binary(tmp_path, capsys):
    path = tmp_path / "weights.yaml"
    path.write_bytes(bytes(range(256)))
    err = cli_error(capsys, "train", str(path), "--out", str(tmp_path / "run"))
    assert f"{path}: not a text (UTF-8) file: byte 0x80 at position 128" in err


@pytest.mark.attack("CLI", "traceback")
def test_set_with_invalid_yaml_names_the_argument(tmp_path, capsys):
    cfg = write_config(tmp_path, pendulum_csv(tmp_path / "p.csv"))
    err = cli_error(
        capsys, "train", str(cfg), "--set", "training.epochs=[1,", "--out", str(tmp_path / "r")
    )
    assert "--set 'training.epochs=[1,': the value '[1,' is not valid YAML" in err


@pytest.mark.attack("config", "traceback")
def test_config_list_is_refused(tmp_path):
    path = tmp_path / "list.yaml"
    path.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="list.yaml: the config must be a mapping"):
        load_config(path)


@pytest.mark.attack("config", "silent")
def test_a_key_given_twice_is_refused(tmp_path):
    # PyYAML keeps the last: the first `training:` section (epochs) would silently vanish.
    path = tmp_path / "twice.yaml"
    path.write_text("training:\n  epochs: 5\nseed: 1\ntraining:\n  batch_size: 8\n")
    with pytest.raises(
        ConfigError, match=r"twice.yaml: YAML syntax error at line 4.*'training' is given twice"
    ):
        load_config(path)


@pytest.mark.attack("config", "silent")
def test_yaml_merge_keys_still_work(tmp_path):
    # `<<:` merges may repeat a key on purpose: the explicit one wins, as YAML says.
    path = tmp_path / "merge.yaml"
    path.write_text("training:\n  <<: {epochs: 3, batch_size: 4}\n  batch_size: 8\n")
    training = load_config(path).training
    assert (training.epochs, training.batch_size) == (3, 8)


@pytest.mark.attack("config", "traceback")
@pytest.mark.parametrize(
    "user, message",
    [
        ({"training": {"weights_q": ["1"]}}, r"training.weights_q must be numbers >= 0 .*\['1'\]"),
        ({"training": {"weights_qd": [-1.0]}}, r"training.weights_qd must be numbers >= 0"),
        ({"training": {"weight_decay": float("inf")}}, r"training.weight_decay must be a finite"),
        ({"training": {"learning_rate": float("nan")}}, r"learning_rate must be a finite"),
        ({"seed": 10**24}, r"seed must be < 2\*\*63"),
        ({"model": {"output_scale": [1.0, "a"]}}, r"model.output_scale must be numbers > 0"),
        (
            {"data": {"mapping": {"positions": ["q"], "dt": "abc"}}},
            r"data.mapping.dt must be a finite",
        ),
        ({"data": {"mapping": {"positions": ["q"], "resample": True}}}, r"data.mapping.resample"),
        (
            {"data": {"mapping": {"positions": ["q"], "unwrap": "nope"}}},
            r"data.mapping.unwrap must be",
        ),
        ({"data": {"mapping": {"velocities": ["q"]}}}, r"data.mapping.positions is required"),
    ],
)
def test_config_values_of_the_wrong_kind_name_the_key(user, message):
    with pytest.raises(ConfigError, match=message):
        validate(user, source="cfg.yaml")


@pytest.mark.attack("user system", "silent")
def test_lagrangian_with_undeclared_degrees_of_freedom(tmp_path, trusted_code):
    # JAX clamps q[1] of a 1-vector to q[0]: the system built, with M = 2m instead of m, and trained to nonsense.
    (tmp_path / "rig.py").write_text(
        "import jax.numpy as jnp\n"
        "def kinetic(q, qd, p):\n    return 0.5 * p['m'] * (qd[0] ** 2 + qd[1] ** 2)\n"
        "def potential(q, p):\n    return -p['m'] * 9.81 * jnp.cos(q[0])\n"
    )
    cfg = tmp_path / "lag.yaml"
    cfg.write_text(
        "system: {name: lagrangian, source: rig.py, coordinates: [theta], angles: [theta], "
        "params: {m: 1.0}}\n"
    )
    with pytest.raises(
        ConfigError, match=r"kinetic\(q, ...\) in .*rig.py indexes past the 1 coordinate"
    ):
        build_system(load_config(cfg))


# ---------------------------------------------------------------- data files: reading


def expect(path, message, mapping=PENDULUM, system=None, **kw):
    with pytest.raises(ValueError, match=message):
        ld.load_trajectories(path, mapping, system=system or Pendulum(), **kw)


def test_data_file_that_is_a_directory(tmp_path):
    path = tmp_path / "d.csv"
    path.mkdir()
    expect(path, re.escape(f"{path}: is a directory"))


def test_truncated_npz(tmp_path):
    good = tmp_path / "good.npz"
    ld.write_npz(good, cartpole_columns(), {})
    path = tmp_path / "cut.npz"
    path.write_bytes(good.read_bytes()[:300])
    expect(path, re.escape(f"{path}: not an NPZ file (not a zip archive"), CARTPOLE, CartPole())


def test_text_file_named_npz_gets_no_pickle_advice(tmp_path):
    path = tmp_path / "text.npz"
    path.write_text("t,theta\n0,1\n")
    with pytest.raises(ValueError, match="not an NPZ file") as info:
        ld.load_trajectories(path, PENDULUM)
    assert "pickle" not in str(info.value)


@pytest.mark.parametrize(
    "arrays, message",
    [
        ({"t": np.array(["a", "b"]), "theta": np.zeros(2)}, r"array 't' holds <U1 values"),
        ({"t": np.arange(3.0), "meta": np.array("{not json")}, r"array 'meta' is not valid JSON"),
        (
            {"t": np.arange(3.0), "meta": np.array('{"units": [1]}')},
            r"array 'meta' must hold a JSON object whose 'units'",
        ),
    ],
)
def test_npz_with_wrong_contents(tmp_path, arrays, message):
    path = tmp_path / "w.npz"
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match=f"{re.escape(str(path))}: {message}"):
        ld.load_trajectories(path, {"positions": ["theta"]})


def test_npz_with_a_damaged_array(tmp_path):
    path = tmp_path / "crc.npz"
    ld.write_npz(path, cartpole_columns(), {})
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("x.npy")
    raw[info.header_offset + 30 + len(info.filename) + 5] ^= 0xFF  # a byte of x's compressed data
    path.write_bytes(bytes(raw))
    expect(path, re.escape(f"{path}: an array cannot be read"), CARTPOLE, CartPole())


def test_npz_episode_must_be_one_column(tmp_path):
    # A 2-D episode array was flattened into row numbers that are not rows.
    cols = cartpole_columns(20)
    cols["pair"] = np.zeros((20, 2))
    path = tmp_path / "e.npz"
    ld.write_npz(path, cols, {})
    expect(
        path,
        r"column 'pair' \(episode\) has shape \(20, 2\)",
        {**CARTPOLE, "episode": "pair"},
        CartPole(),
    )


@pytest.mark.parametrize(
    "raw, message",
    [
        (b"t,theta\n" + bytes(range(128, 256)), r"not a text \(UTF-8\) file: byte 0x80"),
        ("t,θ\n0,1\n".encode("cp1253"), r"not a text \(UTF-8\) file: byte 0xe8"),
        (
            b"t;theta;theta_dot;torque\n0;0;0;0\n",
            r"the header .* is one column: the file is separated by semicolons",
        ),
        (b"\n0,1\n", r"line 1 is empty \(expected a header row"),
    ],
)
def test_csv_that_cannot_be_read(tmp_path, raw, message):
    path = tmp_path / "f.csv"
    path.write_bytes(raw)
    expect(path, f"{re.escape(str(path))}: {message}")


def test_csv_gz_that_is_not_gzip(tmp_path):
    path = tmp_path / "f.csv.gz"
    path.write_text("t,theta\n0,1\n")
    expect(path, re.escape(f"{path}: not a valid gzip file"))


@pytest.mark.attack("data file", "silent")
def test_excel_byte_order_mark_is_accepted(tmp_path):
    path = pendulum_csv(tmp_path / "p.csv")
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    (traj,) = ld.load_trajectories(path, PENDULUM, system=Pendulum())
    assert traj.n_rows == 200
    gz = tmp_path / "p.csv.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert ld.load_trajectories(gz, PENDULUM, system=Pendulum())[0].n_rows == 200


# ---------------------------------------------------------------- data files: silently wrong before


@pytest.mark.attack("data file", "silent")
def test_huge_cell_is_refused_for_the_runs_precision(tmp_path):
    cols = cartpole_columns()
    cols["phi"][7] = 1e308
    path = write_csv(tmp_path / "big.csv", cols)
    expect(
        path,
        re.escape(
            f"{path}: column 'phi' row 7 (line 9) is 1e+308 (in SI units): too large for float32"
        ),
        CARTPOLE,
        CartPole(),
    )
    # 1e25 squares to 1e50: past float32 (3.4e38), fine in float64.
    cols = cartpole_columns()
    cols["force"][7] = 1e25
    path = write_csv(tmp_path / "force.csv", cols)
    expect(path, r"column 'force' row 7 \(line 9\) is 1e\+25", CARTPOLE, CartPole())
    (traj,) = ld.load_trajectories(path, CARTPOLE, system=CartPole(), dtype="float64")
    assert traj.u[7, 0] == 1e25


@pytest.mark.attack("data file", "silent")
def test_header_units_catch_an_angle_and_a_length_swapped(tmp_path):
    cols = cartpole_columns()
    header = ["t [s]", "x [m]", "phi [rad]", "x_dot [m/s]", "phi_dot [rad/s]", "force [N]"]
    path = write_csv(tmp_path / "u.csv", cols, header)
    (traj,) = ld.load_trajectories(path, CARTPOLE, system=CartPole())  # named without the units
    np.testing.assert_allclose(traj.q[:, 0], cols["x"])
    swapped = {**CARTPOLE, "positions": ["phi", "x"], "velocities": ["phi_dot", "x_dot"]}
    expect(
        path,
        re.escape(f"{path}: column 'phi' has unit 'rad' (angle) but coordinate 'x'"),
        swapped,
        CartPole(),
    )
    mm = write_csv(
        tmp_path / "mm.csv", {**cols, "x": cols["x"] * 1e3}, ["t", "x [mm]", *header[2:]]
    )
    (traj,) = ld.load_trajectories(
        mm, {**CARTPOLE, "positions": ["x [mm]", "phi"]}, system=CartPole()
    )
    np.testing.assert_allclose(traj.q[:, 0], cols["x"])


@pytest.mark.attack("data file", "silent")
def test_mapping_units_that_contradict_the_file_are_an_error(tmp_path):
    path = tmp_path / "rad.npz"
    ld.write_npz(path, cartpole_columns(), {"units": {"phi": "rad", "phi_dot": "rad/s"}})
    expect(
        path,
        re.escape(
            f"{path}: mapping.units.phi is 'deg', but the file declares column 'phi' in 'rad'"
        ),
        {**CARTPOLE, "units": {"phi": "deg"}},
        CartPole(),
    )
    # The same unit said twice is no contradiction.
    ld.load_trajectories(path, {**CARTPOLE, "units": {"phi": "rad"}}, system=CartPole())


@pytest.mark.attack("data file", "silent")
def test_mapping_units_for_a_column_the_file_lacks(tmp_path):
    path = write_csv(tmp_path / "c.csv", cartpole_columns())
    expect(
        path,
        re.escape(f"{path}: mapping.units names column 'phi_dt', which the file does not have"),
        {**CARTPOLE, "units": {"phi_dt": "deg/s"}},
        CartPole(),
    )


@pytest.mark.attack("data file", "silent")
@pytest.mark.parametrize(
    "change, mapping, message",
    [
        # positions swapped, velocities not: the columns' order is wrong
        (
            {},
            {**CARTPOLE, "positions": ["phi", "x"]},
            r"velocity column 'x_dot' is not the rate of position column 'phi'.*'phi_dot' fits it: are columns swapped",
        ),
        (
            {"phi_dot": lambda c: -c["phi_dot"]},
            CARTPOLE,
            r"velocity column 'phi_dot' .* moves -1 ×",
        ),
        (
            {"phi_dot": lambda c: np.degrees(c["phi_dot"])},
            CARTPOLE,
            r"velocity column 'phi_dot' .* moves 0.0175 ×",
        ),
        ({"t": lambda c: 1e3 * c["t"]}, CARTPOLE, r"velocity column 'x_dot' .* moves 0.001 ×"),
    ],
)
def test_velocities_that_are_not_the_rate_of_the_positions(tmp_path, change, mapping, message):
    cols = cartpole_columns()
    cols.update({k: f(cols) for k, f in change.items()})
    path = write_csv(tmp_path / "v.csv", cols)
    expect(path, message, mapping, CartPole())


@pytest.mark.attack("data file", "silent")
def test_a_column_mapped_twice(tmp_path):
    path = write_csv(tmp_path / "c.csv", cartpole_columns())
    expect(
        path,
        re.escape(
            f"{path}: the mapping reads a column for more than one role: 'x' is positions[0] and positions[1]"
        ),
        {**CARTPOLE, "positions": ["x", "x"]},
        CartPole(),
    )


# ---------------------------------------------------------------- too little data


def test_too_few_samples_to_hold_out_validation(tmp_path):
    # 8 rows: the held-out part had one sample, no window, and the validation loss silently was the training loss.
    one_step = {"horizon": 1}  # the boundary this case is about: windows of one step
    cfg = load_config(
        write_config(tmp_path, pendulum_csv(tmp_path / "p.csv", n=8), training=one_step)
    )
    with pytest.raises(
        ConfigError,
        match=r"8 samples are too few to hold out data.validation_fraction = 0.15.*at least about 14 samples",
    ):
        load_training_data(cfg, build_system(cfg))
    zero = cfg.replace(data={"validation_fraction": 0.0})
    train, validation = load_training_data(zero, build_system(zero))
    assert train[0].n_rows == 8 and validation == []


def test_max_duration_that_leaves_no_window(tmp_path):
    cfg = load_config(
        write_config(
            tmp_path,
            pendulum_csv(tmp_path / "p.csv"),
            data={"max_duration": 0.01},
            training={"horizon": 1},
        )
    )
    with pytest.raises(
        ConfigError,
        match=r"after data.max_duration = 0.01 s\) leave no window of 1 step.*has 1 sample",
    ):
        load_training_data(cfg, build_system(cfg))


@pytest.mark.attack("CLI", "traceback")
def test_a_data_error_through_the_cli(tmp_path, capsys):
    good = tmp_path / "good.npz"
    ld.write_npz(good, {"t": np.arange(3.0)}, {})
    (tmp_path / "cut.npz").write_bytes(good.read_bytes()[:100])
    cfg = write_config(tmp_path, tmp_path / "cut.npz")
    err = cli_error(capsys, "train", str(cfg), "--out", str(tmp_path / "run"))
    assert f"{tmp_path / 'cut.npz'}: not an NPZ file" in err


# ---------------------------------------------------------------- random files (hypothesis; `make fuzz` for more)


def examples(n: int) -> int:
    """`n` examples in the derandomised suite; ten times as many under `--hypothesis-profile=explore`."""
    return n * settings.default.max_examples // 100


def fuzz(n: int) -> settings:
    return settings(
        max_examples=examples(n),
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


yaml_like = st.text(
    alphabet=st.sampled_from(list("abtrain:{}[],-. 0123456789\n'\"&*<>!#|%")), max_size=80
)


@pytest.mark.attack("config", "traceback")
@fuzz(100)
@given(raw=st.one_of(st.binary(max_size=200), yaml_like.map(str.encode)))
def test_random_bytes_as_a_config(tmp_path_factory, raw):
    path = tmp_path_factory.mktemp("cfg") / "c.yaml"
    path.write_bytes(raw)
    try:
        load_config(path)
    except ConfigError as e:
        assert str(path) in str(e) or "data." in str(e), str(e)


@pytest.mark.attack("CLI", "traceback")
@fuzz(100)
@given(item=st.one_of(yaml_like, st.text(max_size=30)))
def test_random_set_arguments(tmp_path_factory, item):
    path = tmp_path_factory.mktemp("cfg") / "c.yaml"
    path.write_text("seed: 1\n")
    try:
        load_config(path, ["training." + item])
    except ConfigError as e:
        assert str(e)


@fuzz(100)
@given(
    raw=st.binary(max_size=300),
    good=st.integers(0, 40),
    suffix=st.sampled_from([".csv", ".csv.gz", ".npz"]),
)
def test_random_bytes_as_a_data_file(tmp_path_factory, raw, good, suffix):
    """Random bytes, or a good file cut short and followed by them."""
    folder = tmp_path_factory.mktemp("data")
    source = folder / "good.csv"
    pendulum_csv(source, n=20)
    if suffix == ".npz":
        cols = {k: np.asarray(v) for k, v in ld.read_table(source)[0].items()}
        ld.write_npz(folder / "good.npz", cols, {"units": {"theta": "rad"}})
        source = folder / "good.npz"
    text = source.read_bytes()
    if suffix == ".csv.gz":
        text = gzip.compress(text)
    path = folder / f"f{suffix}"
    path.write_bytes(text[: len(text) * good // 40] + raw)
    try:
        ld.load_trajectories(path, PENDULUM, system=Pendulum())
    except (ValueError, FileNotFoundError) as e:
        assert str(path) in str(e), str(e)


arrays = st.tuples(
    st.sampled_from(["t", "theta", "theta_dot", "torque", "meta", "pair"]),
    st.lists(st.integers(0, 4), max_size=3),
    st.sampled_from(["f8", "f4", "i4", "u1", "?", "c16", "U3"]),
    st.sampled_from([0.0, 1.0, float("nan"), 1e300, -5.0]),
)


@fuzz(100)
@given(entries=st.lists(arrays, max_size=6), episode=st.booleans())
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NaN and 1e300 cast to ints and f4
def test_random_npz_arrays(tmp_path_factory, entries, episode):
    path = tmp_path_factory.mktemp("npz") / "a.npz"
    np.savez(
        path, **{name: np.full(shape, fill).astype(dtype) for name, shape, dtype, fill in entries}
    )
    mapping = {**PENDULUM, "episode": "pair"} if episode else PENDULUM
    try:
        ld.load_trajectories(path, mapping, system=Pendulum())
    except ValueError as e:
        assert str(path) in str(e), str(e)


@fuzz(100)
@given(
    rows=st.lists(
        st.tuples(
            *[
                st.one_of(st.floats(-1e3, 1e3), st.sampled_from(["", "nan", "1e400", "x", "1,5"]))
                for _ in range(4)
            ]
        ),
        max_size=12,
    ),
    header=st.lists(
        st.sampled_from(
            [
                "t",
                "t [s]",
                "t [ms]",
                "theta [deg]",
                "theta",
                "theta_dot",
                "torque",
                "t [furlong]",
                "",
            ]
        ),
        min_size=1,
        max_size=5,
    ),
    sep=st.sampled_from([",", ";", "\t"]),
)
def test_random_csv_headers_and_cells(tmp_path_factory, rows, header, sep):
    path = tmp_path_factory.mktemp("csv") / "h.csv"
    lines = [sep.join(header)] + [sep.join(str(c) for c in row[: len(header)]) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    try:
        ld.load_trajectories(path, PENDULUM, system=Pendulum())
    except ValueError as e:
        assert str(path) in str(e), str(e)


@pytest.mark.attack("config", "traceback")
def test_a_system_parameter_that_is_not_a_number_names_the_params():
    from lagnet.config import ConfigError, validate
    from lagnet.run import build_system

    config = validate(
        {"system": {"name": "pendulum", "params": {"mass": "a"}}, "data": {"train": ["x.csv"]}}
    )
    with pytest.raises(ConfigError, match=r"system.params: .*'a'.*params \{'mass': 'a'\}"):
        build_system(config)

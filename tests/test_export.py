"""`lagnet export`: a trained model's f and step as StableHLO, loaded and called by a Python with JAX alone."""

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import zipfile

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import tiny_pinode_config, write_pendulum_csv
from hypothesis import given, settings
from hypothesis import strategies as st

import lagnet
from lagnet.cli import main
from lagnet.control import Dynamics, linearise, load_exported
from lagnet.control.export import export
from lagnet.integrators import RK4
from lagnet.models import PINODE, StateFeatures, make_mlp
from lagnet.run.load import as_dtype
from lagnet.run.training import train_run
from lagnet.systems import Pendulum


def examples(n: int) -> int:
    """`n` examples here, ten times as many under `make fuzz` (tests/conftest.py's `explore` profile)."""
    return n * settings.default.max_examples // 100


# The README's way ("Deployment without lagnet"), then the checks: a fresh interpreter, JAX and NumPy only.
CHILD = textwrap.dedent(
    """
    import json, sys, zipfile
    import jax, numpy as np

    archive, inputs, outputs = sys.argv[1:]
    with zipfile.ZipFile(archive) as z:
        meta = json.loads(z.read("metadata.json"))
        jax.config.update("jax_enable_x64", meta["dtype"] == "float64")
        step = jax.export.deserialize(z.read("step.jaxexport")).call
        fns = {n[:-10]: jax.export.deserialize(z.read(n)).call for n in z.namelist() if n.endswith(".jaxexport")}

    a = np.load(inputs)
    got = {}
    for i, (x, u) in enumerate(zip(a["x"], a["u"])):
        got[f"step{i}"] = step(x, u)
        got[f"f{i}"] = fns["f"](x, u)
        if meta["input_history"]:
            got[f"f_history{i}"] = fns["f_history"](x, u, a["u_past"][i])
            got[f"step_history{i}"], got[f"u_past_next{i}"] = fns["step_history"](x, u, a["u_past"][i])
    got["step_batch"] = fns["step_batch"](a["x"], a["u"])
    got["step_batch_one"] = fns["step_batch"](a["x"][:1], a["u"][:1])  # any batch size: b is symbolic
    np.savez(outputs, **{k: np.asarray(v) for k, v in got.items()})
    assert "lagnet" not in sys.modules and "equinox" not in sys.modules, "lagnet or equinox was imported"
    print("imported:", sorted(m for m in ("jax", "numpy", "lagnet", "equinox", "jaxtyping") if m in sys.modules))
    """
)


@pytest.fixture(scope="module")
def pendulum_csv(tmp_path_factory):
    folder = tmp_path_factory.mktemp("export_data")
    return write_pendulum_csv(
        folder / "pendulum.csv", steps=200, hold=10, seed=1, friction=None, theta0=0.5
    )


@pytest.fixture(scope="module", params=[0, 1], ids=["no_history", "input_history_1"])
def exported(request, pendulum_csv, tmp_path_factory):
    """A tiny trained run (input history 0 or 1), its archive written by `lagnet export RUN`, and the run
    loaded by `lagnet.load`."""
    config = tiny_pinode_config(pendulum_csv, request.param, name="export_test")
    run_dir = str(tmp_path_factory.mktemp("run") / "run")
    train_run(config, run_dir, progress=False)
    assert main(["export", run_dir]) == 0
    return run_dir, os.path.join(run_dir, "model.jaxexport"), lagnet.load(run_dir)


def test_exported_model_runs_without_lagnet_bit_for_bit(exported, tmp_path):
    """f and step (and with input history f_history, step_history; and step batched) called from the archive
    in a fresh Python that imports only JAX and NumPy equal `lagnet.load(RUN)` bit for bit."""
    _, archive, dyn = exported
    k = dyn.history.lags
    # Enough states that a one-ulp difference would show: with the weights folded as constants, XLA rounded
    # the step differently from lagnet's in 13 of 200 states.
    rng = np.random.default_rng(0)
    xs, us = 2 * rng.normal(size=(32, 2)), 2 * rng.normal(size=(32, 1))
    u_past = rng.normal(size=(32, k, 1))
    np.savez(tmp_path / "inputs.npz", x=xs, u=us, u_past=u_past)

    child = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD,
            archive,
            str(tmp_path / "inputs.npz"),
            str(tmp_path / "out.npz"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert child.returncode == 0, child.stderr
    assert "imported: ['jax', 'numpy']" in child.stdout
    got = np.load(tmp_path / "out.npz")
    for i, (x, u) in enumerate(zip(xs, us, strict=True)):
        assert got[f"step{i}"].dtype == np.float64
        np.testing.assert_array_equal(got[f"step{i}"], dyn.step(x, u))
        np.testing.assert_array_equal(got[f"f{i}"], dyn.f(x, u))
        if k:
            x_next, past_next = dyn.step_with_history(x, u, u_past[i])
            np.testing.assert_array_equal(got[f"step_history{i}"], x_next)
            np.testing.assert_array_equal(got[f"u_past_next{i}"], past_next)
            np.testing.assert_array_equal(
                got[f"f_history{i}"], dyn.f(x, np.concatenate([u, u_past[i].ravel()]))
            )
    if k:  # the history is read: the held steady state is another input
        assert not np.array_equal(got["step_history0"], got["step0"])
    expected = np.stack([got[f"step{i}"] for i in range(len(xs))])
    np.testing.assert_array_equal(got["step_batch"], expected)
    np.testing.assert_array_equal(got["step_batch_one"], expected[:1])


def test_archive_says_what_it_holds_and_lagnet_loads_it(exported):
    run_dir, archive, dyn = exported
    k = dyn.history.lags
    with zipfile.ZipFile(archive) as z:
        meta = json.loads(z.read("metadata.json"))
        assert {"f.mlir", "step.mlir"} <= set(z.namelist())
        assert "stablehlo." in z.read("step.mlir").decode()
    assert meta["format"] == "lagnet-export/1" and meta["lagnet_version"] == lagnet.__version__
    assert meta["dtype"] == "float64" and meta["dt"] == dyn.dt and meta["input_history"] == k
    assert meta["state_names"] == ["theta", "theta_dot"] and meta["input_names"] == ["torque"]
    assert meta["run"] == os.path.abspath(run_dir) and meta["checkpoint"] == "best"
    assert meta["functions"]["step_batch"]["arguments"] == {"x": ["b", 2], "u": ["b", 1]}
    assert meta["functions"]["step_jacobians"]["results"] == {"A_d": [2, 2], "B_d": [2, 1]}
    assert ("step_history" in meta["functions"]) == bool(k)
    if k:
        assert meta["functions"]["step_history"]["arguments"]["u_past"] == [k, 1]

    model = load_exported(archive)
    assert model.dt == dyn.dt and model.dtype == np.float64
    x, u = np.array([0.4, -0.3]), np.array([0.2])
    np.testing.assert_array_equal(model.step(x, u), dyn.step(x, u))
    for name, fn in (("f_jacobians", dyn.f), ("step_jacobians", dyn.step)):
        a, b = getattr(model, name)(x, u)
        a_ref, b_ref = linearise(fn, jnp.asarray(x), jnp.asarray(u))
        np.testing.assert_allclose(a, a_ref, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(b, b_ref, rtol=1e-12, atol=1e-14)


def small_pinode(dtype) -> Dynamics:
    """A pendulum PINODE with a small random network (no training), in `dtype`."""
    pendulum = Pendulum()
    features = StateFeatures(pendulum.angles, 1)
    net = make_mlp(
        features.size,
        1,
        width=4,
        depth=1,
        activation="tanh",
        final_activation="identity",
        zero_output=False,
        key=jax.random.key(0),
    )
    model = PINODE(pendulum, network=net, features=features)
    return Dynamics(as_dtype(model, dtype), RK4(), 0.02)


def test_export_takes_the_models_precision(tmp_path):
    """A float32 model is exported in float32 (its arguments too), and still equals the model bit for bit."""
    dyn = small_pinode(jnp.float32)
    path = str(tmp_path / "new_folder" / "m32.jaxexport")  # the folder is made
    assert export(dyn, path)["dtype"] == "float32"
    model = load_exported(path)
    x, u = np.array([0.3, -0.1], np.float32), np.array([0.2], np.float32)
    assert [a.dtype for a in model.exported["step"].in_avals] == [np.float32, np.float32]
    np.testing.assert_array_equal(model.step(x, u), dyn.step(x, u))
    with pytest.raises(AttributeError, match="no function 'step_history'"):
        model.step_history  # noqa: B018 (the attribute access is the test)


@pytest.mark.attack("CLI", "traceback")
def test_export_errors_name_the_problem(tmp_path, capsys):
    missing = str(tmp_path / "no_such_run")
    assert main(["export", missing]) == 2
    assert f"lagnet export: error: {missing}: not a run directory" in capsys.readouterr().err
    assert not os.path.exists(missing)  # nothing written for a run that is not there

    dyn = small_pinode(jnp.float64)
    with pytest.raises(ValueError, match="is a folder; give a file name"):
        export(dyn, str(tmp_path))
    (tmp_path / "a_file").write_text("")
    with pytest.raises(ValueError, match="a_file is a file, not a folder"):
        export(dyn, str(tmp_path / "a_file" / "model.jaxexport"))
    (tmp_path / "not_an_archive.jaxexport").write_text("hello")
    with pytest.raises(ValueError, match="not a lagnet export archive"):
        load_exported(str(tmp_path / "not_an_archive.jaxexport"))
    with pytest.raises(FileNotFoundError, match="no exported model at"):
        load_exported(str(tmp_path / "nothing.jaxexport"))


# ----------------------------------------------------------------------- nothing overwritten, nothing damaged


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    """A small float64 PINODE exported once: its bytes, members and metadata (the damage tests' original)."""
    path = tmp_path_factory.mktemp("archive") / "small.jaxexport"
    dyn = small_pinode(jnp.float64)
    meta = export(dyn, str(path))
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    return Original((path.read_bytes(), members, meta, dyn))


class Original(tuple):
    """The original archive's (bytes, members, metadata, dynamics), shown in a failure report by name only."""

    def __repr__(self):
        return "<the original archive>"


def write_members(path, members, meta=None, rehash=False):
    """An archive of `members` (metadata.json replaced by `meta` if given, its checksum recomputed with
    `rehash`, as an editor who knows the format would)."""
    from lagnet.control.export import _canonical

    members = dict(members)
    if meta is not None:
        if rehash:
            meta = {**meta, "metadata_sha256": hashlib.sha256(_canonical(meta)).hexdigest()}
        members["metadata.json"] = json.dumps(meta).encode()
    with zipfile.ZipFile(path, "w") as z:
        for name, content in members.items():
            z.writestr(name, content)
    return str(path)


@pytest.mark.attack("export archive", "loss")
def test_export_refuses_an_existing_file_without_overwrite(exported, archive, tmp_path, capsys):
    run_dir = exported[0]
    precious = tmp_path / "precious.csv"
    precious.write_text("t,x\n0,1\n")
    assert main(["export", run_dir, "--out", str(precious)]) == 2
    assert "precious.csv already exists: pass --overwrite" in capsys.readouterr().err
    assert precious.read_text() == "t,x\n0,1\n"
    dyn = archive[3]
    with pytest.raises(ValueError, match="already exists"):
        export(dyn, str(precious))
    export(
        dyn, str(precious), overwrite=True
    )  # written whole through a temporary file, then renamed
    assert set(load_exported(str(precious)).metadata["sha256"]) == set(archive[2]["sha256"])
    assert sorted(os.listdir(tmp_path)) == ["precious.csv"]


@pytest.mark.attack("export archive", "silent")
def test_export_checks_the_platforms(exported, archive, tmp_path, capsys):
    out = tmp_path / "m.jaxexport"
    assert main(["export", exported[0], "--platforms", "tpu9", "--out", str(out)]) == 2
    assert (
        "unknown platform(s) ['tpu9']; JAX lowers for cpu, cuda, rocm, tpu"
        in capsys.readouterr().err
    )
    with pytest.raises(ValueError, match="unknown platform"):
        export(archive[3], str(out), platforms=("cpu", "CUDA"))
    assert not out.exists()


@pytest.mark.attack("export archive", "silent")
def test_archive_checksums_catch_edits(archive, tmp_path):
    from lagnet.control.export import DamagedExport

    _, members, meta, _ = archive
    assert set(meta["sha256"]) == set(members) - {"metadata.json"}
    cases = [
        # An edited dt or state name (before, both loaded without a word).
        (members, {**meta, "dt": 0.01}, False, "metadata.json was changed after export"),
        (members, {**meta, "state_names": ["x", "v"]}, False, "metadata.json was changed"),
        # step and f swapped: their bytes no longer match their names' checksums ...
        (
            {**members, "step.jaxexport": members["f.jaxexport"]},
            None,
            False,
            "step.jaxexport was changed",
        ),
        # ... and with the checksums swapped too, the module names the function it holds.
        (
            {**members, "step.jaxexport": members["f.jaxexport"]},
            {
                **meta,
                "sha256": {**meta["sha256"], "step.jaxexport": meta["sha256"]["f.jaxexport"]},
            },
            True,
            "step.jaxexport holds the function 'f', not 'step'",
        ),
        (
            members,
            {
                **meta,
                "functions": {
                    **meta["functions"],
                    "step": {**meta["functions"]["step"], "arguments": {"x": [3], "u": [1]}},
                },
            },
            True,
            r"step: its arguments have shapes \[\['2'\], \['1'\]\], metadata.json says \[\['3'\], \['1'\]\]",
        ),
        (members, {**meta, "dtype": "float32"}, True, r"its arguments are \['float64'\]"),
        (
            {n: c for n, c in members.items() if n != "f_batch.jaxexport"},
            None,
            False,
            r"members missing \['f_batch.jaxexport'\]",
        ),
        (members, {k: v for k, v in meta.items() if k != "sha256"}, False, "has no checksums"),
    ]
    for i, (content, edited, rehash, match) in enumerate(cases):
        path = write_members(tmp_path / f"{i}.jaxexport", content, edited, rehash)
        with pytest.raises(DamagedExport, match=match):
            load_exported(path)


def _mutate(data: bytes, members: dict, meta: dict, how, tmp_path):
    kind, a, b, value = how
    path = tmp_path / "fuzz.jaxexport"
    if kind == "truncate":
        path.write_bytes(data[: a % len(data)])
    elif kind == "flip":
        i = a % len(data)
        path.write_bytes(data[:i] + bytes([data[i] ^ (b % 255 + 1)]) + data[i + 1 :])
    elif kind == "member":
        names = sorted(members)
        target = names[a % len(names)]
        content = members[target]
        cut = b % (len(content) + 1)
        write_members(path, {**members, target: content[:cut] + content[cut + 1 :]})
    else:  # an entry of the metadata set to another value, checksum recomputed or not
        key = sorted(meta)[a % len(meta)]
        write_members(path, members, {**meta, key: value}, rehash=bool(b % 2))
    return str(path)


json_values = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=6)
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


@pytest.mark.attack("export archive", "traceback")
@settings(max_examples=examples(60), deadline=None)
@given(
    how=st.tuples(
        st.sampled_from(["truncate", "flip", "member", "metadata"]),
        st.integers(0, 1 << 20),
        st.integers(0, 1 << 20),
        json_values,
    )
)
def test_damaged_archives_raise_lagnet_errors(archive, tmp_path_factory, how):
    """Truncated, flipped, edited: `load_exported` raises its own `DamagedExport` (a ValueError), never a raw
    KeyError, AttributeError or flatbuffers' struct.error; what loads is the original."""
    from lagnet.control.export import DamagedExport

    data, members, meta, _ = archive
    path = _mutate(data, members, meta, how, tmp_path_factory.mktemp("fuzz"))
    try:
        model = load_exported(path)
    except DamagedExport as e:
        assert path in str(e)
    else:
        # Only an editor who recomputes the checksum changes what loads, and only what no module can
        # confirm: descriptions, names of the right number, a dt > 0.
        changed = {k for k in meta if model.metadata.get(k) != meta[k]}
        kind, _, rehash, _ = how
        rehashed = kind == "metadata" and rehash % 2
        assert not changed or (rehashed and changed - {"metadata_sha256"} <= UNCONFIRMED), changed


UNCONFIRMED = {
    "lagnet_version",
    "jax_version",
    "integrator",
    "model",
    "system",
    "state",
    "dt",
    "state_names",
    "coordinate_names",
    "input_names",
}

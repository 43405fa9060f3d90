"""`lagnet export`: a trained model's f and step as StableHLO, loaded and called by a Python with JAX alone."""

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

import lagnet
from lagnet.cli import main
from lagnet.control import Dynamics, linearise, load_exported
from lagnet.control.export import export
from lagnet.integrators import RK4
from lagnet.models import PINODE, StateFeatures, make_mlp
from lagnet.run.load import as_dtype
from lagnet.run.training import train_run
from lagnet.systems import Pendulum

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

"""The trust boundary: code a config or a run folder names runs only when the user opts in; robot files are data;
every failure of the user's code or files is a clear error, never a traceback, a silent exit or a wrong run."""

import hashlib
import json
import os
import shutil
import textwrap

import pytest
import yaml
from helpers import PENDULUM_MAPPING, write_pendulum_csv
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lagnet
from lagnet.cli import main
from lagnet.config import ConfigError, load_config
from lagnet.config.sources import UntrustedCode, trust_code
from lagnet.run import build_system
from lagnet.run.spec import RunSpec
from lagnet.run.training import train_run
from lagnet.systems import Pendulum

pytestmark = pytest.mark.attack("user system", "silent")


def examples(n: int) -> int:
    """`n` examples here, ten times as many under `make fuzz` (tests/conftest.py's `explore` profile)."""
    return n * settings.default.max_examples // 100


# Importing the file leaves a mark beside it: the tests see whether its code ran.
RIG = """
import pathlib

from lagnet.systems import Pendulum

pathlib.Path(__file__).with_name("ran.txt").write_text("ran")


def build(mass=1.0):
    return Pendulum(mass=mass, com=1.0, g=1.0)


def raises_key_error():
    return {}["missing"]


def exits():
    raise SystemExit(3)
"""


@pytest.fixture(autouse=True)
def _no_trust_from_the_environment(monkeypatch):
    """The tests decide trust themselves: a LAGNET_TRUST_CODE in the caller's shell must not open the door."""
    monkeypatch.delenv("LAGNET_TRUST_CODE", raising=False)
    monkeypatch.delenv("LAGNET_TRUSTED_PACKAGES", raising=False)


def write_config(folder, system, name="trust"):
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "system": system}))
    return str(path)


@pytest.fixture
def rig(tmp_path):
    (tmp_path / "my_rig.py").write_text(textwrap.dedent(RIG))
    return tmp_path


def test_a_python_file_runs_only_when_the_user_opts_in(rig, monkeypatch):
    config = load_config(write_config(rig, {"name": "python", "source": "my_rig.py:build"}))
    with pytest.raises(UntrustedCode) as e:
        build_system(config)
    message = str(e.value)
    assert f"would run the Python file {rig / 'my_rig.py'}" in message
    assert (
        "--trust-code" in message
        and "LAGNET_TRUST_CODE=1" in message
        and "trust_code=True" in message
    )
    assert not (rig / "ran.txt").exists()  # refused before a line of it ran
    with trust_code(False):  # no opt-in: nothing changes
        with pytest.raises(UntrustedCode):
            build_system(config)
    lagrangian = load_config(
        write_config(
            rig,
            {"name": "lagrangian", "source": "my_rig.py", "coordinates": ["q"]},
            name="lagrangian",
        )
    )
    with pytest.raises(UntrustedCode, match="would run the Python file"):
        build_system(lagrangian)
    assert not (rig / "ran.txt").exists()

    with trust_code():
        assert build_system(config) == Pendulum(mass=1.0, com=1.0, g=1.0)
    assert (rig / "ran.txt").read_text() == "ran"
    with pytest.raises(UntrustedCode):  # the opt-in ends with its block
        build_system(config)
    monkeypatch.setenv("LAGNET_TRUST_CODE", "1")
    assert isinstance(build_system(config), Pendulum)


@pytest.mark.parametrize(
    "source", ["os:system", "subprocess:getoutput", "builtins:exec", "shutil:rmtree"]
)
def test_the_standard_library_is_never_a_source(tmp_path, monkeypatch, capsys, source):
    marker = tmp_path / "pwned"
    config = write_config(
        tmp_path, {"name": "python", "source": source, "params": {"command": f"touch {marker}"}}
    )
    monkeypatch.setenv("LAGNET_TRUSTED_PACKAGES", source.split(":")[0])  # listed, and still refused
    with trust_code(), pytest.raises(UntrustedCode, match="standard library"):
        build_system(load_config(config))
    assert main(["train", config, "--trust-code", "--out", str(tmp_path / "run")]) == 2
    assert "standard library" in capsys.readouterr().err
    assert not marker.exists() and not (tmp_path / "run").exists()


def test_a_module_source_needs_a_listed_package_and_trust(tmp_path, monkeypatch):
    package = tmp_path / "lagnet_trust_rigs"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "rigs.py").write_text(
        "from lagnet.systems import Pendulum\n\ndef build():\n    return Pendulum()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    config = load_config(
        write_config(tmp_path, {"name": "python", "source": "lagnet_trust_rigs.rigs:build"})
    )
    with (
        trust_code(),
        pytest.raises(UntrustedCode, match="LAGNET_TRUSTED_PACKAGES=lagnet_trust_rigs"),
    ):
        build_system(config)
    monkeypatch.setenv("LAGNET_TRUSTED_PACKAGES", "numpy, lagnet_trust_rigs")
    with pytest.raises(UntrustedCode, match="would run the module 'lagnet_trust_rigs.rigs'"):
        build_system(config)
    with trust_code():
        assert build_system(config) == Pendulum()
        missing = load_config(
            write_config(tmp_path, {"name": "python", "source": "lagnet_trust_rigs.nothing:build"})
        )
        with pytest.raises(ConfigError, match="cannot import module 'lagnet_trust_rigs.nothing'"):
            build_system(missing)


def test_a_trusted_file_does_not_lend_out_pythons_functions(tmp_path):
    (tmp_path / "rig.py").write_text("from os import system\nfrom subprocess import run\n")
    for name in ("system", "run"):
        config = load_config(write_config(tmp_path, {"name": "python", "source": f"rig.py:{name}"}))
        with (
            trust_code(),
            pytest.raises(UntrustedCode, match=f"'{name}' in .*rig.py is Python's own"),
        ):
            build_system(config)


@pytest.mark.attack("user system", "traceback")
def test_failures_of_the_users_code_are_clear_errors(rig, tmp_path, capsys):
    cases = {
        "my_rig.py:raises_key_error": r"my_rig.py:raises_key_error failed: KeyError: 'missing'",
        "my_rig.py:exits": r"my_rig.py:exits failed: it called sys.exit\(3\)",
    }
    with trust_code():
        for source, match in cases.items():
            config = load_config(write_config(rig, {"name": "python", "source": source}))
            with pytest.raises(ConfigError, match=match):
                build_system(config)
    (rig / "quits.py").write_text("import sys\nsys.exit(0)\n")
    (rig / "notes.txt").write_text("<robot/>")
    config = write_config(rig, {"name": "python", "source": "quits.py:build"}, name="quits")
    # A file that exits while imported: before, `lagnet train` ended with status 0, no run and no message.
    assert main(["train", config, "--trust-code", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "running" in err and "quits.py failed: it called sys.exit(0)" in err
    with trust_code(), pytest.raises(ConfigError, match=r"notes.txt is not a Python file"):
        build_system(
            load_config(write_config(rig, {"name": "python", "source": "./notes.txt:f"}, "txt"))
        )


# ------------------------------------------------------------------------------------- a run folder received


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A run trained from the user's Python file (trusted), untouched by the tests (they copy it)."""
    folder = tmp_path_factory.mktemp("trusted_rig")
    (folder / "my_rig.py").write_text(textwrap.dedent(RIG))
    write_pendulum_csv(folder / "pendulum.csv", steps=100, hold=20)
    config = {
        "name": "trusted",
        "dtype": "float64",
        "system": {"name": "python", "source": "my_rig.py:build", "params": {"mass": 1.0}},
        "model": {"type": "known"},
        "data": {"train": "pendulum.csv", "mapping": PENDULUM_MAPPING},
        "training": {"epochs": 0, "batch_size": 8, "horizon": 1, "validation_horizon": 1},
    }
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    run_dir = str(folder / "run")
    train_run(load_config(folder / "config.yaml"), run_dir, progress=False, trust_code=True)
    return run_dir


def copy_run(run, tmp_path):
    copy = str(tmp_path / "received")
    shutil.copytree(run, copy)
    return copy


def edit_config(run_dir, **system):
    path = os.path.join(run_dir, "config.yaml")
    config = yaml.safe_load(open(path))
    config["system"].update(system)
    with open(path, "w") as f:
        yaml.safe_dump(config, f)


@pytest.mark.attack("run folder", "silent")
def test_the_run_records_its_sources_digest(run):
    digest = hashlib.sha256(open(os.path.join(run, "system", "my_rig.py"), "rb").read()).hexdigest()
    assert RunSpec.read(run).sources == {"system/my_rig.py": digest}
    assert json.load(open(os.path.join(run, "run.json")))["sources"] == {"system/my_rig.py": digest}


@pytest.mark.attack("run folder", "silent")
def test_a_run_folder_runs_no_code_unless_trusted(run, tmp_path, capsys):
    received = copy_run(run, tmp_path)
    marker = os.path.join(received, "system", "ran.txt")
    with pytest.raises(
        UntrustedCode, match="would run the Python file .*received/system/my_rig.py"
    ):
        lagnet.load(received)
    for command in (
        ["export", received, "--out", str(tmp_path / "m.jaxexport")],
        ["evaluate", received],
    ):
        assert main(command) == 2
        assert "--trust-code" in capsys.readouterr().err
    assert not os.path.exists(marker) and not (tmp_path / "m.jaxexport").exists()
    assert lagnet.load(received, trust_code=True).model.known_system == Pendulum(
        mass=1.0, com=1.0, g=1.0
    )
    assert os.path.exists(marker)


@pytest.mark.attack("run folder", "silent")
def test_a_changed_or_foreign_source_in_a_run_is_refused(run, tmp_path):
    changed = copy_run(run, tmp_path / "a")
    with open(os.path.join(changed, "system", "my_rig.py"), "a") as f:
        f.write("\nimport os  # an edit after training\n")
    with pytest.raises(ValueError, match="system/my_rig.py changed since training"):
        lagnet.load(changed, trust_code=True)

    elsewhere = copy_run(run, tmp_path / "b")
    other = tmp_path / "other.py"
    other.write_text(textwrap.dedent(RIG))
    edit_config(elsewhere, source=f"{other}:build")
    with pytest.raises(ValueError, match="not a file the run recorded in run.json"):
        lagnet.load(elsewhere, trust_code=True)

    shell = copy_run(run, tmp_path / "c")
    edit_config(shell, source="os:system", params={"command": f"touch {tmp_path / 'pwned'}"})
    with pytest.raises(UntrustedCode, match="standard library"):
        lagnet.load(shell, trust_code=True)
    assert not (tmp_path / "pwned").exists()


# ------------------------------------------------------------------------------------- robot files are data

URDF = """<robot name="one">
  <link name="base"/>
  <link name="arm">
    <inertial>
      <mass value="1"/><origin xyz="0 0 -0.5"/>
      <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/>
    </inertial>
  </link>
  <joint name="q" type="revolute">
    <parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>
  </joint>
</robot>
"""


@pytest.mark.attack("robot file", "traceback")
def test_a_robot_file_needs_no_trust_and_a_malformed_one_names_file_and_line(tmp_path):
    (tmp_path / "arm.urdf").write_text(URDF)
    system = build_system(
        load_config(write_config(tmp_path, {"name": "urdf", "source": "arm.urdf"}))
    )
    assert system.coordinate_names == ("q",)
    (tmp_path / "broken.urdf").write_text(URDF.replace("</joint>", "</jiont>"))
    (tmp_path / "broken.xml").write_text("<mujoco>\n  <worldbody>\n    <body>\n</mujoco>\n")
    for kind, name, line in (("urdf", "broken.urdf", 11), ("mjcf", "broken.xml", 4)):
        config = load_config(write_config(tmp_path, {"name": kind, "source": name}, name=kind))
        with pytest.raises(
            ConfigError,
            match=rf"{name} is not well-formed XML: mismatched tag at line {line}, column",
        ):
            build_system(config)


@pytest.mark.attack("robot file", "traceback")
@settings(
    max_examples=examples(20),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    cut=st.integers(0, len(URDF)),
    flips=st.lists(
        st.tuples(st.integers(0, len(URDF) - 1), st.characters(codec="utf-8")), max_size=3
    ),
)
def test_damaged_robot_files_give_config_errors(tmp_path, cut, flips):
    text = list(URDF[:cut])
    for i, c in flips:
        if i < len(text):
            text[i] = c
    path = tmp_path / "fuzz.urdf"
    path.write_text("".join(text), encoding="utf-8", errors="surrogatepass")
    config = load_config(
        write_config(tmp_path, {"name": "urdf", "source": "fuzz.urdf"}, name="fuzz")
    )
    try:
        build_system(config)
    except ConfigError as e:
        assert "fuzz.urdf" in str(e)


# A `system` section of any shape, as a received config may hold: never runs code without the opt-in.
sources = st.one_of(
    st.sampled_from(
        [
            "os:system",
            "my_rig.py:build",
            "my_rig.py",
            "my_rig.py:exits",
            "posix:system",
            "sys:exit",
            "importlib:import_module",
            "../my_rig.py:build",
            "runpy:run_path",
            "nowhere.py:build",
        ]
    ),
    st.text(max_size=20),
)


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    name=st.sampled_from(["python", "lagrangian"]),
    source=sources,
    params=st.dictionaries(
        st.sampled_from(["command", "mass", "path"]), st.text(max_size=5), max_size=2
    ),
)
def test_user_system_configs_run_nothing_untrusted(rig, name, source, params):
    system = {"name": name, "source": source, "params": params, "coordinates": ["q"]}
    if name == "python":
        del system["coordinates"]
    try:
        config = load_config(write_config(rig, system, name="fuzz"))
        build_system(config)
    except ConfigError:
        pass
    else:
        raise AssertionError(f"{system} built without trust")
    assert not (rig / "ran.txt").exists()


@pytest.mark.attack("config", "traceback")
def test_control_characters_in_a_config_name_the_key_and_the_character(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text('name: "ok\\0null"\nsystem: {name: pendulum}\n')
    with pytest.raises(
        ConfigError, match=r"name: 'ok\\x00null' contains the control character '\\x00' \(U\+0000\)"
    ):
        load_config(config)
    assert main(["train", str(config)]) == 2
    assert "control character '\\x00'" in capsys.readouterr().err
    config.write_text('name: ok\nsystem: {name: pendulum}\ndata: {train: ["a\\tb.csv"]}\n')
    with pytest.raises(
        ConfigError, match=r"data.train\[0\]: .* control character '\\t' \(U\+0009\)"
    ):
        load_config(config)


@pytest.mark.attack("config", "traceback")
def test_a_bad_resample_names_mapping_resample(tmp_path):
    from lagnet.data.loader import load_trajectories

    path = write_pendulum_csv(tmp_path / "p.csv", steps=50, hold=5)
    for step, match in ((100.0, "longer than the recording"), (1e-9, "more than 100× finer")):
        mapping = {**PENDULUM_MAPPING, "resample": step}
        with pytest.raises(ValueError, match=rf"mapping.resample = {step:g} s .*{match}"):
            load_trajectories(path, mapping, system=Pendulum())


@pytest.mark.attack("run folder", "silent")
def test_a_module_source_is_recorded_and_a_changed_module_refused(tmp_path, monkeypatch):
    """A module source stays in its package (not copied into the run): run.json records its file's SHA-256,
    and loading the run after the module's file changed, or with config.yaml naming another module, is
    refused with the module and its file named."""
    package = tmp_path / "lagnet_hashed_rigs"
    package.mkdir()
    (package / "__init__.py").write_text("")
    module = package / "rigs.py"
    module.write_text(
        "from lagnet.systems import Pendulum\n\ndef build():\n    return Pendulum()\n"
    )
    (package / "other.py").write_text(module.read_text())
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("LAGNET_TRUSTED_PACKAGES", "lagnet_hashed_rigs")
    write_pendulum_csv(tmp_path / "pendulum.csv", steps=100, hold=20)
    config = {
        "name": "module",
        "dtype": "float64",
        "system": {"name": "python", "source": "lagnet_hashed_rigs.rigs:build"},
        "model": {"type": "known"},
        "data": {"train": "pendulum.csv", "mapping": PENDULUM_MAPPING},
        "training": {"epochs": 0, "batch_size": 8, "horizon": 1, "validation_horizon": 1},
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    run = str(tmp_path / "run")
    train_run(load_config(tmp_path / "config.yaml"), run, progress=False, trust_code=True)
    digest = hashlib.sha256(module.read_bytes()).hexdigest()
    assert RunSpec.read(run).sources == {"module:lagnet_hashed_rigs.rigs": digest}
    assert not os.path.exists(os.path.join(run, "system"))
    assert lagnet.load(run, trust_code=True).model.known_system == Pendulum()

    other = copy_run(run, tmp_path / "b")
    edit_config(other, source="lagnet_hashed_rigs.other:build")
    with pytest.raises(
        ValueError, match="names the module 'lagnet_hashed_rigs.other' .* not record"
    ):
        lagnet.load(other, trust_code=True)

    module.write_text(module.read_text() + "\n# an edit after training\n")
    with pytest.raises(
        ValueError,
        match=rf"module 'lagnet_hashed_rigs.rigs' \({module}\) changed since training",
    ):
        lagnet.load(run, trust_code=True)
    assert main(["evaluate", run, "--trust-code"]) == 2
    module.unlink()
    with pytest.raises(
        ValueError, match=r"'lagnet_hashed_rigs.rigs' \(not found on sys.path\) is missing"
    ):
        lagnet.load(run, trust_code=True)


@pytest.mark.attack("run folder", "silent")
def test_a_received_runs_code_needs_its_own_consent(run, rig, tmp_path, capsys):
    """`--trust-code` trusts the files the user's own config names; the Python file kept in a run that
    `model.start_from` points at runs only with `--trust-run RUN`."""
    received = copy_run(run, tmp_path)
    marker = os.path.join(received, "system", "ran.txt")
    write_pendulum_csv(rig / "pendulum.csv", steps=100, hold=20)
    config = rig / "two_stage.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": "two_stage",
                "dtype": "float64",
                "system": {"name": "python", "source": "my_rig.py:build"},
                "model": {"type": "pinode", "width": 2, "start_from": received},
                "data": {"train": "pendulum.csv", "mapping": PENDULUM_MAPPING},
                "training": {"epochs": 1, "batch_size": 8, "horizon": 1},
            }
        )
    )
    out = ["--out", str(tmp_path / "second"), "--quiet"]
    assert main(["train", str(config), *out, "--trust-code"]) == 2
    err = capsys.readouterr().err
    assert f"model.start_from names the run {received}" in err
    assert f"--trust-run {received}" in err
    assert not os.path.exists(marker)
    assert os.path.exists(rig / "ran.txt")  # the user's own file, which --trust-code does trust
    # LAGNET_TRUST_CODE=1 is --trust-code: the received run still needs its own consent.
    with trust_code():
        with pytest.raises(UntrustedCode, match="--trust-run"):
            train_run(load_config(config), str(tmp_path / "third"), progress=False)
    assert not os.path.exists(marker)
    main(["train", str(config), *out, "--trust-code", "--trust-run", received])
    assert "--trust-run" not in capsys.readouterr().err
    assert os.path.exists(marker)


@pytest.mark.attack("CLI", "unclear")
def test_cv_takes_the_trust_flags_of_train(rig, tmp_path, capsys):
    """`lagnet cv` of a config with a Python system advises --trust-code, and accepts it."""
    config = yaml.safe_load(
        open(write_config(rig, {"name": "python", "source": "my_rig.py:build"}))
    )
    config["data"] = {"train": ["a.csv", "b.csv"], "mapping": PENDULUM_MAPPING}
    (rig / "cv.yaml").write_text(yaml.safe_dump(config))
    assert main(["cv", str(rig / "cv.yaml"), "--out", str(tmp_path / "cv")]) == 2
    assert "--trust-code" in capsys.readouterr().err
    assert not os.path.exists(rig / "ran.txt")
    assert main(["cv", str(rig / "cv.yaml"), "--trust-code", "--out", str(tmp_path / "cv")]) == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments" not in err and "--trust-code" not in err and "a.csv" in err
    assert os.path.exists(rig / "ran.txt")

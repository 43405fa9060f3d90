"""Every file lagnet reads that may come from someone else (a config, a run folder's config.yaml, run.json,
summary.json and checkpoint manifest, an export archive's metadata) loads or fails with lagnet's own error naming
the file, within a second: alias graphs, deep nesting, huge scalars and control characters included."""

import gc
import json
import os
import shutil
import time
import warnings
import zipfile

import pytest
import yaml
from helpers import PENDULUM_MAPPING, write_pendulum_csv
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lagnet
from lagnet.config import ConfigError, load_config
from lagnet.config.bounded import MAX_DEPTH, MAX_EXPANDED, MAX_NODES, MAX_YAML_BYTES
from lagnet.evaluate.run import training_notes
from lagnet.run.checkpoints import read_manifest
from lagnet.run.load import read_config
from lagnet.run.spec import RunSpec
from lagnet.run.training import train_run

pytestmark = pytest.mark.attack("run folder", "traceback")

# The bound the files' readers keep, in CPU seconds of this process (a busy machine, another test run beside
# this one, must not fail it; the readers' own limits keep them far below it).
SECONDS = 1.0


def examples(n: int) -> int:
    """`n` examples here, ten times as many under `make fuzz` (tests/conftest.py's `explore` profile)."""
    return n * settings.default.max_examples // 100


# ------------------------------------------------------------------------------------------ generated files

control = st.characters(min_codepoint=0, max_codepoint=0x9F).filter(lambda c: not c.isprintable())


@st.composite
def alias_graphs(draw) -> str:
    """Lists of lists of aliases, `levels` deep and `width` wide (9 and 9 is a billion-laughs bomb), the last
    one under a real key or merged into a section."""
    levels, width = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    lines = ["x0: &x0 [" + ", ".join(['"lol"'] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"x{i}: &x{i} [" + ", ".join([f"*x{i - 1}"] * width) + "]")
    last = f"*x{levels - 1}"
    lines.append(
        draw(
            st.sampled_from(
                [
                    f"data: {{train: {last}}}",
                    f"name: {last}",
                    f"training:\n  <<: {{epochs: {last}}}",
                    f"system: {{params: {{mass: {last}}}}}",
                ]
            )
        )
    )
    return "\n".join(lines) + "\n"


recursive_aliases = st.sampled_from(
    [
        "a: &a [*a]\n",
        "a: &a {b: *a}\n",
        "a: &a [1, [2, [*a]]]\n",
        "training: &t {<<: *t}\n",
        "name: &n [*n, *n]\n",
        "data: &d {train: [*d]}\n",
        "&r [*r]\n",
    ]
)


@st.composite
def deep_nesting(draw) -> str:
    depth = draw(st.integers(MAX_DEPTH - 2, 20 * MAX_DEPTH) | st.integers(1, 50_000))
    style = draw(st.sampled_from(["list", "map", "block"]))
    if style == "list":
        return "data: {train: " + "[" * depth + "]" * depth + "}\n"
    if style == "map":
        return "model: " + "{a: " * depth + "1" + "}" * depth + "\n"
    depth = min(depth, 2000)
    return "".join(" " * i + f"k{i}:\n" for i in range(depth)) + " " * depth + "v: 1\n"


@st.composite
def huge_scalars(draw) -> str:
    n = draw(st.sampled_from([10, 4300, 4301, 100_000, MAX_YAML_BYTES + 1]))
    kind = draw(st.sampled_from(["int", "float", "string", "quoted", "keys", "list"]))
    if kind == "int":
        return "seed: " + "9" * n + "\n"
    if kind == "float":
        return "training: {learning_rate: 1e" + "9" * min(n, 10_000) + "}\n"
    if kind == "string":
        return "name: " + "x" * n + "\n"
    if kind == "quoted":
        return 'name: "' + "\\x41" * (n // 4) + '"\n'
    if kind == "keys":
        return "system:\n  params:\n" + "".join(
            f"    k{i}: 1\n" for i in range(min(n, 2 * MAX_NODES))
        )
    return "data: {train: [" + ", ".join(["a.csv"] * min(n, 2 * MAX_NODES)) + "]}\n"


@st.composite
def control_characters(draw) -> str:
    c = draw(control)
    where = draw(st.sampled_from(["plain", "escaped", "key", "name"]))
    if where == "plain":
        return f"name: a{c}b\n"
    if where == "escaped":
        return f'name: "a\\x{ord(c):02x}b"\n'
    if where == "key":
        return f'"train{c}ing": {{epochs: 1}}\n'
    return f"system: {{name: pendulum{c}}}\n"


yaml_documents = st.one_of(
    alias_graphs(),
    recursive_aliases,
    deep_nesting(),
    huge_scalars(),
    control_characters(),
    st.text(max_size=60),
)


@st.composite
def json_documents(draw) -> bytes:
    kind = draw(st.sampled_from(["deep", "number", "control", "values", "bytes", "yaml"]))
    if kind == "deep":
        depth = draw(st.integers(MAX_DEPTH - 2, 200_000))
        return ("[" * depth + "]" * depth).encode()
    if kind == "number":
        return ('{"dt": ' + "9" * draw(st.sampled_from([10, 4301, 100_000])) + "}").encode()
    if kind == "control":
        return json.dumps({"dtype": "float64" + draw(control), "dt": 0.1}).encode()
    if kind == "values":
        values = st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
            max_leaves=8,
        )
        return json.dumps(draw(values)).encode()
    if kind == "bytes":
        return draw(st.binary(max_size=40))
    return draw(yaml_documents).encode()


# ------------------------------------------------------------------------------------------------- readers


def bounded(call, path: str, seconds: float | None = SECONDS):
    """`call()` ends within `seconds` (CPU) with success or a ValueError / FileNotFoundError naming `path`.

    The CPU time of this thread: the process's also counts what JAX's own threads still do for earlier tests
    (a first call once measured 1.13 s that way, its repeat nothing). A call over the bound is timed once more
    after the garbage earlier tests left is collected: a full collection its first allocations set off is not
    the input's cost (a nested config once measured 1.03 s on its first call and 0.03 s alone), while a slow
    input is slow both times."""

    def cpu_seconds() -> float:
        start = time.thread_time()
        try:
            call()
        except (ValueError, FileNotFoundError) as e:
            assert os.path.basename(path) in str(e) or path in str(e), str(e)
        return time.thread_time() - start

    elapsed = cpu_seconds()
    if seconds is not None and elapsed >= seconds:
        gc.collect()
        elapsed = cpu_seconds()
    assert seconds is None or elapsed < seconds, f"{elapsed:.2f} s"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A small trained run (a shipped system: it loads without trust), and a copy the tests damage."""
    folder = tmp_path_factory.mktemp("bounds")
    write_pendulum_csv(folder / "pendulum.csv", steps=60, hold=20)
    config = {
        "name": "bounds",
        "dtype": "float64",
        "system": {"name": "pendulum"},
        "model": {"type": "pinode", "width": 2, "depth": 1},
        "data": {"train": "pendulum.csv", "mapping": PENDULUM_MAPPING},
        "training": {"epochs": 1, "batch_size": 8, "horizon": 1, "validation_horizon": 1},
        "evaluation": {"windows": 5, "horizon": 5, "long_horizon": 10},
    }
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    original = str(folder / "run")
    train_run(load_config(folder / "config.yaml"), original, progress=False)
    copy = str(folder / "received")
    shutil.copytree(original, copy)
    lagnet.load(copy)  # imports and builds once, so that the bound times the files alone
    return original, copy


@pytest.mark.attack("config", "traceback")
@settings(max_examples=examples(100), deadline=None)
@given(text=yaml_documents)
def test_any_config_loads_or_fails_clearly_within_a_second(tmp_path_factory, text):
    path = str(tmp_path_factory.mktemp("config") / "c.yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    bounded(lambda: load_config(path), path)


# Each file of a run folder and the function that reads it.
RUN_FILES = {
    "config.yaml": read_config,
    "run.json": RunSpec.read,
    "summary.json": training_notes,
    "checkpoints/manifest.json": lambda run: read_manifest(os.path.join(run, "checkpoints")),
}


@settings(
    max_examples=examples(100),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(name=st.sampled_from(sorted(RUN_FILES)), data=st.data())
def test_any_run_file_loads_or_fails_clearly_within_a_second(run, name, data):
    """Its reader is bounded in time; loading the run as a whole (which builds the model the config describes,
    as large as it says) ends in success or lagnet's error naming the run."""
    original, copy = run
    content = data.draw(
        yaml_documents.map(str.encode) if name.endswith("yaml") else json_documents()
    )
    path = os.path.join(copy, name)
    try:
        with open(path, "wb") as f:
            f.write(content)
        bounded(lambda: RUN_FILES[name](copy), path)
        with warnings.catch_warnings():
            warnings.simplefilter(
                "ignore"
            )  # a damaged manifest is a warning: the checkpoint loads unchecked
            bounded(lambda: lagnet.load(copy), copy, seconds=None)
    finally:
        shutil.copyfile(os.path.join(original, name), path)


@pytest.mark.attack("export archive", "traceback")
@settings(max_examples=examples(100), deadline=None)
@given(content=json_documents())
def test_any_export_metadata_fails_clearly_within_a_second(tmp_path_factory, content):
    path = str(tmp_path_factory.mktemp("export") / "m.jaxexport")
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("metadata.json", content)
    bounded(lambda: lagnet.load_exported(path), path)


@pytest.mark.attack("config", "hang")
@pytest.mark.parametrize(
    "text, message",
    [
        ("a: &a [*a]\n", r"line 1, column 4: an alias refers to a value that contains it"),
        (
            "".join(
                [
                    "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n",
                    *(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 9)),
                ]
            ),
            rf"its aliases expand to more than {MAX_EXPANDED} values",
        ),
        ("a: " + "[" * 5000 + "]" * 5000 + "\n", rf"nested deeper than {MAX_DEPTH} levels"),
        ("seed: " + "9" * 5000 + "\n", r"999… \(5000 characters\) cannot be read as int"),
        ("name: " + "x" * (MAX_YAML_BYTES + 1), r"larger than 128 KiB"),
    ],
    ids=["recursive alias", "alias bomb", "deep", "long integer", "huge file"],
)
def test_config_bombs_are_refused_at_once_with_the_line(tmp_path, text, message):
    path = tmp_path / "bomb.yaml"
    path.write_text(text)
    start = time.perf_counter()
    with pytest.raises(ConfigError, match=message) as info:
        load_config(path)
    assert str(path) in str(info.value)
    assert time.perf_counter() - start < SECONDS


@pytest.mark.attack("run folder", "silent")
def test_a_run_in_training_is_loaded_from_its_last_checkpoint_with_its_holder_named(run, tmp_path):
    from lagnet.cli import main
    from lagnet.run.lock import run_lock

    original, copy = run
    with run_lock(copy):
        with pytest.warns(
            UserWarning, match=rf"{copy} is being trained by pid {os.getpid()} on host"
        ):
            dyn = lagnet.load(copy)
        assert dyn.step is not None
        out = tmp_path / "m.jaxexport"
        with pytest.warns(UserWarning, match="last complete checkpoint") as said:
            assert main(["export", copy, "--out", str(out)]) == 0
            assert main(["evaluate", copy, "--no-plots", "--out", str(tmp_path / "ev")]) == 0
        assert sum("is being trained by pid" in str(w.message) for w in said) == 2
        assert out.exists() and (tmp_path / "ev" / "metrics.json").exists()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no word once the training has ended
        lagnet.load(copy)

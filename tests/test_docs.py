"""The documentation runs and stays current: every ```python block of README.md and docs/ is executed (```py blocks
are shown but not run: they need another machine or a fresh process), the generated reference pages cover every
config key and CLI command, the README's headline numbers are those of benchmarks/RESULTS.md, and no page, nor any
file a page includes, holds lab-notebook traces (round names, clock times, load averages)."""

import os
import re
import sys
from pathlib import Path

import pytest
from mktestdocs import grab_code_blocks

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").rglob("*.md"))
ALL_DOCS = [README, *PAGES]


def python_blocks(path: Path) -> list[str]:
    return grab_code_blocks(path.read_text(encoding="utf-8"), lang="python")


def _run_blocks(path: Path, namespace: dict) -> dict:
    """The blocks of one page run in order, in one namespace (a page reads top to bottom)."""
    for i, block in enumerate(python_blocks(path)):
        code = compile(block, f"{path.relative_to(ROOT)}[python block {i + 1}]", "exec")
        exec(code, namespace)  # noqa: S102 - the documentation's own examples
    return namespace


@pytest.fixture(scope="module")
def docs_dir(tmp_path_factory):
    """A working folder laid out like the repository root (data/, configs/), so the examples' relative paths work
    and what they write (runs/, model.jaxexport) stays out of the checkout."""
    work = tmp_path_factory.mktemp("docs")
    for name in ("data", "configs"):
        (work / name).symlink_to(ROOT / name, target_is_directory=True)
    before = os.getcwd()
    os.chdir(work)
    try:
        yield work
    finally:
        os.chdir(before)


@pytest.fixture(scope="module")
def quickstart(docs_dir):
    """The README's Python example, run once: it trains `runs/quickstart`, which the guides load."""
    return _run_blocks(README, {"__name__": "__docs__"})


def test_readme_example_trains_rolls_out_and_loads(quickstart):
    import jax.numpy as jnp

    assert len(quickstart["result"].history) == 2  # one record per epoch
    assert quickstart["qs"].shape == (51, 2) and quickstart["qds"].shape == (51, 2)
    assert bool(jnp.all(jnp.isfinite(quickstart["qs"])))
    # a 0.02 s step from θ = 3 at rest moves θ̇, not yet θ (much)
    x_next = quickstart["x_next"]
    assert x_next.shape == (2,) and abs(float(x_next[0]) - 3.0) < 0.01 and float(x_next[1]) != 0.0


# The end-to-end page's Python needs the runs its commands make: it runs in `test_end_to_end_page_runs`.
END_TO_END = ROOT / "docs" / "guides" / "own-rig.md"
PAGES_WITH_CODE = [p for p in PAGES if python_blocks(p) and p != END_TO_END]


@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=lambda p: str(p.relative_to(ROOT / "docs")))
def test_docs_page_examples_run(page, quickstart):
    _run_blocks(page, {"__name__": "__docs__"})


def test_every_python_block_is_run():
    # README's blocks run in the fixture, the pages' in the parametrised test: nothing is left out by a filter.
    counted = sum(len(python_blocks(p)) for p in ALL_DOCS)
    assert counted == len(python_blocks(README)) + len(python_blocks(END_TO_END)) + sum(
        len(python_blocks(p)) for p in PAGES_WITH_CODE
    )
    assert counted >= 8


# --- the end-to-end page ------------------------------------------------------------------------------------

# The page's commands run as written, with these options put first (the page's own, after them, win) so that the
# whole page takes a few minutes: one epoch per training, a lighter identification (fewer windows and solver
# evaluations), one fold of the cross-validation, fewer evaluation windows. The known model ignores the
# identification's keys (they are dropped when the page's `--set model.type=known` comes).
LIGHT = "--quiet --set model.identification.max_windows=128 --set model.identification.max_iterations=10"
QUICKER = {
    "train": f"{LIGHT} --set training.epochs=1",
    "cv": f"{LIGHT} --epochs 1 --folds 1",
    "evaluate": "--windows 100 --long-horizon 200",
}


def _commands(path: Path) -> list[str]:
    """The `lagnet ...` lines of the page's ```bash blocks, in order."""
    lines = [
        line.strip()
        for b in grab_code_blocks(path.read_text("utf-8"), lang="bash")
        for line in b.splitlines()
    ]
    return [line for line in lines if line.startswith("lagnet ")]


def _run(command: str, cwd: Path) -> str:
    import subprocess

    env = dict(
        os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    )
    head, redirect, target = command.partition(" > ")
    words = head.split()
    if "--show-config" not in words:
        words[3:3] = QUICKER.get(words[1], "").split()
    done = subprocess.run(
        " ".join(words), shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )  # noqa: S602 - the page's own commands
    assert done.returncode == 0, f"{head}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    if redirect:
        (cwd / target.strip()).write_text(done.stdout, encoding="utf-8")
    return done.stdout + done.stderr


def test_end_to_end_page_runs(tmp_path):
    """docs/guides/own-rig.md, top to bottom on the shipped DFKI recordings: the template written out, its
    resolved form loading to the same config, three models trained, cross-validated against the least-squares
    refit, the choice retrained, evaluated with its coverage line and exported, and the Python that controls the
    plant with it."""
    from lagnet.config import load_config

    (tmp_path / "data").symlink_to(ROOT / "data", target_is_directory=True)
    template = grab_code_blocks(END_TO_END.read_text("utf-8"), lang="yaml")[0]
    (tmp_path / "my_rig.yaml").write_text(template, encoding="utf-8")
    commands = _commands(END_TO_END)
    assert [c.split()[1] for c in commands] == [
        "train",
        "train",
        "train",
        "train",
        "cv",
        "train",
        "evaluate",
        "export",
    ]
    printed = {c: _run(c, tmp_path) for c in commands}
    resolved = [load_config(tmp_path / f) for f in ("my_rig.yaml", "my_rig_resolved.yaml")]
    assert resolved[0].to_dict() == resolved[1].to_dict()
    cv = printed[commands[4]]
    assert "least-squares refit" in cv and "Choice: my_rig-" in cv
    assert "lagnet cv chose my_rig-" in (tmp_path / "runs/cv/chosen.yaml").read_text("utf-8")
    assert "coverage: test states outside the training states' range: q1 " in printed[commands[6]]
    assert (tmp_path / "runs/my_rig/model.jaxexport").is_file()
    before = os.getcwd()
    os.chdir(tmp_path)
    try:
        out = _run_blocks(END_TO_END, {"__name__": "__docs__"})
    finally:
        os.chdir(before)
    assert out["mpc"] is not None and out["lqr"] is not None


# --- generated reference pages ------------------------------------------------------------------------------


def _hooks():
    sys.path.insert(0, str(ROOT / "docs" / "_hooks"))
    try:
        import generated
    finally:
        sys.path.pop(0)
    return generated


def test_config_reference_lists_every_key_with_its_meaning():
    from lagnet.config.schema import key_paths

    page = _hooks().config_reference()
    for path in key_paths():
        key = ".".join(path)
        assert re.search(rf"^\| `{re.escape(key)}` \| `[^`]*` \| [^|]+ \| .+ \|$", page, re.M), key


def test_cli_reference_lists_every_command_and_option():
    from lagnet.cli import build_parser

    generated = _hooks()
    page = generated.cli_reference()
    parser = build_parser()
    for name, sub in generated._subcommands(parser):
        assert f"## `lagnet {name}`" in page
        for action in sub._actions:
            for flag in action.option_strings:
                assert flag in page, (name, flag)


def test_pages_hold_their_generated_markers():
    generated = _hooks()
    assert generated.CONFIG_MARKER in (ROOT / "docs/reference/config.md").read_text()
    assert generated.CLI_MARKER in (ROOT / "docs/reference/cli.md").read_text()
    assert generated.LONGEST_MARKER in (ROOT / "docs/development.md").read_text()


def test_longest_functions_table_is_measured():
    table = _hooks().longest_functions(5).splitlines()
    assert table[:2] == ["| function | file | lines |", "| --- | --- | --- |"] and len(table) == 7
    lines = [int(row.rsplit("|", 2)[1]) for row in table[2:]]
    assert lines == sorted(lines, reverse=True) and 30 < lines[0] <= 80
    for row in table[2:]:
        name, path = re.findall(r"`([^`]+)`", row)
        assert re.search(rf"^\s*(async )?def {name}\(", (ROOT / path).read_text(), re.M), row


def _extension_rows() -> list[list[str]]:
    text = (ROOT / "docs/development.md").read_text(encoding="utf-8")
    table = text.split("| extension point |", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    return [[c.strip() for c in line.strip().strip("|").split("|")] for line in table]


def test_extension_point_table_names_what_exists():
    """Each row's classes are defined in its file, its registries are in the files it names, its test exists."""
    rows = _extension_rows()
    assert [r[0] for r in rows] == [
        "integrator",
        "friction model",
        "metric",
        "data format",
        "system",
        "rig",
        "model type",
        "plant",
        "controller",
        "control task",
    ]
    for point, classes, file, registry, test in rows:
        source = (ROOT / file.strip("`")).read_text(encoding="utf-8")
        for name in re.findall(r"`(Abstract\w+)`", classes):
            assert re.search(rf"^class {name}\(", source, re.M), (point, name, file)
        for name, where in re.findall(r"`(\w+)`[^`]*? in `([\w/.]+)`", registry):
            assert re.search(rf"\b{name}\b", (ROOT / where).read_text(encoding="utf-8")), (
                point,
                name,
            )
        for path in re.findall(r"`([\w/]+\.py)`", registry + test):
            assert (ROOT / path).is_file(), (point, path)
        assert test.startswith("`tests/"), (point, test)


def _includes(path: Path) -> list[str]:
    """The files a page pulls in with pymdownx.snippets (`--8<-- "path"` or `"path:section"`), as written."""
    return re.findall(r'--8<-- "([^":]+)(?::[^"]*)?"', path.read_text(encoding="utf-8"))


def included_files() -> list[Path]:
    """Every file the pages include, and what those include in turn: generated records (benchmarks/RESULTS.md,
    experiments/out/*.md) and the experiments' own pages, which the site shows as its own."""
    found, todo = [], list(PAGES)
    while todo:
        for target in _includes(todo.pop()):
            path = ROOT / target
            if path.is_file() and path not in found and path not in ALL_DOCS:
                found.append(path)
                todo.append(path)
    return sorted(found)


INCLUDED = included_files()


def test_included_files_exist():
    for page in PAGES:
        for target in _includes(page):
            assert (ROOT / target).is_file(), (
                f"{page.relative_to(ROOT)} includes {target}, which is missing"
            )
    # The results pages show generated records: the hygiene check below reads them as well.
    assert ROOT / "benchmarks/RESULTS.md" in INCLUDED
    assert any(p.parent == ROOT / "experiments" / "out" for p in INCLUDED)


# --- the README ----------------------------------------------------------------------------------------------


def test_readme_is_short():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; move detail into docs/"


def test_readme_links_point_at_files_that_exist():
    # The README is read on the repository's page, outside the site's strict build: check its links here.
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text(encoding="utf-8")):
        if not target.startswith(("http://", "https://")):
            assert (ROOT / target).exists(), f"README.md links to {target}, which is missing"


def _targets_table(text: str) -> dict[str, tuple[str, str]]:
    """RESULTS.md's `## Targets` table: name → (goal, measured)."""
    section = text.split("## Targets", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0] not in ("target", "---"):
            rows[cells[0]] = (cells[1], cells[2])
    return rows


def test_readme_headline_numbers_are_those_of_results_md():
    results = _targets_table((ROOT / "benchmarks/RESULTS.md").read_text(encoding="utf-8"))
    readme = README.read_text(encoding="utf-8")
    table = readme.split("| target (RESULTS.md) |", 1)[1].split("\n\n", 1)[0]
    rows = [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in table.splitlines()[2:]
        if line.startswith("|")
    ]
    assert len(rows) >= 5
    for name, _what, goal, measured in rows:
        assert name in results, f"README's row {name!r} is not a target of benchmarks/RESULTS.md"
        want_goal, want = results[name]
        number = re.match(r"[0-9.]+", measured).group(0)
        assert number == want.strip("*"), f"{name}: README says {measured}, RESULTS.md {want}"
        assert goal == want_goal, f"{name}: README's goal {goal}, RESULTS.md's {want_goal}"


# --- no lab-notebook traces ----------------------------------------------------------------------------------

NOTEBOOK_TRACES = {
    "an internal work round": re.compile(r"\b(?:s)top \d+", re.I),
    "a clock time": re.compile(r"(?<![\d.:])\d{1,2}:\d\d(?![\d:])"),
    "a load average": re.compile(
        r"\bload averages?\b|\bload \d+(\.\d+)?\s*(–|-|to)\s*\d|\bload 0\.", re.I
    ),
    "first-person lab prose": re.compile(
        r"\bI (take|think|thought|tried|measured|ran|found|checked)\b|\bthis (round|hour)\b", re.I
    ),
}


def _prose(text: str) -> str:
    """The text outside code: fenced blocks and inline code are dropped (a `host0:1234` is not a clock)."""
    text = re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


@pytest.mark.parametrize("path", ALL_DOCS + INCLUDED, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_lab_notebook_traces(path):
    prose = _prose(path.read_text(encoding="utf-8"))
    for what, pattern in NOTEBOOK_TRACES.items():
        found = pattern.search(prose)
        assert found is None, f"{path.relative_to(ROOT)} holds {what}: {found.group(0)!r}"


def test_no_lab_notebook_traces_in_generated_pages():
    """The reference pages the build generates from the code: the config's docs (its prose), the CLI's help
    (whole: the help text is prose shown in a code block)."""
    generated = _hooks()
    pages = {"config": _prose(generated.config_reference()), "cli": generated.cli_reference()}
    for name, prose in pages.items():
        for what, pattern in NOTEBOOK_TRACES.items():
            found = pattern.search(prose)
            assert found is None, f"the generated {name} reference holds {what}: {found.group(0)!r}"


def test_notebook_trace_patterns_catch_what_they_name():
    samples = {
        # Split, so that this file itself names no round.
        "an internal work round": "measured at s" + "top 27 against",
        "a clock time": "three cold runs at 18:20 gave",
        "a load average": "(2 cores, load 0.7–1.6)",
        "first-person lab prose": "each window's own gradient, I take it",
    }
    for what, sample in samples.items():
        assert NOTEBOOK_TRACES[what].search(_prose(sample)), what
    assert not any(
        p.search(_prose("`--coordinator host0:1234` at 1:1 scale"))
        for p in NOTEBOOK_TRACES.values()
    )


def test_readme_is_at_most_600_words_outside_code():
    """The README points; the docs explain."""
    text = re.sub(r"^```.*?^```", "", README.read_text(encoding="utf-8"), flags=re.S | re.M)
    assert len(text.split()) <= 600


def test_committed_references_are_not_stale():
    """docs/reference/config.md and cli.md hold their generated text in the repository, equal to what the code
    generates now (`python docs/_hooks/generated.py` rewrites them)."""
    hooks = _hooks()
    for marker, path in hooks.COMMITTED.items():
        text = path.read_text(encoding="utf-8")
        assert hooks.fill(text, marker, hooks.generated(marker)) == text, (
            f"{path.relative_to(ROOT)} is stale: run python docs/_hooks/generated.py"
        )
        assert marker in text and hooks._end(marker) in text

"""The attack table: every adversarial test (`pytest -m attack`), counted per surface and by what a failure means.

    python tools/attack_table.py                    # run them, write benchmarks/results/attack_table.md and .json
    python tools/attack_table.py --junit out.xml    # also keep pytest's JUnit report
    python tools/attack_table.py -- -x              # extra pytest arguments after --

A test is an attack when it carries `@pytest.mark.attack(surface, guards)` (pyproject.toml registers the marker;
a module's `pytestmark` gives its tests a default, a test's own marker overrides it): `surface` is what it
attacks (config, data file, user system, robot file, export archive, run folder, CLI, Python API) and `guards`
what a failure would mean: "traceback" (a raw traceback instead of lagnet's error), "unclear" (lagnet's error,
but one that does not name the key, option or file at fault, or blames another), "silent" (a wrong result, or
code run, without a word), "loss" (a run or a file lost or mixed) or "hang" (no answer within the bound lagnet
keeps, or work done before a refusal that needed none). A case is one collected test (one parametrisation; a
property-based test draws many examples within it). The columns of these kinds count the failed cases of
each: all 0 when the suite is green.
"""

import argparse
import collections
import json
import os
import sys
import tempfile

import pytest

SURFACES = (
    "config",
    "data file",
    "user system",
    "robot file",
    "export archive",
    "run folder",
    "CLI",
    "Python API",
)
GUARDS = {
    "traceback": "tracebacks",
    "unclear": "unclear errors",
    "silent": "silent wrong results",
    "loss": "losses",
    "hang": "hangs",
}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "benchmarks", "results", "attack_table")


class Recorder:
    """A pytest plugin: each attack case's surface, guard and outcome (a failure in setup or teardown counts)."""

    def __init__(self):
        self.cases: dict[str, dict] = {}

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items):
        for item in items:
            marker = item.get_closest_marker("attack")
            if marker is None:
                continue
            surface, guards = (list(marker.args) + [None, None])[:2]
            if surface not in SURFACES or guards not in GUARDS:
                raise pytest.UsageError(
                    f"{item.nodeid}: attack marker {marker.args}: expected (surface, guards) with surface in "
                    f"{SURFACES} and guards in {tuple(GUARDS)}"
                )
            test = item.nodeid.split("[")[0]
            self.cases[item.nodeid] = {
                "surface": surface,
                "guards": guards,
                "test": test,
                "outcome": "not run",
            }

    def pytest_runtest_logreport(self, report):
        case = self.cases.get(report.nodeid)
        if case is None:
            return
        if report.failed:
            case["outcome"] = "failed"
        elif report.skipped and case["outcome"] != "failed":
            case["outcome"] = "skipped"
        elif report.when == "call" and report.passed and case["outcome"] == "not run":
            case["outcome"] = "passed"


def table(cases: dict[str, dict]) -> list[dict]:
    """One row per surface: cases, tests, passed, skipped and the failed cases by what they guard."""
    rows = []
    for surface in SURFACES:
        mine = [c for c in cases.values() if c["surface"] == surface]
        row = collections.OrderedDict(surface=surface, cases=len(mine))
        row["tests"] = len({c["test"] for c in mine})
        row["passed"] = sum(c["outcome"] == "passed" for c in mine)
        for guard, column in GUARDS.items():
            row[column] = sum(c["outcome"] == "failed" and c["guards"] == guard for c in mine)
        row["skipped or not run"] = sum(c["outcome"] in ("skipped", "not run") for c in mine)
        rows.append(row)
    total = collections.OrderedDict(surface="all")
    for key in rows[0]:
        if key != "surface":
            total[key] = sum(r[key] for r in rows)
    total["tests"] = len({c["test"] for c in cases.values()})
    return [*rows, total]


def markdown(rows: list[dict], status: int, command: str) -> str:
    keys = list(rows[0])
    lines = [
        "# Attack table",
        "",
        "Every adversarial test (`pytest -m attack`), by the surface it attacks. A case is one collected test; "
        "tracebacks, unclear errors, silent wrong results, losses and hangs count its failed cases by what the "
        "test guards against "
        "(tools/attack_table.py). Written by `make attack-table`:",
        "",
        f"    {command}",
        "",
        "| " + " | ".join(keys) + " |",
        "|" + "|".join("---" if k == "surface" else "---:" for k in keys) + "|",
    ]
    for row in rows:
        cells = [f"**{row[k]}**" if row["surface"] == "all" else str(row[k]) for k in keys]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"pytest exit status: {status}.", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--out", default=OUT, help="the table's path without suffix (.md and .json are written)"
    )
    p.add_argument("--junit", default=None, help="also write pytest's JUnit XML report here")
    p.add_argument(
        "pytest_args",
        nargs="*",
        help="extra pytest arguments (after --); test files or folders among them replace tests/",
    )
    args = p.parse_args(argv)
    junit = args.junit or os.path.join(tempfile.mkdtemp(prefix="attack-"), "junit.xml")
    pytest_args = ["-m", "attack", "-n", "0", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}"]
    recorder = Recorder()
    os.chdir(ROOT)
    # Test files given after -- (a quick table of some surfaces) replace the whole tests/ folder.
    paths = [
        a for a in args.pytest_args if not a.startswith("-") and os.path.exists(a.split("::")[0])
    ]
    status = int(
        pytest.main(
            [*pytest_args, *args.pytest_args, *([] if paths else ["tests"])], plugins=[recorder]
        )
    )
    rows = table(recorder.cases)
    where = " ".join(args.pytest_args) if paths else "tests"
    command = "python tools/attack_table.py  # pytest " + " ".join(pytest_args[:-1]) + " " + where
    with open(args.out + ".md", "w", encoding="utf-8") as f:
        f.write(markdown(rows, status, command))
    with open(args.out + ".json", "w", encoding="utf-8") as f:
        json.dump({"status": status, "rows": rows, "cases": recorder.cases}, f, indent=1)
        f.write("\n")
    print(markdown(rows, status, command))
    return status


if __name__ == "__main__":
    sys.exit(main())

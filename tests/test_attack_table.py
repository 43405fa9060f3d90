"""tools/attack_table.py counts the adversarial tests per surface, and a failure lands in the column of what it
guards; the bad-input and trust tests all carry the `attack` marker."""

import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import attack_table  # noqa: E402


def case(surface, guards, test, outcome):
    return {"surface": surface, "guards": guards, "test": test, "outcome": outcome}


def test_failed_cases_count_by_what_they_guard():
    cases = {
        "a[1]": case("config", "traceback", "a", "passed"),
        "a[2]": case("config", "traceback", "a", "failed"),
        "b": case("data file", "silent", "b", "failed"),
        "c": case("run folder", "loss", "c", "failed"),
        "d": case("run folder", "loss", "d", "skipped"),
        "e": case("CLI", "unclear", "e", "failed"),
        "f": case("CLI", "hang", "f", "failed"),
    }
    rows = {r["surface"]: r for r in attack_table.table(cases)}
    assert (rows["config"]["cases"], rows["config"]["tests"], rows["config"]["passed"]) == (2, 1, 1)
    assert rows["config"]["tracebacks"] == 1 and rows["config"]["losses"] == 0
    assert rows["data file"]["silent wrong results"] == 1
    assert rows["run folder"]["losses"] == 1 and rows["run folder"]["skipped or not run"] == 1
    assert (rows["CLI"]["unclear errors"], rows["CLI"]["hangs"], rows["CLI"]["tracebacks"]) == (
        1,
        1,
        0,
    )
    total = rows["all"]
    assert (total["cases"], total["tests"], total["passed"]) == (7, 6, 1)
    assert (total["tracebacks"], total["silent wrong results"], total["losses"]) == (1, 1, 1)
    assert (total["unclear errors"], total["hangs"]) == (1, 1)
    text = attack_table.markdown(list(rows.values()), 1, "cmd")
    assert "| config | 2 | 1 | 1 | 1 | 0 | 0 | 0 | 0 | 0 |" in text and "exit status: 1" in text


def marked(path: pathlib.Path) -> list[str]:
    """The test functions of a file without an `attack` marker (their own or the module's `pytestmark`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module = any(
        isinstance(n, ast.Assign)
        and any(getattr(t, "id", None) == "pytestmark" for t in n.targets)
        and "attack" in ast.unparse(n.value)
        for n in tree.body
    )
    return [
        n.name
        for n in tree.body
        if isinstance(n, ast.FunctionDef)
        and n.name.startswith("test_")
        and not module
        and not any("mark.attack" in ast.unparse(d) for d in n.decorator_list)
    ]


def test_the_bad_input_and_trust_tests_are_attacks():
    files = [*sorted((ROOT / "tests").glob("test_bad_input*.py")), ROOT / "tests" / "test_trust.py"]
    assert len(files) == 3
    for path in files:
        assert marked(path) == [], path.name
    rows = attack_table.SURFACES
    for surface in (
        "config",
        "data file",
        "user system",
        "robot file",
        "export archive",
        "run folder",
        "CLI",
    ):
        assert surface in rows

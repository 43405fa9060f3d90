"""The guides say what to do and what to expect; what was measured lives on the results pages.

A guide (docs/guides/*.md) states a recommendation and links to its evidence under docs/results/. A number that
reads like a measurement (a percentage, a ratio such as 1.3×, a time or a size with its unit) may appear in a
guide's prose only where it is included from a results file (pymdownx.snippets: the included text is not in the
guide's source, so it is not scanned) or where it is no measurement at all: a threshold lagnet defines, a test's
tolerance, an example's set-up. Those few are listed in ALLOWED, each with its reason. Code (fenced blocks and
inline code) is not prose: a `--horizon 0.5s` is a command, not a result."""

import re
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDES = sorted((ROOT / "docs" / "guides").glob("*.md"))

# A number with a unit or mark that measurements carry: a percentage, a ratio (1.3×, not the product 2 × 50),
# a time (ms, µs, s; not the s of N·s/m), a size (kB, MiB, GB, …) or "800 times".
MEASURED = re.compile(
    r"(?<![\w.,/])\d+(?:\.\d+)?\s?"
    r"(?:%|×(?!\s*\d)|(?:ms|µs|s)\b(?!/)|[kKMG]i?B\b|times\b)"
)


class Allowed(NamedTuple):
    """Numbers that are no measurement: `phrases` (each holding the number, with enough words around it to
    name one place) in the guides `pages` (file names under docs/guides/), and why."""

    pages: tuple[str, ...]
    phrases: tuple[str, ...]
    reason: str


ALLOWED = [
    Allowed(
        ("training.md",),
        ("100× off", "to within 5 %"),
        "the start and the tolerance of tests/test_identify.py, which the sentence cites",
    ),
    Allowed(
        ("training.md",),
        ("more than 3× the median",),
        "the threshold of lagnet's warning about an unlike validation segment (lagnet/run/validation.py)",
    ),
    Allowed(
        ("evaluation.md", "network-help.md"),
        ("over 5 %", "above 5 %"),
        "the threshold of lagnet's coverage warning (COVERAGE_WARNING in lagnet/evaluate/run.py)",
    ),
    Allowed(
        ("control.md",),
        ("20 % off", "Euler at 0.05 s"),
        "the Gymnasium example's set-up: the error it gives the prior, and Pendulum-v1's own time step",
    ),
    Allowed(
        ("robot-arm.md",),
        (
            "RK4 at 1 ms",
            "its 1 ms step",
            "the recording's 10 ms",
            "inside 60 % of the joint ranges",
        ),
        "the simulated arm's design (lagnet/simulate/rigs/arm.py): its time steps and where its targets lie",
    ),
    Allowed(
        ("security.md",),
        ("128 KiB", "16 MiB"),
        "the size bounds lagnet enforces on files it reads (lagnet/config/bounded.py)",
    ),
    Allowed(
        ("double-pendulum.md",),
        ("the last 2 s of 10",),
        "the task's definition (lagnet/control/tasks.py): hold the top for the last 2 s of a 10 s run",
    ),
]


def prose(text: str) -> str:
    """A page's prose: fenced code blocks, inline code, snippet includes and HTML comments removed, and runs of
    white space made one space (a phrase may wrap)."""
    text = re.sub(r"^([ \t]*)(```|~~~).*?^\1\2[^\n]*$", "", text, flags=re.S | re.M)
    text = re.sub(r"^--8<--.*$", "", text, flags=re.M)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.sub(r"\s+", " ", text)


def allowed_spans(page: str, text: str) -> list[tuple[int, int]]:
    spans = []
    for entry in ALLOWED:
        if page in entry.pages:
            for phrase in entry.phrases:
                spans += [(m.start(), m.end()) for m in re.finditer(re.escape(phrase), text)]
    return spans


def unexplained_numbers(page: str, text: str) -> list[str]:
    """The measured-looking numbers of a page's prose that no allowed phrase covers, each with its context."""
    spans = allowed_spans(page, text)
    found = []
    for m in MEASURED.finditer(text):
        if not any(a <= m.start() and m.end() <= b for a, b in spans):
            found.append(f"{m.group(0)!r} in …{text[max(0, m.start() - 60) : m.end() + 30]}…")
    return found


@pytest.mark.parametrize("path", GUIDES, ids=lambda p: p.name)
def test_guides_hold_no_measured_numbers(path):
    found = unexplained_numbers(path.name, prose(path.read_text(encoding="utf-8")))
    assert not found, (
        f"docs/guides/{path.name} states what reads as a measurement; move it to a page under docs/results/ "
        "(with its command and date) and link to it, include it from a results file, or, if it is no "
        "measurement, add it to ALLOWED with a reason:\n  " + "\n  ".join(found)
    )


def test_every_allowed_phrase_is_needed():
    """An entry whose phrase is gone, or holds no measured-looking number, is stale."""
    texts = {p.name: prose(p.read_text(encoding="utf-8")) for p in GUIDES}
    for entry in ALLOWED:
        assert entry.reason.strip(), entry
        for phrase in entry.phrases:
            assert MEASURED.search(phrase), f"{phrase!r} holds no measured-looking number"
            pages = [page for page in entry.pages if phrase in texts.get(page, "")]
            assert pages, f"{phrase!r} is in none of {entry.pages}: drop it from ALLOWED"


def test_the_pattern_catches_what_it_names():
    caught = [
        "cut the error by 31 %",
        "trains in 1.3× the time",
        "a gradient in 2.3 ms",
        "took 64 s in all",
        "peaked at 263 MB",
        "a loss 800 times smaller",
        "0.3–0.6 % of the prior's",
    ]
    for sample in caught:
        assert MEASURED.search(prose(sample)), sample
    ignored = [
        "a 2 × 50 ReLU network",
        "`--horizon 0.5s`",
        "```bash\nlagnet evaluate RUN --horizon 0.5s\n```",
        "0.35 N·s/m and 12 rad/s",
        "6 starts and 3 seeds",
        'the table\n\n--8<-- "benchmarks/results/closed_loop.md"\n',
    ]
    for sample in ignored:
        assert not MEASURED.search(prose(sample)), sample

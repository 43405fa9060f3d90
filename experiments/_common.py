"""Shared by the lecture experiments: where figures go, the lecture-vs-lagnet table; one step as a matrix
(`linear_oscillator`, `step_matrix`) comes from `lagnet.integrator_analysis`."""

import json
from pathlib import Path

import jax
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from lagnet.integrator_analysis import linear_oscillator as linear_oscillator  # noqa: E402
from lagnet.integrator_analysis import step_matrix as step_matrix  # noqa: E402

jax.config.update("jax_enable_x64", True)

OUT = Path(__file__).resolve().parent / "out"

# One colour per scheme, the same in every figure.
COL = {
    "forward Euler": "#c0392b",
    "backward Euler": "#8e44ad",
    "symplectic Euler": "#d68910",
    "leapfrog": "#1f77b4",
    "average acceleration": "#27ae60",
    "damped Newmark": "#8e44ad",
    "RK4": "#e67e22",
}


def save(fig, name: str) -> Path:
    """Write `fig` to experiments/out/<name>.png and close it."""
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.png"
    fig.savefig(path, dpi=130)
    plt.close(fig)
    print(f"wrote {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}")
    return path


def write_record(name: str, record: dict, text: str) -> None:
    """Print the Markdown `text` and write experiments/out/<name>.json (the record) and <name>.md (the text)."""
    print(text)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.json").write_text(json.dumps(record, indent=1))
    (OUT / f"{name}.md").write_text(text)


def report(title: str, rows) -> None:
    """Print rows of (quantity, lecture's number, lagnet's number) as an aligned table."""
    rows = [tuple(str(c) for c in r) for r in rows]
    head = ("quantity", "lecture", "lagnet")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(3)]
    print(f"\n{title}")
    for r in [head, *rows]:
        print("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))

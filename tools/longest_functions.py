"""The longest functions in lagnet/, by lines from `def` to the function's last line (docstring included), as
the development page lists them.

    python tools/longest_functions.py       # the 10 longest, as a Markdown table
    python tools/longest_functions.py 20    # the 20 longest
"""

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def lengths() -> list[tuple[int, str, str]]:
    """(lines, function name, file) of every function and method in lagnet/, longest first."""
    rows = []
    for path in sorted((ROOT / "lagnet").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                rows.append(
                    (
                        node.end_lineno - node.lineno + 1,
                        node.name,
                        path.relative_to(ROOT).as_posix(),
                    )
                )
    return sorted(rows, key=lambda r: (-r[0], r[2], r[1]))


def main(argv: list[str]) -> int:
    count = int(argv[0]) if argv else 10
    print("| function | file | lines |\n| --- | --- | --- |")
    for lines, name, path in lengths()[:count]:
        print(f"| `{name}` | `{path}` | {lines} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

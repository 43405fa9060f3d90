"""The test suite's duration profile: the slowest tests and each file's total, with JAX's compile share.

    python tools/test_profile.py                      # the whole suite, as `make test` runs it
    python tools/test_profile.py tests/test_train.py  # some files, in one process (any pytest arguments)
    python tools/test_profile.py --save profile.json  # also keep the numbers
    python tools/test_profile.py --write-order        # also rewrite tests/file_order.json (see below)

Each test's wall time counts its setup (a module's shared fixtures land on the first test that uses them),
call and teardown; "jax" is the part of it JAX spent tracing, lowering and compiling (XLA) programs, recorded
by tests/conftest.py when LAGNET_TEST_PROFILE names a folder. Under pytest-xdist the per-test times add up
to more than the wall time: the workers run side by side.

tests/file_order.json lists the test files by their CPU seconds, longest first: tests/conftest.py hands them to
the workers in that order, so that no long file starts last while the other worker idles. `--write-order`
rewrites it from this run (only from a run of the whole suite).
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time

# What `make test` runs (see the Makefile): two workers, each test file on one worker, longest files first.
DEFAULT_ARGS = ["-n", "2", "--dist", "loadfile", "--no-loadscope-reorder"]
ORDER_FILE = os.path.join("tests", "file_order.json")


def read_profile(folder: str) -> list[dict]:
    rows = []
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name)) as f:
            rows.extend(json.loads(line) for line in f)
    return rows


def jax_seconds(row: dict) -> float:
    return row["trace_s"] + row["lower_s"] + row["compile_s"]


def report(rows: list[dict], wall: float, top: int) -> str:
    total = sum(r["wall_s"] for r in rows)
    cpu = sum(r["cpu_s"] for r in rows)
    lines = [
        f"{len(rows)} tests in {wall:.1f} s; per test, added up: {total:.1f} s wall, {cpu:.1f} s CPU, "
        f"{sum(map(jax_seconds, rows)):.1f} s of JAX tracing + lowering + compiling",
        "",
        f"slowest {top} tests (by CPU time: on a busy machine wall times grow, CPU times less)",
        "  wall s    CPU s    jax s  (trace / lower / XLA compile)",
    ]
    for r in sorted(rows, key=lambda r: -r["cpu_s"])[:top]:
        lines.append(
            f"{r['wall_s']:8.2f} {r['cpu_s']:8.2f} {jax_seconds(r):8.2f}  ({r['trace_s']:.1f} / "
            f"{r['lower_s']:.1f} / {r['compile_s']:.1f})  {r['test']}"
        )
    files = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for r in rows:
        entry = files[r["test"].split("::")[0]]
        entry[0] += 1
        entry[1] += r["wall_s"]
        entry[2] += r["cpu_s"]
        entry[3] += jax_seconds(r)
    lines += ["", "per file", " tests   wall s    CPU s    jax s"]
    for name, (count, seconds, used, compiled) in sorted(files.items(), key=lambda kv: -kv[1][2]):
        lines.append(f"{count:6d} {seconds:8.1f} {used:8.1f} {compiled:8.1f}  {name}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=25, help="how many of the slowest tests to list")
    parser.add_argument("--save", help="write the per-test numbers to this JSON file")
    parser.add_argument(
        "--write-order",
        action="store_true",
        help=f"rewrite {ORDER_FILE} from this run (the whole suite)",
    )
    args, pytest_args = parser.parse_known_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory(prefix="lagnet-test-profile-") as folder:
        env = dict(os.environ, LAGNET_TEST_PROFILE=folder)
        command = [sys.executable, "-m", "pytest", "-q", *(pytest_args or DEFAULT_ARGS)]
        start = time.perf_counter()
        code = subprocess.run(command, cwd=root, env=env).returncode
        wall = time.perf_counter() - start
        rows = read_profile(folder)
    if not rows:
        print("no test ran: nothing to profile", file=sys.stderr)
        return code or 1
    print()
    print(report(rows, wall, args.top))
    if args.save:
        with open(args.save, "w") as f:
            json.dump({"wall_s": wall, "command": command, "tests": rows}, f, indent=1)
    if args.write_order:
        write_order(rows, os.path.join(root, ORDER_FILE))
    return code


def write_order(rows: list[dict], path: str) -> None:
    """{test file: CPU seconds}, longest first, rounded to a second."""
    seconds = collections.Counter()
    for r in rows:
        seconds[r["test"].split("::")[0]] += r["cpu_s"]
    with open(path, "w") as f:
        json.dump({name: round(s) for name, s in seconds.most_common()}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    sys.exit(main())

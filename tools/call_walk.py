"""The walk a reader takes through lagnet's files to follow one `lagnet.train_run`: every lagnet function in
the order it is first called (the stops), and how often that walk returns to a file it had already left.

    python tools/call_walk.py [CONFIG]          # default configs/pendulum_pinode.yaml, one epoch

A reader who follows a config from the YAML to where each key acts enters each function once; a file left and
entered again is a return. Fewer returns: a reader follows less.
"""

import inspect
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "lagnet") + os.sep


def walk(config_path: str) -> list[tuple[str, str]]:
    """(file, function) of every lagnet function in the order of its first call during `train_run`."""
    import lagnet

    config = lagnet.load_config(config_path).replace(training={"epochs": 1})
    # Imported before the walk: a module's import runs its class bodies, which are no stops of a reader.
    train_run = lagnet.train_run
    seen, stops = set(), []

    def profile(frame, event, arg):
        if event != "call":
            return
        code = frame.f_code
        if not code.co_filename.startswith(PACKAGE) or code.co_name.startswith("<"):
            return
        if not code.co_flags & inspect.CO_NEWLOCALS:
            return  # a class body, run by a lazy import: no function a reader enters
        key = (code.co_filename, code.co_firstlineno)
        if key not in seen:
            seen.add(key)
            stops.append((os.path.relpath(code.co_filename, ROOT), code.co_qualname))

    with tempfile.TemporaryDirectory() as out:
        sys.setprofile(profile)
        try:
            train_run(config, os.path.join(out, "run"), progress=False)
        finally:
            sys.setprofile(None)
    return stops


def returns(stops: list[tuple[str, str]]) -> int:
    """How often the walk enters a file it had entered before and then left."""
    left, current, count = set(), None, 0
    for file, _ in stops:
        if file != current:
            if file in left:
                count += 1
            if current is not None:
                left.add(current)
            current = file
    return count


if __name__ == "__main__":
    path = (
        sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "configs", "pendulum_pinode.yaml")
    )
    stops = walk(path)
    files = {f for f, _ in stops}
    print(
        f"{path}: {len(stops)} stops in {len(files)} files, {returns(stops)} returns to a file already left"
    )

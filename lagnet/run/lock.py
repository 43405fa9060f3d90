"""One writer per run directory: a training holds a lock on its folder until it ends, however it ends.

The lock is a file beside the run directory, `.NAME.lock` in its parent (inside, it would be taken for a file of
the run): an OS lock (`filelock`, `flock` on POSIX), so a process that is killed releases it, and the file names
its holder (host, pid, start time, command) for the message a second training into the folder gets.
"""

import contextlib
import functools
import inspect
import json
import os
import socket
import sys
import time
from collections.abc import Callable

import filelock

from .. import parallel
from .._errors import LagnetError, RunFolderError
from ..config.bounded import read_json


class RunInUse(LagnetError, TimeoutError):
    """Another process is training into the run directory (its holder named in the message)."""


def lock_path(run_dir: str) -> str:
    """The lock file of `run_dir`: `.NAME.lock` in its parent folder (the real path, so any spelling of the
    folder finds the same lock)."""
    real = os.path.realpath(os.fspath(run_dir))
    parent, name = os.path.split(real)
    return os.path.join(parent, f".{name or 'root'}.lock")


def _holder(path: str) -> str:
    try:
        info = read_json(path, "a lock file")
        return (
            f"pid {info['pid']} on host {info['host']}, since {info['started']} ({info['command']})"
        )
    except (OSError, ValueError, KeyError, TypeError):
        return "another process (it has not written its details yet)"


def training_holder(run_dir: str) -> str | None:
    """Who is training into `run_dir` now (the lock's holder, as `RunInUse` names it), or None. Reads only: a
    shared lock tried on the lock file, never created (a received run's parent may be read-only)."""
    try:
        import fcntl
    except ImportError:  # Windows: filelock's locks there are not flock's
        return None
    path = lock_path(run_dir)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _holder(path)
    except OSError:
        return None
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _missing_parents(folder: str) -> list[str]:
    """`folder` and its ancestors that do not exist, deepest first."""
    missing = []
    while folder and not os.path.exists(folder):
        missing.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return missing


@contextlib.contextmanager
def run_lock(run_dir: str):
    """Hold the run directory's lock for the block; a `RunInUse` error at once if another process holds it.

    The lock file, and the folders made to hold it, are removed on exit (normal, an exception, Ctrl-C); a kill
    leaves the file, whose lock the OS has released, and the next training takes it over.
    """
    path = lock_path(run_dir)
    made = _missing_parents(os.path.dirname(path))
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # filelock reports a file it cannot create as a lock held by another process (/proc/x, read-only).
        with open(path, "a"):
            pass
    except OSError as e:
        for folder in made:
            with contextlib.suppress(OSError):
                os.rmdir(folder)
        raise RunFolderError(
            f"run directory {run_dir!r} is not writable: its lock file {path} cannot be created "
            f"({e.strerror or e})"
        ) from None
    lock = filelock.FileLock(path, timeout=0)
    try:
        lock.acquire()
    except filelock.Timeout:
        raise RunInUse(
            f"{run_dir} is being trained by {_holder(path)} (lock file {path}): wait for it to end, or give "
            "another --out"
        ) from None
    try:
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "command": " ".join(sys.argv) or "python",
        }
        # The same file the OS lock is on (flock belongs to the open file, so writing through another
        # descriptor keeps it).
        with open(path, "w", encoding="utf-8") as f:
            json.dump(info, f)
        yield
    finally:
        # Unlinked while still held: a process that opened the old file meanwhile finds it unlinked once it
        # gets the lock and tries again (filelock checks), so two holders never coexist. (Windows refuses to
        # unlink an open file: the file then stays, its lock released.)
        with contextlib.suppress(OSError):
            os.unlink(path)
        lock.release()
        for folder in made:
            with contextlib.suppress(OSError):
                os.rmdir(folder)  # only if still empty: the training may have written into it


def locks_run_dir(train: Callable) -> Callable:
    """`train(config, run_dir, ...)` run while holding `run_lock(run_dir)` (by process 0 of a multi-process
    run, the one that writes the directory)."""
    parameters = list(inspect.signature(train).parameters)
    at = parameters.index("run_dir")

    @functools.wraps(train)
    def locked(*args, **kwargs):
        run_dir = kwargs["run_dir"] if "run_dir" in kwargs else args[at]
        if not parallel.is_main_process():
            return train(*args, **kwargs)
        with run_lock(run_dir):
            return train(*args, **kwargs)

    return locked

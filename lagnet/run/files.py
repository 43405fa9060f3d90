"""Files of a run: atomic writes, equinox leaf serialisation of models and training states, JSON and YAML.

No pickle anywhere: a model is rebuilt from its config and only its array leaves are read from disk.
"""

import hashlib
import io
import json
import math
import os
import stat
import tempfile

import equinox as eqx
import jax
import yaml

from .._errors import RunFolderError

TMP_PREFIX = ".tmp-"


def _new_file_mode(path: str) -> int:
    """The mode `open(path, "w")` would give: an existing file's own, else 0o666 less the umask."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        # The umask can only be read by setting it; it is restored at once.
        umask = os.umask(0o022)
        os.umask(umask)
        return 0o666 & ~umask


def atomic_write(path: str, write) -> None:
    """Write through a temporary file in the same folder, fsync, then rename: a crash leaves the old file.

    The file gets the mode a plain `open` would give (mkstemp's own 0600 would hide a run from colleagues).
    """
    folder = os.path.dirname(os.path.abspath(path))
    mode = _new_file_mode(path)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=TMP_PREFIX, suffix=os.path.basename(path))
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def writable_folder(path: str) -> str:
    """The folder that writing `path` would write into (`path` itself if it exists, else its nearest existing
    parent), after checking that a file can be written there; creates nothing.

    Raises `ValueError` if a file stands where the folder would be, `OSError` if it cannot be written
    (read-only, no permission, no space).
    """
    folder = os.path.abspath(path)
    while not os.path.exists(folder):
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder):
        raise RunFolderError(f"{folder} is a file, not a folder")
    with tempfile.TemporaryFile(dir=folder) as f:
        f.write(b"0" * 4096)
        f.flush()
        os.fsync(f.fileno())
    return folder


def remove_orphans(folder: str) -> list[str]:
    """Delete the temporary files a killed `atomic_write` left in `folder`; returns their names.

    Call it only where no other process writes into `folder` at the same time (a run's own writer does).
    """
    try:
        names = [n for n in os.listdir(folder) if n.startswith(TMP_PREFIX)]
    except FileNotFoundError:
        return []
    for name in names:
        try:
            os.unlink(os.path.join(folder, name))
        except FileNotFoundError:
            pass
    return names


def write_bytes(path: str, content: bytes) -> None:
    atomic_write(path, lambda f: f.write(content))


def tree_bytes(tree) -> bytes:
    """The equinox leaf serialisation of `tree`, as the bytes a checkpoint file holds."""
    buf = io.BytesIO()
    eqx.tree_serialise_leaves(buf, tree)
    return buf.getvalue()


def sha256_file(path: str) -> str | None:
    """The SHA-256 of a file's bytes (hex), or None if there is no such file."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except FileNotFoundError:
        return None
    return digest.hexdigest()


def save_tree(path: str, tree) -> None:
    atomic_write(path, lambda f: eqx.tree_serialise_leaves(f, tree))


def load_tree(path: str, like):
    """Leaves from `path` into a skeleton `like` of the same structure, shapes and dtypes."""
    try:
        with open(path, "rb") as f:
            return eqx.tree_deserialise_leaves(f, like)
    except FileNotFoundError:
        raise FileNotFoundError(f"checkpoint not found: {path}") from None
    except (RuntimeError, ValueError, EOFError, OSError) as e:
        raise RunFolderError(
            f"{path}: cannot be loaded into this model ({type(e).__name__}: {e}); "
            "it is truncated or was written by a different model/config"
        ) from None


def _finite_or_null(obj):
    """`obj` with every non-finite float as None: strict JSON has no NaN or Infinity."""
    if isinstance(obj, dict):
        return {k: _finite_or_null(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite_or_null(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def json_ready(obj):
    """`obj` as `save_json` then reading it back gives it: lists for tuples, None for non-finite numbers."""
    return _finite_or_null(json.loads(json.dumps(obj, default=float)))


def save_json(path: str, obj) -> None:
    """Strict JSON (non-finite numbers written as null), atomically."""
    text = json.dumps(json_ready(obj), indent=2, allow_nan=False)
    atomic_write(path, lambda f: f.write(text.encode()))


def save_yaml(path: str, obj) -> None:
    atomic_write(path, lambda f: f.write(yaml.safe_dump(obj, sort_keys=False).encode()))


def tree_dtype(tree):
    leaves = [x for x in jax.tree_util.tree_leaves(tree) if eqx.is_inexact_array(x)]
    return leaves[0].dtype if leaves else None


# The physics as the config gave it, kept in checkpoints/ by a run that identified its physics: the evaluation
# shows it beside the identified physics.
GIVEN_PHYSICS = "given.eqx"

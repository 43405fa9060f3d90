"""Files of a run: atomic writes, equinox leaf serialisation of models and training states, JSON and YAML.

No pickle anywhere: a model is rebuilt from its config and only its array leaves are read from disk.
"""

import json
import math
import os
import tempfile

import equinox as eqx
import jax
import yaml


def atomic_write(path: str, write) -> None:
    """Write through a temporary file in the same folder, fsync, then rename: a crash leaves the old file."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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
        raise ValueError(
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


def save_json(path: str, obj) -> None:
    """Strict JSON (non-finite numbers written as null), atomically."""
    text = json.dumps(
        _finite_or_null(json.loads(json.dumps(obj, default=float))), indent=2, allow_nan=False
    )
    atomic_write(path, lambda f: f.write(text.encode()))


def save_yaml(path: str, obj) -> None:
    atomic_write(path, lambda f: f.write(yaml.safe_dump(obj, sort_keys=False).encode()))


def tree_dtype(tree):
    leaves = [x for x in jax.tree_util.tree_leaves(tree) if eqx.is_inexact_array(x)]
    return leaves[0].dtype if leaves else None

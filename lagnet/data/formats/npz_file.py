"""NPZ files: one array per column (1-D, or 2-D for several), metadata as JSON in the array `meta`."""

import json
import zipfile
import zlib
from typing import Any

import numpy as np

from ..._errors import DataError
from ..table import META_KEY, Table
from .base import AbstractFormat


class NPZFormat(AbstractFormat):
    """`.npz` archives of numeric arrays (never pickles)."""

    suffixes = (".npz",)

    def read(self, path: str) -> Table:
        return _read_npz(path)


def _read_npz(path: str) -> Table:
    """The arrays (but `meta`, JSON metadata) of an NPZ file.

    Checks that the file is a zip archive (numpy would otherwise try it as a pickle), that every array can be read
    and is 1-D or 2-D numbers, and that `meta` is a JSON object whose `units` map names to strings.
    """
    if not zipfile.is_zipfile(path):
        raise DataError(
            f"{path}: not an NPZ file (not a zip archive: truncated, or another format named .npz)"
        )
    columns = {}
    try:
        with np.load(path, allow_pickle=False) as f:
            for name in f.files:
                columns[name] = f[name]
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as e:
        # A damaged archive, or an object array (which only a pickle could read).
        raise DataError(f"{path}: an array cannot be read ({type(e).__name__}: {e})") from None
    meta = _npz_meta(path, columns.pop(META_KEY, None))
    for name, arr in columns.items():
        if arr.ndim not in (1, 2):
            raise DataError(
                f"{path}: array {name!r} has shape {arr.shape}; columns must be 1-D (rows,) "
                f"or 2-D (rows, width)"
            )
        if arr.dtype.kind not in "iuf":
            raise DataError(
                f"{path}: array {name!r} holds {arr.dtype} values, expected numbers (integers or floats)"
            )
    return Table(path, columns, meta, csv=False)


def _npz_meta(path: str, raw: np.ndarray | None) -> dict[str, Any]:
    """The metadata of an NPZ file: a JSON object in a 0-d string array, {} if there is none."""
    if raw is None:
        return {}
    try:
        meta = json.loads(raw.item()) if raw.ndim == 0 and raw.dtype.kind == "U" else None
    except json.JSONDecodeError as e:
        raise DataError(f"{path}: array {META_KEY!r} is not valid JSON ({e})") from None
    units = meta.get("units", {}) if isinstance(meta, dict) else None
    if not isinstance(units, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in units.items()
    ):
        raise DataError(
            f"{path}: array {META_KEY!r} must hold a JSON object whose 'units' map column names to "
            f"unit strings"
        )
    return meta


# Rows turned into numbers at a time: a large file's rows are never all held as strings (memory).

"""NPZ files: one array per column (1-D, or 2-D for several), metadata as JSON in the array `meta`; read by
`NPZFormat`, written byte for byte reproducibly by `write_npz` (fixed zip time stamps, sorted entries)."""

import io
import json
import os
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


_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest zip time stamp; np.savez would write the current time


def write_npz(
    path: str | os.PathLike, columns: dict[str, np.ndarray], meta: dict[str, Any]
) -> None:
    """Save `columns` (name → array) and `meta` (JSON-serialisable; key "meta") as a compressed NPZ.

    The same arrays and metadata give the same bytes, so a regenerated `data/` can be compared by hash.
    """
    if META_KEY in columns:
        raise DataError(f"column name {META_KEY!r} is reserved for the metadata")
    entries = dict(sorted(columns.items()))
    entries[META_KEY] = np.array(json.dumps(meta, sort_keys=True, indent=1))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name, arr in entries.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.asarray(arr, order="C"), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, buf.getvalue(), compresslevel=9)

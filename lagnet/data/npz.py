"""Writing NPZ files byte for byte reproducibly: fixed zip time stamps, sorted entries, metadata as JSON."""

import io
import json
import os
import zipfile
from typing import Any

import numpy as np

from .._errors import DataError
from .loader import META_KEY

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

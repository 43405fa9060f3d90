"""A data file read into columns: what every data format's reader returns."""

from typing import Any

import numpy as np
from jaxtyping import Shaped

from .._errors import DataError

# The NPZ array that holds a file's metadata (JSON), not a column.
META_KEY = "meta"


class Table:
    """Columns of one file, and how to name a row of it in an error.

    `aliases` are other names of columns: a CSV header `x [m]` is column `x` (unit m) and may be named either way.
    """

    def __init__(
        self,
        path: str,
        columns: dict[str, Shaped[np.ndarray, "_rows ..."]],
        meta: dict[str, Any],
        csv: bool,
        aliases: dict[str, str] | None = None,
    ) -> None:
        self.path, self.columns, self.meta, self.csv = path, columns, meta, csv
        self.aliases = aliases or {}

    def name(self, name: str) -> str:
        """The column's own name (a CSV header's name without its `[unit]`)."""
        return self.aliases.get(name, name)

    @property
    def units(self) -> dict[str, str]:
        """The units the file declares, by column."""
        return self.meta.get("units", {})

    def row(self, i: int) -> str:
        """Row `i`, as named in an error."""
        # CSV rows are also given as the file's line (1-based, the header is line 1), for an editor.
        return f"row {i} (line {i + 2})" if self.csv else f"row {i}"

    def get(self, name: str, role: str) -> Shaped[np.ndarray, "_rows ..."]:
        """The column `name` (1-D, or a 2-D NPZ array); a `ValueError` naming its `role` if there is none."""
        name = self.name(name)
        if name not in self.columns:
            raise DataError(
                f"{self.path}: column {name!r} ({role}) not found; "
                f"the file has columns {sorted(self.columns)}"
            )
        return self.columns[name]

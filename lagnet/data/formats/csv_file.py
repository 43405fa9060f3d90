"""CSV files (optionally gzipped): a header row of column names, optionally with units (`x [m]`), then numbers."""

import contextlib
import contextvars
import csv
import gzip
import os
import re
import zlib

import numpy as np
from tqdm.auto import tqdm

from ..table import Table
from ..units import parse_unit
from .base import AbstractFormat


class CSVFormat(AbstractFormat):
    """`.csv` and `.csv.gz` text files, read a block of rows at a time."""

    suffixes = (".csv", ".csv.gz")

    def read(self, path: str) -> Table:
        return _read_csv(path)


_BLOCK_ROWS = 65_536
# Whether reading a large file shows a progress bar (see `reading_progress`), and from what size (characters).
_SHOW_PROGRESS = contextvars.ContextVar("lagnet_reading_progress", default=False)
_PROGRESS_FROM = 20_000_000


@contextlib.contextmanager
def reading_progress(on: bool = True):
    """Within this context, reading a large CSV file shows a progress bar on stderr (`lagnet train` turns it
    on)."""
    token = _SHOW_PROGRESS.set(on)
    try:
        yield
    finally:
        _SHOW_PROGRESS.reset(token)


class _Lines:
    """The lines of a text, each with its newline, one at a time (as iterating the file gives them), and how
    far they have been read; without a second copy of the text."""

    def __init__(self, text: str):
        self.text, self.at = text, 0

    def __iter__(self):
        text, n = self.text, len(self.text)
        while self.at < n:
            end = text.find("\n", self.at)
            end = n if end < 0 else end + 1
            line, self.at = text[self.at : end], end
            yield line


def _numbers(path: str, header: list[str], rows: list[list[str]], first: int, out: dict) -> None:
    """The cells of `rows` (rows `first` … of the file) as floats, appended to `out`'s columns."""
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(header)
    for name, cells in zip(header, columns, strict=True):
        raw = [c.strip() or "nan" for c in cells]
        try:
            out[name].append(np.array(raw, dtype=float))
        except ValueError:
            for i, c in enumerate(raw):
                try:
                    float(c)
                except ValueError:
                    raise ValueError(
                        f"{path}: column {name!r} row {first + i} (line {first + i + 2}): "
                        f"cannot read {c!r} as a number"
                    ) from None


def _csv_header(path: str, reader) -> tuple[list[str], dict[str, str], dict[str, str]]:
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise ValueError(f"{path}: empty file (expected a header row of column names)") from None
    if not any(header):
        raise ValueError(f"{path}: line 1 is empty (expected a header row of column names)")
    if len(header) == 1:
        _check_delimiter(path, header[0])
    header, units, aliases = _header_units(path, header)
    if len(set(header)) != len(header):
        dup = sorted({h for h in header if header.count(h) > 1})
        raise ValueError(f"{path}: duplicate column name(s) {dup} in the header")
    return header, units, aliases


def _read_csv(path: str) -> Table:
    """The columns of a CSV file, as floats (an empty cell is NaN).

    Checks that there is a header of distinct names, that every row has as many fields, that the file is valid CSV
    and that every cell is a number. The rows are turned into numbers a block at a time.
    """
    text = _read_text(path)
    lines = _Lines(text)
    reader = csv.reader(lines)
    show = _SHOW_PROGRESS.get() and len(text) >= _PROGRESS_FROM
    bar = tqdm(
        total=len(text),
        desc=f"reading {os.path.basename(path)}",
        unit="B",
        unit_scale=True,
        disable=not show,
    )
    try:
        header, units, aliases = _csv_header(path, reader)
        out = {name: [] for name in header}
        rows, done = [], 0
        for i, row in enumerate(reader):
            if not row:
                continue
            if len(row) != len(header):
                raise ValueError(
                    f"{path}: row {done + len(rows)} (line {i + 2}) has {len(row)} fields, "
                    f"the header has {len(header)}"
                )
            rows.append(row)
            if len(rows) == _BLOCK_ROWS:
                _numbers(path, header, rows, done, out)
                done, rows = done + len(rows), []
                bar.update(lines.at - bar.n)
        _numbers(path, header, rows, done, out)
        bar.update(len(text) - bar.n)
    except csv.Error as e:
        # Malformed CSV (a stray carriage return, an unclosed quote): say where, not csv's traceback.
        raise ValueError(f"{path}: line {reader.line_num}: not valid CSV ({e})") from None
    finally:
        bar.close()
    columns = {name: np.concatenate(parts) for name, parts in out.items()}
    return Table(path, columns, {"units": units} if units else {}, csv=True, aliases=aliases)


def _read_text(path: str) -> str:
    """The text of a (gzipped) CSV file: UTF-8, an Excel byte-order mark dropped; errors name the file."""
    try:
        if path.endswith(".gz"):
            with gzip.open(path, "rt", encoding="utf-8-sig", newline="") as f:
                return f.read()
        with open(path, encoding="utf-8-sig", newline="") as f:
            return f.read()
    except UnicodeDecodeError as e:
        raise ValueError(
            f"{path}: not a text (UTF-8) file: byte 0x{e.object[e.start : e.start + 1].hex()} at "
            f"position {e.start} cannot be decoded (a binary file, or text saved in another encoding: "
            f"save it as UTF-8 CSV)"
        ) from None
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        raise ValueError(f"{path}: not a valid gzip file ({e})") from None


def _check_delimiter(path: str, header: str) -> None:
    """Checks that a one-column header is not a whole header separated by something other than commas."""
    for delimiter, name in ((";", "semicolons"), ("\t", "tabs")):
        if delimiter in header:
            raise ValueError(
                f"{path}: the header {header!r} is one column: the file is separated by {name}, lagnet "
                f"reads comma-separated files (with '.' as the decimal point)"
            )


# `x [m]`: a column name, white space, a unit in brackets (not `q[1]`, an index).
_HEADER_UNIT = re.compile(r"^(.*\S)\s+\[([^\[\]]+)\]$")


def _header_units(path: str, header: list[str]) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """Column names without their units, the units (`x [m]` → x: m) and the aliases (`x [m]` → x).

    Checks that each declared unit is known.
    """
    names, units, aliases = [], {}, {}
    for h in header:
        m = _HEADER_UNIT.match(h)
        if m is None:
            names.append(h)
            continue
        name, unit = m.group(1), m.group(2).strip()
        parse_unit(unit, f"{path}: header {h!r}")
        names.append(name)
        units[name] = unit
        aliases[h] = name
    return names, units, aliases

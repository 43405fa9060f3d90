"""CSV files (optionally gzipped): a header row of column names, optionally with units (`x [m]`), then numbers."""

import codecs
import contextlib
import contextvars
import csv
import gzip
import os
import re
import zlib

import numpy as np
from tqdm.auto import tqdm

from ..._errors import DataError
from ..table import Table
from ..units import parse_unit
from .base import AbstractFormat


class CSVFormat(AbstractFormat):
    """`.csv` and `.csv.gz` text files, read a block of rows at a time."""

    suffixes = (".csv", ".csv.gz")

    def read(self, path: str, dtype=np.float64, exact=()) -> Table:
        """The file's columns in `dtype`, but those named in `exact` (time stamps) in float64."""
        return _read_csv(path, dtype, exact)


_BLOCK_ROWS = 4096
# Bytes of the file decoded at a time.
_CHUNK_BYTES = 1 << 18
# Whether reading a large file shows a progress bar (see `reading_progress`), and from what size (bytes).
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


class _Text:
    """The lines of a (gzipped) UTF-8 file, each with its "\n", decoded a chunk at a time: the file is never
    held whole. `at` is how many bytes of the file (compressed, for .gz) have been read, for a progress bar;
    `chars` how many characters have been handed out."""

    def __init__(self, path: str):
        self.path, self.at, self.chars = path, 0, 0
        self.size = os.path.getsize(path)

    def _chunks(self):
        decoder = codecs.getincrementaldecoder("utf-8-sig")()
        with open(self.path, "rb") as raw:
            stream = gzip.GzipFile(fileobj=raw) if self.path.endswith(".gz") else raw
            done = 0
            while True:
                data = stream.read(_CHUNK_BYTES)
                self.at = raw.tell()
                kept = len(decoder.getstate()[0])
                try:
                    yield decoder.decode(data, final=not data)
                except UnicodeDecodeError as e:
                    raise _DecodeError(
                        e.object[e.start : e.start + 1], done - kept + e.start
                    ) from None
                if not data:
                    return
                done += len(data)

    def __iter__(self):
        rest = ""
        for text in self._chunks():
            parts = (rest + text).split("\n")
            rest = parts.pop()
            for line in parts:
                self.chars += len(line) + 1
                yield line + "\n"
        if rest:
            yield rest


class _DecodeError(Exception):
    """A byte that is not UTF-8, at `position` bytes into the (decompressed) file."""

    def __init__(self, byte: bytes, position: int):
        super().__init__(f"byte {byte!r} at {position}")
        self.byte, self.position = byte, position


class _Columns:
    """Float columns filled a block of rows at a time, preallocated for the rows the file's size suggests and
    grown by half when they are full (in place where the allocator can: `ndarray.resize`): each value is held
    once, in its column's dtype, and a block's float64 parse is the only copy."""

    def __init__(self, header: list[str], dtype, exact, rows: int):
        self.n, self.capacity = 0, max(rows, 1)
        self.arrays = {
            name: np.empty(self.capacity, np.float64 if name in exact else dtype) for name in header
        }

    def reserve(self, rows: int) -> None:
        if self.n + rows <= self.capacity:
            return
        self.capacity = max(self.n + rows, self.capacity + self.capacity // 2)
        for arr in self.arrays.values():
            arr.resize(self.capacity, refcheck=False)

    def finish(self) -> dict[str, np.ndarray]:
        for arr in self.arrays.values():
            arr.resize(self.n, refcheck=False)
        return self.arrays


def _numbers(path: str, header: list[str], rows: list[list[str]], out: _Columns) -> None:
    """The cells of `rows` (the rows after `out.n` of the file) as floats, appended to `out`'s columns."""
    if not rows:
        return
    first = out.n
    out.reserve(len(rows))
    for name, cells in zip(header, zip(*rows, strict=True), strict=True):
        raw = [c.strip() or "nan" for c in cells]
        try:
            block = np.array(raw, dtype=float)
        except ValueError:
            for i, c in enumerate(raw):
                try:
                    float(c)
                except ValueError:
                    raise DataError(
                        f"{path}: column {name!r} row {first + i} (line {first + i + 2}): "
                        f"cannot read {c!r} as a number"
                    ) from None
        column = out.arrays[name]
        _check_fits(path, name, block, column.dtype, first)
        column[first : first + len(rows)] = block
    out.n += len(rows)


def _check_fits(path: str, name: str, block: np.ndarray, dtype: np.dtype, first: int) -> None:
    """Checks that the finite values of a block (rows `first` …) stay finite in `dtype`: a cell past float32's
    3.4e38 would silently become inf."""
    if dtype == np.float64:
        return
    big = np.isfinite(block) & (np.abs(block) > np.finfo(dtype).max)
    if big.any():
        i = int(np.argmax(big))
        raise DataError(
            f"{path}: column {name!r} row {first + i} (line {first + i + 2}) is {block[i]:g}: too large "
            f"for {dtype.name} training (|x| <= {np.finfo(dtype).max:.2g}); a corrupt cell?"
        )


def _csv_header(path: str, reader) -> tuple[list[str], dict[str, str], dict[str, str]]:
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise DataError(f"{path}: empty file (expected a header row of column names)") from None
    if not any(header):
        raise DataError(f"{path}: line 1 is empty (expected a header row of column names)")
    if len(header) == 1:
        _check_delimiter(path, header[0])
    header, units, aliases = _header_units(path, header)
    if len(set(header)) != len(header):
        dup = sorted({h for h in header if header.count(h) > 1})
        raise DataError(f"{path}: duplicate column name(s) {dup} in the header")
    return header, units, aliases


def _read_csv(path: str, dtype=np.float64, exact=()) -> Table:
    """The columns of a CSV file, as floats in `dtype` (those named in `exact`, or whose `name [unit]` header
    is, in float64); an empty cell is NaN. Each cell is parsed as a float64 and then cast, so a column is the same
    as reading the whole file in float64 and casting it.

    Checks that there is a header of distinct names, that every row has as many fields, that the file is valid CSV
    and that every cell is a number. The file is decoded a chunk and turned into numbers a block of rows at a
    time (`_Text`, `_Columns`): memory while reading is the columns plus one block.
    """
    text = _Text(path)
    reader = csv.reader(text)
    bar = tqdm(
        total=text.size,
        desc=f"reading {os.path.basename(path)}",
        unit="B",
        unit_scale=True,
        disable=not (_SHOW_PROGRESS.get() and text.size >= _PROGRESS_FROM),
    )
    try:
        header, units, aliases = _csv_header(path, reader)
        exact = set(exact) | {aliases.get(h, h) for h in exact}
        out, rows = None, []
        for i, row in enumerate(reader):
            if not row:
                continue
            if len(row) != len(header):
                raise DataError(
                    f"{path}: row {(out.n if out else 0) + len(rows)} (line {i + 2}) has {len(row)} "
                    f"fields, the header has {len(header)}"
                )
            rows.append(row)
            if len(rows) == _BLOCK_ROWS:
                out = out or _Columns(header, dtype, exact, _rows_in(text, len(rows)))
                _numbers(path, header, rows, out)
                rows = []
                bar.update(text.at - bar.n)
        out = out or _Columns(header, dtype, exact, len(rows))
        _numbers(path, header, rows, out)
        bar.update(text.size - bar.n)
    except csv.Error as e:
        # Malformed CSV (a stray carriage return, an unclosed quote): say where, not csv's traceback.
        raise DataError(f"{path}: line {reader.line_num}: not valid CSV ({e})") from None
    except _DecodeError as e:
        raise DataError(
            f"{path}: not a text (UTF-8) file: byte 0x{e.byte.hex()} at position {e.position} cannot be "
            f"decoded (a binary file, or text saved in another encoding: save it as UTF-8 CSV)"
        ) from None
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        raise DataError(f"{path}: not a valid gzip file ({e})") from None
    finally:
        bar.close()
    return Table(path, out.finish(), {"units": units} if units else {}, csv=True, aliases=aliases)


def _rows_in(text: _Text, rows: int) -> int:
    """The rows a file probably holds, from the characters its first `rows` rows took (x 1.02); for a gzipped
    file (whose size says little) twice those rows, grown as needed."""
    if text.path.endswith(".gz") or text.chars <= 0:
        return 2 * rows
    return int(rows * text.size / text.chars * 1.02) + 1


def _check_delimiter(path: str, header: str) -> None:
    """Checks that a one-column header is not a whole header separated by something other than commas."""
    for delimiter, name in ((";", "semicolons"), ("\t", "tabs")):
        if delimiter in header:
            raise DataError(
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

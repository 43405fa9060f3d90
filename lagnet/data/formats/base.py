"""The data-format interface: one reader per file format, found by the file's name."""

import abc

import equinox as eqx

from ..._errors import DataError
from ..table import Table


class AbstractFormat(eqx.Module):
    """A file format lagnet reads data from: the endings of the file names it reads, and `read`, which returns
    the file's columns as a `Table` (or raises a `ValueError` that names the file, the column and the row)."""

    suffixes: eqx.AbstractClassVar[tuple[str, ...]]

    @abc.abstractmethod
    def read(self, path: str) -> Table:
        """The columns and metadata of the file at `path`."""


_FORMATS: list[AbstractFormat] = []


def register_format(fmt: AbstractFormat) -> AbstractFormat:
    """Read files whose names end in `fmt.suffixes` with `fmt` (a later registration takes precedence)."""
    if not isinstance(fmt, AbstractFormat):
        raise TypeError(f"expected an AbstractFormat, got {type(fmt).__name__}")
    _FORMATS.insert(0, fmt)
    return fmt


def formats() -> tuple[AbstractFormat, ...]:
    """The registered formats, the one tried first first."""
    return tuple(_FORMATS)


def format_for(path: str) -> AbstractFormat:
    """The format that reads `path`, by the end of its name; a `ValueError` listing the known endings if none."""
    for fmt in _FORMATS:
        if path.endswith(fmt.suffixes):
            return fmt
    known = [s for fmt in reversed(_FORMATS) for s in fmt.suffixes]
    listed = ", ".join(known[:-1]) + f" or {known[-1]}" if len(known) > 1 else "".join(known)
    raise DataError(f"{path}: unknown file type; expected {listed}")

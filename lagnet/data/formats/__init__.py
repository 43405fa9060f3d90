"""Data file formats, one reader per format (`AbstractFormat`), found by the file's name: CSV and NPZ are
registered; `register_format` adds one."""

from .base import AbstractFormat as AbstractFormat
from .base import format_for as format_for
from .base import formats as formats
from .base import register_format as register_format
from .csv_file import CSVFormat as CSVFormat
from .csv_file import reading_progress as reading_progress
from .npz_file import NPZFormat as NPZFormat

register_format(CSVFormat())
register_format(NPZFormat())

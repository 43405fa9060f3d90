"""The root of lagnet's own exceptions, so that a caller can catch them in one clause:

    try:
        lagnet.load(run)
    except lagnet.LagnetError as e:
        ...

Each also derives from the built-in it has always been (`ValueError`, `RuntimeError`, `TimeoutError`), so code that
catches those keeps working.
"""


class LagnetError(Exception):
    """An error lagnet raises on purpose, with a message that names what to change."""


class DataError(LagnetError, ValueError):
    """A data file or recording lagnet cannot use: the message names the file, and the column and row where it
    can."""


class RunFolderError(LagnetError, ValueError):
    """A run folder (or a file in it) lagnet cannot load, resume or write: the message names the file."""


class FileContentError(LagnetError, ValueError):
    """A file lagnet reads (a run's JSON files, an export's metadata) that is too large, too deep or not what it
    should be: the message names the file."""

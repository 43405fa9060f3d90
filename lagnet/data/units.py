"""Units that data columns may declare, their kind and their factor to SI."""

import math

from .._errors import DataError

# unit -> (kind, factor to SI)
UNITS: dict[str, tuple[str, float]] = {
    "s": ("time", 1.0),
    "ms": ("time", 1e-3),
    "us": ("time", 1e-6),
    "m": ("length", 1.0),
    "cm": ("length", 1e-2),
    "mm": ("length", 1e-3),
    "rad": ("angle", 1.0),
    "deg": ("angle", math.pi / 180),
    "rev": ("angle", 2 * math.pi),
    "m/s": ("length/time", 1.0),
    "cm/s": ("length/time", 1e-2),
    "mm/s": ("length/time", 1e-3),
    "rad/s": ("angle/time", 1.0),
    "deg/s": ("angle/time", math.pi / 180),
    "rpm": ("angle/time", 2 * math.pi / 60),
    "N": ("force", 1.0),
    "N*m": ("torque", 1.0),
    "N·m": ("torque", 1.0),
    "Nm": ("torque", 1.0),
    "V": ("voltage", 1.0),
    "1": ("dimensionless", 1.0),
}


def parse_unit(unit: str, where: str) -> tuple[str, float]:
    """(kind, factor to SI) of `unit`, or a `ValueError` naming `where` and the known units."""
    try:
        return UNITS[unit]
    except KeyError:
        raise DataError(
            f"{where}: unknown unit {unit!r}; known units: {', '.join(UNITS)}"
        ) from None

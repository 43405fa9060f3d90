"""Types of command-line options, checked when the line is parsed (before any work), each error naming the
option as argparse does (`argument --duration: ...`)."""

import argparse
import math


def _number(text: str, kind, what: str):
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0 (a duration, a radius)."""
    value = _number(text, float, "a number > 0")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def seed(text: str) -> int:
    """A random seed: a whole number from 0 to 2**32 - 1 (what numpy's generators take)."""
    value = _number(text, int, "a whole number from 0 to 4294967295")
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(
            f"expected a whole number from 0 to 4294967295, got {text!r}"
        )
    return value

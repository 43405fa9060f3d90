"""Angles as angles: unwrapping recorded angles, and differences modulo 2π."""

import jax.numpy as jnp
import numpy as np


def unwrap(theta: np.ndarray) -> np.ndarray:
    """A continuous angle from one wrapped to [−π, π), [0, 2π) or any 2π window: jumps > π become ±2π.

    Valid while the true change between samples stays below π (|θ̇| dt < π); the first sample keeps its value.
    """
    return np.unwrap(np.asarray(theta, dtype=float))


# Rows unwrapped at a time by `unwrap_into`.
_UNWRAP_ROWS = 1 << 16


def unwrap_into(theta: np.ndarray, out: np.ndarray) -> np.ndarray:
    """`unwrap(theta)` written into `out` (of any float dtype; `theta` itself will do), a block of rows at a time
    in float64: the same bits as `np.unwrap` (each block's corrections are summed on from the last one's), with
    float64 temporaries of one block instead of several of the whole column."""
    n = theta.shape[0]
    carry, last = 0.0, None
    for start in range(0, n, _UNWRAP_ROWS):
        p = np.asarray(theta[start : start + _UNWRAP_ROWS], dtype=float)
        before = p if last is None else np.concatenate([[last], p])
        last = p[-1]
        dd = np.diff(before)
        ddmod = np.mod(dd + np.pi, 2 * np.pi) - np.pi
        np.copyto(ddmod, np.pi, where=(ddmod == -np.pi) & (dd > 0))
        correct = ddmod - dd
        np.copyto(correct, 0, where=abs(dd) < np.pi)
        total = np.cumsum(np.concatenate([[carry], correct]))
        carry = total[-1]
        # The first block's total starts 0, c_1, ...; a later one's with the carry of the rows before it.
        out[start : start + p.shape[0]] = p + total[0 if start == 0 else 1 :]
    return out


def wrap(theta, low: float = -np.pi):
    """θ reduced to [low, low + 2π): ((θ − low) mod 2π) + low, on numpy or JAX arrays (traced ones too).

    lagnet's one angle wrap: controllers, sensors, metrics and plots all wrap with it, so that an angle near ±π
    falls on the same side everywhere.
    """
    xp = jnp if not isinstance(theta, np.ndarray | float | int) else np
    return xp.mod(theta - low, 2 * np.pi) + low


def angular_difference(a, b):
    """a − b as an angle in [−π, π): how far apart two angles are, whatever their wrapping."""
    return wrap(a - b)

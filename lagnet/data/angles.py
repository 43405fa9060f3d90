"""Angles as angles: unwrapping recorded angles, and differences modulo 2π."""

import jax.numpy as jnp
import numpy as np


def unwrap(theta: np.ndarray) -> np.ndarray:
    """A continuous angle from one wrapped to [−π, π), [0, 2π) or any 2π window: jumps > π become ±2π.

    Valid while the true change between samples stays below π (|θ̇| dt < π); the first sample keeps its value.
    """
    return np.unwrap(np.asarray(theta, dtype=float))


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

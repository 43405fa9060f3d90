"""Validation of physical parameters, shared by the closed-form systems."""

import jax
import jax.numpy as jnp
import numpy as np


def as_param(value) -> jax.Array:
    """A physical parameter as a (weakly typed) JAX array, so `eqx.filter_grad` can differentiate it."""
    if isinstance(value, jax.Array):
        return value
    if isinstance(value, float | int):
        # Weakly typed: the parameter follows the dtype of the state it meets (float32 or float64).
        return jnp.asarray(float(value))
    return jnp.asarray(np.asarray(value, dtype=float))


def concrete(value):
    # Under jit/vmap/grad the parameter is a tracer: its value cannot be checked, only its shape.
    if isinstance(value, jax.core.Tracer):
        return None
    return np.asarray(value)


def check_positive(system: str, name: str, value, *, allow_zero: bool = False, shape=()) -> None:
    """Raise `ValueError` naming `system.name` if `value` is not a positive (or non-negative) array of `shape`."""
    arr_shape = jnp.shape(value)
    if shape is not None and arr_shape != tuple(shape):
        raise ValueError(f"{system}.{name} must have shape {tuple(shape)}, got {arr_shape}")
    v = concrete(value)
    if v is None:
        return
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{system}.{name} must be finite, got {v}")
    bad = v < 0 if allow_zero else v <= 0
    if np.any(bad):
        what = "non-negative" if allow_zero else "positive"
        raise ValueError(f"{system}.{name} must be {what}, got {v}")

"""Indexing with indices fixed when the program is traced (tuples of ints), written as slices and concatenations.

`x[np.array(idx)]` and `x.at[np.array(idx)].set(v)` become a gather and a scatter, and their transposes in a
backward pass a scatter-add and a gather: on XLA's CPU backend each is a kernel of its own, compiled and run
apart from the element-wise work around it. Slices, zeros and concatenations fuse with that work.
"""

from collections.abc import Sequence

import jax.numpy as jnp

from ._types import Array


def _normalised(idx: Sequence[int], n: int) -> tuple[int, ...]:
    out = []
    for i in idx:
        j = int(i) + n if int(i) < 0 else int(i)
        if not 0 <= j < n:
            raise IndexError(f"index {i} out of range for length {n}")
        out.append(j)
    return tuple(out)


def _runs(idx: tuple[int, ...]) -> list[tuple[int, int, int]]:
    """Maximal runs of consecutive positions k whose indices are consecutive: (k0, i0, length)."""
    runs = []
    for k, i in enumerate(idx):
        if runs and i == runs[-1][1] + runs[-1][2]:
            k0, i0, m = runs[-1]
            runs[-1] = (k0, i0, m + 1)
        else:
            runs.append((k, i, 1))
    return runs


def take(x: Array, idx: Sequence[int]) -> Array:
    """x[idx] along the first axis: one slice per run of consecutive indices."""
    idx = _normalised(idx, x.shape[0])
    if not idx:
        return x[:0]
    pieces = [x[i0 : i0 + m] for _, i0, m in _runs(idx)]
    return pieces[0] if len(pieces) == 1 else jnp.concatenate(pieces)


def place(values: Array, idx: Sequence[int], n: int) -> Array:
    """The length-n array (along the first axis) with values[k] at idx[k] and zeros elsewhere; indices unique.

    The same as `jnp.zeros((n, ...)).at[idx].set(values)` in the dtype of `values`.
    """
    idx = _normalised(idx, n)
    if len(set(idx)) != len(idx):
        raise ValueError(f"place: repeated indices {idx}")
    if len(idx) != values.shape[0]:
        raise ValueError(f"place: {values.shape[0]} values for {len(idx)} indices")
    if idx == tuple(range(n)):
        return values
    # The values in the order of their indices, then one slice of them per run of consecutive indices.
    order = sorted(range(len(idx)), key=idx.__getitem__)
    ordered = take(values, order)
    pieces, reached = [], 0
    for k0, i0, m in _runs(tuple(idx[k] for k in order)):
        if i0 > reached:
            pieces.append(jnp.zeros((i0 - reached, *values.shape[1:]), values.dtype))
        pieces.append(ordered[k0 : k0 + m])
        reached = i0 + m
    if reached < n:
        pieces.append(jnp.zeros((n - reached, *values.shape[1:]), values.dtype))
    return jnp.concatenate(pieces)

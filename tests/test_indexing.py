"""lagnet._indexing: static take / place equal NumPy's fancy indexing, with no gather or scatter in the program."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lagnet._indexing import place, take

N = 5
# Every non-empty subset of range(N) in every order would be 325 cases; these cover the shapes that matter:
# contiguous, gapped, unsorted, negative, single, all, empty.
CASES = [(), (3,), (0, 1, 2, 3, 4), (1, 2), (0, 2, 4), (4, 0), (3, 1, 2), (-1, 0), (2, -2, 0)] + [
    tuple(p) for p in itertools.permutations((0, 1, 3))
]


@pytest.mark.parametrize("idx", CASES)
def test_take_and_place_equal_fancy_indexing(idx):
    rng = np.random.default_rng(len(idx))
    x = rng.normal(size=(N, 3))
    np.testing.assert_array_equal(take(jnp.asarray(x), idx), x[list(idx)])
    values = rng.normal(size=(len(idx), 3))
    expected = np.zeros((N, 3))
    expected[list(idx)] = values
    got = place(jnp.asarray(values), idx, N)
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == jnp.asarray(values).dtype


def test_programs_have_no_gather_or_scatter_and_the_same_gradients():
    idx = (3, 0, 1)

    def static(x):
        return jnp.sum(jnp.sin(place(take(x, idx) * 2.0, (4, 1, 2), N)) ** 2)

    def fancy(x):
        out = jnp.zeros(N).at[jnp.asarray((4, 1, 2))].set(x[jnp.asarray(idx)] * 2.0)
        return jnp.sum(jnp.sin(out) ** 2)

    x = jnp.linspace(-1.0, 1.0, N)
    text = str(jax.make_jaxpr(jax.value_and_grad(static))(x))
    assert "gather" not in text and "scatter" not in text
    assert "gather" in str(jax.make_jaxpr(fancy)(x))  # the contrast the module exists for
    np.testing.assert_array_equal(static(x), fancy(x))
    np.testing.assert_array_equal(jax.grad(static)(x), jax.grad(fancy)(x))


def test_bad_indices_are_named():
    x = jnp.zeros(N)
    with pytest.raises(IndexError, match="index 5 out of range for length 5"):
        take(x, (5,))
    with pytest.raises(ValueError, match="repeated indices"):
        place(jnp.zeros(2), (1, 1), N)
    with pytest.raises(ValueError, match="3 values for 2 indices"):
        place(jnp.zeros(3), (0, 1), N)

"""The shapes in lagnet's annotations are checked at run time in the tests.

pyproject.toml's pytest `addopts` turn on jaxtyping's import hook (`--jaxtyping-packages=lagnet,beartype.beartype`):
every annotated function and `eqx.Module` in lagnet checks its arguments, fields and return values against their
jaxtyping shapes, with one set of axis sizes per call. These tests fail if the hook is off: each passes a shape
that lagnet's own code lets through silently.
"""

import jax.numpy as jnp
import pytest
from jaxtyping import TypeCheckError

from lagnet import CartPole, RolloutSolution


def test_a_state_of_the_wrong_length_is_caught():
    cp = CartPole()
    # The cart-pole's M(q) reads only q[1], so a q of shape (3,) returns a 2 × 2 matrix unnoticed; the annotation
    # `(q: Float[Array, " n"]) -> Float[Array, "n n"]` binds n = 3 from q and rejects the result.
    with pytest.raises(TypeCheckError, match="mass_matrix"):
        cp.mass_matrix(jnp.zeros(3))
    assert cp.mass_matrix(jnp.zeros(2)).shape == (2, 2)


def test_module_fields_share_their_axes():
    qs, converged = jnp.zeros((4, 2)), jnp.ones(3, bool)
    RolloutSolution(qs, qs, converged)
    # qs and qds share `states n`: a velocity trajectory one row short is caught when the solution is built.
    with pytest.raises(TypeCheckError):
        RolloutSolution(qs, qs[:-1], converged)

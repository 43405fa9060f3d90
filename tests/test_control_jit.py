"""`jax.jit` on a `Dynamics`' bound methods: f, step and rollout compile and give the unjitted values."""

import jax
import jax.numpy as jnp
import numpy as np
from helpers import random_cartpole_pinode

from lagnet.control import Dynamics
from lagnet.integrators import RK4


def trained_like_dynamics():
    """A PINODE with a (random) network: arrays in the model, which a hash of the fields cannot take."""
    return Dynamics(random_cartpole_pinode(), RK4(), 0.02)


X = jnp.array([0.1, 2.9, -0.2, 0.7])
U = jnp.array([0.5])


def test_jit_of_bound_methods_equals_the_unjitted_values():
    dyn = trained_like_dynamics()
    np.testing.assert_allclose(jax.jit(dyn.f)(X, U), dyn.f(X, U), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(jax.jit(dyn.step)(X, U), dyn.step(X, U), rtol=1e-13, atol=1e-13)
    us = jnp.linspace(-1.0, 1.0, 7)[:, None]
    xs = jax.jit(dyn.rollout)(X, us)
    assert xs.shape == (8, 4)
    np.testing.assert_allclose(xs, dyn.rollout(X, us), rtol=1e-12, atol=1e-12)
    # The rollout's last state is seven steps, each the step's value.
    x = X
    for u in us:
        x = dyn.step(x, u)
    np.testing.assert_allclose(xs[-1], x, rtol=1e-12, atol=1e-12)


def test_jit_composes_with_vmap_and_grad():
    dyn = trained_like_dynamics()
    xs = X + 0.1 * jnp.arange(3.0)[:, None]
    us = jnp.ones((3, 1))
    np.testing.assert_allclose(
        jax.jit(jax.vmap(dyn.step))(xs, us),
        jnp.stack([dyn.step(x, u) for x, u in zip(xs, us, strict=True)]),
    )
    g = jax.jit(jax.grad(lambda u: dyn.step(X, u)[2]))(U)
    eps = 1e-6
    fd = (dyn.step(X, U + eps)[2] - dyn.step(X, U - eps)[2]) / (2 * eps)
    np.testing.assert_allclose(g[0], fd, rtol=1e-6)


def test_dynamics_hash_by_identity():
    dyn = trained_like_dynamics()
    other = trained_like_dynamics()
    assert dyn == dyn and hash(dyn) == hash(dyn)
    assert dyn != other
    # Two accesses give two bound-method objects, equal and with one hash (what jit keys functions by).
    f1, f2 = dyn.f, dyn.f
    assert hash(f1) == hash(f2) and f1 == f2

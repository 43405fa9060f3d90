"""`held_rollout` (a batch of windows stepped for their first h steps, then held, with a hand-written reverse pass)
against `FirstSteps` under JAX's own autodiff, and the residuals it keeps out of its `cond`s."""

import equinox as eqx
import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
import pytest

from lagnet.integrators import RK4, Leapfrog, Newmark
from lagnet.models import PINODE, StateFeatures, make_mlp
from lagnet.systems import CartPole, JointFriction
from lagnet.train.first_steps import held_rollout
from lagnet.train.loss import window_rollout

K, B = 7, 3  # steps per padded window, windows per batch


def model():
    """A cart-pole PINODE with a network (width 5: weights of shapes no other array has) and learnable friction."""
    cp = CartPole()
    features = StateFeatures(cp.angles, 1)
    net = make_mlp(
        features.size, 2, width=5, depth=1, activation="tanh", final_activation="identity",
        zero_output=False, key=jax.random.key(1),
    )  # fmt: skip
    friction = JointFriction(2, viscous={0: 0.2, 1: 0.05})
    return PINODE(cp, network=net, features=features, friction=friction, output_scale=0.3)


def batch():
    rng = np.random.default_rng(0)
    q0 = jnp.asarray(rng.normal(size=(B, 2)) * [0.5, 1.0])
    qd0 = jnp.asarray(rng.normal(size=(B, 2)))
    us = jnp.asarray(rng.normal(size=(B, K, 1)))
    dts = jnp.asarray(0.02 + 0.005 * rng.random(size=(B, K)))  # uneven steps, as measured data has
    return q0, qd0, us, dts


def loss_of(rollout_fn, static, integrator):
    """A scalar that reads every state of every window (weights differ by step and coordinate)."""
    w = jnp.linspace(0.5, 1.5, K)[:, None] * jnp.array([1.0, -2.0])

    def loss(params, q0, qd0, us, dts, steps):
        qs, qds = rollout_fn(eqx.combine(params, static), integrator, q0, qd0, us, dts, steps)
        return jnp.sum(jnp.sin(qs) * w) + jnp.sum(qds**2 * w)

    return loss


def by_first_steps(model, integrator, q0, qd0, us, dts, steps):
    one = lambda *w: window_rollout(model, integrator, *w, steps=steps)  # noqa: E731
    return jax.vmap(one)(q0, qd0, us, dts)


INTEGRATORS = {
    "rk4_compact": RK4().compact_form(),  # rematerialises inside its step: residuals are its stage states
    "leapfrog": Leapfrog(),  # checkpointed whole (every residual an input), a carried state
    "newmark": Newmark(),  # implicit: a Newton solve differentiated implicitly
}


@pytest.mark.parametrize(
    "name, h", [("rk4_compact", 3), ("rk4_compact", K), ("leapfrog", 3), ("newmark", 3)]
)
def test_values_and_gradients_equal_first_steps(name, h):
    integrator = INTEGRATORS[name]
    m = model()
    params, static = eqx.partition(m, eqx.is_inexact_array)
    args = (*batch(), jnp.asarray(h, jnp.int32))
    grad_args = (0, 1, 2, 3, 4)  # the parameters, q0, q̇0, the inputs and the step sizes
    ours = jax.jit(jax.value_and_grad(loss_of(held_rollout, static, integrator), grad_args))
    ref = jax.jit(jax.value_and_grad(loss_of(by_first_steps, static, integrator), grad_args))
    (v, g), (v_ref, g_ref) = ours(params, *args), ref(params, *args)
    np.testing.assert_allclose(v, v_ref, rtol=1e-13)
    for a, b in zip(jax.tree.leaves(g), jax.tree.leaves(g_ref), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)
    # The held steps: states constant after step h, and no gradient through inputs and steps they do not take.
    if h < K:
        qs, _ = held_rollout(m, integrator, *batch(), jnp.asarray(h, jnp.int32))
        np.testing.assert_array_equal(
            qs[:, h:], jnp.broadcast_to(qs[:, h - 1 : h], qs[:, h:].shape)
        )
        assert not np.any(g[3][:, h:]) and not np.any(g[4][:, h:])
        assert np.all(np.any(g[4][:, :h] != 0, axis=0))


def test_gradient_matches_finite_differences():
    """d loss / d (the friction's raw viscous coefficient), against a central difference (float64)."""
    integrator = RK4().compact_form()
    m = model()
    params, static = eqx.partition(m, eqx.is_inexact_array)
    args = (*batch(), jnp.asarray(5, jnp.int32))
    loss = jax.jit(loss_of(held_rollout, static, integrator))
    g = jax.jit(jax.grad(loss_of(held_rollout, static, integrator)))(params, *args)
    leaf = lambda p: p.friction.coefficients["viscous"].raw  # noqa: E731
    eps = 1e-6
    direction = jnp.zeros_like(leaf(params)).at[0].set(1.0)

    def shifted(s):
        return eqx.tree_at(leaf, params, leaf(params) + s * eps * direction)

    fd = (loss(shifted(1.0), *args) - loss(shifted(-1.0), *args)) / (2 * eps)
    np.testing.assert_allclose(leaf(g)[0], fd, rtol=1e-7)


def _cond_output_shapes(jaxpr):
    """The shapes of every `cond`'s outputs in a jaxpr and the jaxprs inside it."""
    shapes = [v.aval.shape for e in jaxpr.eqns if e.primitive.name == "cond" for v in e.outvars]
    for sub in jax.extend.core.subjaxprs(jaxpr):
        shapes += _cond_output_shapes(sub)
    return shapes


def test_no_step_copies_the_parameters_out_of_its_cond():
    """The point of `held_rollout`: differentiated by JAX, `FirstSteps`' cond outputs the network's weights as
    residuals at every step (copied by the stepping branch, zero-filled by the holding one); here none does."""
    integrator = RK4().compact_form()
    m = model()
    params, static = eqx.partition(m, eqx.is_inexact_array)
    args = (*batch(), jnp.asarray(3, jnp.int32))
    weights = {x.shape for x in jax.tree.leaves(eqx.filter(m.network, eqx.is_array)) if x.ndim == 2}
    assert weights == {(5, m.features.size), (2, 5)}

    def shapes(rollout_fn):
        # The forward pass of reverse mode alone: the program that computes the residuals.
        loss = loss_of(rollout_fn, static, integrator)
        forward = lambda p: jax.tree.leaves(jax.vjp(lambda p: loss(p, *args), p)[1])  # noqa: E731
        return set(_cond_output_shapes(jax.make_jaxpr(forward)(params).jaxpr))

    assert weights <= shapes(by_first_steps)  # what the test would catch
    assert not weights & shapes(held_rollout)

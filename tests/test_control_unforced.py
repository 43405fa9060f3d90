"""Control dynamics of an unforced rig (a model without inputs): no input array needed."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lagnet.control import Dynamics
from lagnet.integrators import RK4
from lagnet.systems import Lagrangian, Pendulum


def free_pendulum() -> Lagrangian:
    """A pendulum (θ = 0 hanging down) with no inputs: B(q) has shape (1, 0)."""
    return Lagrangian(
        lambda q, qd: 0.5 * qd @ qd,
        lambda q: -jnp.cos(q[0]),
        1,
        input_matrix=lambda q: jnp.zeros((1, 0), jnp.result_type(q)),
        coordinate_names=("theta",),
        angles=(True,),
    )


@pytest.fixture(scope="module")
def dyn():
    d = Dynamics(free_pendulum(), RK4(), 0.01)
    assert d.n_inputs == 0
    return d


X0 = jnp.array([1.0, -0.3])


def test_rollout_without_inputs_equals_an_empty_input_array(dyn):
    steps = 50
    xs = dyn.rollout(X0, steps=steps)
    assert xs.shape == (steps + 1, 2)
    np.testing.assert_array_equal(xs, dyn.rollout(X0, jnp.zeros((steps, 0))))
    # steps from a (steps,) dt, and us=None given explicitly.
    dts = jnp.full((steps,), 0.01)
    np.testing.assert_array_equal(dyn.rollout(X0, None, dts), xs)
    # The energy of the free pendulum is kept (RK4, small step).
    energy = 0.5 * xs[:, 1] ** 2 - jnp.cos(xs[:, 0])
    np.testing.assert_allclose(energy, energy[0], atol=1e-8)


def test_rollout_without_inputs_under_jit_and_grad(dyn):
    xs = jax.jit(lambda x: dyn.rollout(x, steps=20))(X0)
    np.testing.assert_array_equal(xs, dyn.rollout(X0, steps=20))
    g = jax.grad(lambda x: jnp.sum(dyn.rollout(x, steps=20)[-1] ** 2))(X0)
    assert g.shape == (2,) and np.all(np.isfinite(g))


def test_f_and_step_take_no_input(dyn):
    np.testing.assert_array_equal(dyn.f(X0), dyn.f(X0, jnp.zeros(0)))
    np.testing.assert_allclose(dyn.f(X0), [-0.3, -np.sin(1.0)], rtol=1e-12)
    np.testing.assert_array_equal(dyn.step(X0), dyn.step(X0, jnp.zeros(0)))
    np.testing.assert_array_equal(dyn.step(X0), dyn.rollout(X0, steps=1)[-1])
    np.testing.assert_array_equal(dyn.step(X0, dt=0.02), dyn.rollout(X0, steps=2, dt=0.02)[1])


def test_history_inputs_passes_none_through(dyn):
    assert dyn.history_inputs(None) is None


def test_a_forced_model_needs_its_inputs():
    dyn = Dynamics(Pendulum(), RK4(), 0.01)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "Dynamics.rollout: the model has 1 input(s); pass us of shape (steps, 1) "
            "(us=None only for a model without inputs)"
        ),
    ):
        dyn.rollout(X0, steps=10)
    for fn in (dyn.f, dyn.step):
        with pytest.raises(ValueError, match=r"Dynamics\.(f|step): the model has 1 input\(s\)"):
            fn(X0)


def test_unforced_rollout_without_steps_says_so(dyn):
    with pytest.raises(ValueError, match=re.escape("with us=None and a scalar dt, pass steps=")):
        dyn.rollout(X0)

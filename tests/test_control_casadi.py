"""A model as a `casadi.Function`: values and Jacobians equal lagnet's (skipped without CasADi)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import random_cartpole_pinode

from lagnet.control import Dynamics
from lagnet.integrators import RK4

ca = pytest.importorskip("casadi")


def model():
    return Dynamics(random_cartpole_pinode(), RK4(), 0.02)


@pytest.mark.parametrize("kind", ["step", "f"])
def test_casadi_function_values_and_jacobians_are_the_models(kind):
    from lagnet.control.casadi_function import casadi_function

    dyn = model()
    fn = casadi_function(dyn, kind=kind)
    ref = dyn.step if kind == "step" else dyn.f
    x, u = np.array([0.1, 2.9, -0.2, 0.7]), np.array([0.5])
    np.testing.assert_allclose(
        np.asarray(fn(x, u)).ravel(), ref(jnp.asarray(x), jnp.asarray(u)), rtol=1e-12
    )
    xs, us = ca.MX.sym("x", 4), ca.MX.sym("u", 1)
    y = fn(xs, us)
    jac = ca.Function("jacobians", [xs, us], [ca.jacobian(y, xs), ca.jacobian(y, us)])
    a, b = (np.asarray(v) for v in jac(x, u))
    a_ref, b_ref = jax.jacfwd(ref, argnums=(0, 1))(jnp.asarray(x), jnp.asarray(u))
    np.testing.assert_allclose(a, a_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b, b_ref, rtol=1e-10, atol=1e-12)


def test_casadi_function_rejects_an_unknown_kind():
    from lagnet.control.casadi_function import casadi_function

    with pytest.raises(ValueError, match="kind"):
        casadi_function(model(), kind="rollout")

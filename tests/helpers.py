"""Shared test helpers: reference solutions, order fits, comparisons, test models."""

import jax
import jax.numpy as jnp
import numpy as np
from scipy.integrate import solve_ivp

from lagnet.models import PINODE, Friction


def damped(system, damping):
    """The system with viscous friction Q = −c ⊙ q̇ added: a forced, damped, velocity-dependent model."""
    return PINODE(system, friction=Friction(jnp.zeros(system.n_dof), jnp.asarray(damping)))


def reference_rollout(model, q0, qd0, us, dt, *, rtol=1e-13, atol=1e-13):
    """States at t_k = k·dt of q̈ = a(q, q̇, u) with us[k] held over [t_k, t_{k+1}], by scipy's DOP853.

    Steps with the same input are integrated as one segment, so piecewise-constant inputs on a coarse grid are
    solved accurately whatever dt. Returns numpy arrays qs, qds of shape (steps + 1, n).
    """
    us = np.asarray(us)
    n = np.shape(q0)[0]
    accel = jax.jit(lambda q, qd, u: model.acceleration(q, qd, u))

    def rhs(t, y, u):
        return np.concatenate([y[n:], np.asarray(accel(jnp.asarray(y[:n]), jnp.asarray(y[n:]), u))])

    y = np.concatenate([np.asarray(q0, float), np.asarray(qd0, float)])
    out = [y]
    k = 0
    while k < len(us):
        j = k
        while j + 1 < len(us) and np.array_equal(us[j + 1], us[k]):
            j += 1
        t_eval = dt * np.arange(k + 1, j + 2)
        sol = solve_ivp(
            rhs,
            (dt * k, dt * (j + 1)),
            y,
            method="DOP853",
            rtol=rtol,
            atol=atol,
            t_eval=t_eval,
            args=(jnp.asarray(us[k]),),
        )
        out.extend(sol.y.T)
        y = sol.y[:, -1]
        k = j + 1
    out = np.array(out)
    return out[:, :n], out[:, n:]


def fitted_order(hs, errors) -> float:
    """Slope of the least-squares line through (log h, log error)."""
    return float(np.polyfit(np.log(hs), np.log(errors), 1)[0])


def relative_error(a, b) -> float:
    """‖a − b‖ / ‖b‖ (flattened)."""
    a, b = np.ravel(np.asarray(a)), np.ravel(np.asarray(b))
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))

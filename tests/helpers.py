"""Shared test helpers: reference solutions, order fits, comparisons, test models."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from scipy.integrate import solve_ivp


class Damped(eqx.Module):
    """A system with viscous friction Q = −c ⊙ q̇ added: a forced, damped, velocity-dependent model."""

    system: eqx.Module
    damping: jax.Array

    @property
    def velocity_dependent(self) -> bool:
        return True

    @property
    def n_dof(self) -> int:
        return self.system.n_dof

    @property
    def n_inputs(self) -> int:
        return self.system.n_inputs

    def acceleration(self, q, qd, u=None):
        return self.system.acceleration(q, qd, u, Q=-self.damping * qd)

    def mass_matrix(self, q):
        return self.system.mass_matrix(q)

    def kinetic_energy(self, q, qd):
        return self.system.kinetic_energy(q, qd)

    def potential_energy(self, q):
        return self.system.potential_energy(q)

    def energy(self, q, qd):
        return self.system.energy(q, qd)


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

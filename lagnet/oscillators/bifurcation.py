"""Hopf onsets and limit-cycle amplitudes of a discretised oscillator (how numerics moves the threshold)."""

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from ..integrators.base import AbstractIntegrator
from ..rollout import rollout


def step_jacobian(model, integrator: AbstractIntegrator, dt, q, qd) -> Float[Array, "2n 2n"]:
    """∂(q_{k+1}, q̇_{k+1}) / ∂(q_k, q̇_k) of one step (for multi-step carries: at the carry `init` gives)."""
    n = q.shape[0]

    def step(x):
        q_, qd_ = x[:n], x[n:]
        state = integrator.init(model, q_, qd_, None)
        q1, qd1, _, _ = integrator.step(model, q_, qd_, None, dt, state)
        return jnp.concatenate([q1, qd1])

    return jax.jacfwd(step)(jnp.concatenate([q, qd]))


def spectral_radius_at_rest(model, integrator: AbstractIntegrator, dt) -> Float[Array, ""]:
    """max |eig| of the step Jacobian at the equilibrium q = q̇ = 0: > 1 means the rest state is unstable."""
    n = model.n_dof
    zero = jnp.zeros(n)
    return jnp.max(jnp.abs(jnp.linalg.eigvals(step_jacobian(model, integrator, dt, zero, zero))))


def hopf_onset(
    make_model: Callable[[Float[Array, ""]], object],
    integrator: AbstractIntegrator,
    dt: float,
    bracket: tuple[float, float] = (-1.0, 1.0),
    *,
    tol: float = 1e-12,
) -> float:
    """The parameter μ* at which the discrete rest state loses stability, by bisection on ρ(μ) − 1.

    ρ(μ) is `spectral_radius_at_rest(make_model(μ), integrator, dt)`; the bracket must contain one crossing
    (stable at its lower end, unstable at its upper end), else `ValueError`. For Rayleigh's oscillator the
    exact flow has μ* = 0, forward Euler μ* = −h and backward Euler μ* = +h (|1 ± hλ| = 1 with λ on the
    unit-speed eigenvalues μ/2 ± i√(1 − μ²/4)).
    """
    rho = jax.jit(lambda mu: spectral_radius_at_rest(make_model(mu), integrator, dt) - 1.0)
    lo, hi = (float(b) for b in bracket)
    f_lo, f_hi = float(rho(lo)), float(rho(hi))
    if not (f_lo < 0.0 < f_hi):
        raise ValueError(
            f"hopf_onset: bracket {bracket} must be stable at its lower end and unstable at its upper end, "
            f"got ρ − 1 = {f_lo:.3g}, {f_hi:.3g}"
        )
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if float(rho(mid)) < 0.0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def limit_cycle_amplitude(
    model, integrator: AbstractIntegrator, dt: float, q0, qd0, steps: int, tail: int
) -> Float[Array, ""]:
    """max |q_0| over the last `tail` of `steps` steps from (q0, q̇0): the lecture's amplitude measurement."""
    qs, _ = rollout(model, integrator, jnp.asarray(q0), jnp.asarray(qd0), None, dt, steps=steps)
    return jnp.max(jnp.abs(qs[-tail:, 0]))

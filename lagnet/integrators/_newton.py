"""Newton's method with a fixed number of iterations, shared by the implicit integrators."""

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float


def default_tolerance(dtype) -> float:
    """√ε of the dtype: a Newton correction this small leaves an error of about ε (quadratic convergence)."""
    return float(np.sqrt(np.finfo(dtype).eps))


def newton(
    residual: Callable[[Float[Array, " n"]], Float[Array, " n"]],
    x0: Float[Array, " n"],
    *,
    iterations: int,
    rtol: float | None,
    atol: float | None,
) -> tuple[Float[Array, " n"], Bool[Array, ""], Float[Array, ""]]:
    """Solve residual(x) = 0 by x ← x − J(x)⁻¹ residual(x), J = ∂residual/∂x by forward-mode autodiff.

    A fixed iteration count (a `fori_loop` with static bounds, i.e. a scan) keeps the solve reverse-mode
    differentiable; once converged, differentiating through the iterations gives the implicit-function-theorem
    derivative. Convergence is judged on the last correction: |Δx_i| ≤ atol + rtol |x_i| for every i, and x finite.

    Returns `(x, converged, error)` with `error` = max |Δx| of the last iteration.
    """
    dtype = jnp.result_type(x0)
    rtol = default_tolerance(dtype) if rtol is None else rtol
    atol = default_tolerance(dtype) if atol is None else atol

    def with_value(x):
        r = residual(x)
        return r, r

    def body(_, carry):
        x, _ = carry
        jac, r = jax.jacfwd(with_value, has_aux=True)(x)
        dx = jnp.linalg.solve(jac, r).astype(dtype)
        return x - dx, dx

    x, dx = jax.lax.fori_loop(0, iterations, body, (x0, jnp.zeros_like(x0)))
    finite = jnp.all(jnp.isfinite(x))
    converged = finite & jnp.all(jnp.abs(dx) <= atol + rtol * jnp.abs(x))
    error = jnp.where(finite, jnp.max(jnp.abs(dx), initial=0.0), jnp.inf).astype(dtype)
    return x, converged, error

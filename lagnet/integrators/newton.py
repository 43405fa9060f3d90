"""Newton's method with early exit and implicit differentiation, the implicit integrators' default root finder."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .base import AbstractRootFinder, StepInfo


def default_tolerance(dtype) -> float:
    """√ε of the dtype: a Newton correction this small leaves an error of about ε (quadratic convergence)."""
    return float(np.sqrt(np.finfo(dtype).eps))


class Newton(AbstractRootFinder):
    """Newton's method x ← x − J(x)⁻¹ residual(x), J = ∂residual/∂x by forward-mode autodiff, dense solve.

    At most `iterations` iterations (a `while_loop`), stopping at the first whose correction meets the tolerance
    |Δx_i| ≤ atol + rtol |x_i| for every i (or whose iterate is not finite): a linear residual takes two
    iterations, a smooth one from a good warm start two or three, instead of a fixed count. Under `vmap` the
    loop runs until every sample has stopped (finished samples are left unchanged). `rtol`, `atol` = None mean
    √ε of the dtype.

    Derivatives do not go through the iterations: `lax.custom_root` differentiates the root by the implicit
    function theorem, dx = −J⁻¹ ∂residual (J at the returned x, one more n × n solve), which is what
    differentiating converged iterations gives, at the cost of one solve instead of a stored loop.

    `optimistix.Newton` (lineax LU, Cauchy termination, implicit adjoint) is a drop-in alternative behind
    `AbstractRootFinder`; it was not faster on batched Newmark and backward-Euler rollouts and gradients
    (`benchmarks/root_finder.py`), so this one stays the default.
    """

    iterations: int = eqx.field(static=True, default=8)
    rtol: float | None = eqx.field(static=True, default=None)
    atol: float | None = eqx.field(static=True, default=None)

    def __check_init__(self):
        if not (isinstance(self.iterations, int) and self.iterations >= 1):
            raise ValueError(f"Newton.iterations must be an integer >= 1, got {self.iterations!r}")
        for name, value in (("rtol", self.rtol), ("atol", self.atol)):
            if value is not None and not value >= 0:
                raise ValueError(f"Newton.{name} must be >= 0 or None, got {value!r}")

    def solve(self, residual, x0):
        dtype = jnp.result_type(x0)
        rtol = default_tolerance(dtype) if self.rtol is None else self.rtol
        atol = default_tolerance(dtype) if self.atol is None else self.atol

        def small(dx, x):
            return jnp.all(jnp.abs(dx) <= atol + rtol * jnp.abs(x))

        def solve(f, x_init):
            def with_value(x):
                r = f(x)
                return r, r

            def cond(carry):
                i, _, _, done = carry
                return (i < self.iterations) & ~done

            def body(carry):
                i, x, _, _ = carry
                jac, r = jax.jacfwd(with_value, has_aux=True)(x)
                dx = jnp.linalg.solve(jac, r).astype(dtype)
                x = x - dx
                done = small(dx, x) | ~jnp.all(jnp.isfinite(x))
                return i + 1, x, dx, done

            init = (jnp.zeros((), jnp.int32), x_init, jnp.zeros_like(x_init), jnp.zeros((), bool))
            _, x, dx, _ = jax.lax.while_loop(cond, body, init)
            return x, dx

        def tangent_solve(g, y):
            # g is the linearised residual v ↦ J v; J is small and dense here, so materialise it.
            return jnp.linalg.solve(jax.jacfwd(g)(y), y).astype(y.dtype)

        x, dx = jax.lax.custom_root(residual, x0, solve, tangent_solve, has_aux=True)
        finite = jnp.all(jnp.isfinite(x))
        converged = finite & small(dx, x)
        error = jnp.where(finite, jnp.max(jnp.abs(dx), initial=0.0), jnp.inf).astype(dtype)
        return x, StepInfo(converged=converged, error=error)

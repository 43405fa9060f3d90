"""A model's discrete (or continuous) dynamics as a `casadi.Function` with its Jacobians, for CasADi solvers.

The function calls back into JAX: x⁺ = step(x, u) and its Jacobians (∂x⁺/∂x, ∂x⁺/∂u) are the model's own,
compiled (`jax.jit`, `jax.jacfwd`), so any lagnet model works without writing its equations again. CasADi gets
first derivatives only: with IPOPT use `ipopt.hessian_approximation: limited-memory`.

CasADi is optional (`pip install 'lagnet[mpc-bench]'`); this module imports it when a function is built.
"""

import jax
import jax.numpy as jnp
import numpy as np

from .dynamics import Dynamics

_MISSING = (
    "lagnet.control.casadi_function needs CasADi, an optional dependency: pip install 'casadi>=3.8,<3.9' "
    "(or lagnet[mpc-bench])"
)


def _casadi():
    try:
        import casadi
    except ImportError as e:
        raise ImportError(_MISSING) from e
    return casadi


def casadi_function(
    dyn: Dynamics, *, kind: str = "step", dt: float | None = None, name: str | None = None
):
    """`F(x, u)` as a `casadi.Function` (a CasADi callback): x⁺ = dyn.step(x, u, dt) (kind "step") or
    ẋ = dyn.f(x, u) (kind "f"), with x (2n, 1) and u (m, 1) dense column vectors; `casadi.jacobian` of it (and
    a solver's derivatives) are the model's JAX Jacobians.

    Keep the returned object alive while CasADi uses it (a callback is not owned by the expressions built on it).
    """
    if kind not in ("step", "f"):
        raise ValueError(f"casadi_function: kind must be 'step' or 'f', got {kind!r}")
    ca = _casadi()
    n2, m = 2 * dyn.n_dof, dyn.n_inputs

    def fn(x, u):
        return dyn.step(x, u, dt) if kind == "step" else dyn.f(x, u)

    value = jax.jit(fn)
    jacobian = jax.jit(jax.jacfwd(fn, argnums=(0, 1)))

    jacobian_class = _jacobian_callback_class(ca, jacobian, n2, m)
    model_class = _model_callback_class(ca, value, jacobian_class, n2, m, kind)
    return model_class(name or f"lagnet_{kind}")


def _column(v, size):
    """A CasADi argument (a DM) as a flat JAX vector of `size` floats."""
    return jnp.asarray(np.asarray(v, dtype=float).reshape(size))


def _jacobian_callback_class(ca, jacobian, n2: int, m: int):
    """The `casadi.Callback` class that evaluates the compiled JAX `jacobian(x, u)` for CasADi."""

    class Jacobian(ca.Callback):
        """(x, u, x⁺ nominal) → (∂x⁺/∂x (2n, 2n), ∂x⁺/∂u (2n, m)), CasADi's Jacobian signature."""

        def __init__(self, label):
            ca.Callback.__init__(self)
            self.construct(label, {})

        def get_n_in(self):
            return 3

        def get_n_out(self):
            return 2

        def get_sparsity_in(self, i):
            return ca.Sparsity.dense((n2, m, n2)[i], 1)

        def get_sparsity_out(self, i):
            return ca.Sparsity.dense(n2, (n2, m)[i])

        def eval(self, arg):
            a, b = jacobian(_column(arg[0], n2), _column(arg[1], m))
            return [np.asarray(a), np.asarray(b)]

    return Jacobian


def _model_callback_class(ca, value, jacobian_class, n2: int, m: int, kind: str):
    """The `casadi.Callback` class that evaluates the compiled JAX `value(x, u)` and hands CasADi a
    `jacobian_class` instance as its Jacobian."""

    class Model(ca.Callback):
        def __init__(self, label):
            ca.Callback.__init__(self)
            self.label = label
            self.jacobian_callback = None
            self.construct(label, {})

        def get_n_in(self):
            return 2

        def get_n_out(self):
            return 1

        def get_name_in(self, i):
            return ("x", "u")[i]

        def get_name_out(self, i):
            return "x_next" if kind == "step" else "x_dot"

        def get_sparsity_in(self, i):
            return ca.Sparsity.dense((n2, m)[i], 1)

        def get_sparsity_out(self, i):
            return ca.Sparsity.dense(n2, 1)

        def eval(self, arg):
            return [np.asarray(value(_column(arg[0], n2), _column(arg[1], m)))]

        def has_jacobian(self):
            return True

        def get_jacobian(self, label, inames, onames, opts):
            # Held by the model's callback: CasADi keeps only a raw reference.
            self.jacobian_callback = jacobian_class(label)
            return self.jacobian_callback

    return Model

"""Any mechanical system from T(q, q̇) and V(q), with M, C and G derived by autodiff."""

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp

from .._types import InputMatrix, MassMatrix, Q, Scalar
from .base import AbstractSystem


class Lagrangian(AbstractSystem):
    """L = T(q, q̇) − V(q) given as functions; the Euler–Lagrange terms follow by autodiff:

        M(q) = ∂²T/∂q̇² (at q̇ = 0, T quadratic in q̇),   C from the Christoffel symbols of M,   G = ∂V/∂q.

    `kinetic(q, qd)` and `potential(q)` (or `kinetic(q, qd, params)`, `potential(q, params)` when `params` is given,
    so the parameters can be differentiated or learned). `input_matrix(q[, params])` gives B(q) (n, m); default the
    identity (a generalised force on every coordinate).
    """

    velocity_dependent = True

    # Not static: a bound method of another module carries arrays, which must stay visible to jit and grad.
    kinetic: Callable
    potential: Callable
    input_fn: Callable | None
    params: Any
    coordinate_names: tuple[str, ...] = eqx.field(static=True)
    input_names: tuple[str, ...] = eqx.field(static=True)
    angles: tuple[bool, ...] = eqx.field(static=True)

    def __init__(
        self,
        kinetic: Callable,
        potential: Callable,
        n_dof: int,
        *,
        input_matrix: Callable | None = None,
        params: Any = None,
        coordinate_names: tuple[str, ...] | None = None,
        input_names: tuple[str, ...] | None = None,
        angles: tuple[bool, ...] | None = None,
    ):
        if not isinstance(n_dof, int) or n_dof < 1:
            raise ValueError(f"Lagrangian.n_dof must be a positive integer, got {n_dof!r}")
        self.kinetic, self.potential, self.input_fn, self.params = (
            kinetic,
            potential,
            input_matrix,
            params,
        )
        self.coordinate_names = _names(
            coordinate_names, "q", n_dof, "coordinate_names", f"n_dof={n_dof}"
        )
        self.angles = tuple(bool(a) for a in angles) if angles is not None else (False,) * n_dof
        if len(self.angles) != n_dof:
            raise ValueError(
                f"Lagrangian.angles must have n_dof={n_dof} entries, got {len(self.angles)}"
            )
        if input_matrix is None:
            n_inputs = n_dof
        else:
            args = () if params is None else (params,)
            shape = jax.eval_shape(lambda q: input_matrix(q, *args), jnp.zeros(n_dof)).shape
            if len(shape) != 2 or shape[0] != n_dof:
                raise ValueError(
                    f"Lagrangian.input_matrix must return shape (n_dof={n_dof}, m), got {shape}"
                )
            n_inputs = shape[1]
        self.input_names = _names(input_names, "u", n_inputs, "input_names", str(n_inputs))

    def _args(self):
        return () if self.params is None else (self.params,)

    def _call_input(self, q):
        return self.input_fn(q, *self._args())

    def kinetic_energy(self, q: Q, qd) -> Scalar:
        return self.kinetic(q, qd, *self._args())

    def potential_energy(self, q: Q) -> Scalar:
        return self.potential(q, *self._args())

    def parameter(self, name: str) -> jax.Array:
        """An entry of `params` when it is a dict of arrays (so configs can learn it)."""
        if isinstance(self.params, dict) and isinstance(self.params.get(name), jax.Array):
            return self.params[name]
        raise KeyError(name)

    def with_parameters(self, values: dict) -> "Lagrangian":
        return eqx.tree_at(lambda s: s.params, self, {**self.params, **values})

    def mass_matrix(self, q: Q) -> MassMatrix:
        return jax.hessian(self.kinetic_energy, argnums=1)(q, jnp.zeros_like(q))

    def input_matrix(self, q: Q) -> InputMatrix:
        if self.input_fn is None:
            return jnp.eye(self.n_dof, dtype=jnp.result_type(q))
        return self._call_input(q)


def _names(given, prefix: str, n: int, field: str, count: str) -> tuple[str, ...]:
    """`given` as a tuple of n names, or prefix1 ... prefixn; a `ValueError` if it has not `count` entries."""
    names = tuple(given) if given is not None else tuple(f"{prefix}{i + 1}" for i in range(n))
    if len(names) != n:
        raise ValueError(f"Lagrangian.{field} must have {count} entries, got {len(names)}")
    return names

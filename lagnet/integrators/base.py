"""The integrator interface: one step of a second-order system q̈ = a(q, q̇, u)."""

import abc
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, PyTree

from .._types import Q, QDot, RealScalar, U


class StepInfo(eqx.Module):
    """What one step reports besides the new state.

    `converged`: the step's implicit solve met its tolerance (always True for explicit steps).
    `error`: size of the last solver correction (max-norm of the final Newton update; 0 for explicit steps).
    """

    converged: Bool[Array, ""]
    error: Float[Array, ""]


def explicit_info(dtype) -> StepInfo:
    """The `StepInfo` of a step that solves nothing."""
    return StepInfo(converged=jnp.array(True), error=jnp.zeros((), dtype))


class AbstractIntegrator(eqx.Module):
    """One step of a second-order system q̈ = a(q, q̇, u) with u held constant over the step.

    The model is an `AbstractDynamics`: an integrator calls `model.acceleration(q, qd, u)` and reads the static
    `model.velocity_dependent`, which lets q-only forces take cheaper paths (explicit leapfrog, reused
    accelerations). `Variational` needs an `AbstractLagrangianDynamics` (see its docstring).

    An integrator may carry a state between steps (e.g. the last acceleration): `init` builds it, `step` returns
    the next one. Functions take one sample; batch with `jax.vmap` outside. Negative `dt` steps backwards in time.

    The properties `order`, `explicit`, `symplectic`, `symmetric` describe the method on a conservative system with
    q-only forces, q̈ = −M⁻¹∇V(q); each class's docstring says what changes with velocity-dependent forces. A class
    whose values do not depend on its fields sets them as plain class attributes (`order = 2`).
    """

    @abc.abstractmethod
    def init(self, model, q: Q, qd: QDot, u: U | None) -> PyTree[Any]:
        """The carry before the first step from (q, q̇) with input u (None when the method needs none)."""

    @abc.abstractmethod
    def step(
        self, model, q: Q, qd: QDot, u: U | None, dt: RealScalar, state: PyTree[Any]
    ) -> tuple[Q, QDot, PyTree[Any], StepInfo]:
        """(q_k, q̇_k) ↦ (q_{k+1}, q̇_{k+1}) over one step of size `dt`.

        Returns `(q1, qd1, state1, info)`: the new state (shapes (n,)), the new carry, and a `StepInfo`.
        """

    @property
    @abc.abstractmethod
    def order(self) -> int:
        """Global order of accuracy p: the error at a fixed time is O(dt^p) for smooth problems."""

    @property
    @abc.abstractmethod
    def explicit(self) -> bool:
        """True when a step solves no equation, for forces that depend on q only."""

    @property
    @abc.abstractmethod
    def symplectic(self) -> bool:
        """True when the step map preserves a symplectic form for conservative q-only forces.

        On q̈ = −ω²q that is det(∂ step/∂(q, q̇)) = 1, and it keeps the energy error bounded over long runs. The
        form is the canonical one except for Newmark with β > 0, γ = ½ (a nearby non-canonical form).
        """

    @property
    @abc.abstractmethod
    def symmetric(self) -> bool:
        """True when stepping with −dt exactly undoes +dt (time reversible)."""

    @property
    def rematerialised(self) -> bool:
        """True when `step`, differentiated, keeps only a few of its values and recomputes the rest in its backward
        pass (`jax.checkpoint` inside the step): a rollout then has no reason to checkpoint the step again. False by
        default."""
        return False

    def compact_form(self) -> "AbstractIntegrator":
        """The same method as a smaller program, for where the compile is much of what a user waits for
        (training, validation passes): by default the integrator itself.

        A method may trade some speed per step for a program that compiles faster (see `RK4`); the two forms agree
        to rounding.
        """
        return self


class AbstractRootFinder(eqx.Module):
    """Solves residual(x) = 0 for x of shape (n,) from a warm start x0: what an implicit step calls."""

    @abc.abstractmethod
    def solve(
        self, residual: Callable[[Float[Array, " n"]], Float[Array, " n"]], x0: Float[Array, " n"]
    ) -> tuple[Float[Array, " n"], StepInfo]:
        """The root x and a `StepInfo`: `converged` (the tolerance was met and x is finite) and `error` (the size
        of the last correction)."""


class AbstractImplicitIntegrator(AbstractIntegrator):
    """An integrator whose step solves an equation for the new state (for some models at least), by its
    `root_finder` (diffrax's pattern): the solver settings live in one place, `Newton(iterations, rtol, atol)` by
    default, and a step's convergence is reported in its `StepInfo`.
    """

    root_finder: eqx.AbstractVar[AbstractRootFinder]


def zero_order_hold_acceleration(
    model, q: Q, qd: QDot, u: U | None, a_prev, u_prev
) -> Float[Array, " n"]:
    """The acceleration at the start of a step, reusing the one carried from the previous step if valid.

    The carried a(q_k, q̇_k, u_{k−1}) was computed at the end of the previous step with that step's input; under
    a zero-order hold the new step needs a(q_k, q̇_k, u_k). The two agree when the input did not change, which
    is checked at run time. The check is a `jnp.where`, not a `lax.cond`: a cond skips the evaluation only
    unbatched, and under `vmap` (every training and benchmark rollout) its batched predicate computes both
    branches anyway and was slower than computing both and selecting (`benchmarks/rollout_other.py`). Without
    inputs the carried acceleration is always valid and nothing is recomputed.
    """
    if u is None:
        return a_prev
    same = jnp.all(u == u_prev)
    return jnp.where(same, a_prev, model.acceleration(q, qd, u).astype(a_prev.dtype))

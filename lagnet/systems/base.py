"""The dynamics interface every steppable object shares, and its Euler–Lagrange refinement.

- `AbstractDynamics`: q̈ = a(q, q̇, u), what `rollout` and the integrators step (systems, models, plants).
- `AbstractLagrangianDynamics`: the same with a Lagrangian L = T − V (mass matrix, energies), for the methods that
  need one (variational integrators, energy diagnostics).
- `AbstractSystem`: known mechanics M(q) q̈ + C(q, q̇) q̇ + G(q) = B(q) u + Q in closed form or by autodiff.
"""

import abc
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl

from .._types import Force, InputMatrix, MassMatrix, Q, QDDot, QDot, Scalar, U


class AbstractDynamics(eqx.Module):
    """A second-order system q̈ = a(q, q̇, u), for one sample (batch with `jax.vmap` outside).

    `n_dof` is n (q, q̇ have shape (n,)), `n_inputs` is m (u has shape (m,); u = None means zero input).
    `velocity_dependent` (static) says whether a depends on q̇: False lets integrators such as leapfrog stay
    explicit, so an implementation must not claim False when it is not so.
    """

    n_dof: eqx.AbstractVar[int]
    n_inputs: eqx.AbstractVar[int]
    velocity_dependent: eqx.AbstractVar[bool]

    @abc.abstractmethod
    def acceleration(self, q: Q, qd: QDot, u: U | None = None) -> QDDot:
        """q̈ = a(q, q̇, u), shape (n,)."""


class AbstractLagrangianDynamics(AbstractDynamics):
    """q̈ = a(q, q̇, u) with a Lagrangian L = T(q, q̇) − V(q), T = ½ q̇ᵀ M(q) q̇.

    Whatever `acceleration` adds to the Euler–Lagrange equations of L (inputs, friction, learned forces) counts
    as a non-conservative generalised force: `Variational` integrates L and that force, evaluation measures
    energy with E = T + V.
    """

    @abc.abstractmethod
    def mass_matrix(self, q: Q) -> MassMatrix:
        """M(q), symmetric positive definite."""

    @abc.abstractmethod
    def potential_energy(self, q: Q) -> Scalar:
        """V(q) of the conservative forces (gravity, springs)."""

    def kinetic_energy(self, q: Q, qd: QDot) -> Scalar:
        """T(q, q̇) = ½ q̇ᵀ M(q) q̇."""
        return 0.5 * qd @ self.mass_matrix(q) @ qd

    def energy(self, q: Q, qd: QDot) -> Scalar:
        """E = T + V."""
        return self.kinetic_energy(q, qd) + self.potential_energy(q)


class AbstractSystem(AbstractLagrangianDynamics):
    """A mechanical system M(q) q̈ + C(q, q̇) q̇ + G(q) = B(q) u + Q.

    Concrete systems give `mass_matrix`, `potential_energy` and `input_matrix` (and usually closed forms of
    `coriolis` and `gravity`); everything else follows. All methods take one sample: batch with `jax.vmap`.

    Every system declares `coordinate_names` (length n), `input_names` (length m) and `angles` (length n, True for
    coordinates that are angles, which later stages embed as (sin, cos) or compare modulo 2π), and whether it is
    `velocity_dependent` (Coriolis terms or velocity-dependent forces).
    """

    coordinate_names: eqx.AbstractVar[tuple[str, ...]]
    input_names: eqx.AbstractVar[tuple[str, ...]]
    angles: eqx.AbstractVar[tuple[bool, ...]]

    @property
    def n_dof(self) -> int:
        return len(self.coordinate_names)

    @property
    def n_inputs(self) -> int:
        return len(self.input_names)

    @property
    def state_names(self) -> tuple[str, ...]:
        """Names of the state x = (q, q̇): the coordinates, then `<name>_dot`."""
        return self.coordinate_names + tuple(f"{c}_dot" for c in self.coordinate_names)

    @property
    def cyclic_coordinates(self) -> tuple[str, ...]:
        """Coordinates the physics does not depend on: M, V and B are the same wherever they are (∂L/∂q_i = 0 and
        no input or force varies with q_i), as a cart's position on a level rail. None by default; a system
        declares them. `model.hide_position: cyclic` hides them from a network (not by default: a real rig may
        depend on them where the known physics does not, e.g. at end stops)."""
        return ()

    @property
    def coordinate_units(self) -> tuple[str, ...]:
        """The unit of each coordinate: rad for angles, m otherwise; a system with other coordinates overrides
        this. Velocities are in these units per second, generalised forces in N·m (angles) or N (lengths)."""
        return tuple("rad" if a else "m" for a in self.angles)

    @property
    def state_units(self) -> dict[str, str]:
        """State name → unit, for tables and figures (q in `coordinate_units`, q̇ in those per second)."""
        units = self.coordinate_units
        return dict(zip(self.state_names, units + tuple(f"{u}/s" for u in units), strict=True))

    def parameter(self, name: str) -> jax.Array:
        """The physical parameter `name` (what `model.learn_parameters` names); `KeyError` if there is none.

        By default the system's array fields; a system that keeps its parameters elsewhere (a dict) overrides
        this and `with_parameters`.
        """
        value = getattr(self, name, None) if not name.startswith("_") else None
        if not isinstance(value, jax.Array):
            raise KeyError(name)
        return value

    def with_parameters(self, values: dict) -> "AbstractSystem":
        """The same system with the parameters `values` (name → array) put in."""
        names = tuple(values)
        for k in names:
            self.parameter(k)  # a KeyError for a name that is not a parameter
        return eqx.tree_at(
            lambda s: tuple(getattr(s, k) for k in names), self, tuple(values[k] for k in names)
        )

    # What each parameter is ("mass", "length" between joints, "com" a centre-of-mass distance, "inertia"), for
    # the default bounds of learning it (`parameters.learned_bounds`); a parameter not listed is kept ≥ 0.
    parameter_kinds: ClassVar[dict[str, str]] = {}

    def consistent(self) -> "AbstractSystem":
        """This system with its parameters moved into the physical region where they are not (M(q) ≻ 0 for
        every q); by default itself. A system whose parameters can leave that region under learning (lumped
        inertias) overrides it: a PINODE's learned parameters pass through it, so every value an optimiser
        reaches gives a physical model, as `Bounded` clips a value where it is used."""
        return self

    @abc.abstractmethod
    def input_matrix(self, q: Q) -> InputMatrix:
        """B(q): maps the inputs u to generalised forces."""

    def coriolis(self, q: Q, qd: QDot) -> MassMatrix:
        """C(q, q̇) from the Christoffel symbols of M.

            C_ij = Σ_k ½ (∂M_ij/∂q_k + ∂M_ik/∂q_j − ∂M_jk/∂q_i) q̇_k,

        the factorisation for which Ṁ − 2C is skew-symmetric. Systems with a closed form override this.
        """
        dm = jax.jacfwd(self.mass_matrix)(q)  # dm[i, j, k] = ∂M_ij/∂q_k
        return 0.5 * (
            jnp.einsum("ijk,k->ij", dm, qd)
            + jnp.einsum("ikj,k->ij", dm, qd)
            - jnp.einsum("jki,k->ij", dm, qd)
        )

    def gravity(self, q: Q) -> Force:
        """G(q) = ∂V/∂q: all conservative forces, gravity and springs alike."""
        return jax.grad(self.potential_energy)(q)

    def solve_mass(self, q: Q, rhs: Force) -> Force:
        """M(q)⁻¹ rhs without an explicit inverse: a Cholesky factorisation (M is SPD), in closed form for n ≤ 2.

        For one or two degrees of freedom the closed form (M₁₁ x₁ + M₁₂ x₂ = r₁, … by Cramer's rule, det M > 0)
        is exact to rounding and avoids a batched LAPACK call per sample, which under `vmap` on a CPU costs more
        than the rest of a small model's step.
        """
        m = self.mass_matrix(q)
        if m.shape == (1, 1):
            return rhs / m[0, 0]
        if m.shape == (2, 2):
            det = m[0, 0] * m[1, 1] - m[0, 1] * m[1, 0]
            return (
                jnp.stack(
                    [m[1, 1] * rhs[0] - m[0, 1] * rhs[1], m[0, 0] * rhs[1] - m[1, 0] * rhs[0]]
                )
                / det
            )
        return jsl.cho_solve(jsl.cho_factor(m, lower=True), rhs)

    def nonconservative_force(self, q: Q, qd: QDot, u: U | None = None) -> Force | None:
        """Q_s(q, q̇, u): the system's own non-conservative force besides B(q) u (joint friction, drag, a bow's
        friction law); None when it has none, the default. `generalised_force` and `power` both add it, so a
        system overrides this alone and its dE/dt cannot disagree with its equations of motion."""
        return None

    def generalised_force(self, q: Q, qd: QDot, u: U | None = None, Q: QDot | None = None):
        """B(q) u + Q_s(q, q̇, u) + Q − C(q, q̇) q̇ − G(q): everything on the right of M q̈ = ..."""
        rhs = -self.gravity(q)
        if self.velocity_dependent:
            rhs = rhs - self.coriolis(q, qd) @ qd
        if u is not None and self.n_inputs > 0:
            rhs = rhs + self.input_matrix(q) @ jnp.asarray(u)
        own = self.nonconservative_force(q, qd, u)
        if own is not None:
            rhs = rhs + own
        if Q is not None:
            rhs = rhs + Q
        return rhs

    def acceleration(self, q: Q, qd: QDot, u: U | None = None, Q: QDot | None = None) -> QDDot:
        """q̈ = M(q)⁻¹ (B(q) u + Q_s + Q − C(q, q̇) q̇ − G(q))."""
        return self.solve_mass(q, self.generalised_force(q, qd, u, Q))

    def power(self, q: Q, qd: QDot, u: U | None = None, Q: QDot | None = None) -> Scalar:
        """dE/dt = q̇ᵀ (B u + Q_s + Q): the power of the inputs and the non-conservative forces (C q̇ does no
        work: q̇ᵀ (Ṁ − 2C) q̇ = 0)."""
        p = jnp.zeros((), dtype=jnp.result_type(qd))
        if u is not None and self.n_inputs > 0:
            p = p + qd @ (self.input_matrix(q) @ jnp.asarray(u))
        own = self.nonconservative_force(q, qd, u)
        if own is not None:
            p = p + qd @ own
        if Q is not None:
            p = p + qd @ Q
        return p

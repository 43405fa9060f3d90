"""The Euler–Lagrange interface: M(q) q̈ + C(q, q̇) q̇ + G(q) = B(q) u + Q."""

import abc

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl

from .._types import Force, InputMatrix, MassMatrix, Q, QDDot, QDot, Scalar, U


class AbstractSystem(eqx.Module):
    """A mechanical system M(q) q̈ + C(q, q̇) q̇ + G(q) = B(q) u + Q.

    Concrete systems give `mass_matrix`, `potential_energy` and `input_matrix` (and usually closed forms of
    `coriolis` and `gravity`); everything else follows. All methods take one sample: batch with `jax.vmap`.

    Every system declares `coordinate_names` (length n), `input_names` (length m) and `angles` (length n, True for
    coordinates that are angles, which later stages embed as (sin, cos) or compare modulo 2π).
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
    def velocity_dependent(self) -> bool:
        """Whether q̈ depends on q̇ (Coriolis terms). False lets integrators such as leapfrog stay explicit."""
        return True

    @abc.abstractmethod
    def mass_matrix(self, q: Q) -> MassMatrix:
        """M(q), symmetric positive definite."""

    @abc.abstractmethod
    def potential_energy(self, q: Q) -> Scalar:
        """V(q) of the conservative forces (gravity, springs)."""

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

    def kinetic_energy(self, q: Q, qd: QDot) -> Scalar:
        """T(q, q̇) = ½ q̇ᵀ M(q) q̇."""
        return 0.5 * qd @ self.mass_matrix(q) @ qd

    def energy(self, q: Q, qd: QDot) -> Scalar:
        """E = T + V."""
        return self.kinetic_energy(q, qd) + self.potential_energy(q)

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

    def generalised_force(self, q: Q, qd: QDot, u: U | None = None, Q: QDot | None = None):
        """B(q) u + Q − C(q, q̇) q̇ − G(q): everything on the right of M q̈ = ..."""
        rhs = -self.gravity(q)
        if self.velocity_dependent:
            rhs = rhs - self.coriolis(q, qd) @ qd
        if u is not None and self.n_inputs > 0:
            rhs = rhs + self.input_matrix(q) @ jnp.asarray(u)
        if Q is not None:
            rhs = rhs + Q
        return rhs

    def acceleration(self, q: Q, qd: QDot, u: U | None = None, Q: QDot | None = None) -> QDDot:
        """q̈ = M(q)⁻¹ (B(q) u + Q − C(q, q̇) q̇ − G(q))."""
        return self.solve_mass(q, self.generalised_force(q, qd, u, Q))

    def power(self, q: Q, qd: QDot, u: U | None = None, Q: QDot | None = None) -> Scalar:
        """dE/dt = q̇ᵀ (B u + Q): the power of the inputs and the non-conservative forces."""
        p = jnp.zeros((), dtype=jnp.result_type(qd))
        if u is not None and self.n_inputs > 0:
            p = p + qd @ (self.input_matrix(q) @ jnp.asarray(u))
        if Q is not None:
            p = p + qd @ Q
        return p

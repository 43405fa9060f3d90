"""Variational integrators: the discrete (forced) Euler–Lagrange map of a discrete Lagrangian."""

import equinox as eqx
import jax
import jax.numpy as jnp

from ..systems.base import AbstractLagrangianDynamics
from .base import AbstractImplicitIntegrator, AbstractRootFinder
from .newton import Newton

_RULES = ("trapezoid", "midpoint")


def _kinetic(model, q, v):
    return model.kinetic_energy(q, v)


def _lagrangian(model, q, v):
    return _kinetic(model, q, v) - model.potential_energy(q)


def _momentum(model, q, v):
    """p = ∂L/∂q̇."""
    return jax.grad(_kinetic, argnums=2)(model, q, v)


def _nonconservative_force(model, q, v, u):
    """F = d/dt ∂L/∂q̇ − ∂L/∂q along q̈ = a(q, q̇, u): what the model adds to its own Lagrangian's dynamics.

    For a system that is B(q) u + Q; it vanishes (to rounding) for a conservative one.
    """
    a = model.acceleration(q, v, u).astype(v.dtype)
    _, dp_dt = jax.jvp(lambda q_, v_: _momentum(model, q_, v_), (q, v), (v, a))
    return dp_dt - jax.grad(_lagrangian, argnums=1)(model, q, v)


class Variational(AbstractImplicitIntegrator):
    """The variational integrator of a discrete Lagrangian L_h(q0, q1) ≈ ∫₀ʰ L dt, with discrete forces.

    The continuous Lagrangian is the model's own (an `AbstractLagrangianDynamics`), L(q, q̇) = T(q, q̇) − V(q)
    with T = `model.kinetic_energy` and V = `model.potential_energy`; it must be quadratic in q̇.
    Everything else the model's `acceleration` does is a non-conservative generalised force

        F(q, q̇, u) = d/dt ∂L/∂q̇ − ∂L/∂q  evaluated at q̈ = a(q, q̇, u),

    which for a system is B(q) u + Q (inputs, friction, a learned force) and zero when it is conservative.

    Discrete Lagrangians (v̄ = (q1 − q0)/h), with the matching discrete forces F⁻ (at q0) and F⁺ (at q1):
    - "trapezoid" (default): L_h = h/2 [L(q0, v̄) + L(q1, v̄)],  F⁻ = h/2 F(q0, v̄, u),  F⁺ = h/2 F(q1, v̄, u);
    - "midpoint": L_h = h L((q0 + q1)/2, v̄),  F⁻ = F⁺ = h/2 F((q0 + q1)/2, v̄, u).

    The step is the position–momentum form of the discrete forced Euler–Lagrange equations
    D2 L_h(q_{k−1}, q_k) + D1 L_h(q_k, q_{k+1}) + F⁺(q_{k−1}, q_k) + F⁻(q_k, q_{k+1}) = 0, with p = ∂L/∂q̇:

        p_k = −D1 L_h(q_k, q_{k+1}) − F⁻(q_k, q_{k+1})     (solved for q_{k+1} by Newton),
        p_{k+1} = D2 L_h(q_k, q_{k+1}) + F⁺(q_k, q_{k+1}),   q̇_{k+1} = M(q_{k+1})⁻¹ p_{k+1}.

    D1, D2 and the Newton Jacobian come from autodiff; the `root_finder` (default `Newton()`) starts from
    q_k + h q̇_k, convergence in `StepInfo.converged`. Order 2, symmetric, and symplectic in (q, p) for the
    conservative part (exactly when F = 0). With L = ½|q̇|² − V and the trapezoid,
    D2 L_h(q_{k−1}, q_k) + D1 L_h(q_k, q_{k+1}) = 0 is q_{k+1} − 2q_k + q_{k−1} = −h²∇V(q_k): Störmer–Verlet,
    reproduced to rounding.

    Velocity-dependent forces (Coriolis terms are part of L; friction and learned forces enter F) are evaluated
    at the discrete velocity v̄ and so are implicit in q_{k+1}; the method keeps order 2 and symmetry, each
    Newton iteration costing a Jacobian of the model's acceleration.
    """

    rule: str = eqx.field(static=True, default="trapezoid")
    root_finder: AbstractRootFinder = Newton()

    def __check_init__(self):
        if self.rule not in _RULES:
            raise ValueError(f"Variational.rule must be one of {_RULES}, got {self.rule!r}")

    def discrete_lagrangian(self, model, q0, q1, dt):
        """L_h(q0, q1) for the chosen quadrature rule."""
        v = (q1 - q0) / dt
        if self.rule == "trapezoid":
            return 0.5 * dt * (_lagrangian(model, q0, v) + _lagrangian(model, q1, v))
        return dt * _lagrangian(model, 0.5 * (q0 + q1), v)

    def discrete_forces(self, model, q0, q1, u, dt):
        """(F⁻, F⁺): the virtual work of the non-conservative forces over the step, split between its ends."""
        v = (q1 - q0) / dt
        if self.rule == "trapezoid":
            f0 = _nonconservative_force(model, q0, v, u)
            f1 = _nonconservative_force(model, q1, v, u)
            return 0.5 * dt * f0, 0.5 * dt * f1
        f = 0.5 * dt * _nonconservative_force(model, 0.5 * (q0 + q1), v, u)
        return f, f

    def init(self, model, q, qd, u):
        if not isinstance(model, AbstractLagrangianDynamics):
            raise TypeError(
                f"Variational needs the model's Lagrangian: {type(model).__name__} is not an "
                "AbstractLagrangianDynamics (it needs `mass_matrix(q)` and `potential_energy(q)`)"
            )
        return None

    def step(self, model, q, qd, u, dt, state):
        p0 = _momentum(model, q, qd)
        d1 = jax.grad(self.discrete_lagrangian, argnums=1)
        d2 = jax.grad(self.discrete_lagrangian, argnums=2)

        def residual(q1):
            f_minus, _ = self.discrete_forces(model, q, q1, u, dt)
            return p0 + d1(model, q, q1, dt) + f_minus

        q1, info = self.root_finder.solve(residual, q + dt * qd)
        _, f_plus = self.discrete_forces(model, q, q1, u, dt)
        p1 = d2(model, q, q1, dt) + f_plus
        qd1 = jnp.linalg.solve(model.mass_matrix(q1), p1).astype(q.dtype)
        return q1, qd1, None, info

    # The method's properties (see AbstractIntegrator), constant for this class.
    order = 2
    explicit = False
    symplectic = True
    symmetric = True

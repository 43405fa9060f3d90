"""Numerical analysis of the integrators: step matrices, stability, pitch, phase-space area, energy drift.

- Linear stability: `step_jacobian`, `step_matrix` (one step on u'' = −u as a 2×2 matrix), `amplification`,
  `frequency_ratio`, `area_factor`, `first_unstable`, `growth_rate`, `explicit_step_limit`.
- Long runs: `energy_error`, `return_distance`, `block_max`, `phase_area_ratio`, `is_bounded`,
  `largest_stable_step`, `zero_crossing_frequency`, `peak_frequency`.
- Bifurcations (how numerics moves a Hopf threshold): `spectral_radius_at_rest`, `hopf_onset`,
  `limit_cycle_amplitude`.

Every function takes one model and one integrator; what is batched over (step sizes, initial states) says so.
"""

from collections.abc import Callable

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from .integrators.base import AbstractIntegrator
from .rollout import rollout, rollout_solution
from .systems.base import AbstractDynamics, AbstractLagrangianDynamics
from .systems.mass_spring_chain import MassSpringChain

# --- one step as a matrix -------------------------------------------------------------------------------------


def step_jacobian(
    model, integrator: AbstractIntegrator, dt, q: Float[Array, " n"], qd: Float[Array, " n"]
) -> Float[Array, "2*n 2*n"]:
    """∂(q_{k+1}, q̇_{k+1}) / ∂(q_k, q̇_k) of one step (for multi-step carries: at the carry `init` gives)."""
    n = q.shape[0]

    def step(x):
        q_, qd_ = x[:n], x[n:]
        state = integrator.init(model, q_, qd_, None)
        q1, qd1, _, _ = integrator.step(model, q_, qd_, None, dt, state)
        return jnp.concatenate([q1, qd1])

    return jax.jacfwd(step)(jnp.concatenate([q, qd]))


def linear_oscillator(omega: float = 1.0) -> MassSpringChain:
    """u'' = −ω² u: one unit mass between two walls, each spring ω²/2.

    (Not `Duffing(omega1=0)`: its force ω0² u + 0 · u³ turns NaN once u³ overflows, |u| > 5.6e102, which an
    unstable scheme reaches.)
    """
    return MassSpringChain(1, mass=1.0, stiffness=0.5 * omega**2)


def step_matrix(integrator: AbstractIntegrator, wh) -> Float[Array, "2 2"]:
    """The matrix A of one step on u'' = −u with h = ωh: (u1, u1') = A (u0, u0').

    The system is linear, so the Jacobian of one step (forward-mode autodiff through the integrator, its Newton
    solve included) is the step itself.
    """
    zero = jnp.zeros(1)
    return step_jacobian(linear_oscillator(), integrator, wh, zero, zero)


def _step_matrices(integrator: AbstractIntegrator, whs) -> np.ndarray:
    whs = jnp.atleast_1d(jnp.asarray(whs))
    return np.asarray(jax.vmap(lambda x: step_matrix(integrator, x))(whs))


def amplification(integrator: AbstractIntegrator, whs: ArrayLike) -> np.ndarray:
    """The amplitude gain per step on u'' = −ω²u, max |eig A(ωh)|, for each ωh (shape (len(whs),)).

    Above 1 the scheme blows up, below 1 it damps, 1 keeps the amplitude.
    """
    return np.abs(np.linalg.eigvals(_step_matrices(integrator, whs))).max(axis=-1)


def frequency_ratio(integrator: AbstractIntegrator, whs: ArrayLike) -> np.ndarray:
    """ω̃/ω, numerical over true frequency on u'' = −ω²u: the eigenvalues of A(ωh) are e^{±iω̃h}, for each ωh."""
    angle = np.abs(np.angle(np.linalg.eigvals(_step_matrices(integrator, whs)))).max(axis=-1)
    return angle / np.atleast_1d(np.asarray(whs))


def area_factor(integrator: AbstractIntegrator, wh: float) -> float:
    """det A(ωh): how one step on u'' = −u scales phase-space area (1 for a symplectic method)."""
    return float(np.linalg.det(np.asarray(step_matrix(integrator, wh))))


def first_unstable(integrator: AbstractIntegrator, whs: ArrayLike, tol: float = 1e-9) -> float:
    """The first ωh of the grid `whs` whose gain exceeds 1 + tol (nan if none)."""
    whs = np.asarray(whs)
    above = np.nonzero(amplification(integrator, whs) > 1 + tol)[0]
    return float(whs[above[0]]) if len(above) else float("nan")


def growth_rate(integrator: AbstractIntegrator, wh: float, steps: int = 100) -> float:
    """(|y_N| / |y_0|)^(1/N) of an N-step rollout of u'' = −u with h = ωh from (u, u') = (1, 0)."""
    qs, qds = rollout(
        linear_oscillator(), integrator, jnp.ones(1), jnp.zeros(1), None, wh, steps=steps
    )
    return float(jnp.hypot(qs[-1, 0], qds[-1, 0]) ** (1 / steps))


def explicit_step_limit(model: AbstractLagrangianDynamics, q=None) -> float:
    """2 / √λ_max(M⁻¹K), K = ∇²V, at q (default 0): the central difference's (leapfrog's) stable step size.

    Every mode must have ω_p h < 2; the eigenvalues of M⁻¹K are those of the symmetric L⁻¹KL⁻ᵀ (M = LLᵀ).
    """
    q = jnp.zeros(model.n_dof) if q is None else jnp.asarray(q)
    chol = jnp.linalg.cholesky(model.mass_matrix(q))
    half = jsl.solve_triangular(chol, jax.hessian(model.potential_energy)(q), lower=True)
    sym = jsl.solve_triangular(chol, half.T, lower=True)
    lam = np.linalg.eigvalsh(np.asarray(0.5 * (sym + sym.T)))
    return float(2 / np.sqrt(lam.max()))


# --- long runs ------------------------------------------------------------------------------------------------


def energy_error(
    model: AbstractLagrangianDynamics, integrator: AbstractIntegrator, q0, qd0, dt, steps: int
) -> np.ndarray:
    """|E(q_k, q̇_k) − E(q_0, q̇_0)| for k = 1 … steps of an unforced rollout, shape (steps,)."""
    qs, qds = rollout(model, integrator, q0, qd0, None, dt, steps=steps)
    e = jax.vmap(model.energy)(qs[1:], qds[1:])
    return np.abs(np.asarray(e) - float(model.energy(q0, qd0)))


def return_distance(
    model: AbstractDynamics, integrator: AbstractIntegrator, q0, qd0, dt: float, steps: int
) -> float:
    """Σ |q − q0| + |q̇ − q̇0| after `steps` steps of +dt, then `steps` of −dt: 0 for a symmetric method.

    One rollout with dt of shape (2 steps,).
    """
    dts = jnp.concatenate([jnp.full(steps, dt), jnp.full(steps, -dt)])
    qs, qds = rollout(model, integrator, q0, qd0, None, dts)
    return float(jnp.sum(jnp.abs(qs[-1] - q0)) + jnp.sum(jnp.abs(qds[-1] - qd0)))


def block_max(err: ArrayLike, block: int) -> np.ndarray:
    """The largest value in each block of `block` consecutive steps (a trailing partial block is dropped)."""
    err = np.asarray(err)
    return err[: len(err) // block * block].reshape(-1, block).max(axis=1)


def final_states(
    model: AbstractDynamics, integrator: AbstractIntegrator, q0s, qd0s, dt, steps: int
) -> tuple[np.ndarray, np.ndarray]:
    """(q, q̇) after `steps` unforced steps from each of the 1-dof states (q0s[i], qd0s[i]) (vmapped), shape (N,)."""

    def one(q, qd):
        qs, qds = rollout(model, integrator, q[None], qd[None], None, dt, steps=steps)
        return qs[-1, 0], qds[-1, 0]

    q, qd = jax.vmap(one)(jnp.asarray(q0s), jnp.asarray(qd0s))
    return np.asarray(q), np.asarray(qd)


def polygon_area(u: ArrayLike, v: ArrayLike) -> float:
    """Area inside the closed polygon (u_i, v_i) (shoelace formula)."""
    u, v = np.asarray(u), np.asarray(v)
    return 0.5 * abs(np.dot(u, np.roll(v, -1)) - np.dot(v, np.roll(u, -1)))


def phase_area_ratio(
    model: AbstractDynamics, integrator: AbstractIntegrator, q0s, qd0s, dt, steps: int
) -> float:
    """Area inside the rim (q0s, qd0s) of a 1-dof phase-space region after `steps` steps, over the initial area.

    1 for the exact flow of a conservative system (Liouville) and for a symplectic method.
    """
    return polygon_area(*final_states(model, integrator, q0s, qd0s, dt, steps)) / polygon_area(
        q0s, qd0s
    )


def is_bounded(
    model: AbstractDynamics,
    integrator: AbstractIntegrator,
    q0,
    qd0,
    dt: float,
    steps: int,
    growth: float = 1e3,
) -> bool:
    """Whether an unforced rollout converges at every step and max |q| stays below `growth` × max |q0|."""
    sol = rollout_solution(model, integrator, q0, qd0, None, dt, steps=steps)
    peak = jnp.max(jnp.abs(sol.qs))
    return bool(sol.ok & (peak < growth * jnp.max(jnp.abs(q0))))


def largest_stable_step(
    model: AbstractDynamics,
    integrator: AbstractIntegrator,
    q0,
    qd0,
    bracket: tuple[float, float],
    *,
    iterations: int = 30,
    steps: int = 4000,
    growth: float = 1e3,
) -> float:
    """The largest dt for which `is_bounded(..., dt, steps, growth)` holds, by bisection inside `bracket`.

    The bracket must be bounded at its lower end and not at its upper end, else `ValueError`.
    """
    lo, hi = (float(b) for b in bracket)

    def ok(dt):
        return is_bounded(model, integrator, q0, qd0, dt, steps, growth)

    if not ok(lo) or ok(hi):
        raise ValueError(
            f"largest_stable_step: bracket [{lo}, {hi}] must be bounded at its lower end and not at its "
            "upper end"
        )
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


def zero_crossing_frequency(u: ArrayLike, dt: float) -> float:
    """The frequency of an oscillating signal u_k = u(k dt) from its zero crossings (linearly interpolated)."""
    u = np.asarray(u)
    i = np.nonzero(np.sign(u[1:]) != np.sign(u[:-1]))[0]
    t = (i + u[i] / (u[i] - u[i + 1])) * dt
    return (len(t) - 1) / (2 * (t[-1] - t[0]))


def peak_frequency(u: ArrayLike, dt: float) -> tuple[np.ndarray, np.ndarray, float]:
    """(frequencies, |spectrum|, frequency of the largest peak) of u_k = u(k dt) under a Hann window."""
    u = np.asarray(u)
    spec = np.abs(np.fft.rfft(u * np.hanning(len(u))))
    f = np.fft.rfftfreq(len(u), dt)
    return f, spec, float(f[np.argmax(spec)])


# --- bifurcations ---------------------------------------------------------------------------------------------


def spectral_radius_at_rest(model, integrator: AbstractIntegrator, dt) -> Float[Array, ""]:
    """max |eig| of the step Jacobian at the equilibrium q = q̇ = 0: > 1 means the rest state is unstable."""
    n = model.n_dof
    zero = jnp.zeros(n)
    return jnp.max(jnp.abs(jnp.linalg.eigvals(step_jacobian(model, integrator, dt, zero, zero))))


def hopf_onset(
    make_model: Callable[[Float[Array, ""]], AbstractDynamics],
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

"""Identification of a model's physical parameters through the solver, before any network is trained.

The physical parameters θ (friction coefficients, learned masses and lengths: every `Bounded` leaf the model
trains) are fitted by bounded nonlinear least squares on multi-step rollouts,

    min_θ  ½ Σ_windows Σ_steps ‖r(θ)‖²,   r = [λ_q^½ e_q / σ_q,  λ_q̇^½ (q̇ − q̇') / σ_q̇],   lower ≤ θ ≤ upper,

with e_q = 2 sin((q − q')/2) for angles (so ‖r‖² is `StateLoss`'s per-step term). A trust-region reflective
Gauss–Newton solve (scipy's `least_squares`, the Jacobian by forward-mode autodiff through the rollout) is
invariant to each parameter's scale: a coefficient that starts at 0 or 100× off reaches its value, which
first-order training with one step size for all does not (a Coulomb coefficient moved 0 → 0.0018 in 3,180 Adam
steps against a true 0.12). Parameters that end on a bound are reported: a fit pinned at a bound is a fit that
wanted to go further.
"""

import dataclasses
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Float, Int

from .._errors import LagnetError
from ..data.windows import WindowDataset
from ..integrators.base import AbstractIntegrator
from ..models.base import AbstractModel
from ..models.consistency import describe_violation, mass_matrix_violation
from ..models.physical import (
    _bounded_nodes,
    bound_hits,
    collapses,
    physical_names,
    physical_vector,
    with_physical_vector,
)
from .loss import StateLoss, as_batch, window_rollout


def copy_physics(model: AbstractModel, source: AbstractModel) -> AbstractModel:
    """`model` with the values of every `Bounded` parameter of `source` (its physics alone, e.g. the identified
    prior of `model`: the same system, friction and learned parameters, in the same order)."""
    mine, theirs = _bounded_nodes(model), _bounded_nodes(source)
    if len(mine) != len(theirs) or any(
        a.raw.shape != b.raw.shape for a, b in zip(mine, theirs, strict=False)
    ):
        raise ValueError("copy_physics: the source's physical parameters do not match the model's")
    # Whole nodes (value and step scale), in the model's dtype: raws alone would mean other values where the
    # scales differ.
    nodes = [
        jax.tree.map(lambda x, y: x.astype(y.dtype), b, a)
        for a, b in zip(mine, theirs, strict=True)
    ]
    return eqx.tree_at(_bounded_nodes, model, nodes)


class NonFiniteStart(LagnetError, ValueError):
    """The physics an identification starts from has non-finite rollouts: the message names its parameters."""


@dataclasses.dataclass(frozen=True)
class Identification:
    """The result of `identify`: the identified model, the loss before and after, the solver's account. The losses
    are of the fitted rollout residual (weighted by group when `identify` had groups, with the equation error's
    term when it had one; without the prior's term).
    `kept_start` says why the start was kept (None when the fit was): a fit that ends non-finite, worse than
    the start or outside the physical region (M(q) not ≻ 0) is never returned."""

    model: AbstractModel
    initial_loss: float
    loss: float
    iterations: int
    seconds: float
    message: str
    theta: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    theta0: np.ndarray | None = None
    kept_start: str | None = None

    def collapsed(self, factor: float = 1e3) -> list[dict]:
        """The entries of θ that moved by more than `factor` either way from a non-zero start (`collapses`)."""
        if self.theta0 is None:
            return []
        return collapses(physical_names(self.model), self.theta0, self.theta, factor)

    def at_bound(self, tolerance: float = 1e-9) -> list[dict]:
        """The entries of θ that ended on a bound: name, value, bound and side (`bound_hits`)."""
        return bound_hits(physical_names(self.model), self.theta, self.lower, self.upper, tolerance)


def _residual_fn(model, integrator, loss: StateLoss, batch, weights=None):
    """θ ↦ r(θ) / √N: the stacked scaled state errors of every window and step, so ‖·‖² is the mean loss;
    `weights` (windows, 2n), when given, multiply each window's errors per state variable."""
    q0, qd0, us, dts, q_true, qd_true = batch
    is_angle = jnp.asarray(loss.angles)

    def one(m, q0, qd0, us, dts, q_true, qd_true):
        qs, qds = window_rollout(m, integrator, q0, qd0, us, dts)
        dq = qs - q_true
        eq = jnp.where(is_angle, 2.0 * jnp.sin(dq / 2.0), dq) / loss.scale_q
        eqd = (qds - qd_true) / loss.scale_qd
        return jnp.concatenate(
            [jnp.sqrt(loss.weights_q) * eq, jnp.sqrt(loss.weights_qd) * eqd], axis=-1
        )

    count = q_true.shape[0] * q_true.shape[1]

    def residual(theta):
        m = with_physical_vector(model, theta)
        r = jax.vmap(lambda *w: one(m, *w))(q0, qd0, us, dts, q_true, qd_true)
        if weights is not None:
            r = r * weights[:, None, :]
        return jnp.ravel(r) / jnp.sqrt(count)

    return residual


def _collocation_fn(model, batch):
    """θ ↦ the equation error of every window's first step, r = [(q̇₁ − q̇₀)/Δt − ½(a(x₀) + a(x₁))] / σ_a / √N.

    No rollout: the model's accelerations at the measured states against the measured mean acceleration over
    the step (trapezoidal), so any parameter values give finite residuals, and friction coefficients (linear in
    the force) make it a linear problem. It brings a far-off start near enough for the rollout fit.
    """
    q0, qd0, us, dts, q_true, qd_true = batch
    dt = dts[:, 0][:, None]
    measured = (qd_true[:, 0] - qd0) / dt
    spread = jnp.std(measured, axis=0)
    scale = jnp.where(spread > 1e-12, spread, 1.0)
    count = q0.shape[0]

    def residual(theta):
        m = with_physical_vector(model, theta)
        a0 = jax.vmap(m.acceleration)(q0, qd0, us[:, 0])
        a1 = jax.vmap(m.acceleration)(q_true[:, 0], qd_true[:, 0], us[:, 0])
        return jnp.ravel((measured - 0.5 * (a0 + a1)) / scale) / jnp.sqrt(count)

    return residual


def _group_weights(
    r: Float[np.ndarray, "windows steps state"], groups: Int[np.ndarray, " windows"]
) -> Float[np.ndarray, "windows state"]:
    """Per window and state variable, s_all / s_group: the starting model's RMS error `r` over all windows over
    its RMS error over the window's group (1 where a group's error vanishes)."""
    square = np.mean(r**2, axis=1)  # (windows, state)
    overall = np.sqrt(np.mean(square, axis=0))
    weights = np.ones(square.shape)
    for g in np.unique(groups):
        mine = groups == g
        own = np.sqrt(np.mean(square[mine], axis=0))
        ok = np.isfinite(own) & (own > 1e-12 * (1.0 + overall))
        weights[mine] = np.where(ok, overall / np.where(ok, own, 1.0), 1.0)
    return weights


def _prior_fn(theta0, weight: float):
    """residual ↦ θ ↦ [residual(θ), √λ (θ − θ0) / |θ0|] over the entries with θ0 ≠ 0 (λ = 0: the residual)."""
    scale = np.abs(np.asarray(theta0, float))
    held = np.flatnonzero(scale > 0)
    if weight <= 0 or held.size == 0:
        return lambda residual: residual
    centre, size = jnp.asarray(theta0[held]), jnp.asarray(scale[held] / np.sqrt(weight))

    def wrap(residual):
        return lambda theta: jnp.concatenate(
            [
                residual(theta),
                ((theta[held] - centre.astype(theta.dtype)) / size).astype(theta.dtype),
            ]
        )

    return wrap


def _bounded_least_squares(residual, x, lower, upper, dtype, max_iterations: int):
    """One bounded trust-region least-squares solve of `residual` from x (Jacobians by forward-mode autodiff):
    (x, cost, evaluations, the solver's message), cost = ‖r‖² at the x returned, which is the start's unless
    the solve improved on it (None as message when the start's cost is not finite and nothing was solved)."""
    import scipy.optimize  # here: it takes a noticeable part of `import lagnet`

    fun, jac = jax.jit(residual), jax.jit(jax.jacfwd(residual))

    def f(x):
        return np.asarray(fun(jnp.asarray(x, dtype)), float)

    def j(x):
        return np.asarray(jac(jnp.asarray(x, dtype)), float)

    with np.errstate(over="ignore", invalid="ignore"):
        r0 = f(x)
        cost0 = float(r0 @ r0)
    if not np.isfinite(cost0):
        return x, cost0, 0, None
    result = scipy.optimize.least_squares(
        f,
        x,
        jac=j,
        bounds=(lower, upper),
        method="trf",
        x_scale="jac",
        max_nfev=max_iterations,
        ftol=1e-10,
        xtol=1e-10,
        gtol=1e-10,
    )
    if np.isfinite(result.cost) and 2 * result.cost <= cost0:
        return (
            np.clip(result.x, lower, upper),
            float(2 * result.cost),
            int(result.nfev),
            str(result.message),
        )
    return x, cost0, int(result.nfev), str(result.message)


def _loss_at(residual, theta, dtype) -> float:
    with np.errstate(over="ignore", invalid="ignore"):
        r = np.asarray(jax.jit(residual)(jnp.asarray(theta, dtype)), float)
        return float(np.sum(r**2))


class _Fit:
    """One identification's bookkeeping: the start θ0 within its bounds, the solver's evaluations and message,
    and the rule that a result is returned only if it is finite, no worse than the start on the fitted residual
    and physical (M(q) ≻ 0 on a grid)."""

    def __init__(self, model, dtype, max_iterations):
        self.started = time.perf_counter()
        self.model, self.dtype, self.max_iterations = model, dtype, max_iterations
        self.theta0, self.lower, self.upper = physical_vector(model)
        self.theta = np.clip(self.theta0, self.lower, self.upper)
        self.iterations, self.message = 0, "nothing to identify"

    def check_start(self, initial: float, what: str) -> None:
        if self.theta.size and not np.isfinite(initial):
            names = physical_names(self.model)
            raise NonFiniteStart(
                f"identification: the starting physics' {what} is not finite, so there is nothing to improve "
                "on; its parameters: "
                + ", ".join(f"{k} = {v:.6g}" for k, v in zip(names, self.theta, strict=True))
                + " (check the given values, their units and the time step)"
            )

    def solve(self, residual, x):
        x, cost, nfev, said = _bounded_least_squares(
            residual, x, self.lower, self.upper, self.dtype, self.max_iterations
        )
        self.iterations, self.message = self.iterations + nfev, said or self.message
        return x, cost

    def result(self, theta, residual, initial) -> Identification:
        """The `Identification` of `theta`, or of the start if `theta` breaks the rule (saying why)."""
        kept, final = None, initial
        if self.theta.size:
            final = _loss_at(residual, theta, self.dtype)
            violation = mass_matrix_violation(with_physical_vector(self.model, jnp.asarray(theta)))
            if not np.isfinite(final) or final > initial:
                kept = f"the fit ended at loss {final:.6g}, not below the start's {initial:.6g}"
            elif violation is not None:
                kept = f"the fitted physics is not physical: {describe_violation(violation)}"
            if kept is not None:
                theta, final = self.theta, initial
        return Identification(
            with_physical_vector(self.model, jnp.asarray(theta)) if theta.size else self.model,
            initial,
            final,
            self.iterations,
            time.perf_counter() - self.started,
            self.message,
            theta,
            self.lower,
            self.upper,
            self.theta,
            kept,
        )


def identify(
    model: AbstractModel,
    integrator: AbstractIntegrator,
    windows: WindowDataset,
    loss: StateLoss,
    *,
    max_windows: int = 1024,
    max_iterations: int = 100,
    groups: Int[np.ndarray, " windows"] | None = None,
    prior_weight: float = 0.0,
    first_stage: np.ndarray | None = None,
    equation_error: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None,
    equation_error_weight: float = 0.0,
) -> Identification:
    """Fit `model`'s trained physical parameters (its `Bounded` leaves) to `windows` through the solver.

    Pass the physics alone (e.g. a PINODE without its network): every other trainable leaf is held. Up to
    `max_windows` windows, evenly spread over the data, enter the fit; `max_iterations` bounds the solver's
    function evaluations. With `groups` (one label per window, e.g. its recording), each group's errors are
    divided, per state variable, by the starting model's RMS error on that group (and multiplied by its RMS error
    on all windows, so the loss keeps its scale): a recording where every model errs a lot (a chaotic one) then
    does not decide the fit alone, and each group counts by its number of windows. `prior_weight` λ adds
    λ Σ_i ((θ_i − θ0_i) / θ0_i)² over the parameters that start away from 0 (a Gaussian prior of relative width
    λ^(-1/2) around the given values: a MAP fit that moves them only as far as the data insists). Returns the
    identified model and the solver's account (`Identification`); a start whose rollouts are not finite is a
    `NonFiniteStart` error naming its parameters. `first_stage`: θ from another fit (e.g.
    `identify_equation_error`'s) to start the rollout fit from instead of the collocation stage; the model's own
    values stay the start the result is judged against, and the prior's centre. `equation_error`: measured
    samples (q, q̇, q̈, u) whose inverse-dynamics residual (`identify_equation_error`'s) joins the rollouts' with
    weight w = `equation_error_weight`, scaled so that at the start it counts w times the rollout loss: an
    output-error fit held towards what the samples' torques say (w > 0); the result is then judged on that sum.
    """
    n = len(windows)
    pick = np.unique(np.linspace(0, n - 1, min(n, max_windows)).round().astype(int))
    batch = as_batch(windows.batch(windows.starts[jnp.asarray(pick)]))
    fit = _Fit(model, jnp.result_type(batch[0].dtype, jnp.float32), max_iterations)
    rollout_residual = _residual_fn(model, integrator, loss, batch)
    if groups is not None and fit.theta.size:
        with np.errstate(over="ignore", invalid="ignore"):
            r = np.asarray(jax.jit(rollout_residual)(jnp.asarray(fit.theta, fit.dtype)), float)
        r = r.reshape(len(pick), -1, 2 * batch[0].shape[1])
        weights = _group_weights(r, np.asarray(groups)[pick])
        rollout_residual = _residual_fn(
            model, integrator, loss, batch, jnp.asarray(weights, fit.dtype)
        )
    initial = _loss_at(rollout_residual, fit.theta, fit.dtype)
    fit.check_start(initial, "rollouts on the training windows")
    if equation_error is not None and equation_error_weight > 0 and fit.theta.size:
        rollout_residual, initial = _with_equation_error(
            rollout_residual, initial, fit, model, equation_error, equation_error_weight
        )
    theta = fit.theta
    if theta.size:
        # The equation error first, then the rollouts through the solver: a start far off (a damping 100× too
        # large) can make a k-step rollout diverge, where the equation error stays finite and brings it near.
        prior = _prior_fn(theta, prior_weight)
        if first_stage is None:
            theta, _ = fit.solve(prior(_collocation_fn(model, batch)), theta)
        else:
            theta = np.clip(np.asarray(first_stage, float), fit.lower, fit.upper)
        theta, _ = fit.solve(prior(rollout_residual), theta)
    return fit.result(theta, rollout_residual, initial)


def _with_equation_error(rollout_residual, rollout_loss, fit, model, samples, weight):
    """θ ↦ [rollout residual, c · equation error], c² = w · (rollout loss / equation-error loss) at the start;
    with the start's loss of that sum."""
    residual = _equation_error_fn(model, *_picked_samples(samples, fit.dtype))
    ee_loss = _loss_at(residual, fit.theta, fit.dtype)
    fit.check_start(ee_loss, "equation error on the samples")
    c = float(np.sqrt(weight * rollout_loss / ee_loss)) if ee_loss > 0 else 0.0

    def both(theta):
        return jnp.concatenate([rollout_residual(theta), c * residual(theta)])

    return both, rollout_loss + c**2 * ee_loss


def _picked_samples(samples, dtype, max_samples: int = 20000):
    """Up to `max_samples` of the samples (q, q̇, q̈, u), evenly spread, as arrays of `dtype`."""
    n = np.asarray(samples[0]).shape[0]
    pick = np.unique(np.linspace(0, n - 1, min(n, max_samples)).round().astype(int))
    return [jnp.asarray(np.asarray(x)[pick], dtype) for x in samples]


def _equation_error_fn(model, q, qd, qdd, u):
    """θ ↦ the inverse-dynamics equation error at each sample, r = M(q) (q̈ − a_θ(q, q̇, u)) / σ / √N, with q̈ the
    measured (filtered) acceleration: B u + Q − C q̇ − G − M q̈ in torque units, per coordinate divided by the
    spread σ of the measured M q̈ − B u (so each joint counts alike)."""
    count = q.shape[0]

    def torque_error(m):
        def one(q, qd, qdd, u):
            return m.mass_matrix(q) @ (qdd - m.acceleration(q, qd, u))

        return jax.vmap(one)(q, qd, qdd, u)

    spread = jnp.std(torque_error(model), axis=0)
    scale = jnp.where(spread > 1e-12, spread, 1.0)

    def residual(theta):
        m = with_physical_vector(model, theta)
        return jnp.ravel(torque_error(m) / scale.astype(theta.dtype)) / jnp.sqrt(count)

    return residual


def identify_equation_error(
    model: AbstractModel,
    q: Float[np.ndarray, "samples n"],
    qd: Float[np.ndarray, "samples n"],
    qdd: Float[np.ndarray, "samples n"],
    u: Float[np.ndarray, "samples m"],
    *,
    max_samples: int = 20000,
    max_iterations: int = 100,
    prior_weight: float = 0.0,
) -> Identification:
    """The classical equation-error fit, what labs identify rigs with: the physical parameters minimising the
    inverse-dynamics residual ‖M(q) q̈ + C(q, q̇) q̇ + G(q) − B(q) u − Q_f(q̇)‖² over measured samples, q̈ a filtered
    derivative of the measured velocities (`lagnet.data.sample_statistics`). No rollout: it is linear least
    squares for parameters the dynamics are linear in (lumped inertias, friction coefficients) and a bounded
    Gauss–Newton solve otherwise, within the parameters' bounds and `consistent` region. Up to `max_samples`
    samples, evenly spread, enter the fit. The start is returned (with the reason) unless the fit is finite,
    better on the equation error and physical."""
    leaves = jax.tree_util.tree_leaves(eqx.filter(model, eqx.is_inexact_array))
    dtype = jnp.result_type(*(leaves or [jnp.float32]), jnp.float32)
    arrays = _picked_samples((q, qd, qdd, u), dtype, max_samples)
    fit = _Fit(model, dtype, max_iterations)
    residual = _equation_error_fn(model, *arrays)
    initial = _loss_at(residual, fit.theta, dtype)
    fit.check_start(initial, "equation error on the training samples")
    theta = fit.theta
    if theta.size:
        theta, _ = fit.solve(_prior_fn(theta, prior_weight)(residual), theta)
    return fit.result(theta, residual, initial)

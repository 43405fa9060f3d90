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

from ..data.windows import WindowDataset
from ..integrators.base import AbstractIntegrator
from ..models.base import AbstractModel
from ..systems.friction import AbstractFriction
from ..systems.parameters import Bounded
from .loss import StateLoss, as_batch, window_rollout


def _is_bounded(x) -> bool:
    return isinstance(x, Bounded)


def _trained_bounded(model: AbstractModel) -> list[int]:
    """The positions, among the model's `Bounded` nodes in tree order, of those the model trains."""
    nodes = jax.tree_util.tree_leaves(model, is_leaf=_is_bounded)
    masks = jax.tree_util.tree_leaves(model.trainable(), is_leaf=_is_bounded)
    bounded = [x for x in nodes if _is_bounded(x)]
    flags = [m for m in masks if _is_bounded(m)]
    return [i for i, m in enumerate(flags) if m.raw is True and bounded[i].raw.size > 0]


def _bounded_nodes(model) -> list[Bounded]:
    return [x for x in jax.tree_util.tree_leaves(model, is_leaf=_is_bounded) if _is_bounded(x)]


def physical_vector(model: AbstractModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The trained physical parameters' values θ as one vector, with their lower and upper bounds."""
    nodes = _bounded_nodes(model)
    values, lower, upper = [], [], []
    for i in _trained_bounded(model):
        p = nodes[i]
        # Flattened: a matrix parameter (a URDF's body_pos, one row per body) is as many entries of θ.
        v = np.asarray(p.value, float)
        values.append(v.ravel())
        for out, bound, none in ((lower, p.lower, -np.inf), (upper, p.upper, np.inf)):
            out.append(
                np.broadcast_to(
                    np.asarray(none if bound is None else bound, float), v.shape
                ).ravel()
            )
    if not values:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    return np.concatenate(values), np.concatenate(lower), np.concatenate(upper)


def physical_names(model: AbstractModel) -> list[str]:
    """A name for each entry of θ (as `physical_vector` orders them): "friction.coulomb.x", "parameters.m1", …"""

    def is_node(x):
        return _is_bounded(x) or isinstance(x, AbstractFriction)

    leaves = jax.tree_util.tree_flatten_with_path(model, is_leaf=is_node)[0]
    # Each friction model names its coefficients by term and coordinate (its `on`), in its own tree order.
    names_of = {}
    for path, x in leaves:
        if isinstance(x, AbstractFriction):
            inner = jax.tree_util.tree_flatten_with_path(x, is_leaf=_is_bounded)[0]
            where = {id(b): k for k, b in x.coefficients.items()}
            for sub, b in inner:
                term = where.get(id(b))
                if term is not None:
                    coords = [model.coordinate_names[j] for j in x.on[term]]
                    names_of[jax.tree_util.keystr(path + sub)] = [
                        f"friction.{term}.{c}" for c in coords
                    ]
    paths = [
        jax.tree_util.keystr(p)
        for p, x in jax.tree_util.tree_flatten_with_path(model, is_leaf=_is_bounded)[0]
        if _is_bounded(x)
    ]
    nodes = _bounded_nodes(model)
    names = []
    for i in _trained_bounded(model):
        size = nodes[i].raw.size
        plain = paths[i].replace("[", ".").replace("]", "").replace("'", "").lstrip(".")
        given = names_of.get(paths[i])
        if given is not None and len(given) == size:
            names += given
        elif size == 1:
            names.append(plain)
        else:
            names += [f"{plain}[{j}]" for j in range(size)]
    return names


def with_physical_vector(model: AbstractModel, theta) -> AbstractModel:
    """`model` with its trained physical parameters set to the values θ (as `physical_vector` orders them)."""
    positions = _trained_bounded(model)
    if not positions:
        return model
    nodes = _bounded_nodes(model)
    raws, offset = [], 0
    for i in positions:
        p = nodes[i]
        size = p.raw.size
        value = jnp.reshape(theta[offset : offset + size], p.raw.shape)
        raws.append((value / p.scale).astype(p.raw.dtype))
        offset += size

    def where(m):
        found = _bounded_nodes(m)
        return [found[i].raw for i in positions]

    return eqx.tree_at(where, model, raws)


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


@dataclasses.dataclass(frozen=True)
class Identification:
    """The result of `identify`: the identified model, the loss before and after, the solver's account. The losses
    are of the fitted residual: weighted by group when `identify` had groups, and `loss` includes the prior's term
    when it had a prior (0 at the start)."""

    model: AbstractModel
    initial_loss: float
    loss: float
    iterations: int
    seconds: float
    message: str
    theta: np.ndarray
    lower: np.ndarray
    upper: np.ndarray

    def at_bound(self, tolerance: float = 1e-9) -> list[dict]:
        """The entries of θ that ended on a bound: name, value, bound and side ("lower" | "upper")."""
        span = tolerance * (1.0 + np.abs(self.theta))
        low = np.isfinite(self.lower) & (self.theta <= self.lower + span)
        high = np.isfinite(self.upper) & (self.theta >= self.upper - span)
        out = []
        for name, v, lo, hi, a, b in zip(
            physical_names(self.model), self.theta, self.lower, self.upper, low, high, strict=True
        ):
            if a or b:
                out.append(
                    {
                        "name": name,
                        "value": float(v),
                        "bound": float(lo if a else hi),
                        "side": "lower" if a else "upper",
                    }
                )
        return out


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
    identified model and the solver's account (`Identification`).
    """
    start = time.perf_counter()
    theta0, lower, upper = physical_vector(model)
    n = len(windows)
    pick = np.unique(np.linspace(0, n - 1, min(n, max_windows)).round().astype(int))
    batch = as_batch(windows.batch(windows.starts[jnp.asarray(pick)]))
    dtype = jnp.result_type(batch[0].dtype, jnp.float32)
    theta = np.clip(theta0, lower, upper)
    iterations, message = 0, "nothing to identify"

    def solve(residual, x):
        nonlocal iterations, message
        x, cost, nfev, said = _bounded_least_squares(
            residual, x, lower, upper, dtype, max_iterations
        )
        iterations, message = iterations + nfev, said or message
        return x, cost

    rollout_residual = _residual_fn(model, integrator, loss, batch)
    with np.errstate(over="ignore", invalid="ignore"):
        r = np.asarray(jax.jit(rollout_residual)(jnp.asarray(theta, dtype)), float)
        if groups is not None and theta.size:
            # The weights come from the same evaluation: the weighted residual at the start is r · w.
            r = r.reshape(len(pick), -1, 2 * batch[0].shape[1])
            weights = _group_weights(r, np.asarray(groups)[pick])
            r = r * weights[:, None, :]
            rollout_residual = _residual_fn(
                model, integrator, loss, batch, jnp.asarray(weights, dtype)
            )
        initial = final = float(np.sum(r**2))
    if theta.size:
        # The equation error first, then the rollouts through the solver: a start far off (a damping 100× too
        # large) can make a k-step rollout diverge, where the equation error stays finite and brings it near.
        prior = _prior_fn(theta, prior_weight)
        theta, _ = solve(prior(_collocation_fn(model, batch)), theta)
        theta, final = solve(prior(rollout_residual), theta)
    return Identification(
        with_physical_vector(model, jnp.asarray(theta)) if theta.size else model,
        initial,
        final,
        iterations,
        time.perf_counter() - start,
        message,
        theta,
        lower,
        upper,
    )

"""Least-squares identification of joint friction from data (PINODE eq. 13, any friction shape)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..systems.base import AbstractSystem
from ..systems.friction import TERMS, JointFriction


@eqx.filter_jit
def _residual(system, q, qd, qdd, u, known):
    def one(q, qd, qdd, u):
        r = system.mass_matrix(q) @ qdd - system.generalised_force(q, qd, u)
        return r if known is None else r - known(qd)

    return jax.vmap(one)(q, qd, qdd, u)


def residual_force(
    system: AbstractSystem,
    q: np.ndarray,
    qd: np.ndarray,
    qdd: np.ndarray,
    u: np.ndarray,
    known: JointFriction | None = None,
) -> np.ndarray:
    """r = M(q) q̈ − (B u − C q̇ − G) − Q_known(q̇) on samples (N, n): the force the known physics leaves unexplained.

    One compiled program for all samples: evaluated op by op, each of the model's small operations would be
    compiled on its own, which took seconds before a run could start.
    """
    args = (jnp.asarray(a) for a in (q, qd, qdd, u))
    return np.asarray(_residual(system, *args, known))


def fit_friction(
    system: AbstractSystem,
    q: np.ndarray,
    qd: np.ndarray,
    qdd: np.ndarray,
    u: np.ndarray,
    template: JointFriction,
    *,
    known: JointFriction | None = None,
) -> JointFriction:
    """`template`'s terms (shape, ε, which coordinates) with coefficients fitted by non-negative least squares:

        r = M(q) q̈ + C(q, q̇) q̇ + G(q) − B(q) u ≈ Q_f(q̇) = −Σ_terms coefficient · regressor(q̇),

    one small problem per coordinate over its listed terms, from samples q, q̇, q̈ (N, n) and u (N, m) (q̈ e.g. a
    smoothed derivative of the measured velocities). Non-negative: a friction term never creates energy.
    `known` friction (given coefficients) is held fixed: the fit explains the residual r − Q_known.
    """
    import scipy.optimize  # here: it takes a noticeable part of `import lagnet`

    residual = residual_force(system, q, qd, qdd, u, known)
    columns = template.regressors(qd)
    fitted: dict[str, dict[int, float]] = {t: {} for t in TERMS}
    for i in range(system.n_dof):
        terms = [t for t in TERMS if i in template.on.get(t, ())]
        if not terms:
            continue
        a = np.stack([columns[t][:, i] for t in terms], axis=1)
        # r_i = −A x with x ≥ 0  ⇔  min |A x + r_i|.
        coeffs, _ = scipy.optimize.nnls(a, -residual[:, i])
        for t, v in zip(terms, coeffs, strict=True):
            fitted[t][i] = float(v)
    return template.with_values({t: fitted[t] for t in TERMS if t in template.on})

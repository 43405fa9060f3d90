"""Least-squares identification of joint friction from data (PINODE eq. 13, any friction shape)."""

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize

from ..systems.base import AbstractSystem
from ..systems.friction import TERMS, JointFriction


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
    residual = np.asarray(
        jax.vmap(
            lambda q_, qd_, qdd_, u_: (
                system.mass_matrix(q_) @ qdd_ - system.generalised_force(q_, qd_, u_)
            )
        )(jnp.asarray(q), jnp.asarray(qd), jnp.asarray(qdd), jnp.asarray(u))
    )
    if known is not None:
        residual = residual - np.asarray(jax.vmap(known)(jnp.asarray(qd)))
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
    return JointFriction(
        template.n,
        **{t: fitted[t] for t in TERMS if t in template.on},
        shape=template.shape,
        epsilon=template.epsilon,
        stribeck_velocity=template.stribeck_velocity,
    )

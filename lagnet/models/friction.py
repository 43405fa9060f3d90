"""Parametric friction: Coulomb and viscous terms per coordinate, fitted by least squares (PINODE eq. 13)."""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import scipy.optimize

from .._types import Array, Float, Force, QDot


class Friction(eqx.Module):
    """Q_i = −c_i tanh(q̇_i / ε) − b_i q̇_i for the coordinates where each term is switched on.

    tanh(·/ε) is a smoothed sign(q̇): the integrators and the gradients need a Lipschitz force; ε (m/s or rad/s)
    is far below the velocities that matter. With c = (m_tot g μ_c, ·) on the cart and b on the pole this is the
    paper's pure ODE friction (eq. 13).
    """

    coulomb: Float[Array, " n"]
    viscous: Float[Array, " n"]
    epsilon: float = eqx.field(static=True, default=1e-2)

    def __call__(self, qd: QDot) -> Force:
        return -self.coulomb * jnp.tanh(qd / self.epsilon) - self.viscous * qd

    @classmethod
    def zeros(cls, n: int, epsilon: float = 1e-2) -> "Friction":
        return cls(jnp.zeros(n), jnp.zeros(n), epsilon)


def fit_friction(
    system,
    q: np.ndarray,
    qd: np.ndarray,
    qdd: np.ndarray,
    u: np.ndarray,
    *,
    coulomb: tuple[bool, ...],
    viscous: tuple[bool, ...],
    epsilon: float = 1e-2,
) -> Friction:
    """Least squares (non-negative) fit of the friction coefficients to the residual generalised force.

        r = M(q) q̈ + C(q, q̇) q̇ + G(q) − B(q) u ≈ −c tanh(q̇/ε) − b q̇,   c, b ≥ 0,

    one small problem per coordinate, from samples q, q̇, q̈ (N, n) and u (N, m) (q̈ e.g. from differences of the
    measured velocities).
    """
    import jax

    residual = np.asarray(
        jax.vmap(
            lambda q_, qd_, qdd_, u_: (
                system.mass_matrix(q_) @ qdd_ - system.generalised_force(q_, qd_, u_)
            )
        )(jnp.asarray(q), jnp.asarray(qd), jnp.asarray(qdd), jnp.asarray(u))
    )
    n = system.n_dof
    c, b = np.zeros(n), np.zeros(n)
    qd = np.asarray(qd)
    for i in range(n):
        columns, which = [], []
        if coulomb[i]:
            columns.append(np.tanh(qd[:, i] / epsilon))
            which.append("c")
        if viscous[i]:
            columns.append(qd[:, i])
            which.append("b")
        if not columns:
            continue
        # r_i = −A x with x ≥ 0  ⇔  min |A x + r_i|.
        coeffs, _ = scipy.optimize.nnls(np.stack(columns, axis=1), -residual[:, i])
        for w, v in zip(which, coeffs, strict=True):
            (c if w == "c" else b)[i] = v
    return Friction(jnp.asarray(c), jnp.asarray(b), epsilon)

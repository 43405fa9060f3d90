"""Metrics of rollouts against measurements: window errors, energy drift, reversibility, valid prediction time.

Functions take arrays for one trajectory or window; batch with `jax.vmap`.
"""

import jax
import jax.numpy as jnp
import numpy as np

from ..data.angles import wrap
from ..rollout import rollout


def angle_aware_difference(pred, true, angles):
    """pred − true, with angle coordinates wrapped to [−π, π) (a prediction one turn off is exact)."""
    d = pred - true
    is_angle = jnp.asarray(angles, bool)
    return jnp.where(is_angle, wrap(d), d)


def state_abs_error(q_pred, qd_pred, q_true, qd_true, angles):
    """|error| of the state (q, q̇) per coordinate, shape (..., 2n): angles compared as angles."""
    return jnp.concatenate(
        [jnp.abs(angle_aware_difference(q_pred, q_true, angles)), jnp.abs(qd_pred - qd_true)],
        axis=-1,
    )


def window_errors(model, integrator, windows, angles):
    """Absolute state errors of k-step rollouts from measured initial states with the recorded inputs.

    `windows` is a batched `lagnet.data.Window` (q, q̇ of shape (W, k + 1, n), u (W, k, m), dt (W, k)).
    Returns (W, k, 2n): step j of window w is the error after j + 1 steps.
    """

    def one(q, qd, u, dt):
        qs, qds = rollout(model, integrator, q[0], qd[0], u, dt, throw=False)
        return state_abs_error(qs[1:], qds[1:], q[1:], qd[1:], angles)

    return jax.vmap(one)(windows.q, windows.qd, windows.u, windows.dt)


def hold_errors(windows, angles):
    """The "hold the initial state" baseline: predict (q_0, q̇_0) for every step of the window."""
    q0 = windows.q[:, :1]
    qd0 = windows.qd[:, :1]
    return state_abs_error(
        jnp.broadcast_to(q0, windows.q[:, 1:].shape),
        jnp.broadcast_to(qd0, windows.qd[:, 1:].shape),
        windows.q[:, 1:],
        windows.qd[:, 1:],
        angles,
    )


def summarise_errors(errors, state_names) -> dict:
    """Per state variable: mean/std/median of the per-window mean |error| over the horizon, and of the final step."""
    e = np.asarray(errors)
    per_window = e.mean(axis=1)
    final = e[:, -1]
    out = {}
    for i, name in enumerate(state_names):
        out[name] = {
            "mean": float(per_window[:, i].mean()),
            "std": float(per_window[:, i].std()),
            "median": float(np.median(per_window[:, i])),
            "final_mean": float(final[:, i].mean()),
        }
    return out


def energy_error(energy_fn, qs, qds):
    """E(t) − E(0) along a trajectory, with its max |·| and the drift rate (least-squares slope per step)."""
    energies = jax.vmap(energy_fn)(qs, qds)
    de = energies - energies[0]
    steps = jnp.arange(de.shape[0], dtype=de.dtype)
    slope = jnp.polyfit(steps, de, 1)[0]
    return de, jnp.max(jnp.abs(de)), slope


def reversibility_error(model, integrator, q0, qd0, us, dt):
    """Run `steps` forward, then the same inputs reversed with −dt: the distance from the start."""
    qs, qds = rollout(model, integrator, q0, qd0, us, dt)
    qb, qdb = rollout(model, integrator, qs[-1], qds[-1], us[::-1], -jnp.asarray(dt))
    return jnp.max(jnp.abs(qb[-1] - q0)) + jnp.max(jnp.abs(qdb[-1] - qd0))


def valid_prediction_time(errors, scale, tol: float = 0.5):
    """Steps until the normalised error first exceeds `tol`; k if never.

        NRMSE_j = sqrt(mean_i (e_ij / σ_i)²)  over the state variables i at step j,

    with σ the variables' spread in the data (errors (k, 2n), scale (2n,)). One noisy velocity sample does not end
    the valid time; a rollout that has lost the motion does.
    """
    nrmse = jnp.sqrt(jnp.mean((errors / scale) ** 2, axis=-1))
    exceeded = nrmse > tol
    k = errors.shape[0]
    return jnp.where(jnp.any(exceeded), jnp.argmax(exceeded), k)

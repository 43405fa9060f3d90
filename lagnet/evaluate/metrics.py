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


def horizon_errors(errors, ends):
    """The error over each window up to its horizon, and at the horizon.

        mean_w = (1 / K_w) Σ_{j < K_w} |e_wj|,    end_w = |e_w,K_w−1|,

    with K_w = `ends[w]` the steps window w needs to reach the horizon (all equal for a horizon in steps).
    `errors` (W, k, 2n) as from `window_errors`; returns two (W, 2n) arrays.
    """
    e = np.asarray(errors)
    ends = np.asarray(ends, int)
    inside = np.arange(e.shape[1])[None, :] < ends[:, None]
    # np.where, not a product: steps past a window's end may be padding that is not finite.
    mean = np.where(inside[..., None], e, 0.0).sum(1) / ends[:, None]
    return mean, e[np.arange(e.shape[0]), ends - 1]


def summarise_errors(errors, state_names, ends=None) -> dict:
    """Per state variable: mean/std/median/quartiles of the per-window mean |error| up to the horizon, and the
    same of the |error| at the horizon (`final_*`). `ends`: the steps each window needs (default: all of them)."""
    e = np.asarray(errors)
    ends = np.full(e.shape[0], e.shape[1]) if ends is None else ends
    per_window, final = horizon_errors(e, ends)
    out = {}
    for i, name in enumerate(state_names):
        out[name] = {}
        for prefix, v in (("", per_window[:, i]), ("final_", final[:, i])):
            out[name] |= {
                f"{prefix}mean": float(v.mean()),
                f"{prefix}std": float(v.std()),
                f"{prefix}median": float(np.median(v)),
                f"{prefix}p25": float(np.percentile(v, 25)),
                f"{prefix}p75": float(np.percentile(v, 75)),
            }
    return out


def error_versus_time(
    errors, elapsed, lengths=None, points: int = 200
) -> tuple[np.ndarray, np.ndarray]:
    """The mean |error| over windows against the time since the windows' start, on a log-spaced time grid.

    Each window's error is interpolated linearly in time (from 0 at t = 0: the rollout starts at the measured
    state) and averaged over the windows that reach that time, so recordings at different sample rates are
    compared at equal times, not at equal step counts. `errors` (W, k, 2n), `elapsed` (W, k); `lengths` (W,)
    each window's own steps (default k). The grid ends where the shortest window ends.
    Returns (t, mean_error) of shapes (P,) and (P, 2n).
    """
    e, el = np.asarray(errors), np.asarray(elapsed)
    lengths = np.full(e.shape[0], e.shape[1]) if lengths is None else np.asarray(lengths)
    # Up to the time every window reaches, so each point is a mean over all windows.
    t = np.geomspace(el[:, 0].min(), el[np.arange(len(lengths)), lengths - 1].min(), points)
    total = np.zeros((points, e.shape[2]))
    count = np.zeros(points)
    for w, n in enumerate(lengths):
        reach = t <= el[w, n - 1]
        times = np.concatenate([[0.0], el[w, :n]])
        for i in range(e.shape[2]):
            total[reach, i] += np.interp(t[reach], times, np.concatenate([[0.0], e[w, :n, i]]))
        count += reach
    return t, total / np.maximum(count, 1)[:, None]


def energy_error(energy_fn, qs, qds):
    """E(t) − E(0) along a trajectory, with its max |·| and the drift rate (least-squares slope per step)."""
    energies = jax.vmap(energy_fn)(qs, qds)
    de = energies - energies[0]
    steps = jnp.arange(de.shape[0], dtype=de.dtype)
    slope = jnp.polyfit(steps, de, 1)[0]
    return de, jnp.max(jnp.abs(de)), slope


def reversibility_error(model, integrator, q0, qd0, us, dt):
    """Run `steps` forward, then the same inputs reversed with −dt: the distance from the start,

    max_i |q_back,i − q0,i| + max_i |q̇_back,i − q̇0,i|   (mixed units; 0 for a time-reversible method
    on conservative dynamics; friction and learned damping make it large by design; NaN if a rollout fails).
    """
    qs, qds = rollout(model, integrator, q0, qd0, us, dt, throw=False)
    qb, qdb = rollout(model, integrator, qs[-1], qds[-1], us[::-1], -jnp.asarray(dt), throw=False)
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


def amplitudes(q0, qd0, angles) -> np.ndarray:
    """How far each initial state lies from rest, per state variable: (|q|, |q̇|), shape (W, 2n).

    An angle's amplitude is its wrapped distance from the hanging equilibrium 0 (so 2π − 0.1 counts as 0.1).
    """
    q0, qd0 = np.asarray(q0, float), np.asarray(qd0, float)
    q = np.where(np.asarray(angles, bool), wrap(q0), q0)
    return np.concatenate([np.abs(q), np.abs(qd0)], axis=-1)


def quantile_edges(values, bins: int) -> np.ndarray:
    """Edges of `bins` bins holding about equally many of `values` (fewer where values repeat)."""
    edges = np.unique(np.quantile(np.asarray(values, float), np.linspace(0.0, 1.0, bins + 1)))
    return edges if edges.size > 1 else np.array([edges[0], edges[0]])


def in_bin(values, low: float, high: float, last: bool) -> np.ndarray:
    """low ≤ v < high, the last bin closed on the right so that the largest value is counted."""
    v = np.asarray(values, float)
    return (v >= low) & ((v <= high) if last else (v < high))


def in_region(states, centres, radii, wrapped) -> np.ndarray:
    """Which states lie within every radius of the region's centre: |s_i − c_i| ≤ r_i for each listed variable
    i, with the distance of an angle taken modulo 2π. `states` (W, 2n); `centres`, `radii`, `wrapped` (2n,)
    with NaN radius for the variables the region does not constrain."""
    s = np.asarray(states, float)
    d = s - np.asarray(centres, float)
    d = np.abs(np.where(np.asarray(wrapped, bool), wrap(d), d))
    radii = np.asarray(radii, float)
    return np.all(np.isnan(radii) | (d <= np.nan_to_num(radii, nan=np.inf)), axis=-1)


def covered_arc(theta) -> tuple[float, float]:
    """The shortest arc [start, start + length] (radians, start in [−π, π)) holding every angle of `theta`:
    the circle less its largest gap between samples."""
    a = np.sort(wrap(np.asarray(theta, float).ravel()))
    gaps = np.diff(np.concatenate([a, a[:1] + 2 * np.pi]))
    i = int(np.argmax(gaps))
    start = a[(i + 1) % a.size]
    return float(start), float(2 * np.pi - gaps[i])


def outside_share(train, test, is_angle: bool) -> tuple[float, tuple[float, float]]:
    """The share of `test` values outside the range the `train` values span, and that range (low, high).

    For an angle the range is the shortest arc holding the training angles (`covered_arc`; high may exceed π
    when the arc crosses ±π), so that states around the upright ±π are not read as a range of 2π.
    """
    train, test = np.asarray(train, float).ravel(), np.asarray(test, float).ravel()
    if is_angle:
        start, length = covered_arc(train)
        # A tolerance of rounding: the training set's own end points are inside.
        outside = wrap(test - start, 0.0) > length + 1e-9
        return float(outside.mean()), (start, start + length)
    low, high = float(train.min()), float(train.max())
    return float(((test < low) | (test > high)).mean()), (low, high)

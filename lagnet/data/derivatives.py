"""Smoothed time derivatives of measured signals, and a robust column-wise spread.

`smoothed_derivative` is a local polynomial (Savitzky–Golay) least-squares derivative on a possibly non-uniform
time grid. For every row i it fits, over a window W_i of w = 2k + 1 consecutive samples (centred on i; shifted
inwards at the ends, so that every row sees w samples), the polynomial of degree d

    p_i(τ) = c_0 + c_1 τ + … + c_d τ^d,    τ_j = (t_j − t_i) / h,
    c = argmin Σ_{j ∈ W_i} (p_i(τ_j) − y_j)²,

and returns ẏ_i = p_i'(0) / h = c_1 / h (h = k × the median step, only to keep the fit well conditioned). With
V_i the (w, d + 1) Vandermonde matrix of the τ_j this is a weighted sum of the window's samples,

    ẏ_i = (1/h) e_1ᵀ (V_iᵀ V_i)⁻¹ V_iᵀ y_{W_i},

with weights computed once per row (one batched (d + 1) × (d + 1) solve) and shared by all columns. It is exact
for polynomials of degree ≤ d on any grid. With d = 2 and w = 3 it is the parabola through three samples, i.e.
exactly the second-order non-uniform central difference of `np.gradient` in the interior (and its second-order
one-sided form at the two ends): a window of at most three samples leaves coarsely sampled data as they were.

The window is given in seconds (`window`: the widest 2k + 1 samples spanning at most that long at the median
step, k ≥ 1) or in samples (`half_width` = k). On a uniform grid with d = 2 the derivative of sin(ω t) comes out
low by about (ω Δt)² (3k² + 3k − 1) / 30 ≈ (ω T)² / 40 for a window spanning T = 2kΔt, while white noise on y
is averaged down (its variance in ẏ falls as k⁻³). The default T ≤ 30 ms is 1 % low at 3.4 Hz and 10 % low at
11 Hz, above a pendulum rig's motion; it smooths 500 Hz data over 15 samples (k = 7) and 200 Hz data over 7,
and leaves data at 50–100 Hz with three samples, i.e. plain central differences.

`robust_spread` is a trimmed standard deviation (see there for why not the median absolute deviation).
"""

from statistics import NormalDist

import numpy as np
from jaxtyping import Float

from .._errors import DataError

# A few tens of milliseconds: averages out sensor noise at hundreds of Hz, and is three samples (plain central
# differences) at the 50–100 Hz of the simulated data sets (five samples at 100 Hz would span 40 ms).
DEFAULT_WINDOW = 0.03

# Each tail trimmed by the robust spread: more than a 1 % (even one-sided) share of wild samples.
DEFAULT_TRIM = 0.025


def window_half_width(t: Float[np.ndarray, " rows"], window: float) -> int:
    """The largest k whose 2k + 1 samples span at most `window` seconds at the median step of `t` (at least 1:
    three samples)."""
    if not window > 0:
        raise DataError(f"the derivative window must be > 0 s, got {window}")
    step = float(np.median(np.diff(t)))
    return max(1, int(np.floor(window / (2 * step) * (1 + 1e-9))))


def smoothed_derivative(
    y: Float[np.ndarray, "rows ..."],
    t: Float[np.ndarray, " rows"],
    window: float | None = DEFAULT_WINDOW,
    *,
    half_width: int | None = None,
    degree: int = 2,
) -> Float[np.ndarray, "rows ..."]:
    """dy/dt of samples y (N,) or (N, n) at strictly increasing times t (N,), by a local least-squares polynomial
    of `degree` over 2k + 1 samples (see the module docstring for the equation). k is `half_width` if given, else
    from `window` seconds. A recording shorter than the window uses all its samples (and a lower degree if it
    has too few)."""
    y = np.asarray(y, float)
    t = np.asarray(t, float)
    n_rows = t.shape[0]
    if y.shape[0] != n_rows:
        raise DataError(f"y has {y.shape[0]} rows but t has {n_rows}")
    if n_rows < 2:
        raise DataError(f"a derivative needs at least 2 samples, got {n_rows}")
    if np.any(np.diff(t) <= 0):
        raise DataError("the time stamps must be strictly increasing")
    if degree < 1:
        raise DataError(f"the polynomial degree must be ≥ 1, got {degree}")
    if half_width is None:
        if window is None:
            raise DataError("give the window in seconds (window) or in samples (half_width)")
        half_width = window_half_width(t, window)
    if half_width < 1:
        raise DataError(f"half_width must be ≥ 1, got {half_width}")
    width = min(2 * half_width + 1, n_rows)
    degree = min(degree, width - 1)

    # Row i's window starts at clip(i − k, 0, N − w): centred, shifted inwards at the ends.
    start = np.clip(np.arange(n_rows) - half_width, 0, n_rows - width)
    idx = start[:, None] + np.arange(width)  # (N, w)
    h = half_width * float(np.median(np.diff(t)))
    tau = (t[idx] - t[:, None]) / h  # (N, w)
    # VᵀV from the window's moments Σ_j τ_j^m (a Hankel matrix), then the weights Σ_m x_m τ^m by Horner.
    moments = np.empty((n_rows, 2 * degree + 1))
    power = np.ones_like(tau)
    for m in range(2 * degree + 1):
        moments[:, m] = power.sum(axis=1)
        power *= tau
    order = np.arange(degree + 1)
    gram = moments[:, order[:, None] + order]  # (N, d + 1, d + 1)
    e1 = np.zeros((n_rows, degree + 1, 1))
    e1[:, 1] = 1.0
    x = np.linalg.solve(gram, e1)[..., 0]  # (N, d + 1): (VᵀV)⁻¹ e_1 (VᵀV is symmetric)
    weights = np.zeros_like(tau)
    for m in range(degree, -1, -1):
        weights = weights * tau + x[:, m : m + 1]
    weights /= h  # (N, w)
    flat = y.reshape(n_rows, -1)
    out = np.einsum("nw,nwc->nc", weights, flat[idx])
    return out.reshape(y.shape)


def _trimmed_normal_std(trim: float) -> float:
    """The standard deviation of a unit normal with each tail beyond its `trim` quantile removed."""
    if trim == 0:
        return 1.0
    z = NormalDist().inv_cdf(1 - trim)
    density = NormalDist().pdf(z)
    return float(np.sqrt(1 - 2 * z * density / (1 - 2 * trim)))


def robust_spread(
    x: Float[np.ndarray, "rows ..."], trim: float = DEFAULT_TRIM
) -> Float[np.ndarray, "..."]:
    """The column-wise standard deviation after dropping the `trim` share of samples in each tail, scaled to
    estimate σ for a normal sample (÷ the trimmed unit normal's std: 0.871 at trim = 2.5 %).

    Why a trimmed std and not 1.4826 × the median absolute deviation: both ignore a few wild samples (spikes of
    a differentiated quantised signal, stick–slip jumps), but the MAD also ignores everything beyond the middle
    half of the samples. An output scale must bound what the network has to supply: a force that is large only
    some of the time (a contact, friction breaking away, 10–25 % of the samples) gives a small or zero MAD, and a
    tanh output would then saturate. The trimmed std keeps every sample but the extreme 2 × `trim`, so it is
    insensitive to up to `trim` (2.5 %) outliers even all on one side, and still sees a force that acts on
    more samples than that."""
    if not 0 <= trim < 0.5:
        raise DataError(f"trim must be in [0, 0.5), got {trim}")
    x = np.asarray(x, float)
    n_rows = x.shape[0]
    cut = int(np.floor(trim * n_rows))
    if n_rows - 2 * cut < 2:
        cut = 0
    kept = np.sort(x, axis=0)[cut : n_rows - cut]
    return np.asarray(np.std(kept, axis=0) / _trimmed_normal_std(cut / n_rows))


def mad_spread(x: Float[np.ndarray, "rows ..."]) -> Float[np.ndarray, "..."]:
    """1.4826 × the column-wise median absolute deviation from the median (σ for a normal sample)."""
    x = np.asarray(x, float)
    return np.asarray(1.4826 * np.median(np.abs(x - np.median(x, axis=0)), axis=0))

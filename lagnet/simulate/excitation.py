"""Excitation signals for system identification: PRBS, chirp and multisine inputs, sampled at a step dt.

Host-side numpy (they are schedules of a recording, drawn before the closed loop runs), each a pure function of
its arguments and an explicit `np.random.Generator` where it is random.
"""

import numpy as np

# Feedback taps of maximum-length linear feedback shift registers, x^k + … + 1 (XOR of the tapped bits): each
# gives a sequence of period 2^k − 1 (checked in tests/test_generate.py).
MLS_TAPS: dict[int, tuple[int, ...]] = {
    3: (3, 2),
    4: (4, 3),
    5: (5, 3),
    6: (6, 5),
    7: (7, 6),
    8: (8, 6, 5, 4),
    9: (9, 5),
    10: (10, 7),
    11: (11, 9),
    12: (12, 6, 4, 1),
    13: (13, 4, 3, 1),
    14: (14, 5, 3, 1),
    15: (15, 14),
    16: (16, 15, 13, 4),
}


def mls(order: int, *, seed: int = 1) -> np.ndarray:
    """One period (2^order − 1,) of a maximum-length sequence in {−1, +1}, from a Fibonacci LFSR.

    `seed` is the register's nonzero start (it shifts the sequence in time).
    """
    if order not in MLS_TAPS:
        raise ValueError(f"mls: order must be one of {sorted(MLS_TAPS)}, got {order}")
    state = int(seed) % (2**order)
    if state == 0:
        raise ValueError(
            "mls: seed must not be a multiple of 2^order (the all-zero register stays zero)"
        )
    taps = MLS_TAPS[order]
    out = np.empty(2**order - 1)
    for i in range(out.size):
        out[i] = 1.0 if state & 1 else -1.0
        bit = 0
        for t in taps:
            bit ^= (state >> (order - t)) & 1
        state = (state >> 1) | (bit << (order - 1))
    return out


def prbs(
    n: int, *, amplitude: float, hold: int = 1, order: int = 9, rng: np.random.Generator
) -> np.ndarray:
    """A pseudo-random binary sequence (n,): ±amplitude, each bit of a maximum-length sequence held `hold` samples.

    Its power spectrum is flat to within the hold's sinc² envelope, sin²(π f hold dt)/(π f hold dt)², up to
    about 1/(2 hold dt) (−3.9 dB there), with its first zero at 1/(hold dt); a random start in the sequence.
    """
    if hold < 1:
        raise ValueError(f"prbs: hold must be >= 1 sample, got {hold}")
    bits = mls(order)
    start = int(rng.integers(bits.size))
    count = -(-n // hold) + 1
    seq = np.roll(bits, -start)[np.arange(count) % bits.size]
    return amplitude * np.repeat(seq, hold)[:n]


def chirp(
    n: int,
    dt: float,
    *,
    amplitude: float,
    f0: float,
    f1: float,
    logarithmic: bool = False,
    phase: float = 0.0,
) -> np.ndarray:
    """A sweep (n,) from f0 to f1 Hz over the n samples: A sin(2π ∫ f(t) dt + phase),

    f(t) = f0 + (f1 − f0) t / T (linear) or f0 (f1 / f0)^{t/T} (logarithmic), T = n dt.
    """
    if not (0 < f0 and 0 < f1 and max(f0, f1) < 0.5 / dt):
        raise ValueError(
            f"chirp: need 0 < f0, f1 < the Nyquist frequency {0.5 / dt:g} Hz, got {f0:g}, {f1:g}"
        )
    t = dt * np.arange(n)
    span = n * dt
    if logarithmic:
        k = np.log(f1 / f0) / span
        cycles = f0 * np.expm1(k * t) / k if k != 0 else f0 * t
    else:
        cycles = f0 * t + 0.5 * (f1 - f0) * t**2 / span
    return amplitude * np.sin(2 * np.pi * cycles + phase)


def multisine(
    n: int,
    dt: float,
    *,
    amplitude: float,
    lines: np.ndarray,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """A periodic multisine (n,): Σ_k cos(2π l_k t / T + φ_k), scaled to peak `amplitude`, T = n dt.

    Power only at the chosen lines l_k (integers in 1 … n/2 − 1: whole periods in the n samples, so each is one
    bin of the n-point DFT). Phases: Schroeder's φ_k = −π k (k − 1) / K (a low crest factor) without `rng`,
    uniform random with it.
    """
    lines = np.asarray(lines, dtype=int)
    if lines.ndim != 1 or lines.size == 0 or lines.min() < 1 or lines.max() >= n / 2:
        raise ValueError(f"multisine: lines must be integers in 1 … {n // 2 - 1}, got {lines}")
    if np.unique(lines).size != lines.size:
        raise ValueError(f"multisine: lines must be distinct, got {lines}")
    k = np.arange(1, lines.size + 1)
    if rng is None:
        phases = -np.pi * k * (k - 1) / lines.size
    else:
        phases = rng.uniform(0, 2 * np.pi, lines.size)
    t = np.arange(n) / n
    u = np.cos(2 * np.pi * np.outer(t, lines) + phases).sum(axis=1)
    return amplitude * u / np.max(np.abs(u))


def band_lines(n: int, dt: float, f_low: float, f_high: float, count: int) -> np.ndarray:
    """`count` distinct DFT lines of an n-sample period spread log-uniformly over [f_low, f_high] Hz."""
    resolution = 1.0 / (n * dt)
    lo = max(1, int(np.ceil(f_low / resolution)))
    hi = min(n // 2 - 1, int(np.floor(f_high / resolution)))
    if hi < lo:
        raise ValueError(
            f"band_lines: no DFT line of a {n * dt:g} s period within [{f_low:g}, {f_high:g}] Hz"
        )
    return np.unique(np.round(np.geomspace(lo, hi, count)).astype(int))

"""Why energy-conserving schemes pay off: the cubic oscillator at 44.1 kHz, and the Duffing spectra.

u'' = −ω0² u − ω1⁴ u³ (lagnet's `Duffing`). The lecture's conservative scheme discretizes the cubic term as
u² μ_t· u (μ_t· u = (u^{n+1} + u^{n−1})/2), which keeps the update explicit:

    u^{n+1} = (2 − ω0²k²) u^n / (1 + ω1⁴k²(u^n)²/2) − u^{n−1},
    𝔥 = ½ (δ_t− u)² + ½ ω0² u^n u^{n−1} + ¼ ω1⁴ (u^n)² (u^{n−1})² ≥ 0, conserved,

so it is unconditionally stable: `lagnet.integrators.ConservativeDuffing`, on the state (u^n, δ_t− u^n), stepped
by `lagnet.rollout`.

Race (pure cubic, ω1 = √(20π), k = 1/44100, u0 = 704.8165, 900 000 samples ≈ 20 s): the lecture's three
algebraically identical ways of writing the explicit δ_tt u = −ω1⁴u³ blow up at times decided by rounding alone.
They are run here in NumPy, with the lecture's arithmetic (NumPy's scalar `**`, no fused multiply-add), which is
what reproduces its times; the same formulas under XLA (which fuses multiply-adds and computes u**2 as u·u) round
differently and blow up at other times, also printed. lagnet's own `Leapfrog` is a fourth way to write the same
scheme; average acceleration `Newmark(¼, ½)` is implicit (a Newton solve per step) and bounded, but not
energy-conserving on this nonlinear spring.

Spectra: ω0 = 2π·100, ω1 = √ω0, 16384 samples of the conservative scheme from u0 = 0.01, 1, 2.5, 6: the pitch
rises and partials appear (the printed numbers are the spectral peaks).

Run:  .venv/bin/python experiments/lecture_duffing.py   → experiments/out/lecture_duffing.png
"""

import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _common import COL, report, save  # noqa: E402

from lagnet.integrator_analysis import peak_frequency  # noqa: E402
from lagnet.integrators import ConservativeDuffing, Leapfrog, Newmark  # noqa: E402
from lagnet.rollout import rollout_solution  # noqa: E402
from lagnet.systems import Duffing  # noqa: E402

FS = 44100
K = 1 / FS
W1, U0, N = float(np.sqrt(20 * np.pi)), 704.8165, 900_000
C4 = W1**4 * K**2
BLOCK = 4410  # 0.1 s
LIMIT = 1e4  # "blew up": |u| > LIMIT, as in the lecture

# The lecture's three ways to write the explicit update u^{n+1} = (2 − c (u^n)²) u^n − u^{n−1}, c = ω1⁴k².
EXPLICIT_FORMS = {
    "(2 - cu²)u": lambda u1, u2: (2 - C4 * u1**2) * u1 - u2,
    "(2 - cuu)u": lambda u1, u2: (2 - C4 * u1 * u1) * u1 - u2,
    "2u - cu³": lambda u1, u2: 2 * u1 - C4 * u1**3 - u2,
}
# From running the lecture's NumPy snippet ("Why energy-conserving schemes pay off"): blow-up times (s), the
# conservative scheme's largest |u| and largest relative change of 𝔥 over the 20 s.
LECTURE_BLOWUP = {"(2 - cu²)u": 14.9, "(2 - cuu)u": 11.5, "2u - cu³": 17.4}
LECTURE_CONSERVATIVE_PEAK = 798.4638
LECTURE_ENERGY_CHANGE = 3.3e-13
# From running the lecture's spectra snippet: the frequency (Hz) of the largest spectral peak for each u0.
LECTURE_SPECTRAL_PEAK = {0.01: 99.59, 1.0: 131.89, 2.5: 234.17, 6.0: 519.49}


def numpy_form(update, n: int = N, u0: float = U0) -> np.ndarray:
    """The lecture's loop, verbatim arithmetic: u^0 = u^1 = u0, stopped after the first |u| > LIMIT."""
    u = [u0, u0]
    for _ in range(n - 2):
        u.append(update(u[-1], u[-2]))
        if abs(u[-1]) > LIMIT:
            break
    return np.array(u)


def xla_form(update, n: int = N, u0: float = U0) -> np.ndarray:
    """The same recursion as one `lax.scan` (XLA's rounding), cut after the first |u| > LIMIT."""

    def body(carry, _):
        u1, u2 = carry
        u = update(u1, u2)
        return (u, u1), u

    _, us = jax.lax.scan(body, (jnp.float64(u0), jnp.float64(u0)), None, length=n - 2)
    return _cut(np.concatenate([[u0, u0], np.asarray(us)]))


def _cut(u: np.ndarray) -> np.ndarray:
    bad = np.nonzero(~(np.abs(u) <= LIMIT))[0]
    return u if len(bad) == 0 else u[: bad[0] + 1]


def lagnet_run(integrator, system: Duffing, u0: float, n: int):
    """The lecture's sequence u^0 = u^1 = u0, …, u^{n−1} from a lagnet rollout, cut after the first |u| > LIMIT.

    `ConservativeDuffing` starts from (u0, δ_t− u = 0); a one-step method (leapfrog, Newmark) from the velocity that
    makes its first step land on u0 again, q̇0 = −(h/2) a(u0) (exact for leapfrog: its u^n obey the same
    recursion). Returns (u, qs, qds) with qs, qds the rollout's states.
    """
    q0 = jnp.array([u0])
    if isinstance(integrator, ConservativeDuffing):
        qd0, steps = jnp.zeros(1), n - 2
    else:
        qd0, steps = -0.5 * K * system.acceleration(q0, jnp.zeros(1)), n - 1
    sol = rollout_solution(system, integrator, q0, qd0, None, K, steps=steps)
    u = np.asarray(sol.qs[:, 0])
    if isinstance(integrator, ConservativeDuffing):
        u = np.concatenate([[u0], u])
    return _cut(u), sol.qs, sol.qds


def blowup_time(u: np.ndarray, n: int = N) -> float | None:
    """len(u) · k as in the lecture, or None if the run reached all n samples."""
    return None if len(u) == n else len(u) * K


def block_peaks(u: np.ndarray) -> np.ndarray:
    return np.array([np.abs(u[i : i + BLOCK]).max() for i in range(0, len(u) - 1, BLOCK)])


def spectral_peak(u0: float, n: int = 16384) -> tuple[np.ndarray, np.ndarray, float]:
    """(frequencies, |spectrum|, peak frequency) of the conservative scheme on the lecture's Duffing."""
    w0 = 2 * np.pi * 100
    u, _, _ = lagnet_run(ConservativeDuffing(), Duffing(omega0=w0, omega1=np.sqrt(w0)), u0, n)
    return peak_frequency(u, K)


def main():
    cubic = Duffing(omega0=0.0, omega1=W1)
    runs, seconds = {}, {}
    for name, update in EXPLICIT_FORMS.items():
        runs[f"lecture's {name} (NumPy)"] = numpy_form(update)
    for name, integ in [
        ("lagnet Leapfrog", Leapfrog()),
        ("lagnet Newmark (1/4, 1/2)", Newmark(0.25, 0.5)),
        ("conservative (ConservativeDuffing)", ConservativeDuffing()),
    ]:
        t0 = time.perf_counter()
        runs[name], qs, qds = lagnet_run(integ, cubic, U0, N)
        seconds[name] = time.perf_counter() - t0
        if name.startswith("conservative"):
            h = np.asarray(ConservativeDuffing.discrete_energy(cubic, qs, qds, K))
        if name.startswith("lagnet Newmark"):
            e = np.asarray(jax.vmap(cubic.energy)(qs, qds))
            newmark_energy = float(np.abs(e / e[0] - 1).max())
    xla = {name: xla_form(update) for name, update in EXPLICIT_FORMS.items()}
    h_change = (h - h[0]) / h[0]

    fig, axs = plt.subplots(3, 1, figsize=(6.4, 8.2), height_ratios=[1.4, 1, 1.2])
    colours = ["#f1948a", "#e74c3c", "#922b21", COL["leapfrog"], COL["average acceleration"], "k"]
    for (name, u), col in zip(runs.items(), colours, strict=True):
        t_blow = blowup_time(u)
        peaks = block_peaks(u)
        label = name + (f": blows up at {t_blow:.1f} s" if t_blow else ": bounded")
        ls = "--" if "Newmark" in name else "-"
        axs[0].plot(0.1 * np.arange(len(peaks)), peaks, ls, color=col, lw=1.5, label=label)
    axs[0].set_ylim(0, 2600)
    axs[0].set_xlabel("time (s)")
    axs[0].set_ylabel("peak |u| per 0.1 s")
    axs[0].set_title("cubic oscillator u'' = −ω1⁴u³ at 44.1 kHz, u0 = 704.8165", fontsize=9)
    axs[0].legend(fontsize=6.5, loc="upper left")

    t = np.arange(len(h_change)) * K
    axs[1].plot(t[::50], h_change[::50], ".", color="k", ms=1)
    axs[1].set_xlabel("time (s)")
    axs[1].set_ylabel(r"relative change of $\mathfrak{h}$")
    axs[1].set_title("conservative scheme (lagnet rollout): rounding only", fontsize=9)

    peaks_hz = {}
    for i, (u0, col) in enumerate(
        [(0.01, "k"), (1.0, "steelblue"), (2.5, "darkorange"), (6.0, "firebrick")]
    ):
        f, spec, peaks_hz[u0] = spectral_peak(u0)
        db = 20 * np.log10(spec / spec.max() + 1e-9) - 70 * i
        axs[2].plot(f, db, color=col, lw=1, label=f"u0 = {u0:g}: peak {peaks_hz[u0]:.0f} Hz")
    axs[2].set_xlim(0, 2200)
    axs[2].set_ylim(-350, 5)
    axs[2].set_xlabel("frequency (Hz)")
    axs[2].set_ylabel("dB (offset by 70 per curve)")
    axs[2].set_title(
        "Duffing ω0 = 2π·100, ω1 = √ω0, conservative scheme: pitch rises, partials appear",
        fontsize=9,
    )
    axs[2].legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    save(fig, "lecture_duffing")

    def fmt(t_blow):
        return "bounded (20.4 s)" if t_blow is None else f"blows up at {t_blow:.1f} s"

    rows = [
        (f"explicit {name}, lecture's arithmetic (NumPy)", f"blows up at {LECTURE_BLOWUP[name]} s",
         fmt(blowup_time(runs[f"lecture's {name} (NumPy)"])))
        for name in EXPLICIT_FORMS
    ]  # fmt: skip
    rows += [
        (f"explicit {name}, XLA's rounding (lax.scan)", f"blows up at {LECTURE_BLOWUP[name]} s",
         fmt(blowup_time(u)))
        for name, u in zip(EXPLICIT_FORMS, xla.values(), strict=True)
    ]  # fmt: skip
    rows += [
        ("explicit, lagnet Leapfrog", "(a 4th way to write it)", fmt(blowup_time(runs["lagnet Leapfrog"]))),
        ("conservative: bounded", "bounded", fmt(blowup_time(runs["conservative (ConservativeDuffing)"]))),
        ("conservative: max |u|", f"{LECTURE_CONSERVATIVE_PEAK:.4f}",
         f"{np.abs(runs['conservative (ConservativeDuffing)']).max():.4f}"),
        ("conservative: max |relative change of 𝔥|", f"{LECTURE_ENERGY_CHANGE:.1e}",
         f"{np.abs(h_change).max():.1e}"),
        ("Newmark (1/4, 1/2): bounded, max |E/E0 - 1|", "(not in the lecture)",
         f"{fmt(blowup_time(runs['lagnet Newmark (1/4, 1/2)']))}, {newmark_energy:.2f}"),
        ("cost of 900 000 steps: conservative | Newmark (s)", "no extra cost",
         f"{seconds['conservative (ConservativeDuffing)']:.1f} | {seconds['lagnet Newmark (1/4, 1/2)']:.1f}"),
    ]  # fmt: skip
    rows += [
        (
            f"spectra: peak frequency, u0 = {u0:g} (Hz)",
            f"{LECTURE_SPECTRAL_PEAK[u0]:.2f}",
            f"{p:.2f}",
        )
        for u0, p in peaks_hz.items()
    ]
    report("cubic oscillator at 44.1 kHz and Duffing spectra", rows)


if __name__ == "__main__":
    main()

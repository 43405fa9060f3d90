"""`lagnet.integrator_analysis` (the integrators' numerical analysis) against the lecture's numbers, on short runs.

The lecture's numbers are those its own NumPy snippets produce (seeds/000); the experiments/lecture_*.py scripts
print the same comparisons at full length and draw the figures.
"""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from lagnet import integrator_analysis as analysis  # noqa: E402
from lagnet.integrators import (  # noqa: E402
    RK4,
    BackwardEuler,
    ConservativeDuffing,
    ForwardEuler,
    Leapfrog,
    Newmark,
    SymplecticEuler,
)
from lagnet.rollout import rollout, rollout_solution  # noqa: E402
from lagnet.systems import Duffing, MassSpringChain, Pendulum  # noqa: E402

# --- energy drift and reversibility: pendulum θ'' = −sin θ from θ0 = 2 at rest, h = 0.3 ----------------------

PENDULUM = Pendulum()
Q0, QD0, H, BLOCK = jnp.array([2.0]), jnp.array([0.0]), 0.3, 100
# The worst |E − E0| in the last block of 100 steps before t = 3000, and the distance from the start after 1000
# steps forward and 1000 back.
LECTURE_ENERGY = {"RK4": 7.085e-02, "Newmark (1/4, 1/2)": 1.459e-02, "leapfrog": 2.444e-02}
LECTURE_RETURN = {
    "RK4": 1.027e00,
    "symplectic Euler": 4.896e-01,
    "damped Newmark (0.3025, 0.6)": 2.000e00,
}


def energy_error(integrator, steps):
    return analysis.energy_error(PENDULUM, integrator, Q0, QD0, H, steps)


@pytest.mark.parametrize(
    "name, integrator",
    [("RK4", RK4()), ("Newmark (1/4, 1/2)", Newmark(0.25, 0.5)), ("leapfrog", Leapfrog())],
)
def test_energy_race_matches_lecture(name, integrator):
    # The full race to t = 3000 (10 000 steps): same schemes, same numbers to the printed 4 digits.
    last = analysis.block_max(energy_error(integrator, 10_000), BLOCK)[-1]
    assert last == pytest.approx(LECTURE_ENERGY[name], rel=1e-3)


def test_energy_race_shape():
    # Over the first 300 time units: RK4 starts best and drifts, leapfrog's error stays flat.
    err_rk4 = analysis.block_max(energy_error(RK4(), 1000), BLOCK)
    err_lf = analysis.block_max(energy_error(Leapfrog(), 1000), BLOCK)
    assert err_rk4[0] < err_lf[0] and np.all(np.diff(err_rk4) > 0)
    assert np.ptp(err_lf) < 1e-2 * err_lf.max()  # flat up to where the block catches the peak


def test_reversibility_bars_match_lecture():
    def back(integrator):
        return analysis.return_distance(PENDULUM, integrator, Q0, QD0, H, 1000)

    for integrator in (
        Leapfrog(),
        Newmark(0.25, 0.5),
    ):  # symmetric: back to the start up to rounding
        assert back(integrator) < 1e-11
    schemes = {
        "RK4": RK4(),
        "symplectic Euler": SymplecticEuler(),
        "damped Newmark (0.3025, 0.6)": Newmark(beta=0.3025, gamma=0.6),
    }
    for name, integrator in schemes.items():
        assert back(integrator) == pytest.approx(LECTURE_RETURN[name], rel=1e-3)


# --- phase-space area --------------------------------------------------------------------------------------


def test_phase_area_matches_lecture():
    # The lecture's disk (θ, θ') = (1.2 + 0.3 cos s, 0.3 sin s), 400 rim states, 12 steps of h = 0.3; its panel
    # titles print the area ratios to 2 digits.
    s = np.linspace(0, 2 * np.pi, 400, endpoint=False)
    u0, v0 = 1.2 + 0.3 * np.cos(s), 0.3 * np.sin(s)
    printed = {ForwardEuler(): "1.72", Leapfrog(): "1.00", BackwardEuler(): "0.44"}
    for integrator, area in printed.items():
        ratio = analysis.phase_area_ratio(PENDULUM, integrator, u0, v0, H, 12)
        assert f"{ratio:.2f}" == area
    # Per step on u'' = −u: the lecture's formulas for det(∂ step/∂(u, u')).
    factors = {
        ForwardEuler(): 1 + H**2,
        BackwardEuler(): 1 / (1 + H**2),
        RK4(): 1 - H**6 / 72 + H**8 / 576,
        Leapfrog(): 1.0,
        SymplecticEuler(): 1.0,
        Newmark(0.25, 0.5): 1.0,
    }
    for integrator, formula in factors.items():
        assert analysis.area_factor(integrator, H) == pytest.approx(formula, rel=1e-12), integrator


# --- Newmark's amplitude gain --------------------------------------------------------------------------------

CHECK_WH = (0.5, 1.0, 1.9, 2.5, 4.0)
# The lecture's `newmark_matrix`: max |eig| at ωh = 0.5, 1, 1.9, 2.5, 4.
LECTURE_GAIN = {
    (0.25, 0.5): (1.0, 1.0, 1.0, 1.0, 1.0),
    (0.0, 0.5): (1.0, 1.0, 1.0, 4.0, 13.928203),
    (0.3025, 0.6): (0.988311, 0.960846, 0.909637, 0.885316, 0.852072),
}


def test_newmark_gain_matches_lecture():
    for (b, g), lecture in LECTURE_GAIN.items():
        gain = analysis.amplification(Newmark(b, g), np.array(CHECK_WH))
        np.testing.assert_allclose(gain, lecture, atol=1e-6)
    # The first point of the lecture's grid where central difference gains more than 1.
    assert analysis.first_unstable(Newmark(0.0, 0.5), np.linspace(0.01, 4, 400)) == pytest.approx(
        2.01
    )
    # The rollout agrees with the matrix: central difference at ωh = 2.5 grows by 4 per step.
    assert analysis.growth_rate(Newmark(0.0, 0.5), 2.5, steps=60) == pytest.approx(4.0, rel=2e-2)


# --- pitch -------------------------------------------------------------------------------------------------


def test_pitch_at_8khz_matches_lecture():
    fs, f8 = 44100.0, 8000.0
    x8 = 2 * np.pi * f8 / fs  # ωh of an 8 kHz partial at 44.1 kHz
    schemes = {  # closed form of ω̃/ω, and the lecture's figure label 100 (ω̃/ω − 1)
        Leapfrog(): (lambda x: 2 * np.arcsin(x / 2) / x, "+6.4%"),
        Newmark(0.25, 0.5): (lambda x: 2 * np.arctan(x / 2) / x, "-9.1%"),
    }
    for integrator, (closed, percent) in schemes.items():
        r = float(analysis.frequency_ratio(integrator, x8)[0])
        assert r == pytest.approx(closed(x8), rel=1e-10)
        assert f"{100 * (r - 1):+.1f}%" == percent
        steps = int(round(0.1 * fs))
        qs, _ = rollout(
            analysis.linear_oscillator(2 * np.pi * f8),
            integrator,
            jnp.ones(1),
            jnp.zeros(1),
            None,
            1 / fs,
            steps=steps,
        )
        heard = analysis.zero_crossing_frequency(qs[:, 0], 1 / fs)
        assert heard == pytest.approx(f8 * closed(x8), rel=1e-4)


# --- the explicit step limit of a chain ----------------------------------------------------------------------


def rope(n):
    """Total mass 1, unit stiffness, cut into n masses."""
    return MassSpringChain(n, mass=1.0 / n, stiffness=float(n + 1))


def test_chain_step_limit_shrinks_like_one_over_n():
    for n in (8, 32):
        theory = 1 / (np.sqrt(n * (n + 1)) * np.sin(n * np.pi / (2 * n + 2)))
        k_max = analysis.explicit_step_limit(rope(n))
        assert k_max == pytest.approx(theory, rel=1e-12)
        q0 = jnp.asarray(np.random.default_rng(0).standard_normal(n))
        measured = analysis.largest_stable_step(
            rope(n), Leapfrog(), q0, jnp.zeros(n), (0.5 * k_max, 1.5 * k_max), iterations=14,
            steps=2000,
        )  # fmt: skip
        assert measured == pytest.approx(theory, rel=1e-3)
    k64, k128 = analysis.explicit_step_limit(rope(64)), analysis.explicit_step_limit(rope(128))
    assert k64 / k128 == pytest.approx(2, rel=1e-2)
    q0 = jnp.asarray(np.random.default_rng(0).standard_normal(16))
    k16 = analysis.explicit_step_limit(rope(16))
    assert analysis.is_bounded(rope(16), Newmark(0.25, 0.5), q0, jnp.zeros(16), 10 * k16, 200)


# --- Duffing at 44.1 kHz: the conservative scheme ------------------------------------------------------------

K = 1 / 44100
W1, U0 = float(np.sqrt(20 * np.pi)), 704.8165
C4 = W1**4 * K**2


def numpy_loop(update, n=900_000, u0=U0, limit=1e4):
    """The lecture's loop, verbatim arithmetic: u^0 = u^1 = u0, stopped after the first |u| > limit."""
    u = [u0, u0]
    for _ in range(n - 2):
        u.append(update(u[-1], u[-2]))
        if abs(u[-1]) > limit:
            break
    return np.array(u)


@pytest.mark.parametrize(
    "update, lecture_blowup",
    [
        (lambda u1, u2: (2 - C4 * u1**2) * u1 - u2, 14.9),
        (lambda u1, u2: (2 - C4 * u1 * u1) * u1 - u2, 11.5),
    ],
    ids=["(2 - cu²)u", "(2 - cuu)u"],
)
def test_duffing_explicit_forms_blow_up_when_the_lecture_says(update, lecture_blowup):
    # The lecture's own arithmetic, so its rounding and its blow-up times, to the printed 0.1 s. (The reason
    # for the conservative scheme; pure NumPy, no lagnet.)
    u = numpy_loop(update)
    assert f"{len(u) * K:.1f}" == f"{lecture_blowup}"


def conservative_run(system, u0, n):
    """u^0 = u^1 = u0, …, u^{n−1} from a `ConservativeDuffing` rollout started at (u0, δ_t− u = 0)."""
    sol = rollout_solution(
        system, ConservativeDuffing(), jnp.array([u0]), jnp.zeros(1), None, K, steps=n - 2
    )
    return np.concatenate([[u0], np.asarray(sol.qs[:, 0])]), sol.qs, sol.qds


def test_duffing_conservative_scheme_is_bounded_and_conserves_energy():
    n = 100_000
    cubic = Duffing(0.0, W1)
    u, qs, qds = conservative_run(cubic, U0, n)
    assert len(u) == n and np.abs(u).max() < 798.4638 + 1e-3  # the lecture's largest |u| over 20 s
    h = np.asarray(ConservativeDuffing.discrete_energy(cubic, qs, qds, K))
    assert np.abs(h / h[0] - 1).max() < 1e-12
    # Same sequence as the lecture's conservative loop, up to rounding.
    ref = numpy_loop(lambda u1, u2: 2 * u1 / (1 + 0.5 * C4 * u1 * u1) - u2, n=2000)
    np.testing.assert_allclose(u[:2000], ref, rtol=0, atol=1e-8 * U0)


def test_conservative_duffing_needs_a_duffing():
    with pytest.raises(TypeError, match="Duffing"):
        rollout(Pendulum(), ConservativeDuffing(), jnp.ones(1), jnp.zeros(1), None, 0.1, steps=2)


def test_duffing_spectra_pitch_rises_like_the_lecture():
    # ω0 = 2π·100, ω1 = √ω0, 16384 samples: the largest spectral peak (Hz) for each u0.
    w0 = 2 * np.pi * 100
    for u0, lecture_hz in {0.01: 99.59, 1.0: 131.89, 2.5: 234.17, 6.0: 519.49}.items():
        u, _, _ = conservative_run(Duffing(omega0=w0, omega1=np.sqrt(w0)), u0, 16384)
        _, _, peak = analysis.peak_frequency(u, K)
        assert peak == pytest.approx(lecture_hz, abs=0.01)

"""The lecture's experiments (experiments/lecture_*.py): their key numbers against the lecture's, on short runs.

The lecture's numbers are those its own NumPy snippets produce (seeds/000); each experiment script keeps them next
to the function that computes lagnet's, and these tests call those functions with fewer steps where they can.
"""

import sys
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402
import pytest  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))

import lecture_chain_step as chain  # noqa: E402
import lecture_duffing as duffing  # noqa: E402
import lecture_energy_drift as drift  # noqa: E402
import lecture_newmark_gain as gain  # noqa: E402
import lecture_phase_area as area  # noqa: E402
import lecture_pitch as pitch  # noqa: E402

from lagnet.integrators import RK4, Leapfrog, Newmark  # noqa: E402


@pytest.mark.parametrize(
    "name, integrator",
    [("RK4", RK4()), ("Newmark (1/4, 1/2)", Newmark(0.25, 0.5)), ("leapfrog", Leapfrog())],
)
def test_energy_race_matches_lecture(name, integrator):
    # The full race to t = 3000 (10 000 steps): same schemes, same numbers to the printed 4 digits.
    err = drift.energy_error(integrator, drift.H, 10_000)
    last = drift.block_max(err, drift.BLOCK)[-1]
    assert last == pytest.approx(drift.LECTURE_ENERGY[name], rel=1e-3)


def test_energy_race_shape():
    # Over the first 300 time units: RK4 starts best and drifts, leapfrog's error stays flat.
    err_rk4 = drift.block_max(drift.energy_error(RK4(), drift.H, 1000), drift.BLOCK)
    err_lf = drift.block_max(drift.energy_error(Leapfrog(), drift.H, 1000), drift.BLOCK)
    assert err_rk4[0] < err_lf[0] and np.all(np.diff(err_rk4) > 0)
    assert np.ptp(err_lf) < 1e-2 * err_lf.max()  # flat up to where the block catches the peak


def test_reversibility_bars_match_lecture():
    back = drift.reversibility(steps=1000)
    for name in ("leapfrog", "Newmark (1/4, 1/2)"):  # symmetric: back to the start up to rounding
        assert back[name] < 1e-11
    for name in ("RK4", "symplectic Euler", "damped Newmark (0.3025, 0.6)"):
        assert back[name] == pytest.approx(drift.LECTURE_RETURN[name], rel=1e-3)


def test_phase_area_matches_lecture():
    ratios = area.area_ratios()
    for name, printed in area.LECTURE_AREA.items():
        assert f"{ratios[name]:.2f}" == printed
    for name, (formula, det) in area.area_factors().items():
        assert det == pytest.approx(formula, rel=1e-12), name


def test_newmark_gain_matches_lecture():
    for name, ((b, g), _, _) in gain.MEMBERS.items():
        np.testing.assert_allclose(
            gain.gain(b, g, np.array(gain.CHECK_WH)), gain.LECTURE_GAIN[name], atol=1e-6
        )
    assert gain.onset(0.0, 0.5, np.linspace(0.01, 4, 400)) == pytest.approx(gain.LECTURE_ONSET)
    # The rollout agrees with the matrix: central difference at ωh = 2.5 grows by 4 per step.
    assert gain.rollout_gain(0.0, 0.5, 2.5, steps=60) == pytest.approx(4.0, rel=2e-2)


def test_pitch_at_8khz_matches_lecture():
    for name, (integ, _, closed) in pitch.SCHEMES.items():
        r = float(pitch.pitch_ratio(integ, pitch.X8)[0])
        assert r == pytest.approx(closed(pitch.X8), rel=1e-10)
        assert f"{100 * (r - 1):+.1f}%" == pitch.LECTURE_PERCENT[name]
        heard = pitch.heard_frequency(integ, seconds=0.1)
        assert heard == pytest.approx(pitch.F8 * closed(pitch.X8), rel=1e-4)


def test_chain_step_limit_shrinks_like_one_over_n():
    for n in (8, 32):
        rope = chain.rope(n)
        theory = 1 / (np.sqrt(n * (n + 1)) * np.sin(n * np.pi / (2 * n + 2)))
        assert chain.k_max(rope) == pytest.approx(theory, rel=1e-12)
        measured = chain.measured_k_max(rope, iterations=14, steps=2000)
        assert measured == pytest.approx(theory, rel=1e-3)
    assert chain.k_max(chain.rope(64)) / chain.k_max(chain.rope(128)) == pytest.approx(2, rel=1e-2)
    assert chain.bounded(chain.rope(16), Newmark(0.25, 0.5), 10 * chain.k_max(chain.rope(16)), 200)


@pytest.mark.parametrize("form", ["(2 - cu²)u", "(2 - cuu)u"])
def test_duffing_explicit_forms_blow_up_when_the_lecture_says(form):
    # The lecture's own arithmetic, so its rounding and its blow-up times, to the printed 0.1 s.
    u = duffing.numpy_form(duffing.EXPLICIT_FORMS[form])
    assert f"{duffing.blowup_time(u):.1f}" == f"{duffing.LECTURE_BLOWUP[form]}"


def test_duffing_conservative_scheme_is_bounded_and_conserves_energy():
    n = 100_000
    u, qs, qds = duffing.lagnet_run(
        duffing.ConservativeDuffing(), duffing.Duffing(0.0, duffing.W1), duffing.U0, n
    )
    assert len(u) == n and np.abs(u).max() < duffing.LECTURE_CONSERVATIVE_PEAK + 1e-3
    h = np.asarray(
        duffing.ConservativeDuffing.discrete_energy(
            duffing.Duffing(0.0, duffing.W1), qs, qds, duffing.K
        )
    )
    assert np.abs(h / h[0] - 1).max() < 1e-12
    # Same sequence as the lecture's conservative loop, up to rounding.
    ref = duffing.numpy_form(lambda u1, u2: 2 * u1 / (1 + 0.5 * duffing.C4 * u1 * u1) - u2, n=2000)
    np.testing.assert_allclose(u[:2000], ref, rtol=0, atol=1e-8 * duffing.U0)


def test_duffing_spectra_pitch_rises_like_the_lecture():
    for u0, lecture_hz in duffing.LECTURE_SPECTRAL_PEAK.items():
        _, _, peak = duffing.spectral_peak(u0)
        assert peak == pytest.approx(lecture_hz, abs=0.01)

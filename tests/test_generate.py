"""Data for control: the excitation signals' spectra (FFT), the coverage numbers of a constructed dataset, and the
control rig's recording (short)."""

import numpy as np
import pytest

from lagnet.data.trajectory import Trajectory
from lagnet.simulate import excitation
from lagnet.simulate.coverage import coverage, coverage_figure, coverage_table

DT = 0.02


@pytest.mark.parametrize("order", sorted(excitation.MLS_TAPS))
def test_mls_is_maximum_length(order):
    seq = excitation.mls(order)
    period = 2**order - 1
    assert seq.shape == (period,)
    # A maximum-length sequence: one more +1 than −1, and a two-valued periodic autocorrelation (N at lag 0, −1
    # at every other lag); a register with the wrong taps repeats sooner and breaks both.
    assert seq.sum() == 1
    spectrum = np.abs(np.fft.fft(seq)) ** 2
    circular = np.real(np.fft.ifft(spectrum))
    np.testing.assert_allclose(circular[0], period)
    np.testing.assert_allclose(circular[1:], -1.0, atol=1e-8)


def test_prbs_spectrum_is_flat_in_its_band():
    rng = np.random.default_rng(0)
    hold, order = 3, 9
    n = hold * (2**order - 1)  # one period: the DFT lines are the sequence's own
    u = excitation.prbs(n, amplitude=2.0, hold=hold, order=order, rng=rng)
    assert set(np.unique(u)) == {-2.0, 2.0}
    power = np.abs(np.fft.rfft(u)) ** 2
    f = np.fft.rfftfreq(n, DT)
    band = (f > 0) & (f < 0.5 / (hold * DT))  # up to half the bit rate
    # Flat to within the hold's envelope (about −3.9 dB at the band's edge): every line in the band within a
    # factor 2.5 of the others, and no power at the envelope's first zero, the bit rate.
    inband = power[band]
    assert inband.max() / inband.min() < 2.5
    # The hold of `hold` samples is a moving sum: its DFT envelope is the Dirichlet kernel, sin(π f h dt)² /
    # (h sin(π f dt))²; divided by it the spectrum is the MLS's own, exactly flat.
    with np.errstate(invalid="ignore"):  # 0/0 at f = 0, outside the band
        envelope = (np.sin(np.pi * f * hold * DT) / (hold * np.sin(np.pi * f * DT))) ** 2
    np.testing.assert_allclose(inband / envelope[band], (inband / envelope[band]).mean(), rtol=1e-6)
    null = np.abs(f - 1 / (hold * DT)) < 0.5 / (n * DT)
    assert power[null].max() < 1e-6 * inband.mean()


def test_chirp_sweeps_its_band():
    n, f0, f1 = 3000, 0.5, 5.0
    u = excitation.chirp(n, DT, amplitude=1.5, f0=f0, f1=f1)
    assert np.max(np.abs(u)) <= 1.5 + 1e-12
    f = np.fft.rfftfreq(n, DT)
    power = np.abs(np.fft.rfft(u)) ** 2
    inside = (f >= f0 - 0.2) & (f <= f1 + 0.2)
    assert power[inside].sum() > 0.98 * power.sum()
    # The sweep moves: the first quarter's spectral peak is near f0 + (f1 − f0)/8, the last's near f1 − (f1 − f0)/8.
    quarter = n // 4
    fq = np.fft.rfftfreq(quarter, DT)
    for part, expected in ((u[:quarter], f0 + (f1 - f0) / 8), (u[-quarter:], f1 - (f1 - f0) / 8)):
        peak = fq[np.argmax(np.abs(np.fft.rfft(part * np.hanning(quarter))))]
        assert abs(peak - expected) < 0.6


def test_log_chirp_spends_equal_time_per_octave():
    n = 4000
    u = excitation.chirp(n, DT, amplitude=1.0, f0=0.25, f1=4.0, logarithmic=True)
    # Four octaves in 80 s: the first octave (0.25–0.5 Hz) takes the first quarter.
    fq = np.fft.rfftfreq(n // 4, DT)
    peak = fq[np.argmax(np.abs(np.fft.rfft(u[: n // 4] * np.hanning(n // 4))))]
    assert 0.25 <= peak <= 0.5


def test_multisine_has_power_at_its_lines_only():
    n = 1000
    lines = excitation.band_lines(n, DT, 0.3, 6.0, 12)
    for rng in (None, np.random.default_rng(1)):
        u = excitation.multisine(n, DT, amplitude=3.0, lines=lines, rng=rng)
        np.testing.assert_allclose(np.max(np.abs(u)), 3.0)
        power = np.abs(np.fft.rfft(u)) ** 2
        chosen = np.zeros(power.size, bool)
        chosen[lines] = True
        assert power[chosen].min() > 1e-3 * power[chosen].max()
        assert power[~chosen].max() < 1e-20 * power[chosen].sum()
        # Equal amplitudes at every line.
        np.testing.assert_allclose(power[chosen], power[chosen].mean(), rtol=1e-9)
    f = lines / (n * DT)
    assert f.min() >= 0.3 and f.max() <= 6.0


def test_excitation_errors_name_the_argument():
    with pytest.raises(ValueError, match="order"):
        excitation.mls(2)
    with pytest.raises(ValueError, match="Nyquist"):
        excitation.chirp(100, DT, amplitude=1.0, f0=1.0, f1=30.0)
    with pytest.raises(ValueError, match="lines"):
        excitation.multisine(100, DT, amplitude=1.0, lines=np.array([0, 3]))


def constructed_dataset():
    """A cart-pole-shaped dataset with known shares: 100 samples, of which 10 are slow within 0.05 rad of
    upright, 10 fast within 0.2 rad of upright, 30 slow at 0.4 rad from hanging, 50 fast far from both."""
    phi = np.concatenate(
        [
            np.full(10, np.pi + 0.05 - 2 * np.pi),
            np.full(10, np.pi - 0.2),
            np.full(30, 0.4),
            np.full(50, 1.6),
        ]
    )
    phi_dot = np.concatenate(
        [np.full(10, 0.5), np.full(10, 3.0), np.full(30, -0.5), np.full(50, 5.0)]
    )
    x = np.linspace(-0.2, 0.2, 100)
    x_dot = np.concatenate([np.full(10, 0.1), np.full(10, 0.1), np.full(30, 0.1), np.full(50, 0.5)])
    return Trajectory(
        t=DT * np.arange(100),
        q=np.stack([x, phi], 1),
        qd=np.stack([x_dot, phi_dot], 1),
        u=np.zeros((100, 1)),
        coordinate_names=("x", "phi"),
        input_names=("force",),
        angles=(False, True),
    )


def test_coverage_of_a_constructed_dataset(tmp_path):
    traj = constructed_dataset()
    result = coverage([traj], radii=(0.1, 0.3, 0.5))
    assert result["samples"] == 100
    up, down = result["equilibria"]["upright"], result["equilibria"]["hanging"]
    assert up["0.1"] == {"all": 0.10, "slow": 0.10}
    assert up["0.3"] == {"all": 0.20, "slow": 0.10}
    assert down["0.3"] == {"all": 0.0, "slow": 0.0}
    assert down["0.5"] == {"all": 0.30, "slow": 0.30}
    np.testing.assert_allclose(result["coordinates"]["x"]["p0"], -0.2)
    np.testing.assert_allclose(result["coordinates"]["x"]["p100"], 0.2)
    # Angles are wrapped to [−π, π): the samples at π + 0.05 − 2π stay near −π, not at −3π.
    assert result["coordinates"]["phi"]["p0"] > -np.pi - 1e-12
    table = coverage_table(result, "constructed")
    assert "within 0.30 rad of upright :  20.00 % of samples,  10.00 % slow" in table
    png = coverage_figure([traj], tmp_path / "c.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_control_rig_balances_upright_under_its_feedback():
    from lagnet.simulate.rigs import recording_rng
    from lagnet.simulate.rigs.cartpole_control import CartPoleControlRig

    # Feedback segments only: swing-up from hanging, then the LQR holds the pole.
    run = CartPoleControlRig(feedback_prob=1.0).simulate(10.0, recording_rng(0, "train"))
    tilt = np.abs(np.mod(run["q"][:, 1], 2 * np.pi) - np.pi)
    # The shipped hand-driven recording has 0.51 % of its samples within 0.3 rad of upright.
    assert np.mean(tilt < 0.3) > 0.2
    assert np.mean(tilt[-50:] < 0.1) == 1.0  # balanced over the last second


def test_coverage_cli(tmp_path, capsys):
    from lagnet.cli import main
    from lagnet.data import write_npz
    from lagnet.simulate.coverage import load_recording
    from lagnet.simulate.rigs.cartpole import UNITS

    traj = constructed_dataset()
    cols = {"t": traj.t, "x": traj.q[:, 0], "phi": traj.q[:, 1], "force": traj.u[:, 0]}
    # Velocities from the positions (the constructed ones are not their rate, which the loader rejects).
    mapping = {"time": "t", "positions": ["x", "phi"], "inputs": ["force"]}
    path = tmp_path / "constructed.npz"
    write_npz(path, cols, {"mapping": mapping, "units": UNITS})
    assert main(["data", "coverage", str(path), "--out", str(tmp_path), "--radii", "0.3"]) == 0
    out = capsys.readouterr().out
    expected = coverage_table(coverage(load_recording(path), radii=(0.3,)), str(path))
    assert expected in out
    assert "within 0.30 rad of upright :  20.00 % of samples" in out
    assert (tmp_path / "constructed.npz.png").exists()
    assert main(["data", "coverage", str(tmp_path / "missing.npz")]) != 0
    assert "no such file" in capsys.readouterr().err
    write_npz(path, cols, {"units": UNITS})
    assert main(["data", "coverage", str(path)]) != 0
    assert "no column mapping" in capsys.readouterr().err

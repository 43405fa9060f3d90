"""The simulated rigs: resolved integration, reproducibility, sensors, actuator, and the CLI that writes data/."""

import dataclasses

import jax.numpy as jnp
import numpy as np
import pytest

import lagnet.data as ld
from lagnet.cli import main
from lagnet.data.rigs import Actuator, StribeckFriction
from lagnet.systems import CartPole


def test_rig_integration_is_resolved_by_its_substep():
    # Halving the 1 ms sub-step changes a 3 s run of the full rig (friction, stops, actuator) by far less than
    # the sensors resolve (1 mm, 3 mrad); the convergence is second order (the actuator's held mean).
    rig = ld.CartPoleRig()
    fine = dataclasses.replace(rig, substeps=2 * rig.substeps)
    a = rig.simulate(3.0, np.random.default_rng(0))
    b = fine.simulate(3.0, np.random.default_rng(0))
    err = np.max(np.abs(a["q"] - b["q"]), axis=0)
    assert err[0] < 1e-5 and err[1] < 5e-5, err
    assert np.max(np.abs(a["q"][:, 1])) > 0.1  # it did move


def test_recordings_are_reproducible_and_distinct():
    rig = ld.PendulumRig()
    c1, m1 = rig.record(2.0, seed=5)
    c2, _ = rig.record(2.0, seed=5)
    c3, _ = rig.record(2.0, seed=5, recording="test")
    assert all(np.array_equal(c1[k], c2[k]) for k in c1)
    assert not np.array_equal(c1["theta"], c3["theta"])
    assert m1["seed"] == 5 and m1["params"]["encoder_counts"] == 4096
    assert m1["generator"] == "lagnet.data.rigs.pendulum.PendulumRig"


def test_shipped_potential_set_regenerates_bit_for_bit(tmp_path):
    (path,) = [p for p in ld.generate("pendulum_potential", tmp_path) if "train" in p.name]
    shipped = ld.dataset_path("pendulum_potential_train")
    assert path.read_bytes() == shipped.read_bytes()


def test_sensors():
    rng = np.random.default_rng(0)
    theta = np.linspace(-20, 20, 5001)
    enc = ld.OpticalEncoder(600, wrap_low=0.0).measure(theta)
    step = 2 * np.pi / 600
    assert enc.min() >= 0 and enc.max() < 2 * np.pi
    np.testing.assert_allclose(np.round(enc / step), enc / step, atol=1e-9)  # whole counts
    assert np.max(np.abs(ld.angular_difference(enc, theta))) <= step + 1e-12
    x = np.linspace(-0.3, 0.3, 1000)
    us = ld.UltrasonicSensor(noise_std=1e-3, resolution=1e-3, outlier_prob=0.0).measure(x, rng)
    np.testing.assert_allclose(us, 1e-3 * np.round(us / 1e-3), atol=1e-12)
    assert 0.5e-3 < np.std(us - x) < 1.5e-3


def test_actuator_delay_and_lag():
    h, tau, delay = 1e-3, 0.01, 0.005
    act = Actuator(delay, tau, limit=2.0)
    state = act.init(1, h)
    state, y = act.apply(state, 5.0 * jnp.ones((100, 1)), h)  # saturates at 2
    # Held over sub-step j: the exact mean of 2 (1 − e^{−(t − d)/τ}) over [j h, (j + 1) h], after the delay.
    s0 = np.maximum(h * np.arange(100) - delay, 0.0)
    s1 = np.maximum(h * np.arange(1, 101) - delay, 0.0)
    expected = 2.0 * ((s1 - s0) - tau * (np.exp(-s0 / tau) - np.exp(-s1 / tau))) / h
    np.testing.assert_allclose(np.asarray(y[:, 0]), expected, atol=1e-12)


def test_stribeck_friction_levels():
    f = StribeckFriction(0, coulomb_pos=0.2, coulomb_neg=0.3, static=0.5, viscous=0.1)
    assert float(f.magnitude(1.0)) == pytest.approx(0.2 + 0.1, rel=1e-6)
    assert float(f.magnitude(-1.0)) == pytest.approx(-0.3 - 0.1, rel=1e-6)
    assert 0.45 < float(f.magnitude(0.01)) < 0.5  # the breakaway peak at low speed


def test_cartpole_residual_has_friction_structure():
    # The known model alone leaves a residual cart force that opposes the motion (binned over the data).
    (tr,) = ld.load_dataset("cartpole_train")
    sys = CartPole()
    k = np.arange(1, tr.n_rows - 1)
    a = (tr.qd[k + 1] - tr.qd[k]) / 0.02
    v = 0.5 * (tr.qd[k] + tr.qd[k + 1])
    u = 0.5 * (tr.u[k - 1] + tr.u[k])
    import jax

    r = np.asarray(
        jax.vmap(lambda q, qd, u, a: sys.mass_matrix(q) @ (a - sys.acceleration(q, qd, u)))(
            tr.q[k], v, u, a
        )
    )
    for j, (lo, hi) in enumerate([(0.2, 1.0), (2.0, 15.0)]):
        fwd = r[(v[:, j] > lo) & (v[:, j] < hi), j].mean()
        back = r[(v[:, j] < -lo) & (v[:, j] > -hi), j].mean()
        assert fwd < 0 < back, (j, fwd, back)


def test_cli_data_commands(tmp_path, capsys):
    assert main(["data", "generate", "pendulum_potential", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "pendulum_potential_test.npz").exists()
    assert main(["data", "stats", "cartpole_train"]) == 0
    out = capsys.readouterr().out
    assert "| x | m |" in out and "sample rate 50 Hz" in out
    assert main(["data", "stats", "nonsense"]) == 2
    assert "unknown dataset 'nonsense'" in capsys.readouterr().err

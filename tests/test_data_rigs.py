"""The simulated rigs: resolved integration, reproducibility, sensors, actuator, and the CLI that writes data/."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import lagnet.data as ld
import lagnet.simulate as ls
from lagnet.cli import main
from lagnet.simulate import Actuator, StribeckFriction
from lagnet.systems import CartPole


def test_rig_integration_is_resolved_by_its_substep():
    # Halving the 1 ms sub-step changes a 3 s run of the full rig (friction, stops, actuator) by far less than
    # the sensors resolve (1 mm, 3 mrad); the convergence is second order (the actuator's held mean).
    rig = ls.CartPoleRig()
    fine = dataclasses.replace(rig, substeps=2 * rig.substeps)
    a = rig.simulate(3.0, np.random.default_rng(0))
    b = fine.simulate(3.0, np.random.default_rng(0))
    err = np.max(np.abs(a["q"] - b["q"]), axis=0)
    assert err[0] < 1e-5 and err[1] < 5e-5, err
    assert np.max(np.abs(a["q"][:, 1])) > 0.1  # it did move


def test_recordings_are_reproducible_and_distinct():
    rig = ls.PendulumRig()
    c1, m1 = rig.record(2.0, seed=5)
    c2, _ = rig.record(2.0, seed=5)
    c3, _ = rig.record(2.0, seed=5, recording="test")
    assert all(np.array_equal(c1[k], c2[k]) for k in c1)
    assert not np.array_equal(c1["theta"], c3["theta"])
    assert m1["seed"] == 5 and m1["params"]["encoder_counts"] == 4096
    assert m1["generator"] == "lagnet.data.rigs.pendulum.PendulumRig"


@pytest.mark.xla_defaults
def test_shipped_potential_set_regenerates_bit_for_bit(tmp_path):
    (path,) = [p for p in ls.generate("pendulum_potential", tmp_path) if "train" in p.name]
    shipped = ld.dataset_path("pendulum_potential_train")
    assert path.read_bytes() == shipped.read_bytes()


def test_sensors():
    rng = np.random.default_rng(0)
    theta = np.linspace(-20, 20, 5001)
    enc = ls.OpticalEncoder(600, wrap_low=0.0).measure(theta)
    step = 2 * np.pi / 600
    assert enc.min() >= 0 and enc.max() < 2 * np.pi
    np.testing.assert_allclose(np.round(enc / step), enc / step, atol=1e-9)  # whole counts
    assert np.max(np.abs(ld.angular_difference(enc, theta))) <= step + 1e-12
    x = np.linspace(-0.3, 0.3, 1000)
    us = ls.UltrasonicSensor(noise_std=1e-3, resolution=1e-3, outlier_prob=0.0).measure(x, rng)
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


def test_catalog_mappings_are_the_generators_and_the_files():
    # The catalog (in lagnet.data, below the simulation) writes the simulated files' mappings out; they must be
    # what each generator writes and what each shipped file's metadata says.
    for spec in ld.datasets().values():
        if spec.generator is None:
            continue
        assert spec.mapping == ls.GENERATORS[spec.generator].mapping, spec.name
        _, meta = ld.read_table(ld.dataset_path(spec.name))
        assert spec.mapping == meta["mapping"], spec.name


def test_true_plant_from_a_recordings_metadata():
    (tr,) = ld.load_dataset("cartpole_train")
    assert tr.meta["generator"] == "lagnet.data.rigs.cartpole.CartPoleRig"  # what data/sim carries
    plant = ls.true_plant(tr.meta)
    assert isinstance(plant, ls.Plant)
    assert ls.rig_from_meta(tr.meta, strict=True) == ls.CartPoleRig()
    q, qd, u = jnp.array([0.1, 2.0]), jnp.array([0.3, -1.0]), jnp.array([0.5])
    np.testing.assert_array_equal(
        plant.acceleration(q, qd, u), ls.CartPoleRig().plant().acceleration(q, qd, u)
    )
    (pend, *_) = ld.load_dataset("pendulum_test")
    assert isinstance(ls.true_plant(pend.meta), ls.Plant)
    # The current class path names the rig too.
    assert ls.true_plant({"generator": "lagnet.simulate.rigs.pendulum.PendulumRig"}) is not None
    pair = ld.load_dataset("pendulum_potential_train")[0]
    assert ls.true_plant(pair.meta) is None  # exact pairs, no plant
    assert ls.true_plant(ld.load_dataset("dfki_sac")[0].meta) is None  # measured
    assert ls.true_plant({"generator": "somewhere.Else"}) is None
    with pytest.raises(ValueError, match="differ from the rig's"):
        ls.rig_from_meta({**tr.meta, "params": {**tr.meta["params"], "extra": 1.0}}, strict=True)


def test_closed_loop_carries_the_controller_memory_and_vmaps():
    rig = ls.PendulumRig()
    plant, actuator = rig.plant(), rig.actuator()
    gains = jnp.array([[2.0, 0.2], [0.5, 0.05]])

    def run(k, x0):
        def controller(x, count, s):
            # The memory counts the samples: the controller sees its own state advance once per sample.
            return -k @ x + s, count + 1, count

        return ls.closed_loop(
            plant, actuator, controller, 0, x0, 0.01 * jnp.ones(30), dt=rig.dt, substeps=4
        )

    x0s = jnp.array([[0.3, 0.0], [-1.0, 0.5]])
    sol = jax.jit(jax.vmap(run))(gains, x0s)
    assert sol.xs.shape == (2, 31, 2) and sol.us.shape == sol.us_applied.shape == (2, 30, 1)
    np.testing.assert_array_equal(sol.aux, np.tile(np.arange(30), (2, 1)))
    np.testing.assert_array_equal(sol.xs[:, 0], x0s)
    for i in range(2):
        one = run(gains[i], x0s[i])
        np.testing.assert_allclose(sol.xs[i], one.xs, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(sol.us[i, :, 0], 0.01 - one.xs[:-1] @ gains[i], rtol=1e-12)
    # The actuator's 5 ms dead time (two sub-steps of 2.5 ms): nothing reaches the plant at first.
    assert np.all(sol.us_applied[:, 0] == 0.0) and np.all(sol.us_applied[:, 1] != 0.0)

    def idle(x, memory, s):
        return jnp.zeros(1), memory, None

    with pytest.raises(ValueError, match="samples="):
        ls.closed_loop(
            plant, actuator, idle, None, x0s[0], jnp.ones(30), samples=20, dt=0.01, substeps=4
        )
    with pytest.raises(ValueError, match="x0 must have shape"):
        ls.closed_loop(plant, actuator, idle, None, jnp.zeros(4), samples=3, dt=0.01, substeps=4)


def test_rigs_implement_the_rig_interfaces():
    """Every closed-loop rig is a final `AbstractRig` whose plant's forces are `AbstractRigForce`s; the abstract
    classes cannot be built, and `true_plant` finds the plant by the interface."""
    from lagnet.simulate.generate import _RIGS, true_plant

    rigs = {rig for rig in _RIGS.values() if issubclass(rig, ls.AbstractRig)}
    assert rigs == {ls.CartPoleRig, ls.CartPoleControlRig, ls.PendulumRig, ls.ArmRig}
    # The arm's additions (armature, damping, friction loss) are read into its system from the MuJoCo model.
    arm = ls.ArmRig().plant()
    assert not arm.forces and arm.system.friction is not None
    for rig in rigs - {ls.ArmRig}:
        plant = rig().plant()
        assert plant.forces and all(isinstance(f, ls.AbstractRigForce) for f in plant.forces)
        assert not any(issubclass(other, rig) for other in rigs - {rig})  # final: not subclassed
    for abstract in (ls.AbstractRig, ls.AbstractRigForce, ls.rigs.AbstractCartPoleRig):
        with pytest.raises(TypeError):
            abstract()
    _, meta = ls.PendulumRig().record(0.1, seed=0)
    assert isinstance(true_plant(meta), ls.Plant)
    _, pairs = ls.PotentialPairs(pairs=2).record(seed=0)
    assert true_plant(pairs) is None  # the exact pairs have no plant: not a rig

"""Physics identified before the network: the solver-based fit, its bound report, the gate, selection and the
physics fallback."""

import json
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import (
    PENDULUM_MAPPING,
    random_cartpole_pinode,
    read_pendulum_csv,
    unit_pendulum_loss,
    write_pendulum_csv,
)

from lagnet.config import ConfigError, validate
from lagnet.data.windows import make_windows
from lagnet.integrators import RK4
from lagnet.models import PINODE, TrainingRegion
from lagnet.run.training import train_run
from lagnet.run.validation import outlier_segments
from lagnet.systems import JointFriction, Pendulum
from lagnet.train.identify import copy_physics, identify, physical_names, physical_vector
from lagnet.train.loss import StateLoss

TRUE = {"coulomb": 0.05, "viscous": 0.1}  # write_pendulum_csv's default friction (Coulomb, viscous)


@pytest.fixture(scope="module")
def pendulum_csv(tmp_path_factory):
    folder = tmp_path_factory.mktemp("identify")
    return write_pendulum_csv(folder / "pendulum.csv", steps=600, hold=20, scale=1.5)


@pytest.fixture(scope="module")
def windows(pendulum_csv):
    return make_windows(read_pendulum_csv(pendulum_csv), 5)


_loss = unit_pendulum_loss


def _model(coulomb, viscous):
    # The data's friction is tanh-shaped with ε = 0.01 (JointFriction's default), as here.
    return PINODE(Pendulum(), friction=JointFriction(1, coulomb={0: coulomb}, viscous={0: viscous}))


@pytest.mark.parametrize("factor", [0.0, 100.0], ids=["from_zero", "100x_off"])
def test_identify_reaches_the_true_coefficients(windows, factor):
    """Noise-free data: coefficients starting at 0 or 100× their value come within 5 % (here far closer)."""
    start = _model(factor * TRUE["coulomb"], factor * TRUE["viscous"])
    result = identify(start, RK4(), windows, _loss())
    got = result.model.friction.values_by_term()
    assert got["coulomb"][0] == pytest.approx(TRUE["coulomb"], rel=0.05)
    assert got["viscous"][0] == pytest.approx(TRUE["viscous"], rel=0.05)
    assert result.loss < 1e-3 * result.initial_loss or not np.isfinite(result.initial_loss)
    assert result.at_bound() == []


def test_a_fit_that_ends_on_its_bound_is_reported(windows):
    """A term the data asks to be negative (energy-creating) ends on its bound 0 and is named with its value."""
    start = PINODE(
        Pendulum(mass=1.5),
        friction=JointFriction(1, coulomb={0: TRUE["coulomb"]}, viscous={0: TRUE["viscous"]}),
        learn_parameters={
            "mass": {"lower": 1.2}
        },  # the data's mass is 1: the fit wants below its lower bound
    )
    result = identify(start, RK4(), windows, _loss())
    hits = {h["name"]: h for h in result.at_bound()}
    assert "parameters.mass" in hits, result.at_bound()
    assert hits["parameters.mass"]["side"] == "lower" and hits["parameters.mass"]["bound"] == 1.2
    assert sorted(physical_names(start)) == [
        "friction.coulomb.theta",
        "friction.viscous.theta",
        "parameters.mass",
    ]


def test_copy_physics_moves_the_identified_values_into_the_full_model():
    model = _model(0.0, 0.0)
    source = _model(0.3, 0.7)
    moved = copy_physics(model, source)
    assert np.allclose(physical_vector(moved)[0], physical_vector(source)[0])
    frozen = moved.with_physics_trainable(False)
    assert physical_vector(frozen)[0].size == 0  # nothing left to train
    assert moved.physics_trainable and not frozen.physics_trainable


def test_training_region_is_one_on_the_data_and_fades_off_it():
    q = np.array([[-1.0, 0.0], [1.0, 0.5]])
    qd = np.array([[-2.0, -1.0], [2.0, 1.0]])
    region = TrainingRegion.from_data((True, False), q, qd, margin=0.1)
    assert float(region(jnp.array([0.2, 0.3]), jnp.array([0.0, 0.5]))) == 1.0
    # One box width × margin outside on one coordinate: exp(−1).
    edge = float(region(jnp.array([0.2, 0.55]), jnp.array([0.0, 0.0])))
    assert edge == pytest.approx(np.exp(-1.0), rel=1e-6)
    assert float(region(jnp.array([0.2, 2.0]), jnp.array([0.0, 0.0]))) < 1e-10
    # Angles compare wrapped: a turn more is the same state.
    assert float(region(jnp.array([0.2 + 2 * np.pi, 0.3]), jnp.array([0.0, 0.5]))) == 1.0
    share = np.asarray(region.outside_share(np.array([[0.0, 0.0], [3.0, 0.0]]), np.zeros((2, 2))))
    assert share.tolist() == [0.5, 0.0, 0.0, 0.0]


def test_an_outlier_validation_segment_is_named():
    class Seg:
        def __init__(self, name):
            self.source = name

    segments = [Seg(f"run{i}") for i in range(4)]
    messages = outlier_segments(np.array([1.0, 1.2, 0.9, 6.0]), segments)
    assert len(messages) == 1 and "run3" in messages[0]
    assert outlier_segments(np.array([1.0, 1.2, 0.9, 1.5]), segments) == []


def _config(path, **model):
    return validate(
        {
            "name": "ident",
            "dtype": "float64",
            "system": {"name": "pendulum"},
            "model": {
                "width": 8,
                "friction": {"coulomb": ["theta"], "viscous": ["theta"], "fit": "none"},
                **model,
            },
            "data": {"train": [path], "mapping": dict(PENDULUM_MAPPING)},
            "training": {"epochs": 2, "batch_size": 32, "horizon": 3, "learning_rate": 1e-3},
        }
    )


def test_lagnet_train_identifies_first_and_ships_the_physics_when_the_network_cannot_beat_it(
    pendulum_csv, tmp_path
):
    """The data is the model's own family: identification explains it, no epoch beats that on validation, so the
    run ships the physics and says so."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = train_run(_config(pendulum_csv), str(tmp_path / "run"), progress=False)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    ident = summary["identification"]
    assert ident["method"] == "solver" and ident["loss"] < 1e-3 * ident["loss_before"]
    friction = ident["physics"]["friction"]
    assert friction["coulomb"]["theta"] == pytest.approx(TRUE["coulomb"], rel=0.05)
    assert friction["viscous"]["theta"] == pytest.approx(TRUE["viscous"], rel=0.05)
    assert summary["select_by"] == "guarded_relative_error"
    assert summary["fallback"] == "physics" and result.fallback == "physics"
    assert summary["best_epoch"] == -1 and summary["best_score"] == 1.0
    assert any("ships the physics" in str(w.message) for w in caught)
    # The physics stays as identified while the network trains.
    assert (tmp_path / "run" / "checkpoints" / "identified.eqx").exists()


def test_identification_off_keeps_the_config_values(pendulum_csv, tmp_path):
    config = _config(pendulum_csv, identification={"method": "none"})
    train_run(config.replace(training={"epochs": 0}), str(tmp_path / "run"), progress=False)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["identification"] is None
    assert summary["physics"]["friction"]["coulomb"]["theta"] == 0.0


def test_the_identification_horizon_is_the_configs(pendulum_csv, tmp_path):
    """`model.identification.horizon` sets the identification's window length apart from training's; one-step
    windows still recover the true friction on data of the model's own family."""
    config = _config(pendulum_csv, identification={"horizon": 1})
    train_run(config.replace(training={"epochs": 0}), str(tmp_path / "run"), progress=False)
    ident = json.loads((tmp_path / "run" / "summary.json").read_text())["identification"]
    assert ident["horizon"] == 1
    assert ident["physics"]["friction"]["viscous"]["theta"] == pytest.approx(
        TRUE["viscous"], rel=0.05
    )
    for bad in (0, "long", 2.5, True):
        with pytest.raises(ConfigError, match="model.identification.horizon"):
            _config(pendulum_csv, identification={"horizon": bad})


def test_lagnet_load_says_when_a_run_ships_its_physics(pendulum_csv, tmp_path):
    import lagnet

    train_run(_config(pendulum_csv), str(tmp_path / "run"), progress=False)
    dyn = lagnet.load(str(tmp_path / "run"))
    assert dyn.fallback == "physics" and "fallback='physics'" in repr(dyn)
    assert lagnet.load(str(tmp_path / "run"), "last").fallback is None


def test_a_residual_zero_at_rest_keeps_the_physics_equilibria():
    """With zero_at_rest, q̈ at rest without input equals the physics prior's for any network; it differs in
    motion (the test could fail: a random network moves it there)."""
    model = random_cartpole_pinode(output_scale=3.0, zero_at_rest=True)
    prior = model.physics_prior()
    for q in (jnp.array([0.1, jnp.pi]), jnp.array([-0.3, 0.4])):
        rest = jnp.zeros(2)
        assert np.allclose(
            model.acceleration(q, rest, jnp.zeros(1)), prior.acceleration(q, rest, None)
        )
        moving = jnp.array([0.5, -1.0])
        assert not np.allclose(
            model.acceleration(q, moving, jnp.zeros(1)), prior.acceleration(q, moving, None)
        )


def test_errors_relative_to_each_recording_and_the_fit_still_reaches_the_truth(windows):
    """`groups`: at the start, each group's weighted squared error per state variable is its share of the windows
    times the unweighted mean over all of them (the loss keeps its scale; a group with large errors no longer
    dominates it), and on noise-free data of the model's own family the weighted fit still reaches the true
    coefficients."""
    from lagnet.train.identify import _group_weights, _residual_fn
    from lagnet.train.loss import as_batch

    start = _model(2.0 * TRUE["coulomb"], 0.5 * TRUE["viscous"])
    batch = as_batch(windows.batch(windows.starts))
    n = len(windows)
    groups = np.where(np.arange(n) < n // 4, 0, 1)  # a short recording and a long one
    theta = physical_vector(start)[0]
    residual = _residual_fn(start, RK4(), _loss(), batch)
    plain = np.asarray(residual(jnp.asarray(theta))).reshape(n, -1, 2)
    weights = _group_weights(plain, groups)
    plain = plain**2
    weighted = (
        np.asarray(
            _residual_fn(start, RK4(), _loss(), batch, jnp.asarray(weights))(jnp.asarray(theta))
        ).reshape(n, -1, 2)
        ** 2
    )
    overall = plain.sum(axis=(0, 1))  # ‖r‖² per variable: the mean loss over all windows
    for g in (0, 1):
        mine = groups == g
        share = mine.sum() / n
        assert weighted[mine].sum(axis=(0, 1)) == pytest.approx(share * overall, rel=1e-9)
        assert not np.allclose(weights[mine], 1.0)
    result = identify(start, RK4(), windows, _loss(), groups=groups)
    got = result.model.friction.values_by_term()
    assert got["coulomb"][0] == pytest.approx(TRUE["coulomb"], rel=0.05)
    assert got["viscous"][0] == pytest.approx(TRUE["viscous"], rel=0.05)


def test_identification_weighting_by_recordings_through_the_config(pendulum_csv, tmp_path):
    config = _config(pendulum_csv, identification={"weighting": "recordings"})
    train_run(config.replace(training={"epochs": 0}), str(tmp_path / "run"), progress=False)
    ident = json.loads((tmp_path / "run" / "summary.json").read_text())["identification"]
    assert ident["weighting"] == "recordings" and ident["prior_weight"] == 0.0
    assert ident["physics"]["friction"]["viscous"]["theta"] == pytest.approx(
        TRUE["viscous"], rel=0.05
    )
    assert ident["data"] == "training" and ident["recordings"] == 1
    with pytest.raises(ConfigError, match="model.identification.weighting"):
        _config(pendulum_csv, identification={"weighting": "runs"})
    with pytest.raises(ConfigError, match="model.identification.prior_weight"):
        _config(pendulum_csv, identification={"prior_weight": -1.0})


def test_identification_on_all_recordings_fits_the_validation_data_too(pendulum_csv, tmp_path):
    """`model.identification.data: all`: the physics is fitted on the training and the validation recordings (here
    the recording's training part and its validation tail), and still reaches the true friction."""
    config = _config(pendulum_csv, identification={"data": "all"})
    train_run(config.replace(training={"epochs": 0}), str(tmp_path / "run"), progress=False)
    ident = json.loads((tmp_path / "run" / "summary.json").read_text())["identification"]
    assert ident["data"] == "all" and ident["recordings"] == 2
    assert ident["physics"]["friction"]["coulomb"]["theta"] == pytest.approx(
        TRUE["coulomb"], rel=0.05
    )
    with pytest.raises(ConfigError, match="model.identification.data"):
        _config(pendulum_csv, identification={"data": "validation"})


def test_worst_coordinate_selection_needs_every_coordinate_to_improve():
    """`select_by: worst_relative_error` scores an epoch by its worst coordinate against the untrained model: one
    that halves one coordinate's error and worsens another's by 20 % beats it on the mean, not on the worst."""
    from lagnet.train.fit import _Selection

    base = np.array([0.1, 2.0])
    trade = np.array([0.05, 2.4])  # ratios 0.5 and 1.2
    assert _Selection("relative_error", base).score(1.0, trade) == pytest.approx(0.85)
    assert _Selection("worst_relative_error", base).score(1.0, trade) == pytest.approx(1.2)
    assert _Selection("worst_relative_error", base).score(1.0, 0.9 * base) == pytest.approx(0.9)


@pytest.mark.parametrize(
    "setting, evaluation, expected",
    [
        ("evaluation", "0.5s", 10),  # the user's horizon: 0.5 s at the data's 0.05 s step
        ("evaluation", 12, 12),
        ("training", 12, 3),
        (None, 12, 3),
        (7, 12, 7),
        (
            "evaluation",
            500,
            3,
        ),  # no validation recording holds 500 steps: the training horizon, with a warning
    ],
)
def test_checkpoints_are_chosen_at_the_users_horizon(
    pendulum_csv, tmp_path, setting, evaluation, expected
):
    config = _config(pendulum_csv).replace(
        training={"epochs": 1, "validation_horizon": setting}, evaluation={"horizon": evaluation}
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train_run(config, str(tmp_path / "run"), progress=False)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["validation_horizon"] == expected
    fell_back = [w for w in caught if "evaluation horizon" in str(w.message)]
    assert bool(fell_back) == (evaluation == 500), [str(w.message) for w in caught]
    for bad in (0, "long", 2.5, True):
        with pytest.raises(ConfigError, match="training.validation_horizon"):
            config.replace(training={"validation_horizon": bad})


def test_the_residual_penalty_is_the_mean_squared_gated_residual_at_the_measured_states():
    """`residual_penalty`: λ · mean over windows and steps of ‖g · Q_θ‖² at each step's measured state and input,
    added to the state loss (and over the first `steps` steps only on a curriculum's padded windows)."""
    from lagnet.train.loss import batch_loss, residual_penalty

    model = random_cartpole_pinode(output_scale=3.0)
    key = np.random.default_rng(0)
    w, k = 5, 4
    q0, qd0 = jnp.asarray(key.normal(size=(w, 2))), jnp.asarray(key.normal(size=(w, 2)))
    us = jnp.asarray(key.normal(size=(w, k, 1)))
    dts = jnp.full((w, k), 0.02)
    q_true, qd_true = (
        jnp.asarray(key.normal(size=(w, k, 2))),
        jnp.asarray(key.normal(size=(w, k, 2))),
    )
    batch = (q0, qd0, us, dts, q_true, qd_true)
    states_q = jnp.concatenate([q0[:, None], q_true[:, :-1]], axis=1)
    states_qd = jnp.concatenate([qd0[:, None], qd_true[:, :-1]], axis=1)
    size = np.array(
        [
            [
                float(
                    jnp.sum(
                        model.network(model.features(states_q[i, j], states_qd[i, j], us[i, j]))
                        ** 2
                    )
                )
                for j in range(k)
            ]
            for i in range(w)
        ]
    )
    assert float(residual_penalty(model, batch)) == pytest.approx(size.mean(), rel=1e-6)
    assert float(residual_penalty(model, batch, steps=2)) == pytest.approx(
        size[:, :2].mean(), rel=1e-6
    )
    one = jnp.ones(2)
    plain, weighted = (
        StateLoss((False, True), one, one, one, one, residual_weight=r) for r in (0.0, 0.5)
    )
    for steps in (None, jnp.asarray(3)):
        gap = batch_loss(model, RK4(), weighted, batch, steps=steps) - batch_loss(
            model, RK4(), plain, batch, steps=steps
        )
        expected = size.mean() if steps is None else size[:, :3].mean()
        assert float(gap) == pytest.approx(0.5 * expected, rel=1e-5)
    # No network, no residual.
    assert float(residual_penalty(model.physics_prior(), batch)) == 0.0


def test_the_residual_penalty_is_a_pinode_key(pendulum_csv):
    config = _config(pendulum_csv, residual_penalty=0.3)
    assert config.model.residual_penalty == 0.3
    with pytest.raises(ConfigError, match="model.residual_penalty"):
        _config(pendulum_csv, residual_penalty=-1.0)
    pure = {"type": "pure_ode", "residual_penalty": 0.3}
    with pytest.raises(
        ConfigError, match="model.residual_penalty: read only by model types pinode"
    ):
        validate({"system": {"name": "pendulum"}, "model": pure, "data": {"train": [pendulum_csv]}})


def test_validation_blocks_spread_validation_over_a_single_recording(pendulum_csv):
    """`data.validation_blocks: b`: one recording is cut into 2b blocks dealt to training and validation, so the
    validation blocks lie across the recording instead of at its tail; 1 keeps the tail."""
    from lagnet.run import build_system
    from lagnet.run.recordings import load_training_data

    config = _config(pendulum_csv)
    tail_train, tail_val = load_training_data(config, build_system(config))
    last_trained = max(float(t.t[-1]) for t in tail_train)
    assert len(tail_val) == 1 and float(tail_val[0].t[0]) > last_trained
    spread = config.replace(data={"validation_blocks": 10})
    train, validation = load_training_data(spread, build_system(spread))
    assert len(validation) == 3 and len(train) >= 3  # 20 blocks, 15 % of them held out
    assert min(float(t.t[0]) for t in validation) < max(float(t.t[-1]) for t in train)
    rows = sum(t.n_rows for t in train + validation)
    assert rows == sum(t.n_rows for t in tail_train + tail_val)
    with pytest.raises(ConfigError, match="data.validation_blocks"):
        config.replace(data={"validation_blocks": 0})


def test_a_prior_holds_the_given_values_as_far_as_its_weight_says(windows):
    """`prior_weight` λ: a MAP fit. λ = 0 reaches the data's value from a start 2× off; a large λ keeps the
    given value; in between the fit lies between them; a parameter that starts at 0 has no prior."""
    start = _model(2.0 * TRUE["coulomb"], 0.0)

    def coulomb(weight):
        result = identify(start, RK4(), windows, _loss(), prior_weight=weight)
        return result.model.friction.values_by_term()

    free, held, middle = coulomb(0.0), coulomb(1e8), coulomb(1e-3)
    assert free["coulomb"][0] == pytest.approx(TRUE["coulomb"], rel=0.05)
    assert held["coulomb"][0] == pytest.approx(2.0 * TRUE["coulomb"], rel=1e-3)
    assert TRUE["coulomb"] * 1.01 < middle["coulomb"][0] < 2.0 * TRUE["coulomb"] * 0.99
    # The viscous coefficient started at 0: unheld, it still reaches the data's value under the large λ.
    assert held["viscous"][0] > 0.5 * TRUE["viscous"]


def test_model_lipschitz_and_ensemble_build_the_residual_network(pendulum_csv, tmp_path):
    """`model.lipschitz` wraps the network in `SpectralNormalised`, `model.ensemble: K` builds K of them as an
    `Ensemble`; a trained run of both loads back as it was saved; bad values are refused with their key path."""
    import lagnet
    from lagnet.models import Ensemble, SpectralNormalised
    from lagnet.run import build_model, build_system

    def network(**model):
        config = _config(pendulum_csv, **model)
        return build_model(config, build_system(config), None, key=jax.random.key(0)).network

    bounded = network(lipschitz=0.5)
    assert isinstance(bounded, SpectralNormalised) and bounded.bound == 0.5
    assert not isinstance(network(), (SpectralNormalised, Ensemble))
    both = network(lipschitz=0.5, ensemble=3, ensemble_tolerance=0.2)
    assert isinstance(both, Ensemble) and isinstance(both.members, SpectralNormalised)
    assert both.tolerance == 0.2 and both.members.mlp.layers[0].weight.shape[0] == 3

    config = _config(pendulum_csv, ensemble=3, lipschitz=0.5)
    result = train_run(
        config.replace(training={"epochs": 1}), str(tmp_path / "run"), progress=False
    )
    saved = lagnet.load(str(tmp_path / "run")).model.network
    for a, b in zip(jax.tree.leaves(saved), jax.tree.leaves(result.model.network), strict=True):
        assert np.array_equal(a, b)
    last = lagnet.load(str(tmp_path / "run"), "last").model.network
    assert isinstance(last, Ensemble) and isinstance(last.members, SpectralNormalised)
    out = last.outputs(jnp.ones(last.members.mlp.in_size))
    assert out.shape == (3, 1) and np.all(np.isfinite(out))
    assert np.any(out != 0)  # trained from its zero start
    bad_values = (("lipschitz", 0), ("ensemble", 1), ("ensemble", 2.5), ("ensemble_tolerance", 0))
    for key, bad in bad_values:
        with pytest.raises(ConfigError, match=f"model.{key}"):
            _config(pendulum_csv, **{key: bad})

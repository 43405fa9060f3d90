"""Identification you can trust: parameters that stay physical by construction, a fit never worse than its
start, bounds reported on every path, and a selection that never trades a coordinate away."""

import json
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import PENDULUM_MAPPING, read_pendulum_csv, unit_pendulum_loss, write_pendulum_csv

from lagnet.config import ConfigError, validate
from lagnet.control.tasks import DFKI as TASK_DFKI
from lagnet.data.windows import make_windows
from lagnet.integrators import RK4
from lagnet.models import PINODE
from lagnet.models.consistency import (
    NonPhysicalModel,
    check_physical,
    configuration_grid,
    mass_matrix_violation,
)
from lagnet.models.summary import collapsed_parameters, trained_bound_hits
from lagnet.run.training import train_run
from lagnet.systems import DoublePendulum, JointFriction, Pendulum
from lagnet.train import identify as identify_module
from lagnet.train.fit import _Selection
from lagnet.train.identify import (
    NonFiniteStart,
    identify,
    identify_equation_error,
    physical_names,
    with_physical_vector,
)

# The DFKI rig's identified parameters (lumped: M(q) ≻ 0 is what they must satisfy), inertias about the joints.
DFKI = dict(TASK_DFKI, parameter_set="identified")
LEARNED = ("I1", "I2", "m2", "r2", "Ir")


def _smallest_eigenvalue(system, qs):
    return float(jnp.min(jax.vmap(lambda q: jnp.linalg.eigvalsh(system.mass_matrix(q))[0])(qs)))


@pytest.mark.parametrize("parameter_set", ["identified", "physical"])
def test_no_learned_value_reaches_a_non_physical_double_pendulum(parameter_set):
    """Random unconstrained values of the learned parameters (any sign and size the optimiser may reach within
    the default bounds, and far beyond for the inertias): the PINODE's mechanics keep M(q) ≻ 0 on every
    configuration, though the raw values alone make M indefinite."""

    params = dict(DFKI, parameter_set=parameter_set)
    if parameter_set == "physical":
        params.update(I1=0.06, I2=0.03)  # ≥ m r² about the joint
    start = PINODE(DoublePendulum(**params), learn_parameters=LEARNED)
    grid = jnp.asarray(configuration_grid(start, per_angle=32))
    rng = np.random.default_rng(0)
    raw_indefinite = 0
    for _ in range(40):
        draw = {
            "parameters.I1": rng.uniform(-0.1, 0.1),  # negative too (clipped at 0 by its bound)
            "parameters.I2": rng.uniform(-0.1, 0.1),
            "parameters.m2": rng.uniform(0.01, 2.0),
            "parameters.r2": rng.uniform(0.0, 1.0),  # bounded at 2× its start
            "parameters.Ir": rng.uniform(0.0, 1e-3),
        }
        theta = [draw[name] for name in physical_names(start)]
        model = with_physical_vector(start, jnp.asarray(theta))
        raw = start.system.with_parameters({k: p.value for k, p in model.parameters.items()})
        raw_indefinite += _smallest_eigenvalue(raw, grid) <= 0
        assert _smallest_eigenvalue(model.known_system, grid) > 0
        assert mass_matrix_violation(model) is None
    assert raw_indefinite > 10  # the draws do leave the region before `consistent`


def test_consistency_leaves_a_physical_start_as_it_is_and_bounds_lengths_and_masses():
    """The lab's values are inside the region: `consistent` changes nothing. Learned lengths and masses get
    bounds by what they are (r2 ≤ 2 × its start; m2 ≥ a tenth of its start); bounds given in the config win."""
    system = DoublePendulum(**DFKI)
    same = system.consistent()
    for name in ("I1", "I2", "m2", "r2"):
        assert float(same.parameter(name)) == float(system.parameter(name))
    model = PINODE(system, learn_parameters={"I1": {}, "r2": {}, "m2": {}, "l1": {"upper": 1.0}})
    p = model.parameters
    assert p["r2"].upper == pytest.approx(2 * DFKI["r2"]) and p["r2"].lower == 0.0
    assert p["m2"].lower == pytest.approx(DFKI["m2"] / 10) and p["m2"].upper is None
    assert p["l1"].upper == 1.0 and p["l1"].lower == pytest.approx(0.15)
    assert p["I1"].lower == 0.0 and p["I1"].upper is None
    pendulum = Pendulum(
        mass=1.0, com=0.5, inertia=0.1, inertia_about="joint", parameter_set="identified"
    )
    assert float(pendulum.consistent().inertia) == 0.1
    learned_to_zero = pendulum.with_parameters({"inertia": jnp.asarray(0.0)})
    assert float(learned_to_zero.consistent().inertia) == pytest.approx(1e-3 * 0.25)


def test_the_grid_check_names_the_parameters_of_a_non_physical_model():
    """A system without `consistent` protection that goes indefinite (a user's lumped M): the check fails and
    names where and which parameters."""

    bad = DoublePendulum(**DFKI)
    # Bypass `consistent` (a model with no protection): the raw system inside a PINODE-like wrapper.
    raw = bad.with_parameters({"r2": jnp.asarray(0.82), "I1": jnp.asarray(0.0)})
    model = PINODE(raw)
    violation = mass_matrix_violation(model)
    assert violation is not None and violation["min_eigenvalue"] < 0
    assert abs(abs(violation["q"]["q2"]) - np.pi) < 0.5  # indefinite near q2 = π
    with pytest.raises(
        NonPhysicalModel, match=r"the run X: the mass matrix M\(q\) is not positive definite"
    ):
        check_physical(model, "the run X")
    assert mass_matrix_violation(PINODE(DoublePendulum(**DFKI))) is None


@pytest.fixture(scope="module")
def pendulum_csv(tmp_path_factory):
    folder = tmp_path_factory.mktemp("consistency")
    return write_pendulum_csv(folder / "pendulum.csv", steps=600, hold=20, scale=1.5)


@pytest.fixture(scope="module")
def windows(pendulum_csv):
    return make_windows(read_pendulum_csv(pendulum_csv), 5)


_loss = unit_pendulum_loss


def _start():
    return PINODE(Pendulum(), friction=JointFriction(1, coulomb={0: 0.02}, viscous={0: 0.05}))


def test_an_identification_forced_to_diverge_keeps_its_start(windows, monkeypatch):
    """A solver that returns a damping 10⁶ times too large (rollouts blow up) or a finite but worse point: the
    start is kept and the result says why; the honest solver still improves on the same start."""
    start = _start()
    honest = identify(start, RK4(), windows, _loss())
    assert honest.kept_start is None and honest.loss < honest.initial_loss

    def diverging(residual, x, lower, upper, dtype, max_iterations):
        return np.asarray(x) * 1e6, 0.0, 1, "forced"

    monkeypatch.setattr(identify_module, "_bounded_least_squares", diverging)
    result = identify(start, RK4(), windows, _loss())
    assert result.kept_start is not None and "not below the start" in result.kept_start
    assert result.loss == result.initial_loss
    assert np.allclose(result.theta, [0.02, 0.05])
    assert result.model.friction.values_by_term() == start.friction.values_by_term()


def test_a_non_finite_start_is_an_error_naming_its_parameters(windows):
    start = PINODE(Pendulum(), friction=JointFriction(1, coulomb={0: 0.02}, viscous={0: 1e30}))
    with pytest.raises(NonFiniteStart, match=r"friction\.viscous\.theta = 1e\+30"):
        identify(start, RK4(), windows, _loss())


def test_a_collapse_by_orders_of_magnitude_is_reported(windows, monkeypatch):
    """A coefficient that goes 0.02 → 2e-9 is on no bound; it is reported as collapsed."""
    start = _start()

    def collapse(residual, x, lower, upper, dtype, max_iterations):
        return np.asarray([2e-9, 0.1]), 0.0, 1, "forced"

    monkeypatch.setattr(identify_module, "_bounded_least_squares", collapse)
    result = identify(start, RK4(), windows, _loss())
    assert (
        result.kept_start is None
    )  # it fits the data (viscous 0.1 is the truth) better than the start
    assert [c["name"] for c in result.collapsed()] == ["friction.coulomb.theta"]
    trained = with_physical_vector(start, jnp.asarray([2e-9, 0.0]))
    assert [c["name"] for c in collapsed_parameters(start, trained)] == [
        "friction.coulomb.theta",
        "friction.viscous.theta",
    ]
    hits = trained_bound_hits(start, trained)
    assert [h["name"] for h in hits] == ["friction.coulomb.theta", "friction.viscous.theta"]
    assert [h["side"] for h in hits] == ["lower", "lower"]
    assert trained_bound_hits(start, start) == []


def test_the_default_selection_refuses_a_coordinate_trade():
    """An epoch that halves one coordinate's error and worsens another's by 20 % beats the physics on the mean
    (0.85) but never under the default score; an epoch that improves both is scored by its mean."""
    base = np.array([0.1, 2.0])
    trade = np.array([0.05, 2.4])
    assert _Selection("relative_error", base).score(1.0, trade) == pytest.approx(0.85)
    guarded = _Selection("guarded_relative_error", base)
    assert guarded.score(1.0, trade) > 1.0
    assert guarded.score(1.0, base * np.array([0.5, 0.9])) == pytest.approx(0.7)
    assert guarded.score(1.0, base) == pytest.approx(1.0)


def _config(path, **model):
    return validate(
        {
            "name": "consistency",
            "seed": 0,
            "system": {"name": "pendulum", "params": {"mass": 1.0, "length": 1.0, "g": 1.0}},
            "model": {
                "type": "pinode",
                "width": 8,
                "depth": 1,
                "friction": {"coulomb": ["theta"], "viscous": ["theta"]},
                **model,
            },
            "data": {"train": [path], "mapping": dict(PENDULUM_MAPPING)},
            "training": {"epochs": 1, "batch_size": 32, "horizon": 3, "learning_rate": 1e-3},
        }
    )


def test_bound_hits_are_reported_on_the_least_squares_path(tmp_path):
    """Data with an energy-creating friction: the least-squares friction start leaves viscous at 0 on its bound.
    With friction not trainable nothing is identified through the solver, and the hit is still in summary.json
    and warned about."""
    forward = write_pendulum_csv(tmp_path / "forward.csv", steps=300, hold=20, scale=1.0)
    t, theta, theta_dot, torque = np.loadtxt(forward, delimiter=",", skiprows=1).T
    # Played backwards, a damped pendulum gains energy from its friction: the fit asks for negative damping.
    path = tmp_path / "reversed.csv"
    data = np.column_stack([t, theta[::-1], -theta_dot[::-1], torque[::-1]])
    np.savetxt(path, data, delimiter=",", header="t,theta,theta_dot,torque", comments="")
    config = _config(
        str(path), friction={"viscous": ["theta"], "coulomb": ["theta"], "trainable": False}
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train_run(config.replace(training={"epochs": 0}), str(tmp_path / "run"), progress=False)
    record = json.loads((tmp_path / "run" / "summary.json").read_text())["identification"]
    assert record["friction_fit"] == "lstsq"
    assert "friction.viscous.theta" in [h["name"] for h in record["at_bound"]]
    assert any("least-squares friction.viscous.theta" in str(w.message) for w in caught)


def test_identification_worse_on_a_validation_coordinate_keeps_the_start(pendulum_csv, tmp_path):
    """A given model that matches the validation rig (viscous 0.6) but not the training recording (0.1): the
    physics identified on training is worse on validation, so `accept: every_coordinate` keeps the start and
    says why; `accept: loss` keeps the fit."""
    other = write_pendulum_csv(
        tmp_path / "other.csv", steps=300, hold=20, scale=1.5, friction=(0.05, 0.6)
    )
    records = {}
    given = {"coulomb": {"theta": 0.05}, "viscous": {"theta": 0.6}}
    for accept in ("every_coordinate", "loss"):
        config = _config(pendulum_csv, identification={"accept": accept}, friction=given)
        config = config.replace(data={"validation": [str(other)]}, training={"epochs": 0})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            train_run(config, str(tmp_path / accept), progress=False)
        records[accept] = json.loads((tmp_path / accept / "summary.json").read_text())[
            "identification"
        ]
    kept = records["every_coordinate"]
    assert kept["kept_start"] is not None and "validation" in kept["kept_start"]
    assert kept["physics"]["friction"]["viscous"]["theta"] == pytest.approx(0.6, rel=1e-6)
    assert records["loss"]["kept_start"] is None
    assert records["loss"]["physics"]["friction"]["viscous"]["theta"] == pytest.approx(
        0.1, rel=0.05
    )
    assert any(
        a > b for a, b in zip(kept["validation_after"], kept["validation_before"], strict=True)
    )


def test_least_squares_identification_recovers_the_friction_without_rollouts(
    pendulum_csv, tmp_path
):
    """`method: least_squares`, the equation-error fit, from friction 100× too large (and at 0): the filtered
    inverse-dynamics residual comes near the true coefficients (viscous within 10 %, Coulomb within 25 %: at 20 Hz
    the differentiated velocity errs where the held torque jumps, which is why rollout fits exist), and the
    record says what was fitted."""
    from lagnet.run.recordings import sample_statistics

    stats = sample_statistics([read_pendulum_csv(pendulum_csv)])
    for factor in (0.0, 100.0):
        start = PINODE(
            Pendulum(),
            friction=JointFriction(1, coulomb={0: 0.05 * factor}, viscous={0: 0.1 * factor}),
        )
        result = identify_equation_error(start, stats["q"], stats["qd"], stats["qdd"], stats["u"])
        got = result.model.friction.values_by_term()
        assert result.kept_start is None and result.loss < 0.5 * result.initial_loss
        assert got["coulomb"][0] == pytest.approx(0.05, rel=0.25)
        assert got["viscous"][0] == pytest.approx(0.1, rel=0.1)
    config = _config(pendulum_csv, identification={"method": "least_squares"})
    train_run(config.replace(training={"epochs": 0}), str(tmp_path / "run"), progress=False)
    record = json.loads((tmp_path / "run" / "summary.json").read_text())["identification"]
    assert record["method"] == "least_squares" and record["horizon"] is None
    assert record["physics"]["friction"]["viscous"]["theta"] == pytest.approx(0.1, rel=0.1)
    # As the rollout fit's first stage, the rollouts then take the coefficients to the truth.
    config = _config(pendulum_csv, identification={"first_stage": "least_squares"})
    train_run(config.replace(training={"epochs": 0}), str(tmp_path / "staged"), progress=False)
    record = json.loads((tmp_path / "staged" / "summary.json").read_text())["identification"]
    assert record["method"] == "solver" and record["kept_start"] is None
    assert record["physics"]["friction"]["viscous"]["theta"] == pytest.approx(0.1, rel=0.02)
    assert record["physics"]["friction"]["coulomb"]["theta"] == pytest.approx(0.05, rel=0.02)


def test_the_equation_error_joins_the_rollout_fit_with_its_stated_weight(windows, pendulum_csv):
    """`equation_error_weight` w: at the start the equation error counts exactly w times the rollout loss; w = 0
    is the rollout fit; a large w ends where the equation-error fit alone ends (within 2 %), away from the
    rollout fit's truth, and a moderate w in between, on the Coulomb coefficient where the two disagree."""
    from lagnet.run.recordings import sample_statistics

    stats = sample_statistics([read_pendulum_csv(pendulum_csv)])
    samples = (stats["q"], stats["qd"], stats["qdd"], stats["u"])
    start = PINODE(Pendulum(), friction=JointFriction(1, coulomb={0: 0.1}, viscous={0: 0.2}))

    def fitted(w):
        return identify(
            start,
            RK4(),
            windows,
            unit_pendulum_loss(),
            equation_error=samples,
            equation_error_weight=w,
        )

    def coulomb(result):
        return float(result.model.friction.values_by_term()["coulomb"][0])

    rollouts, alone = fitted(0.0), identify(start, RK4(), windows, unit_pendulum_loss())
    assert rollouts.initial_loss == alone.initial_loss and coulomb(rollouts) == coulomb(alone)
    equation = identify_equation_error(start, *samples)
    heavy, moderate = fitted(1e5), fitted(0.1)
    assert heavy.initial_loss == pytest.approx((1 + 1e5) * alone.initial_loss, rel=1e-6)
    truth, ee = coulomb(alone), coulomb(equation)
    assert truth == pytest.approx(0.05, rel=0.02) and abs(ee - truth) > 0.05 * truth
    assert coulomb(heavy) == pytest.approx(ee, rel=0.02)
    assert min(truth, ee) < coulomb(moderate) < max(truth, ee)


def _move_the_rollout_fit(monkeypatch, factor: float) -> None:
    """Make the run's rollout fit end at `factor` times the values it finds (a fit gone wrong)."""
    import dataclasses

    from lagnet.run import identification as stage
    from lagnet.train.identify import with_physical_vector

    real = stage.identify

    def moved(start, *args, **kwargs):
        result = real(start, *args, **kwargs)
        theta = factor * np.asarray(result.theta)
        return dataclasses.replace(
            result, model=with_physical_vector(start, jnp.asarray(theta)), theta=theta
        )

    monkeypatch.setattr(stage, "identify", moved)


def test_a_fit_anchored_to_its_first_stage_is_never_worse_than_the_classical_fit(
    pendulum_csv, tmp_path, monkeypatch
):
    """`anchor: first_stage`: the rollout fit starts from the equation-error fit and is judged against it. A fit
    forced far off (every coefficient ×4) is worse on the validation recording than that first stage, so the run
    keeps the least-squares fit, not the given values; the anchor needs `first_stage: least_squares`."""
    _move_the_rollout_fit(monkeypatch, 4.0)
    other = write_pendulum_csv(tmp_path / "other.csv", steps=300, hold=20, scale=1.2, seed=3)
    given = {"coulomb": {"theta": 0.05}, "viscous": {"theta": 0.6}}
    identification = {"first_stage": "least_squares", "anchor": "first_stage"}
    config = _config(pendulum_csv, identification=identification, friction=given)
    config = config.replace(data={"validation": [str(other)]}, training={"epochs": 0})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        train_run(config, str(tmp_path / "run"), progress=False)
    record = json.loads((tmp_path / "run" / "summary.json").read_text())["identification"]
    assert record["anchor"] == "first_stage" and "validation" in record["kept_start"]
    assert record["physics"]["friction"]["viscous"]["theta"] == pytest.approx(0.1, rel=0.1)
    with pytest.raises(ConfigError, match="needs method: solver and first_stage: least_squares"):
        _config(pendulum_csv, identification={"anchor": "first_stage"})


def test_a_fit_held_to_the_least_squares_baseline_never_loses_to_the_classical_fit(
    pendulum_csv, tmp_path, monkeypatch
):
    """`baseline: least_squares`: a rollout fit moved off (every coefficient ×2) still beats the given values
    (viscous 0.6, far from the data's 0.1), so with the default baseline it is kept; it is worse than the
    equation-error fit on the validation recording, so with `baseline: least_squares` that fit is kept in its
    place. The option needs method: solver and accept: every_coordinate."""
    _move_the_rollout_fit(monkeypatch, 2.0)
    other = write_pendulum_csv(tmp_path / "other.csv", steps=300, hold=20, scale=1.2, seed=3)
    given = {"coulomb": {"theta": 0.05}, "viscous": {"theta": 0.6}}
    viscous = {}
    for baseline in ("given", "least_squares"):
        config = _config(pendulum_csv, identification={"baseline": baseline}, friction=given)
        config = config.replace(data={"validation": [str(other)]}, training={"epochs": 0})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            train_run(config, str(tmp_path / baseline), progress=False)
        summary = json.loads((tmp_path / baseline / "summary.json").read_text())
        record = summary["identification"]
        assert record["baseline"] == baseline and record["kept_start"] is None
        viscous[baseline] = record["physics"]["friction"]["viscous"]["theta"]
    assert viscous["given"] == pytest.approx(0.2, rel=0.1)  # the fit, ×2, kept: it beats 0.6
    assert viscous["least_squares"] == pytest.approx(0.1, rel=0.1)
    assert "than the least-squares fit" in record["kept_least_squares"]
    assert "worse than the start" not in record["kept_least_squares"]
    with pytest.raises(ConfigError, match="needs method: solver and accept: every_coordinate"):
        _config(pendulum_csv, identification={"baseline": "least_squares", "accept": "loss"})


def test_an_old_runs_config_with_a_changed_default_prints_the_difference(
    pendulum_csv, tmp_path, capsys
):
    """A run made when `training.select_by` defaulted to `auto` (its config.yaml says so) and before a key
    existed: `lagnet train CFG --compare-defaults RUN` names both; keys the file sets are not listed."""
    import yaml

    from lagnet.cli import main
    from lagnet.config.defaults import changed_defaults

    cfg = tmp_path / "rig.yaml"
    user = {
        "name": "rig",
        "system": {"name": "pendulum", "params": {"mass": 1.0, "length": 1.0, "g": 1.0}},
        "model": {"type": "pinode", "width": 8, "identification": {"prior_weight": 0.1}},
        "data": {"train": [pendulum_csv], "mapping": dict(PENDULUM_MAPPING)},
        "training": {"epochs": 1},
    }
    cfg.write_text(yaml.safe_dump(user))
    run = tmp_path / "old_run"
    run.mkdir()
    saved = validate(user).to_dict()
    saved["training"]["select_by"] = "auto"
    saved["training"]["epochs"] = 7  # set by the file: not a default, not listed
    del saved["model"]["identification"]["accept"]
    (run / "config.yaml").write_text(yaml.safe_dump(saved))
    changed = {c["key"]: c for c in changed_defaults(str(cfg), str(run))}
    assert set(changed) == {"training.select_by", "model.identification.accept"}
    assert changed["training.select_by"]["run"] == "auto"
    assert changed["training.select_by"]["now"] == "guarded_relative_error"
    assert main(["train", str(cfg), "--compare-defaults", str(run)]) == 0
    out = capsys.readouterr().out
    assert "training.select_by: 'auto' → 'guarded_relative_error'" in out
    assert "model.identification.accept: None → 'every_coordinate'" in out
    (run / "config.yaml").write_text(yaml.safe_dump(validate(user).to_dict()))
    assert changed_defaults(str(cfg), str(run)) == []


def test_the_evaluation_shows_the_physics_as_given_beside_the_identified(pendulum_csv, tmp_path):
    """A run that identified its physics keeps the given physics; `lagnet evaluate` reports both, and here the
    identified physics (viscous 0.6 → the data's 0.1) is the better of the two at the horizon."""
    from lagnet.evaluate.run import GIVEN, PRIOR, evaluate_run

    given = {"coulomb": {"theta": 0.05}, "viscous": {"theta": 0.6}}
    config = _config(pendulum_csv, friction=given).replace(training={"epochs": 0})
    config = config.replace(data={"test": [pendulum_csv]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        train_run(config, str(tmp_path / "run"), progress=False)
        metrics = evaluate_run(str(tmp_path / "run"), progress=False, plots=False)
    errors = metrics["errors"]
    assert set(errors) >= {"model", PRIOR, GIVEN}
    assert errors[PRIOR]["theta_dot"]["final_mean"] < 0.5 * errors[GIVEN]["theta_dot"]["final_mean"]


def test_report_md_names_bound_hits_collapses_and_a_kept_start_on_every_path():
    from lagnet.evaluate.report import training_lines

    hit = {"name": "friction.viscous.theta", "value": 0.0, "bound": 0.0, "side": "lower"}
    lines = "\n".join(
        training_lines(
            {
                "identification": {
                    "method": "solver",
                    "kept_start": "the fit ended at loss nan, not below the start's 1",
                    "at_bound": [],
                    "friction_fit_at_bound": [hit],
                    "collapsed": [
                        {"name": "friction.coulomb.theta", "start": 2.2e-4, "value": 6e-9}
                    ],
                },
                "at_bound": [dict(hit, name="parameters.mass", value=0.1, bound=0.1)],
            }
        )
    )
    assert "kept the starting physics: the fit ended at loss nan" in lines
    assert "least-squares friction start left on its bound: friction.viscous.theta = 0" in lines
    assert "friction.coulomb.theta 0.00022 → 6e-09" in lines
    assert "Training left on a bound: parameters.mass = 0.1 (lower bound 0.1)" in lines
    only_friction = training_lines(
        {"identification": {"method": "none", "friction_fit": "lstsq", "at_bound": [hit]}}
    )
    assert only_friction == [
        "- Friction: the least-squares start, on its bound: friction.viscous.theta = 0 (lower bound 0)."
    ]


def test_a_robot_trees_learned_inertias_stay_a_rigid_bodys():
    """The DFKI double pendulum from its URDF with its bodies' masses and principal inertias learned: random
    values (negative, and far off the triangle inequalities) give bodies whose moments satisfy them, and M(q) ≻ 0
    on the grid."""
    from pathlib import Path

    from lagnet.systems import RigidBodyTree

    urdf = (
        Path(__file__).parent.parent / "data/real/dfki_double_pendulum_A0/model_2.1_pendubot.urdf"
    )
    tree = RigidBodyTree.from_urdf(urdf, actuated=("Joint1", "Joint2"))
    start = PINODE(tree, learn_parameters=("body_mass", "body_inertia"))
    assert start.parameters["body_mass"].lower > 0
    rng = np.random.default_rng(1)
    names = physical_names(start)
    for _ in range(5):
        theta = rng.uniform(-1.0, 1.0, len(names)) * np.where(
            [n.startswith("parameters.body_inertia") for n in names], 0.1, 2.0
        )
        model = with_physical_vector(start, jnp.asarray(theta))
        moments = np.asarray(model.known_system.body_inertia)
        assert np.all(moments >= 0)
        assert np.all(moments <= moments.sum(axis=-1, keepdims=True) - moments + 1e-12)
        assert mass_matrix_violation(model) is None

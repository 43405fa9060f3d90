"""`lagnet evaluate --control`: closed loops on the simulated rig judge a model; a flipped damping sign fails."""

import functools
import json
import os

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import lagnet
from lagnet.config import validate
from lagnet.control import Dynamics, cartpole_evaluation
from lagnet.control.cartpole_evaluation import (
    control_section,
    evaluate_control,
    evaluate_lqr,
    upright_lqr,
)
from lagnet.control_seeds import evaluate_run_control_seeds
from lagnet.integrators import RK4
from lagnet.run.training import train_run
from lagnet.simulate import CartPoleRig, Plant
from lagnet.systems import Pendulum

RIG = CartPoleRig()


class CartDamping(eqx.Module):
    """−b ẋ on the cart: a model's (learned) viscous friction, of either sign."""

    b: jax.Array

    def __call__(self, q, qd):
        return jnp.stack([-self.b * qd[0], jnp.zeros_like(qd[1])])


class CartCoulomb(eqx.Module):
    """−c tanh(ẋ / ε) on the cart: smoothed Coulomb friction, with a slope c / ε at rest."""

    c: float
    epsilon: float

    def __call__(self, q, qd):
        return jnp.stack([-self.c * jnp.tanh(qd[0] / self.epsilon), jnp.zeros_like(qd[1])])


def damped_model(b: float) -> Dynamics:
    return Dynamics(Plant(RIG.known_system(), (CartDamping(jnp.asarray(b)),)), RK4(), RIG.dt)


def test_lqr_on_a_model_with_flipped_cart_damping_fails_on_the_rig():
    # The rig's cart has 0.8 N s/m viscous drag and about 0.2 N Coulomb friction: a model with +2 N s/m is close,
    # one with −2 N s/m (energy from nowhere) gets an LQR that under-damps the cart on the rig.
    right, _ = evaluate_lqr(damped_model(2.0), RIG, starts=4, seconds=3.0)
    flipped, xs = evaluate_lqr(damped_model(-2.0), RIG, starts=4, seconds=3.0)
    assert right == 4
    assert flipped == 0


def test_lqr_is_designed_on_the_slopes_a_balancing_loop_sees(monkeypatch):
    # The rig's own cart Coulomb friction (0.22 N), smoothed over 1 mm/s: a slope of 220 N s/m exactly at rest.
    # The model's 20 ms RK4 step linearised there is unstable beyond anything the rig does in motion; an LQR
    # designed on it fails, while one designed on the slopes averaged over a balancing loop's velocities holds.
    model = Dynamics(Plant(RIG.known_system(), (CartCoulomb(0.22, 1e-3),)), RK4(), RIG.dt)
    k_exact, _, _ = upright_lqr(model, spread=None)
    k_averaged, _, _ = upright_lqr(model)
    assert not np.allclose(k_exact, k_averaged, rtol=0.1)
    held, _ = evaluate_lqr(model, RIG, starts=4, seconds=3.0)
    assert held == 4
    monkeypatch.setattr(
        cartpole_evaluation, "upright_lqr", lambda dyn: upright_lqr(dyn, spread=None)
    )
    exact_held, _ = evaluate_lqr(model, RIG, starts=4, seconds=3.0)
    assert exact_held == 0


def test_control_metrics_keys_and_report():
    # A small MPC (the keys, not the swing-up, are tested here).
    small = dict(horizon=5, iterations=2, max_evaluations=4, first_iterations=3)
    c = evaluate_control(
        Dynamics(RIG.known_system(), RK4(), RIG.dt),
        lqr_starts_count=2,
        mpc_starts=1,
        seconds=0.4,
        mpc_options=small,
    )
    assert set(c) == {"lqr", "mpc", "equilibrium", "linearisation"}
    assert c["lqr"]["starts"] == 2 and 0 <= c["lqr"]["success"] <= 2
    assert set(c["mpc"]) == {"success", "starts", "median_ms", "p99_ms", "cost", "balance"}
    assert 0 < c["mpc"]["median_ms"] <= c["mpc"]["p99_ms"]
    # The known model is the rig's Lagrangian (lighter cart, no friction): at rest upright it is at equilibrium,
    # and its linearisation has the rig's signs everywhere except the damping it lacks.
    assert c["equilibrium"]["upright"]["norm"] < 1e-12
    entries = {e["entry"]: e for e in c["linearisation"]["entries"]}
    assert entries["dphi_ddot/dphi"]["same_sign"] and entries["dx_ddot/dforce"]["same_sign"]
    np.testing.assert_allclose(entries["dphi_ddot/dphi"]["ratio"], 1.0, atol=0.03)
    # The rig's drag and the pole bearing's friction, absent from the known model.
    assert not entries["dx_ddot/dx_dot"]["same_sign"]
    assert not entries["dphi_ddot/dphi_dot"]["same_sign"]
    assert c["linearisation"]["same_sign"] == 6 and c["linearisation"]["total"] == 10
    text = control_section({"control": c})
    assert "## Control on the simulated rig" in text and "| dphi_ddot/dphi |" in text


def test_control_needs_a_cartpole():
    with pytest.raises(ValueError, match="cart-pole"):
        evaluate_control(Dynamics(Pendulum(), RK4(), 0.02))


def test_run_control_results_merge_into_metrics_and_report(tmp_path, monkeypatch):
    import json

    import lagnet.control.cartpole_evaluation as ev

    fake = {
        "lqr": {"success": 13, "starts": 14},
        "mpc": {
            "success": 5,
            "starts": 6,
            "median_ms": 3.5,
            "p99_ms": 9.0,
            "cost": 2.0,
            "balance": "lqr",
        },
        "equilibrium": {"upright": {"qdd": [0.0, 0.5], "qdd_rig": [0.0, 0.0], "norm": 0.5}},
        "linearisation": {
            "entries": [{"entry": "dphi_ddot/dphi", "model": 70.0, "rig": 71.0, "same_sign": True}],
            "same_sign": 1,
            "total": 1,
        },
    }
    import sys

    # The module (`lagnet.control.load` the attribute is the function it defines).
    monkeypatch.setattr(sys.modules["lagnet.control.load"], "load", lambda path: path)
    monkeypatch.setattr(ev, "evaluate_control", lambda dyn, **kw: fake)
    out = tmp_path / "evaluation"
    out.mkdir()
    (out / "metrics.json").write_text(json.dumps({"windows": 7}))
    (out / "report.md").write_text("# Evaluation\n")
    assert ev.evaluate_run_control("RUN", str(out)) == fake
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["windows"] == 7 and metrics["control"] == fake
    report = (out / "report.md").read_text()
    assert report.startswith("# Evaluation\n")
    assert (
        "13/14 starts" in report
        and "5/6 starts" in report
        and "median 3.5 ms, p99 9.0 ms" in report
    )


def test_seeds_train_the_config_again_and_sum_the_closed_loops(tmp_path, capsys, monkeypatch):
    """`lagnet evaluate RUN --control --seeds 0 1`: the run is seed 0; seed 1 is its config trained again into
    RUN/seeds/seed-1; both are evaluated on the rig, and the counts summed. A second call reuses seed 1's run."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    config = validate(
        {
            "name": "seeds_test",
            "dtype": "float64",
            "system": {"name": "cartpole"},
            "model": {
                "type": "pinode",
                "width": 4,
                "zero_init": False,
                "identification": {"method": "none"},
            },
            "data": {
                "train": [os.path.join(root, "data", "sim", "cartpole_control_test.npz")],
                "max_duration": 4.0,
                "mapping": {
                    "time": "t",
                    "positions": ["x", "phi"],
                    "velocities": ["x_dot", "phi_dot"],
                    "inputs": ["force"],
                },
            },
            "training": {"epochs": 1, "batch_size": 32, "horizon": 2},
        }
    )
    run = tmp_path / "run"
    train_run(config, str(run), progress=False)
    small = dict(lqr_starts_count=2, seconds=1.0, mpc=False)
    control = evaluate_run_control_seeds(str(run), [0, 1], **small)
    seed1 = run / "seeds" / "seed-1"
    assert (seed1 / "summary.json").exists() and not (run / "seeds" / "seed-0").exists()
    x, u = np.array([0.1, 0.2, 0.3, -0.4]), np.array([1.0])
    assert not np.allclose(lagnet.load(str(run)).f(x, u), lagnet.load(str(seed1)).f(x, u))
    per_seed = control["seeds"]
    assert list(per_seed) == ["0", "1"]
    assert per_seed["0"] == {k: v for k, v in control.items() if k not in ("seeds", "over_seeds")}
    assert control["over_seeds"] == {
        "seeds": [0, 1],
        "lqr": {
            "success": per_seed["0"]["lqr"]["success"] + per_seed["1"]["lqr"]["success"],
            "starts": 4,
            "worst": min(per_seed["0"]["lqr"]["success"], per_seed["1"]["lqr"]["success"]),
        },
    }
    with open(run / "evaluation" / "metrics.json") as f:
        assert json.load(f)["control"] == control
    report = (run / "evaluation" / "report.md").read_text()
    assert (
        "## Control on the simulated rig" in report and "## Control over training seeds" in report
    )
    assert "\n| 1 | " in report and "\n| all | " in report
    # The CLI, with the same small closed loops: seed 1's finished run is reused, not trained again.
    from lagnet.cli import main

    monkeypatch.setattr(
        cartpole_evaluation, "evaluate_control", functools.partial(evaluate_control, **small)
    )
    stamp = (seed1 / "summary.json").stat().st_mtime_ns
    assert main(["evaluate", str(run), "--control", "--seeds", "1", "--no-plots"]) == 0
    assert (seed1 / "summary.json").stat().st_mtime_ns == stamp
    with open(run / "evaluation" / "metrics.json") as f:
        assert json.load(f)["control"]["over_seeds"]["seeds"] == [1]
    assert "## Control over training seeds" in capsys.readouterr().out
    # --seeds without --control is a usage error, not a silent no-op.
    assert main(["evaluate", str(run), "--seeds", "1", "--no-plots"]) == 2
    assert "give --control too" in capsys.readouterr().err

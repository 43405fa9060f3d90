"""Friction as physics (passive for any coefficients, only listed terms) and bounded learnable parameters."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from lagnet.models import PINODE
from lagnet.systems import Bounded, DoublePendulum, JointFriction, Pendulum
from lagnet.systems.friction import SHAPES
from lagnet.systems.parameters import project


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


def _all_terms(shape, n=3):
    terms = {"viscous": dict.fromkeys(range(n), 0.1), "coulomb": dict.fromkeys(range(n), 0.2)}
    if shape == "stribeck":
        terms["stribeck"] = dict.fromkeys(range(n), 0.3)
    return terms


@pytest.mark.parametrize("shape", SHAPES)
def test_friction_is_passive_for_any_coefficients(shape):
    """Q·q̇ ≤ 0 whatever values the raw coefficients take (even negative, as an optimiser might push them)."""
    rng = np.random.default_rng(0)
    base = JointFriction(3, **_all_terms(shape), shape=shape)
    for _ in range(50):
        friction = jax.tree.map(
            lambda b: eqx.tree_at(
                lambda p: p.raw, b, jnp.asarray(rng.normal(size=b.raw.shape) * 5)
            ),
            base,
            is_leaf=lambda x: isinstance(x, Bounded),
        )
        qd = jnp.asarray(rng.normal(size=3) * rng.choice([1e-3, 1e-1, 10.0]))
        assert float(friction(qd) @ qd) <= 0.0


def test_friction_only_listed_terms_exist_and_match_the_formula():
    f = JointFriction(2, viscous={1: 0.001}, coulomb={0: 0.093}, shape="atan", epsilon=0.01)
    assert {t: p.raw.shape for t, p in f.coefficients.items()} == {"viscous": (1,), "coulomb": (1,)}
    qd = jnp.array([0.4, -2.0])
    np.testing.assert_allclose(f(qd), [-0.093 * np.arctan(40.0), 0.002], rtol=1e-14)
    assert f.summary(("a", "b")) == {
        "shape": "atan",
        "epsilon": 0.01,
        "viscous": {"b": 0.001},
        "coulomb": {"a": 0.093},
    }


def test_friction_refuses_negative_or_misplaced_coefficients():
    with pytest.raises(ValueError, match=r"coulomb\[0\] must be a finite coefficient >= 0"):
        JointFriction(1, coulomb={0: -0.1})
    with pytest.raises(ValueError, match="need shape 'stribeck'"):
        JointFriction(1, stribeck={0: 0.1})
    with pytest.raises(ValueError, match="coordinate index 2 not in"):
        JointFriction(2, viscous={2: 0.1})


def _descend(model, target, steps=200, lr=0.05):
    """Adam with the projection `lagnet.fit` applies, on |q̈_model − q̈_target|² at random states."""
    rng = np.random.default_rng(0)
    q, qd = rng.uniform(-2, 2, (64, 2)), rng.normal(size=(64, 2)) * 2
    u = rng.normal(size=(64, 2))
    want = jax.vmap(target)(q, qd, u)
    params, static = eqx.partition(model, model.trainable())
    opt = optax.adam(lr)
    state = opt.init(params)

    @jax.jit
    def step(params, state):
        def loss(p):
            m = eqx.combine(p, static)
            return jnp.mean((jax.vmap(m.acceleration)(q, qd, u) - want) ** 2)

        g = jax.grad(loss)(params)
        updates, state = opt.update(g, state, params)
        return project(eqx.apply_updates(params, updates), static), state

    for _ in range(steps):
        params, state = step(params, state)
    return eqx.combine(params, static)


def test_parameter_starting_at_zero_trains_and_friction_stays_non_negative():
    """I2 = 0 (a log parametrisation could never leave it) and a Coulomb term pushed negative by the data."""
    truth = dict(m1=1.0, m2=0.8, l1=0.5, r1=0.3, r2=0.25, I1=0.02, I2=0.01)
    true_system = DoublePendulum(**truth)
    true_friction = JointFriction(2, viscous={0: 0.05, 1: 0.05})

    def target(q, qd, u):
        return true_system.acceleration(q, qd, u, true_friction(qd))

    start = PINODE(
        DoublePendulum(**{**truth, "I2": 0.0}),
        learn_parameters={"I2": {"scale": 0.01}},
        friction=JointFriction(2, viscous={0: 0.0, 1: 0.0}, coulomb={0: 0.0}),
    )
    trained = _descend(start, target)
    np.testing.assert_allclose(trained.known_system.I2, 0.01, rtol=0.05)
    np.testing.assert_allclose(trained.friction.coefficient("viscous"), [0.05, 0.05], rtol=0.05)
    coulomb = trained.friction.coefficients["coulomb"]
    assert float(coulomb.raw[0]) >= 0.0 and float(coulomb.value[0]) < 1e-3


def test_pendulum_link_conventions_and_refusals():
    m, r, i_com = 0.6, 0.3, 0.004
    about_com = Pendulum(mass=m, com=r, inertia=i_com, g=9.81)
    about_joint = Pendulum(mass=m, com=r, inertia=i_com + m * r**2, inertia_about="joint", g=9.81)
    q = jnp.array([0.7])
    np.testing.assert_allclose(about_com.mass_matrix(q), about_joint.mass_matrix(q), rtol=1e-14)
    np.testing.assert_allclose(
        Pendulum(mass=m, length=r, g=9.81).acceleration(q, q, jnp.zeros(1)),
        -9.81 / r * np.sin(0.7),
        rtol=1e-14,
    )
    with pytest.raises(
        ValueError, match=r"about the joint axis must be >= m r² .*inertia_about: com"
    ):
        Pendulum(mass=m, com=r, inertia=0.01, inertia_about="joint")
    with pytest.raises(ValueError, match="not both"):
        Pendulum(length=1.0, com=0.5)


def test_double_pendulum_needs_no_l2_when_r2_is_given():
    DoublePendulum(m1=1.0, m2=1.0, l1=0.3, r1=0.2, r2=0.1)  # no l2 anywhere
    with pytest.raises(ValueError, match="symmetric 2 × 2"):
        DoublePendulum(inertia_offset=[[1.0, 0.5], [0.0, 1.0]])


def test_a_parameter_that_plays_no_role_is_reported_unchanged():
    """gr only multiplies the rotor inertia Ir = 0: its gradient is zero, so training leaves it and says so."""
    from lagnet.models.summary import unchanged_parameters, warn_unchanged

    truth = DoublePendulum(m1=1.0, m2=0.8, l1=0.5, r1=0.3, r2=0.25, I1=0.02, I2=0.01)
    start = PINODE(
        DoublePendulum(m1=1.0, m2=0.8, l1=0.5, r1=0.3, r2=0.25, I1=0.02, I2=0.0, gr=6.0),
        learn_parameters={"I2": {"scale": 0.01}, "gr": {}},
    )
    trained = _descend(start, lambda q, qd, u: truth.acceleration(q, qd, u), steps=20)
    stuck = unchanged_parameters(start, trained)
    assert stuck == [".parameters['gr']"]
    with pytest.warns(UserWarning, match=r"\.parameters\['gr'\].*did not change"):
        warn_unchanged(stuck, "test")

"""Learned models: structure, passivity, friction fits, gradients."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lagnet.models import (
    PINODE,
    BlackBox,
    InputHistory,
    LearnedPotential,
    StateFeatures,
    fit_friction,
    make_mlp,
)
from lagnet.systems import CartPole, JointFriction, Pendulum
from lagnet.systems.parameters import project


def small_mlp(features, out, key, zero=False, final="tanh", width=8, depth=2):
    """A small tanh MLP on `features` (a StateFeatures, or the input size)."""
    return make_mlp(
        features if isinstance(features, int) else features.size,
        out,
        width=width,
        depth=depth,
        activation="tanh",
        final_activation=final,
        zero_output=zero,
        key=key,
    )


@pytest.mark.xla_defaults
def test_make_mlp_draws_the_weights_of_the_eager_construction():
    """`make_mlp` builds the network in one compiled program at a low XLA optimisation level (a faster start);
    the weights must be bit for bit those of `eqx.nn.MLP` built op by op, so a seed means what it meant."""
    key = jax.random.key(3)
    fast = make_mlp(7, 2, width=16, depth=2, activation="tanh", final_activation="identity",
                    zero_output=False, key=key)  # fmt: skip
    eager = eqx.nn.MLP(7, 2, width_size=16, depth=2, activation=jnp.tanh, key=key)
    leaves = [jax.tree.leaves(eqx.filter(m, eqx.is_array)) for m in (fast, eager)]
    assert len(leaves[0]) == len(leaves[1]) == 6
    for a, b in zip(*leaves, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    assert jax.tree.structure(fast) == jax.tree.structure(eager)


def test_pinode_with_zero_network_is_the_known_physics(key):
    cp = CartPole()
    feats = StateFeatures(cp.angles, 1)
    model = PINODE(cp, network=small_mlp(feats, 2, key, zero=True), features=feats)
    q, qd, u = jnp.array([0.1, 2.0]), jnp.array([0.3, -1.0]), jnp.array([0.5])
    np.testing.assert_allclose(model.acceleration(q, qd, u), cp.acceleration(q, qd, u), rtol=1e-14)


def test_features_embed_angles_periodically(key):
    cp = CartPole()
    feats = StateFeatures(cp.angles, 1)
    q, qd, u = jnp.array([0.1, 2.0]), jnp.array([0.3, -1.0]), jnp.array([0.5])
    np.testing.assert_allclose(
        feats(q, qd, u), feats(q + jnp.array([0.0, 2 * jnp.pi]), qd, u), atol=1e-12
    )
    assert feats(q, qd, u).shape == (feats.size,) == (6,)


def test_pinode_network_acts_only_on_force_on(key):
    cp = CartPole()
    feats = StateFeatures(cp.angles, 1)
    model = PINODE(cp, network=small_mlp(feats, 1, key), features=feats, force_on=(0,))
    q, qd, u = jnp.array([0.1, 2.0]), jnp.array([0.3, -1.0]), jnp.array([0.5])
    force = model.nonconservative_force(q, qd, u)
    assert force[1] == 0 and force[0] != 0


def test_learned_parameters_are_bounded_and_trainable(key):
    model = PINODE(Pendulum(mass=2.0), learn_parameters=("mass",))
    np.testing.assert_allclose(model.known_system.mass, 2.0, rtol=1e-6)
    params, _ = eqx.partition(model, model.trainable())
    leaves = jax.tree_util.tree_leaves(params)
    assert (
        len(leaves) == 1
    )  # only the mass's raw value: the system's own parameters and the scale are frozen
    pushed = eqx.tree_at(lambda m: m.parameters["mass"].raw, model, jnp.asarray(-3.0))
    # A mass's default lower bound is a tenth of its given value (a mass never collapses to 0): clipped there
    # where it is used, and projected back after a step.
    assert pushed.known_system.mass == pytest.approx(0.2)
    assert project(pushed).parameters["mass"].value == pytest.approx(0.2)
    with pytest.raises(ValueError, match="has no parameter 'mass_of_moon'"):
        PINODE(Pendulum(), learn_parameters=("mass_of_moon",))


def test_trainable_freezes_system_and_feature_statistics(key):
    cp = CartPole()
    feats = StateFeatures.from_data(
        cp.angles, *(np.random.default_rng(i).random((10, w)) for i, w in enumerate((2, 2, 1)))
    )
    friction = JointFriction(2, coulomb={0: 0.0}, viscous={1: 0.0})
    model = PINODE(cp, network=small_mlp(feats, 2, key), features=feats, friction=friction)
    params, _ = eqx.partition(model, model.trainable())
    assert params.system.cart_mass is None and params.features.q_scale is None
    coulomb = params.friction.coefficients["coulomb"]
    assert (
        coulomb.raw.shape == (1,) and coulomb.scale is None
    )  # only the listed term, not its scale
    assert params.network.layers[0].weight is not None
    frozen = PINODE(cp, friction=friction, friction_trainable=False)
    assert eqx.partition(frozen, frozen.trainable())[0].friction.coefficients["coulomb"].raw is None


def test_learned_potential_with_dissipation_is_passive(key):
    """Unforced, dE/dt = −|Rᵀ q̇|² ≤ 0 for any weights, with known or learned inertia."""
    cp = CartPole()
    feats = StateFeatures(cp.angles, 1)
    k1, k2 = jax.random.split(key)
    for mass_factor in (None, 0.3 * jax.random.normal(k1, (2, 2))):
        model = LearnedPotential(
            cp,
            small_mlp(feats, 1, k1, final="identity"),
            feats,
            mass_factor,
            small_mlp(feats, 4, k2, final="identity"),
        )
        rng = np.random.default_rng(0)
        for _ in range(20):
            q, qd = jnp.asarray(rng.normal(size=2)), jnp.asarray(rng.normal(size=2) * 3)
            qdd = model.acceleration(q, qd, jnp.zeros(1))
            de = jax.jvp(model.energy, (q, qd), (qd, qdd))[1]
            r = model.dissipation_factor(q)
            np.testing.assert_allclose(de, -jnp.sum((r.T @ qd) ** 2), rtol=1e-9, atol=1e-12)
            assert de <= 1e-12


def test_blackbox_shapes(key):
    cp = CartPole()
    feats = StateFeatures(cp.angles, 1)
    model = BlackBox(cp, small_mlp(feats, 2, key), feats)
    out = jax.vmap(model.acceleration)(jnp.ones((5, 2)), jnp.ones((5, 2)), jnp.ones((5, 1)))
    assert out.shape == (5, 2)


def test_friction_fit_recovers_coefficients():
    """Exact accelerations from a known friction law: the least-squares fit gives its coefficients back."""
    cp = CartPole()
    rng = np.random.default_rng(1)
    q = rng.uniform(-3, 3, (400, 2))
    qd = rng.normal(size=(400, 2)) * 2
    u = rng.normal(size=(400, 1))
    for shape, terms in [
        ("tanh", {"coulomb": {0: 0.19}, "viscous": {1: 0.002}}),
        ("atan", {"coulomb": {0: 0.093, 1: 0.078}, "viscous": {0: 0.001, 1: 0.001}}),
        ("stribeck", {"coulomb": {0: 0.19}, "stribeck": {0: 0.05}, "viscous": {1: 0.002}}),
    ]:
        true = JointFriction(2, **terms, shape=shape)
        qdd = jax.vmap(lambda a, b, c: cp.acceleration(a, b, c, true(b)))(q, qd, u)  # noqa: B023
        template = JointFriction(
            2, **{t: dict.fromkeys(v, 0.0) for t, v in terms.items()}, shape=shape
        )
        fit = fit_friction(cp, q, qd, np.asarray(qdd), u, template)
        for term in terms:
            np.testing.assert_allclose(
                fit.coefficient(term), true.coefficient(term), atol=1e-6, err_msg=shape
            )


def test_input_history_layout():
    u = np.arange(5.0)[:, None]
    history = InputHistory(1, 2)
    aug = history.stack(u, history.past_zeros(u))
    assert isinstance(aug, np.ndarray)  # NumPy in, NumPy out: data preparation keeps its float64
    np.testing.assert_array_equal(history.stack(u, history.past_held(u))[0], [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(history.hold(jnp.array([2.0])), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(aug[3], [3.0, 2.0, 1.0])
    np.testing.assert_array_equal(aug[0], [0.0, 0.0, 0.0])
    # The physics sees only the newest input.
    model = PINODE(Pendulum(), input_history=2)
    np.testing.assert_allclose(
        model.acceleration(jnp.zeros(1), jnp.zeros(1), jnp.array([1.0, 5.0, 7.0])), [1.0]
    )


def test_hidden_positions_do_not_reach_the_network(key):
    cp = CartPole()
    feats = StateFeatures(cp.angles, 1, hide_position=(True, False))
    assert feats.size == 5  # sin φ, cos φ, ẋ, φ̇, u
    qd, u = jnp.array([0.3, -1.0]), jnp.array([0.5])
    a = feats(jnp.array([0.0, 2.0]), qd, u)
    b = feats(jnp.array([0.25, 2.0]), qd, u)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "model, hide, hidden",
    [
        ({"type": "pinode"}, None, (False, False)),  # default: every position seen
        (
            {"type": "pinode"},
            "cyclic",
            (True, False),
        ),  # the system's cyclic coordinates: the cart's x
        ({"type": "blackbox"}, "cyclic", (True, False)),
        ({"type": "blackbox"}, ["x"], (True, False)),
        ({"type": "pinode"}, ["phi"], (False, True)),
    ],
)
def test_hide_position_by_name_or_the_cyclic_coordinates(model, hide, hidden):
    from lagnet.config import validate
    from lagnet.run import build_model

    section = {**model, "width": 4} | ({} if hide is None else {"hide_position": hide})
    config = validate({"system": {"name": "cartpole"}, "model": section})
    built = build_model(config, CartPole(), None, key=jax.random.key(0))
    assert built.features.hide_position == hidden


def test_hide_position_refuses_other_words():
    from lagnet.config import ConfigError, validate

    with pytest.raises(ConfigError, match="model.hide_position.*cyclic"):
        validate({"system": {"name": "cartpole"}, "model": {"hide_position": "all"}})


def test_spectral_normalisation_bounds_the_lipschitz_constant():
    """`SpectralNormalised(mlp, L)`: ‖f(x) − f(y)‖ ≤ L ‖x − y‖ for any pair, for a network whose own constant is
    far above L (the test could fail: without it the ratio exceeds L); a bound the network already meets leaves
    it unchanged; gradients are finite where a layer starts at zero (σ's singular values coincide) and agree
    with finite differences."""
    from lagnet.models import SpectralNormalised

    mlp = small_mlp(4, 2, jax.random.key(0), final="identity", width=16)
    mlp = jax.tree_util.tree_map(lambda w: 4.0 * w if eqx.is_array(w) else w, mlp)
    mlp = jax.tree_util.tree_map(lambda w: w.astype(jnp.float64) if eqx.is_array(w) else w, mlp)
    x = jax.random.normal(jax.random.key(1), (2000, 4), jnp.float64)
    y = x + 0.05 * jax.random.normal(jax.random.key(2), (2000, 4), jnp.float64)

    def worst_ratio(f):
        return float(
            jnp.max(
                jnp.linalg.norm(jax.vmap(f)(x) - jax.vmap(f)(y), axis=1)
                / jnp.linalg.norm(x - y, axis=1)
            )
        )

    assert worst_ratio(mlp) > 1.0
    assert worst_ratio(eqx.filter_jit(SpectralNormalised(mlp, 0.5))) <= 0.5 + 1e-12
    loose = SpectralNormalised(mlp, 1e6)
    assert np.allclose(jax.vmap(loose)(x), jax.vmap(mlp)(x), rtol=1e-12, atol=1e-12)

    zero = eqx.tree_at(lambda m: m.layers[-1].weight, mlp, jnp.zeros_like(mlp.layers[-1].weight))
    net = SpectralNormalised(zero, 0.5)

    def loss(n):
        return jnp.sum(jnp.sin(jax.vmap(n)(x[:8])))

    grads = eqx.filter_grad(loss)(net)
    assert all(bool(jnp.all(jnp.isfinite(g))) for g in jax.tree_util.tree_leaves(grads))
    # Directional derivative against central differences, on a layer that is scaled (σ above its share).
    net = SpectralNormalised(mlp, 0.5)
    d = jax.random.normal(jax.random.key(3), mlp.layers[0].weight.shape, jnp.float64)
    g = eqx.filter_grad(loss)(net).mlp.layers[0].weight
    h = 1e-6
    moved = [
        eqx.tree_at(lambda n: n.mlp.layers[0].weight, net, net.mlp.layers[0].weight + s * h * d)
        for s in (1, -1)
    ]
    assert float(jnp.sum(g * d)) == pytest.approx(
        float((loss(moved[0]) - loss(moved[1])) / (2 * h)), rel=1e-6
    )


def test_ensemble_shrinks_its_mean_where_the_members_disagree():
    """`Ensemble`: y = μ (μ² + τ²) / (μ² + τ² + σ²) per output, checked against numpy on members with set outputs;
    members that agree give their common output exactly, members of opposite sign give 0; starting at zero the
    gradient reaches every member and agrees with finite differences; jit and vmap give the eager values."""
    from lagnet.models import Ensemble

    def member(key):
        return small_mlp(3, 2, key, zero=True, final="identity", depth=1)

    keys = jax.random.split(jax.random.key(0), 4)
    ens = jax.tree_util.tree_map(
        lambda w: w.astype(jnp.float64) if eqx.is_array(w) else w, Ensemble(member, keys, 0.1)
    )
    x = jnp.array([0.3, -1.0, 2.0])
    assert np.array_equal(ens(x), np.zeros(2))

    def with_biases(b):
        return eqx.tree_at(lambda e: e.members.layers[-1].bias, ens, jnp.asarray(b, jnp.float64))

    b = np.array([[0.5, -0.2], [0.7, 0.4], [0.6, -0.1], [0.2, 0.3]])
    mean, var = b.mean(0), b.var(0)
    expected = mean * (mean**2 + 0.01) / (mean**2 + 0.01 + var)
    assert np.allclose(with_biases(b)(x), expected, rtol=1e-14)
    assert np.allclose(with_biases(b).disagreement(x), b.std(0), rtol=1e-14)
    assert np.all(np.abs(with_biases(b)(x)) < 0.99 * np.abs(mean))  # shrunk, not only averaged
    assert np.allclose(with_biases(np.tile([0.5, -0.2], (4, 1)))(x), [0.5, -0.2], rtol=1e-14)
    assert np.allclose(with_biases([[1.0, 0], [-1.0, 0], [1.0, 0], [-1.0, 0]])(x), 0.0)
    xs = jax.random.normal(jax.random.key(1), (5, 3), jnp.float64)
    moved = with_biases(b)
    assert np.allclose(
        eqx.filter_jit(lambda e, xs: jax.vmap(e)(xs))(moved, xs),
        np.stack([moved(xi) for xi in xs]),
        rtol=1e-12,
    )

    def loss(e):
        return jnp.sum(jnp.sin(jax.vmap(e)(xs) + 0.3))

    g = eqx.filter_grad(loss)(ens).members.layers[-1].weight
    every_member = np.abs(np.asarray(g)).reshape(4, -1).max(axis=1)
    assert np.all(every_member > 0)  # every member learns from zero
    d = jax.random.normal(jax.random.key(2), g.shape, jnp.float64)
    start = with_biases(b)
    g = eqx.filter_grad(loss)(start).members.layers[-1].weight
    h = 1e-6
    ends = [
        eqx.tree_at(
            lambda e: e.members.layers[-1].weight,
            start,
            start.members.layers[-1].weight + s * h * d,
        )
        for s in (1, -1)
    ]
    assert float(jnp.sum(g * d)) == pytest.approx(
        float((loss(ends[0]) - loss(ends[1])) / (2 * h)), rel=1e-6
    )

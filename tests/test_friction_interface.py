"""The friction interface: every law passive for any parameters, regressors that reproduce the force, jit/vmap/grad,
and `JointFriction` bit for bit the closed form (and the checkpoints) it had as one class."""

import io

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from lagnet.systems import (
    AbstractFriction,
    Bounded,
    CoulombFriction,
    JointFriction,
    StribeckFriction,
    ViscousFriction,
)
from lagnet.systems.friction import SHAPES, TERMS

N = 3


def _laws() -> dict[str, AbstractFriction]:
    """One of each final and of the composite, with terms on some coordinates only."""
    return {
        "viscous": ViscousFriction(N, {0: 0.2, 2: 0.05}),
        "coulomb_tanh": CoulombFriction(N, {1: 0.3}, sign="tanh", epsilon=0.05),
        "coulomb_atan": CoulombFriction(N, {0: 0.093, 1: 0.078}, sign="atan", epsilon=0.01),
        "stribeck": StribeckFriction(
            N, coulomb={0: 0.1}, stribeck={0: 0.2, 2: 0.4}, epsilon=0.02, velocity=0.3
        ),
        "stribeck_atan": StribeckFriction(N, stribeck={1: 0.2}, sign="atan", velocity=0.5),
        "joint_tanh": JointFriction(N, viscous={0: 0.1, 1: 0.2}, coulomb={2: 0.3}),
        "joint_atan": JointFriction(
            N, viscous={1: 0.001}, coulomb={0: 0.093, 2: 0.07}, shape="atan", epsilon=0.01
        ),
        "joint_stribeck": JointFriction(
            N,
            viscous={0: 0.1},
            coulomb={0: 0.05, 1: 0.2},
            stribeck={1: 0.3, 2: 0.1},
            shape="stribeck",
            stribeck_velocity=0.2,
        ),
    }


LAWS = _laws()


def _with_raw(law, raws):
    """`law` with its Bounded coefficients' raw values replaced, in leaf order (any value, even < 0)."""
    return eqx.tree_at(lambda f: [b.raw for b in _bounded(f)], law, [jnp.asarray(r) for r in raws])


def _is_bounded(x):
    return isinstance(x, Bounded)


def _bounded(law):
    return [b for b in jax.tree.leaves(law, is_leaf=_is_bounded) if _is_bounded(b)]


@eqx.filter_jit
def _power(law, qd):
    return law(qd) @ qd


@eqx.filter_jit
def _jit_vmap(law, qd):
    return jax.vmap(law)(qd)


@pytest.mark.parametrize("name", sorted(LAWS))
@settings(deadline=None, max_examples=30 * settings.default.max_examples // 100)
@given(data=st.data())
def test_every_law_is_passive_for_any_raw_coefficients(name, data):
    """Q·q̇ ≤ 0 whatever raw values an optimiser reaches (negative ones included: they are clipped at 0)."""
    law = LAWS[name]
    values = st.floats(-1e3, 1e3, allow_nan=False)
    raws = [data.draw(hnp.arrays(np.float64, b.raw.shape, elements=values)) for b in _bounded(law)]
    scale = data.draw(st.sampled_from([1e-4, 1e-2, 1.0, 100.0]))
    qd = data.draw(hnp.arrays(np.float64, (N,), elements=st.floats(-1.0, 1.0))) * scale
    assert float(_power(_with_raw(law, raws), jnp.asarray(qd))) <= 0.0


@pytest.mark.parametrize("name", sorted(LAWS))
def test_regressors_times_coefficients_is_minus_the_force(name):
    """−Q(q̇) = Σ_k θ_k ⊙ φ_k(q̇) on a batch, with θ_k the length-n coefficient vectors (0 where not listed)."""
    law = LAWS[name]
    qd = np.random.default_rng(1).normal(size=(40, N)) * 0.5
    columns = law.regressors(qd)
    assert set(law.on) <= set(columns)
    rebuilt = sum(np.asarray(law.coefficient(t)) * np.asarray(columns[t]) for t in columns)
    force = jax.vmap(law)(jnp.asarray(qd))
    np.testing.assert_allclose(rebuilt, -np.asarray(force), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", sorted(LAWS))
def test_jit_vmap_and_grad(name):
    """jit and vmap give the eager values; ∂(wᵀQ)/∂raw_k = −scale_k · (w ⊙ φ_k) on the listed coordinates."""
    law = LAWS[name]
    qd = jnp.asarray(np.random.default_rng(2).normal(size=(6, N)))
    eager = np.stack([np.asarray(law(v)) for v in qd])
    np.testing.assert_allclose(_jit_vmap(law, qd), eager, rtol=1e-15, atol=1e-17)
    w = jnp.asarray([0.3, -1.2, 0.7])
    grads = eqx.filter_grad(lambda f, v: w @ f(v))(law, qd[0])
    columns = (law.regressors if not isinstance(law, JointFriction) else _term_regressors(law))(
        qd[0]
    )
    for term, idx in law.on.items():
        expected = -np.asarray(w * columns[term])[list(idx)] * float(law.coefficients[term].scale)
        np.testing.assert_allclose(grads.coefficients[term].raw, expected, rtol=1e-12)


def _term_regressors(law: JointFriction):
    """The composite's regressors on one traced-friendly sample, from its terms."""
    return lambda qd: {k: v for term in law.terms for k, v in term.regressors(qd).items()}


# --- the composite against the closed form it had as one class ---------------------------------------------------


class _OneClassJointFriction(eqx.Module):
    """`JointFriction` as it was before the terms became classes: coefficients in a dict keyed by term."""

    n: int = eqx.field(static=True)
    shape: str = eqx.field(static=True)
    epsilon: float = eqx.field(static=True)
    stribeck_velocity: float = eqx.field(static=True)
    listed: tuple = eqx.field(static=True)
    coefficients: dict

    def __init__(self, n, *, shape="tanh", epsilon=1e-2, stribeck_velocity=0.1, **given):
        self.n, self.shape, self.epsilon, self.stribeck_velocity = (
            n,
            shape,
            epsilon,
            stribeck_velocity,
        )
        on, coefficients = {}, {}
        for term in TERMS:
            if given.get(term):
                idx = tuple(sorted(given[term]))
                on[term] = idx
                coefficients[term] = Bounded([float(given[term][i]) for i in idx], lower=0.0)
        self.listed, self.coefficients = tuple(on.items()), coefficients

    def coefficient(self, term):
        on = dict(self.listed)
        if term not in on:
            return jnp.zeros(self.n, jnp.result_type(float))
        v = self.coefficients[term].value.astype(jnp.result_type(float))
        return jnp.zeros(self.n, v.dtype).at[jnp.asarray(on[term])].set(v)

    def __call__(self, qd):
        on = dict(self.listed)
        force = jnp.zeros_like(qd)
        if self.shape == "atan":
            sign = jnp.arctan(qd / self.epsilon)
        else:
            sign = jnp.tanh(qd / self.epsilon)
        if "viscous" in on:
            force = force - self.coefficient("viscous").astype(qd.dtype) * qd
        level = self.coefficient("coulomb").astype(qd.dtype)
        if "stribeck" in on:
            decay = jnp.exp(-((qd / self.stribeck_velocity) ** 2))
            level = level + self.coefficient("stribeck").astype(qd.dtype) * decay
        if "coulomb" in on or "stribeck" in on:
            force = force - level * sign
        return force


def _listings(shape):
    """Which terms are listed where: one term alone, and all of them on overlapping coordinates."""
    if shape == "stribeck":
        return [
            {"coulomb": (1,)},
            {"stribeck": (2,)},
            {"viscous": (1,), "coulomb": (0, 1), "stribeck": (1, 2)},
        ]
    return [{"viscous": (0, 2)}, {"coulomb": (1,)}, {"viscous": (0, 1, 2), "coulomb": (0, 2)}]


def _bits(x):
    x = np.asarray(x)
    return x.view(np.int64 if x.dtype == np.float64 else np.int32)


@pytest.mark.parametrize("shape", SHAPES)
def test_joint_friction_is_bit_identical_to_its_one_class_form(shape):
    """Same coefficients, same q̇ (float64 and float32, zeros, tiny and large speeds): the same bits, eager and
    jitted; and a checkpoint of the one-class form loads into the composite with the same values."""
    rng = np.random.default_rng(3)
    qd = np.concatenate(
        [rng.normal(size=(30, N)) * s for s in (1e-4, 1e-2, 1.0, 30.0)] + [np.zeros((2, N))]
    )
    qd[-1] = [-0.0, 0.0, -0.0]
    for listing in _listings(shape):
        given = {t: {i: float(rng.uniform(0.0, 0.5)) for i in idx} for t, idx in listing.items()}
        kwargs = dict(shape=shape, epsilon=0.03, stribeck_velocity=0.2)
        new, old = JointFriction(N, **given, **kwargs), _OneClassJointFriction(N, **given, **kwargs)
        x = jnp.asarray(qd)
        np.testing.assert_array_equal(_bits(jax.vmap(new)(x)), _bits(jax.vmap(old)(x)))
        # Each compiled on its own: in one program XLA may fuse the two differently (float32 tanh to 1 ulp).
        for dtype in (np.float64, np.float32):
            x = jnp.asarray(qd, dtype)
            np.testing.assert_array_equal(_bits(_jit_vmap(new, x)), _bits(_jit_vmap(old, x)))
        buf = io.BytesIO()
        eqx.tree_serialise_leaves(buf, old)
        skeleton = JointFriction(
            N, **{t: dict.fromkeys(v, 0.0) for t, v in given.items()}, **kwargs
        )
        buf.seek(0)
        loaded = eqx.tree_deserialise_leaves(buf, skeleton)
        assert loaded.values_by_term() == new.values_by_term()


def test_joint_friction_is_the_sum_of_its_terms():
    f = LAWS["joint_stribeck"]
    assert [type(t) for t in f.terms] == [StribeckFriction, ViscousFriction]
    assert f.on == {"viscous": (0,), "coulomb": (0, 1), "stribeck": (1, 2)}
    assert [type(t) for t in LAWS["joint_atan"].terms] == [CoulombFriction, ViscousFriction]
    assert LAWS["joint_atan"].terms[0].sign == "atan"
    qd = jnp.asarray([0.3, -0.02, 1.5])
    np.testing.assert_allclose(f(qd), sum(t(qd) for t in f.terms), rtol=1e-15)
    # Stribeck: the force at rest-near speeds exceeds the sliding Coulomb level c, and tends to it at speed.
    s = StribeckFriction(1, coulomb={0: 0.1}, stribeck={0: 0.2}, epsilon=1e-4, velocity=0.1)
    assert float(-s(jnp.asarray([0.01]))[0]) == pytest.approx(0.1 + 0.2 * np.exp(-0.01), rel=1e-12)
    assert float(-s(jnp.asarray([2.0]))[0]) == pytest.approx(0.1, rel=1e-12)


def test_a_new_law_needs_only_the_abstract_methods():
    """A quadratic drag Q = −d q̇|q̇|, written against the interface: coefficient access follows from it."""

    class QuadraticDrag(AbstractFriction):
        n: int = eqx.field(static=True)
        index: tuple[int, ...] = eqx.field(static=True)
        drag: Bounded

        def __init__(self, n, coefficients):
            self.n, self.index = n, tuple(sorted(coefficients))
            self.drag = Bounded([coefficients[i] for i in self.index], lower=0.0)

        @property
        def coefficients(self):
            return {"drag": self.drag}

        @property
        def on(self):
            return {"drag": self.index}

        def __call__(self, qd):
            return -(self.coefficient("drag").astype(qd.dtype) * qd * jnp.abs(qd))

        def regressors(self, qd):
            return {"drag": qd * jnp.abs(qd)}

    d = QuadraticDrag(2, {1: 0.5})
    np.testing.assert_allclose(d.coefficient("drag"), [0.0, 0.5])
    assert d.values_by_term() == {"drag": {1: 0.5}}
    np.testing.assert_allclose(d(jnp.asarray([1.0, -2.0])), [0.0, 2.0])
    with pytest.raises(TypeError, match="abstract"):

        class Incomplete(AbstractFriction):
            n: int = 1

        Incomplete()


def test_bad_construction_is_refused_clearly():
    with pytest.raises(
        ValueError, match=r"CoulombFriction\.sign must be one of \['tanh', 'atan'\]"
    ):
        CoulombFriction(2, {0: 0.1}, sign="sgn")
    with pytest.raises(ValueError, match=r"CoulombFriction\.epsilon must be > 0, got 0"):
        CoulombFriction(2, {0: 0.1}, epsilon=0.0)
    with pytest.raises(ValueError, match=r"StribeckFriction\.velocity .* must be > 0"):
        StribeckFriction(2, stribeck={0: 0.1}, velocity=-1.0)
    with pytest.raises(ValueError, match=r"StribeckFriction\.stribeck: no coordinates listed"):
        StribeckFriction(2, stribeck={}, coulomb={0: 0.1})
    with pytest.raises(
        ValueError, match=r"ViscousFriction\.viscous\[1\] must be a finite coefficient"
    ):
        ViscousFriction(2, {1: float("nan")})
    with pytest.raises(
        ValueError, match=r"ViscousFriction\.viscous: coordinate index 5 not in \[0, 2\)"
    ):
        ViscousFriction(2, {5: 0.1})
    # (under the tests' type-checking hook the annotation refuses it first, also naming ViscousFriction)
    with pytest.raises(TypeError, match=r"ViscousFriction"):
        ViscousFriction(2, [0.1, 0.2])
    with pytest.raises(ValueError, match=r"n \(the number of coordinates\) must be an int >= 1"):
        ViscousFriction(0, {0: 0.1})
    with pytest.raises(
        ValueError, match=r"JointFriction\.stribeck\[0\] must be a finite coefficient"
    ):
        JointFriction(1, stribeck={0: -1.0}, shape="stribeck")
    with pytest.raises(ValueError, match=r"JointFriction\.shape must be one of"):
        JointFriction(1, coulomb={0: 0.1}, shape="sign")

"""Joint friction as physics: viscous, Coulomb and Stribeck terms per coordinate, passive by construction.

    Q_i = −b_i q̇_i − [c_i + s_i exp(−(q̇_i / v_s)²)] σ(q̇_i),     b_i, c_i, s_i ≥ 0,

with σ a smooth sign: "tanh" σ = tanh(q̇/ε) (saturates at 1, so c is the Coulomb force), "atan" σ = atan(q̇/ε)
(saturates at π/2: the form many labs identify, e.g. c·atan(100 q̇) with ε = 0.01, so their c goes in unchanged)
and "stribeck", σ = tanh(q̇/ε) with the static excess s decaying over the Stribeck velocity v_s. Only the terms
listed exist (a coordinate without a Coulomb coefficient has no Coulomb parameter to train). Since every
coefficient is a `Bounded` ≥ 0 and σ(v)·v ≥ 0, Q·q̇ ≤ 0 for any parameter values: friction never creates energy.
"""

from collections.abc import Mapping

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .._indexing import place
from .._types import Array, Float, Force, QDot
from .parameters import Bounded

SHAPES = ("tanh", "atan", "stribeck")
TERMS = ("viscous", "coulomb", "stribeck")


def smooth_sign(v, shape: str, epsilon: float):
    """σ(v): tanh(v/ε) ("tanh", "stribeck") or atan(v/ε) ("atan"); odd, increasing, σ(v)·v ≥ 0."""
    if shape == "atan":
        return jnp.arctan(v / epsilon)
    return jnp.tanh(v / epsilon)


class JointFriction(eqx.Module):
    """Q(q̇) of the module docstring on `n` coordinates; each term holds coefficients only where it is listed.

    Build it with `JointFriction(n, viscous={0: 0.001}, coulomb={0: 0.09}, shape="atan", epsilon=0.01)`
    (coordinate index → coefficient, all ≥ 0).
    """

    n: int = eqx.field(static=True)
    shape: str = eqx.field(static=True)
    epsilon: float = eqx.field(static=True)
    stribeck_velocity: float = eqx.field(static=True)
    # (term, coordinate indices) pairs: static fields must be hashable, so not a dict.
    listed: tuple[tuple[str, tuple[int, ...]], ...] = eqx.field(static=True)
    coefficients: dict[str, Bounded]

    def __init__(
        self,
        n: int,
        *,
        viscous: Mapping[int, float] | None = None,
        coulomb: Mapping[int, float] | None = None,
        stribeck: Mapping[int, float] | None = None,
        shape: str = "tanh",
        epsilon: float = 1e-2,
        stribeck_velocity: float = 0.1,
    ):
        if shape not in SHAPES:
            raise ValueError(f"JointFriction.shape must be one of {list(SHAPES)}, got {shape!r}")
        if not epsilon > 0 or not stribeck_velocity > 0:
            raise ValueError(
                f"JointFriction: epsilon and stribeck_velocity must be > 0, got {epsilon}, "
                f"{stribeck_velocity}"
            )
        if stribeck and shape != "stribeck":
            raise ValueError(
                f"JointFriction: Stribeck coefficients need shape 'stribeck', got {shape!r}"
            )
        self.n, self.shape = int(n), shape
        self.epsilon, self.stribeck_velocity = float(epsilon), float(stribeck_velocity)
        on, coefficients = {}, {}
        for term, given in zip(TERMS, (viscous, coulomb, stribeck), strict=True):
            given = dict(given or {})
            for i, c in given.items():
                if not (isinstance(i, int) and 0 <= i < n):
                    raise ValueError(
                        f"JointFriction.{term}: coordinate index {i!r} not in [0, {n})"
                    )
                if not (np.isfinite(c) and c >= 0):
                    raise ValueError(
                        f"JointFriction.{term}[{i}] must be a finite coefficient >= 0 (friction "
                        f"dissipates energy), got {c}"
                    )
            if given:
                idx = tuple(sorted(given))
                on[term] = idx
                coefficients[term] = Bounded([float(given[i]) for i in idx], lower=0.0)
        self.listed, self.coefficients = tuple(on.items()), coefficients

    @property
    def on(self) -> dict[str, tuple[int, ...]]:
        """The listed terms: term → the coordinate indices that have it."""
        return dict(self.listed)

    def coefficient(self, term: str) -> Float[Array, " n"]:
        """The coefficients of `term` as a length-n vector (0 where the term does not exist)."""
        dtype = jnp.result_type(float)  # JAX's default float, as `jnp.zeros(n)` gives
        if term not in self.on:
            return jnp.zeros(self.n, dtype)
        return place(self.coefficients[term].value.astype(dtype), self.on[term], self.n)

    def __call__(self, qd: QDot) -> Force:
        force = jnp.zeros_like(qd)
        sign = smooth_sign(qd, self.shape, self.epsilon)
        if "viscous" in self.on:
            force = force - self.coefficient("viscous").astype(qd.dtype) * qd
        level = self.coefficient("coulomb").astype(qd.dtype)
        if "stribeck" in self.on:
            decay = jnp.exp(-((qd / self.stribeck_velocity) ** 2))
            level = level + self.coefficient("stribeck").astype(qd.dtype) * decay
        if "coulomb" in self.on or "stribeck" in self.on:
            force = force - level * sign
        return force

    def regressors(self, qd: Float[np.ndarray, "N n"]) -> dict[str, np.ndarray]:
        """Per term, the column that multiplies its coefficient in −Q (for a linear least-squares fit)."""
        qd = np.asarray(qd)
        sign = np.asarray(smooth_sign(qd, self.shape, self.epsilon))
        return {
            "viscous": qd,
            "coulomb": sign,
            "stribeck": sign * np.exp(-((qd / self.stribeck_velocity) ** 2)),
        }

    def values_by_term(self) -> dict[str, dict[int, float]]:
        """The coefficients as the constructor takes them: term → {coordinate index: value}."""
        return {
            term: dict(zip(idx, np.asarray(self.coefficients[term].value).tolist(), strict=True))
            for term, idx in self.on.items()
        }

    def with_values(self, values: dict[str, dict[int, float]]) -> "JointFriction":
        """The same shape with the coefficients `values` (as `values_by_term` gives them) instead."""
        return JointFriction(
            self.n,
            **values,
            shape=self.shape,
            epsilon=self.epsilon,
            stribeck_velocity=self.stribeck_velocity,
        )

    def summary(self, names: tuple[str, ...]) -> dict:
        """The coefficients by term and coordinate name, with the shape: what a run reports and saves."""
        out = {"shape": self.shape, "epsilon": self.epsilon}
        if self.shape == "stribeck":
            out["stribeck_velocity"] = self.stribeck_velocity
        for term, values in self.values_by_term().items():
            out[term] = {names[i]: float(v) for i, v in values.items()}
        return out

"""Joint friction as physics: viscous, Coulomb and Stribeck terms per coordinate, passive by construction.

Every friction model is a sum of coefficients times regressors,

    Q(q̇) = −Σ_k θ_k ⊙ φ_k(q̇),     θ_k ≥ 0,   φ_k(v) · v ≥ 0 elementwise,

so Q·q̇ = −Σ_k Σ_i θ_k,i φ_k,i(q̇_i) q̇_i ≤ 0 for any parameter values: friction never creates energy. The
coefficients are `Bounded` ≥ 0 (clipped where they are used), so this holds for any raw value an optimiser reaches.
The terms, one final class each:

    viscous    Q_i = −b_i q̇_i                                          (`ViscousFriction`)
    Coulomb    Q_i = −c_i σ(q̇_i)                                       (`CoulombFriction`)
    Stribeck   Q_i = −[c_i + s_i exp(−(q̇_i / v_s)²)] σ(q̇_i)            (`StribeckFriction`)

with σ a smooth sign: "tanh" σ = tanh(q̇/ε) (saturates at 1, so c is the Coulomb force) or "atan" σ = atan(q̇/ε)
(saturates at π/2: the form many labs identify, e.g. c·atan(100 q̇) with ε = 0.01, so their c goes in unchanged).
In the Stribeck law the static excess s decays over the Stribeck velocity v_s. `JointFriction` is the sum of a
viscous term and a Coulomb or Stribeck term, the form configs and identified models give. Only the coordinates
listed have a term (a coordinate without a Coulomb coefficient has no Coulomb parameter to train).
"""

import abc
from collections.abc import Mapping

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .._indexing import place
from .._types import Array, ArrayLike, Float, Force, QDot
from .parameters import Bounded

SIGNS = ("tanh", "atan")
SHAPES = ("tanh", "atan", "stribeck")
TERMS = ("viscous", "coulomb", "stribeck")


def smooth_sign(v, shape: str, epsilon: float):
    """σ(v): tanh(v/ε) ("tanh", "stribeck") or atan(v/ε) ("atan"); odd, increasing, σ(v)·v ≥ 0."""
    if shape == "atan":
        return jnp.arctan(v / epsilon)
    return jnp.tanh(v / epsilon)


def stribeck_decay(v, velocity: float):
    """exp(−(v / v_s)²): 1 at rest, → 0 above the Stribeck velocity v_s."""
    return jnp.exp(-((v / velocity) ** 2))


class AbstractFriction(eqx.Module):
    """A passive friction law on `n` coordinates, Q(q̇) = −Σ_k θ_k ⊙ φ_k(q̇) with θ_k ≥ 0 and φ_k(v)·v ≥ 0.

    An implementation holds its coefficients as `Bounded` ≥ 0 over the coordinates that have its terms
    (`coefficients`, `on`), and gives the force and the regressors φ_k; `coefficient` and `values_by_term` follow.
    Force and regressors are elementwise in q̇, so they take one sample (n,) or a batch (..., n).
    """

    n: eqx.AbstractVar[int]

    @property
    @abc.abstractmethod
    def coefficients(self) -> dict[str, Bounded]:
        """Term name → its `Bounded` coefficients, one per coordinate in `on[term]`."""

    @property
    @abc.abstractmethod
    def on(self) -> dict[str, tuple[int, ...]]:
        """Term name → the coordinate indices that have the term."""

    @abc.abstractmethod
    def __call__(self, qd: QDot) -> Force:
        """Q(q̇) = −Σ_k θ_k ⊙ φ_k(q̇), the generalised friction force (same shape as q̇)."""

    @abc.abstractmethod
    def regressors(self, qd: Float[ArrayLike, "*batch n"]) -> dict[str, Float[Array, "*batch n"]]:
        """Term name → φ_k(q̇), the column that multiplies θ_k in −Q (for a linear least-squares fit)."""

    def coefficient(self, term: str) -> Float[Array, " n"]:
        """The coefficients of `term` as a length-n vector (0 where the term does not exist)."""
        dtype = jnp.result_type(float)  # JAX's default float, as `jnp.zeros(n)` gives
        if term not in self.on:
            return jnp.zeros(self.n, dtype)
        return place(self.coefficients[term].value.astype(dtype), self.on[term], self.n)

    def values_by_term(self) -> dict[str, dict[int, float]]:
        """The coefficients by term and coordinate index: term → {coordinate index: value}."""
        return {
            term: dict(zip(idx, np.asarray(self.coefficients[term].value).tolist(), strict=True))
            for term, idx in self.on.items()
        }


def _listed(
    owner: str, term: str, given: Mapping[int, float] | None, n: int
) -> tuple[tuple[int, ...], Bounded] | None:
    """The sorted coordinate indices and `Bounded` ≥ 0 coefficients of `given` (index → value); None if empty."""
    if given is not None and not isinstance(given, Mapping):
        raise TypeError(
            f"{owner}.{term} must map coordinate indices to coefficients, e.g. {{0: 0.1}}, "
            f"got {type(given).__name__}"
        )
    given = dict(given or {})
    for i, c in given.items():
        if not (isinstance(i, int) and 0 <= i < n):
            raise ValueError(f"{owner}.{term}: coordinate index {i!r} not in [0, {n})")
        if not (np.isfinite(c) and c >= 0):
            raise ValueError(
                f"{owner}.{term}[{i}] must be a finite coefficient >= 0 (friction dissipates "
                f"energy), got {c}"
            )
    if not given:
        return None
    idx = tuple(sorted(given))
    return idx, Bounded([float(given[i]) for i in idx], lower=0.0)


def _required(owner: str, term: str, given, n: int) -> tuple[tuple[int, ...], Bounded]:
    listed = _listed(owner, term, given, n)
    if listed is None:
        raise ValueError(
            f"{owner}.{term}: no coordinates listed; give at least one {{index: coefficient}}"
        )
    return listed


def _check_size(owner: str, n) -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"{owner}: n (the number of coordinates) must be an int >= 1, got {n!r}")
    return int(n)


def _check_sign(owner: str, sign: str, epsilon: float) -> None:
    if sign not in SIGNS:
        raise ValueError(f"{owner}.sign must be one of {list(SIGNS)}, got {sign!r}")
    if not epsilon > 0:
        raise ValueError(f"{owner}.epsilon must be > 0, got {epsilon}")


class ViscousFriction(AbstractFriction):
    """Q_i = −b_i q̇_i on the listed coordinates, b_i ≥ 0: `ViscousFriction(n, {0: 0.001})`."""

    n: int = eqx.field(static=True)
    index: tuple[int, ...] = eqx.field(static=True)
    viscous: Bounded

    def __init__(self, n: int, coefficients: Mapping[int, float]):
        self.n = _check_size("ViscousFriction", n)
        self.index, self.viscous = _required("ViscousFriction", "viscous", coefficients, self.n)

    @property
    def coefficients(self) -> dict[str, Bounded]:
        return {"viscous": self.viscous}

    @property
    def on(self) -> dict[str, tuple[int, ...]]:
        return {"viscous": self.index}

    def __call__(self, qd: QDot) -> Force:
        return -(self.coefficient("viscous").astype(qd.dtype) * qd)

    def regressors(self, qd: Float[ArrayLike, "*batch n"]) -> dict[str, Float[Array, "*batch n"]]:
        return {"viscous": jnp.asarray(qd)}


class CoulombFriction(AbstractFriction):
    """Q_i = −c_i σ(q̇_i) on the listed coordinates, c_i ≥ 0, σ = tanh(q̇/ε) or atan(q̇/ε) (`sign`).

    `CoulombFriction(n, {0: 0.093}, sign="atan", epsilon=0.01)` is a lab's c·atan(100 q̇).
    """

    n: int = eqx.field(static=True)
    index: tuple[int, ...] = eqx.field(static=True)
    sign: str = eqx.field(static=True)
    epsilon: float = eqx.field(static=True)
    coulomb: Bounded

    def __init__(
        self,
        n: int,
        coefficients: Mapping[int, float],
        *,
        sign: str = "tanh",
        epsilon: float = 1e-2,
    ):
        self.n = _check_size("CoulombFriction", n)
        _check_sign("CoulombFriction", sign, epsilon)
        self.sign, self.epsilon = sign, float(epsilon)
        self.index, self.coulomb = _required("CoulombFriction", "coulomb", coefficients, self.n)

    @property
    def coefficients(self) -> dict[str, Bounded]:
        return {"coulomb": self.coulomb}

    @property
    def on(self) -> dict[str, tuple[int, ...]]:
        return {"coulomb": self.index}

    def __call__(self, qd: QDot) -> Force:
        level = self.coefficient("coulomb").astype(qd.dtype)
        return -(level * smooth_sign(qd, self.sign, self.epsilon))

    def regressors(self, qd: Float[ArrayLike, "*batch n"]) -> dict[str, Float[Array, "*batch n"]]:
        return {"coulomb": smooth_sign(qd, self.sign, self.epsilon)}


class StribeckFriction(AbstractFriction):
    """Q_i = −[c_i + s_i exp(−(q̇_i / v_s)²)] σ(q̇_i), c_i, s_i ≥ 0: Coulomb friction with a static excess s that
    decays over the Stribeck velocity v_s (`velocity`); σ = tanh(q̇/ε) by default.

    `StribeckFriction(n, coulomb={0: 0.05}, stribeck={0: 0.02}, velocity=0.1)`; the Coulomb level is optional
    (a coordinate without one has c = 0), the static excess is the term itself and must be listed.
    """

    n: int = eqx.field(static=True)
    coulomb_index: tuple[int, ...] = eqx.field(static=True)
    stribeck_index: tuple[int, ...] = eqx.field(static=True)
    sign: str = eqx.field(static=True)
    epsilon: float = eqx.field(static=True)
    velocity: float = eqx.field(static=True)
    # Field order is leaf order: Coulomb before the excess, as checkpoints of `JointFriction` hold them.
    coulomb: Bounded | None
    stribeck: Bounded

    def __init__(
        self,
        n: int,
        *,
        stribeck: Mapping[int, float],
        coulomb: Mapping[int, float] | None = None,
        epsilon: float = 1e-2,
        velocity: float = 0.1,
        sign: str = "tanh",
    ):
        owner = "StribeckFriction"
        self.n = _check_size(owner, n)
        _check_sign(owner, sign, epsilon)
        if not velocity > 0:
            raise ValueError(
                f"{owner}.velocity (the Stribeck velocity) must be > 0, got {velocity}"
            )
        self.sign, self.epsilon, self.velocity = sign, float(epsilon), float(velocity)
        self.stribeck_index, self.stribeck = _required(owner, "stribeck", stribeck, self.n)
        listed = _listed(owner, "coulomb", coulomb, self.n)
        self.coulomb_index, self.coulomb = listed if listed is not None else ((), None)

    @property
    def coefficients(self) -> dict[str, Bounded]:
        out = {"stribeck": self.stribeck}
        return out if self.coulomb is None else {"coulomb": self.coulomb, **out}

    @property
    def on(self) -> dict[str, tuple[int, ...]]:
        out = {"stribeck": self.stribeck_index}
        return out if self.coulomb is None else {"coulomb": self.coulomb_index, **out}

    def __call__(self, qd: QDot) -> Force:
        level = self.coefficient("coulomb").astype(qd.dtype)
        decay = stribeck_decay(qd, self.velocity)
        level = level + self.coefficient("stribeck").astype(qd.dtype) * decay
        return -(level * smooth_sign(qd, self.sign, self.epsilon))

    def regressors(self, qd: Float[ArrayLike, "*batch n"]) -> dict[str, Float[Array, "*batch n"]]:
        sign = smooth_sign(qd, self.sign, self.epsilon)
        out = {"stribeck": sign * stribeck_decay(qd, self.velocity)}
        return out if self.coulomb is None else {"coulomb": sign, **out}


class JointFriction(AbstractFriction):
    """Viscous plus Coulomb or Stribeck friction on `n` coordinates, each term only where it is listed:

        Q_i = −b_i q̇_i − [c_i + s_i exp(−(q̇_i / v_s)²)] σ(q̇_i)     (s only with `shape="stribeck"`).

    Build it with `JointFriction(n, viscous={0: 0.001}, coulomb={0: 0.09}, shape="atan", epsilon=0.01)`
    (coordinate index → coefficient, all ≥ 0). `shape` is the smooth sign, "tanh" or "atan", or "stribeck"
    (tanh, with the Stribeck excess `stribeck` decaying over `stribeck_velocity`). It is the sum of a
    `ViscousFriction` and a `CoulombFriction` or `StribeckFriction` (`terms`).
    """

    n: int = eqx.field(static=True)
    shape: str = eqx.field(static=True)
    epsilon: float = eqx.field(static=True)
    stribeck_velocity: float = eqx.field(static=True)
    # The velocity-sign term first, viscous last: the leaf order coulomb, stribeck, viscous of checkpoints
    # written when the coefficients were a dict keyed by term.
    terms: tuple[AbstractFriction, ...]

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
        self.n = _check_size("JointFriction", n)
        self.shape = shape
        self.epsilon, self.stribeck_velocity = float(epsilon), float(stribeck_velocity)
        # Validated here too, so that errors name `JointFriction.<term>` as a config's keys do.
        for term, given in zip(TERMS, (viscous, coulomb, stribeck), strict=True):
            _listed("JointFriction", term, given, self.n)
        terms: list[AbstractFriction] = []
        sign = "atan" if shape == "atan" else "tanh"
        if stribeck:
            terms.append(
                StribeckFriction(
                    self.n,
                    coulomb=coulomb or None,
                    stribeck=stribeck,
                    epsilon=epsilon,
                    velocity=stribeck_velocity,
                )
            )
        elif coulomb:
            terms.append(CoulombFriction(self.n, coulomb, sign=sign, epsilon=epsilon))
        if viscous:
            terms.append(ViscousFriction(self.n, viscous))
        self.terms = tuple(terms)

    @property
    def coefficients(self) -> dict[str, Bounded]:
        merged = {k: v for term in self.terms for k, v in term.coefficients.items()}
        return {t: merged[t] for t in TERMS if t in merged}

    @property
    def on(self) -> dict[str, tuple[int, ...]]:
        """The listed terms: term → the coordinate indices that have it."""
        merged = {k: v for term in self.terms for k, v in term.on.items()}
        return {t: merged[t] for t in TERMS if t in merged}

    def __call__(self, qd: QDot) -> Force:
        # Each term's resistance −Q_k subtracted from 0, viscous first, as the closed form above is evaluated: the
        # same rounding and the same signed zeros (a plain sum of the terms' forces differs in the sign of zeros).
        force = jnp.zeros_like(qd)
        for term in reversed(self.terms):
            force = force - (-term(qd))
        return force

    def regressors(self, qd: Float[np.ndarray, "N n"]) -> dict[str, np.ndarray]:
        """Per term of `TERMS` (listed or not), the column that multiplies its coefficient in −Q, on samples
        (N, n) as NumPy arrays (for `fit_friction`'s least squares)."""
        qd = np.asarray(qd)
        sign = np.asarray(smooth_sign(qd, self.shape, self.epsilon))
        return {
            "viscous": qd,
            "coulomb": sign,
            "stribeck": sign * np.exp(-((qd / self.stribeck_velocity) ** 2)),
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

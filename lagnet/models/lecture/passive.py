"""Structured force networks for PINODE: passive bow friction and one-sided contact.

Both are `network`s in the PINODE sense, `Q_θ = network(features(q, q̇, u))`, reading the *raw* feature vector of
`StateFeatures(angles, n_inputs)` built with its default unit scales and zero means (so the features are
(q, q̇, u) as they are); they do their own scaling, because the structure (a product with η, a one-sided ramp)
must act on the physical variable, not on a standardised one.
"""

import equinox as eqx
import jax
import jax.numpy as jnp

from ..._types import Array, Float
from ..mlp import make_mlp


def _scalar_mlp(width: int, depth: int, activation: str, *, key) -> eqx.nn.MLP:
    """g_θ: R → R, the shape function both networks scale and constrain (its output not zeroed at init)."""
    return make_mlp(
        1,
        "scalar",
        width=width,
        depth=depth,
        activation=activation,
        final_activation="identity",
        zero_output=False,
        key=key,
    )


class PassiveFriction(eqx.Module):
    """Q_θ = −F_B φ_θ(η), η = q̇_i − v_B, with a friction curve that is passive by construction:

        φ_θ(η) = (η/η_s) g_θ(η/η_s)²   ⇒   φ_θ(η) η = η²/η_s · g_θ² ≥ 0 for every η and θ,

    so a learned bow can only dissipate (energy enters only through v_B), even far from the data. The square
    rather than a softplus: friction curves vanish for large |η| (the lecture's φ decays like exp(−ση²)), which
    g² reaches at g = 0 while softplus(g) needs g → −∞ (tried: 6× larger error of φ on the lecture's data).
    `passive=False` gives the unconstrained φ_θ(η) = g_θ(η/η_s) for comparison. For
    `BowedOscillator` (q = (u,), u = (v_B, F_B)) the raw features are (u, u', v_B, F_B): the defaults.
    """

    mlp: eqx.nn.MLP
    eta_scale: float = eqx.field(static=True)
    passive: bool = eqx.field(static=True)
    velocity_index: int = eqx.field(static=True)
    bow_velocity_index: int = eqx.field(static=True)
    bow_force_index: int = eqx.field(static=True)

    def __init__(
        self,
        *,
        eta_scale: float = 0.1,
        passive: bool = True,
        width: int = 32,
        depth: int = 2,
        activation: str = "tanh",
        velocity_index: int = 1,
        bow_velocity_index: int = 2,
        bow_force_index: int = 3,
        key,
    ):
        if not eta_scale > 0:
            raise ValueError(f"PassiveFriction.eta_scale must be > 0, got {eta_scale}")
        self.mlp = _scalar_mlp(width, depth, activation, key=key)
        self.eta_scale = float(eta_scale)
        self.passive = bool(passive)
        self.velocity_index = int(velocity_index)
        self.bow_velocity_index = int(bow_velocity_index)
        self.bow_force_index = int(bow_force_index)

    def phi(self, eta: Float[Array, ""]) -> Float[Array, ""]:
        """φ_θ(η) for one relative velocity (vmap for curves)."""
        x = eta / self.eta_scale
        g = self.mlp(jnp.reshape(x, (1,)))
        return x * g**2 if self.passive else g

    def __call__(self, features: Float[Array, " f"]) -> Float[Array, " 1"]:
        eta = features[self.velocity_index] - features[self.bow_velocity_index]
        return jnp.reshape(-features[self.bow_force_index] * self.phi(eta), (1,))


class ContactNetwork(eqx.Module):
    """Q_θ = (f_θ(δ), −f_θ(δ)) on (target, hammer), δ = q_hammer − q_target, a one-sided learned contact law:

        f_θ(δ) = f_s [δ/δ_s]_+ softplus(g_θ(δ/δ_s))   (pushes apart, and only while compressed),

    or f_θ = f_s g_θ(δ/δ_s) with `one_sided=False`. Equal and opposite generalised forces (Newton's third law); a
    force of δ alone is conservative in one dimension. For `Hammer` (q = (u, u_H), no inputs) the raw features
    are (u, u_H, u', u_H'): the defaults.
    """

    mlp: eqx.nn.MLP
    compression_scale: float = eqx.field(static=True)
    force_scale: float = eqx.field(static=True)
    one_sided: bool = eqx.field(static=True)
    target_index: int = eqx.field(static=True)
    hammer_index: int = eqx.field(static=True)

    def __init__(
        self,
        *,
        compression_scale: float,
        force_scale: float,
        one_sided: bool = True,
        width: int = 32,
        depth: int = 2,
        activation: str = "tanh",
        target_index: int = 0,
        hammer_index: int = 1,
        key,
    ):
        if not (compression_scale > 0 and force_scale > 0):
            raise ValueError(
                f"ContactNetwork scales must be > 0, got compression_scale={compression_scale}, "
                f"force_scale={force_scale}"
            )
        self.mlp = _scalar_mlp(width, depth, activation, key=key)
        self.compression_scale = float(compression_scale)
        self.force_scale = float(force_scale)
        self.one_sided = bool(one_sided)
        self.target_index = int(target_index)
        self.hammer_index = int(hammer_index)

    def law(self, compression: Float[Array, ""]) -> Float[Array, ""]:
        """f_θ(δ) for one compression (vmap for curves)."""
        x = compression / self.compression_scale
        g = self.mlp(jnp.reshape(x, (1,)))
        f = jax.nn.relu(x) * jax.nn.softplus(g) if self.one_sided else g
        return self.force_scale * f

    def __call__(self, features: Float[Array, " f"]) -> Float[Array, " 2"]:
        f = self.law(features[self.hammer_index] - features[self.target_index])
        return jnp.stack([f, -f])

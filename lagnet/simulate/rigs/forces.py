"""Non-conservative forces of a real rig that a Lagrangian model with Coulomb + viscous friction leaves out.

Each force is an `AbstractRigForce` called as `force(q, qd) -> Q`, a generalised force on all n coordinates. The
switching terms use tanh(v / v_ε) instead of sign(v): steep, but resolved by the rig's sub-step, so RK4 stays
accurate (the force's slope F / v_ε over the mass must keep h · slope / m well inside RK4's stability region).
"""

import equinox as eqx
import jax
import jax.numpy as jnp

from ..._types import Q, QDot
from ...systems._params import as_param, check_positive
from .base import AbstractRigForce


def _unit(n: int, i: int, value):
    return jnp.zeros(n, jnp.result_type(value)).at[i].set(value)


class StribeckFriction(AbstractRigForce):
    """Friction on coordinate `index`, direction dependent, with a Stribeck peak at low speed:

        F(v) = −[F_c(v) + (F_s − F_c⁻⁺) e^{−(v/v_s)²}] tanh(v / v_ε) − b v,
        F_c(v) = F_c⁺ σ(v) + F_c⁻ (1 − σ(v)),  σ(v) = (1 + tanh(v / v_ε)) / 2,

    where F_c⁺ (F_c⁻) is the Coulomb level when moving in +x (−x), F_s the breakaway (static) level, v_s the
    Stribeck velocity, b the viscous coefficient and v_ε the smoothing velocity of the sign function.
    """

    index: int = eqx.field(static=True)
    coulomb_pos: jax.Array
    coulomb_neg: jax.Array
    static: jax.Array
    stribeck_velocity: jax.Array
    viscous: jax.Array
    smoothing: jax.Array

    def __init__(
        self,
        index: int,
        coulomb_pos=0.0,
        coulomb_neg=0.0,
        static=0.0,
        stribeck_velocity=0.05,
        viscous=0.0,
        smoothing=1e-3,
    ):
        self.index = index
        self.coulomb_pos = as_param(coulomb_pos)
        self.coulomb_neg = as_param(coulomb_neg)
        self.static = as_param(static)
        self.stribeck_velocity = as_param(stribeck_velocity)
        self.viscous = as_param(viscous)
        self.smoothing = as_param(smoothing)

    def __check_init__(self):
        for name in ("coulomb_pos", "coulomb_neg", "static", "viscous"):
            check_positive("StribeckFriction", name, getattr(self, name), allow_zero=True)
        check_positive("StribeckFriction", "stribeck_velocity", self.stribeck_velocity)
        check_positive("StribeckFriction", "smoothing", self.smoothing)

    def magnitude(self, v):
        """The friction force opposing a velocity v (a scalar function of v; the force is −magnitude)."""
        s = jnp.tanh(v / self.smoothing)
        sigma = 0.5 * (1.0 + s)
        coulomb = self.coulomb_pos * sigma + self.coulomb_neg * (1.0 - sigma)
        peak = jnp.maximum(self.static - coulomb, 0.0) * jnp.exp(
            -((v / self.stribeck_velocity) ** 2)
        )
        return (coulomb + peak) * s + self.viscous * v

    def __call__(self, q: Q, qd: QDot) -> Q:
        return _unit(qd.shape[0], self.index, -self.magnitude(qd[self.index]))


class EndStops(AbstractRigForce):
    """Rubber bumpers at the ends of a rail: a spring-damper acting only beyond |q_i| > limit,

    F = −k (|q_i| − limit)₊ sign(q_i) − c (|q_i| − limit)₊ / δ · q̇_i,   (damping fades in over δ = 1 mm).
    """

    index: int = eqx.field(static=True)
    limit: jax.Array
    stiffness: jax.Array
    damping: jax.Array

    def __init__(self, index: int, limit=0.35, stiffness=2000.0, damping=10.0):
        self.index = index
        self.limit = as_param(limit)
        self.stiffness = as_param(stiffness)
        self.damping = as_param(damping)

    def __call__(self, q: Q, qd: QDot) -> Q:
        x, v = q[self.index], qd[self.index]
        pen = jnp.maximum(jnp.abs(x) - self.limit, 0.0)
        f = -self.stiffness * pen * jnp.sign(x) - self.damping * jnp.minimum(pen / 1e-3, 1.0) * v
        return _unit(qd.shape[0], self.index, f)


class Cogging(AbstractRigForce):
    """A motor's cogging torque on coordinate `index`: −A sin(p q_i + ψ) (p cogs per revolution)."""

    index: int = eqx.field(static=True)
    amplitude: jax.Array
    periods: int = eqx.field(static=True)
    phase: jax.Array

    def __init__(self, index: int, amplitude=0.0, periods=21, phase=0.0):
        self.index = index
        self.amplitude = as_param(amplitude)
        self.periods = periods
        self.phase = as_param(phase)

    def __call__(self, q: Q, qd: QDot) -> Q:
        f = -self.amplitude * jnp.sin(self.periods * q[self.index] + self.phase)
        return _unit(qd.shape[0], self.index, f)


class ConstantForce(AbstractRigForce):
    """A constant generalised force on coordinate `index` (a torque offset of a motor's current sensor)."""

    index: int = eqx.field(static=True)
    value: jax.Array

    def __init__(self, index: int, value=0.0):
        self.index = index
        self.value = as_param(value)

    def __call__(self, q: Q, qd: QDot) -> Q:
        return _unit(qd.shape[0], self.index, self.value + 0.0 * q[self.index])

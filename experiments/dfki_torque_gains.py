"""The DFKI double pendulum with per-joint torque gains and offsets: B u → diag(k) u + b, for the cross-validation.

A user system (`system: {name: python, source: experiments/dfki_torque_gains.py:build}`): the lab's model as
`DoublePendulum` with two more parameters per joint that `model.learn_parameters` can refine, a gain k_i on the
measured torque (a motor's torque constant off by a few per cent) and a constant offset b_i (N·m; a sensor bias).
With k = 1 and b = 0 it is `DoublePendulum` itself.
"""

import jax
import jax.numpy as jnp

from lagnet.systems.double_pendulum import DoublePendulum


class TorqueGainDoublePendulum(DoublePendulum):
    """M q̈ + C q̇ + G = diag(k) B u + b + Q, with k = (k1, k2) and b = (b1, b2)."""

    k1: jax.Array
    k2: jax.Array
    b1: jax.Array
    b2: jax.Array

    def __init__(self, k1=1.0, k2=1.0, b1=0.0, b2=0.0, **params):
        super().__init__(**params)
        self.k1, self.k2 = jnp.asarray(k1, float), jnp.asarray(k2, float)
        self.b1, self.b2 = jnp.asarray(b1, float), jnp.asarray(b2, float)

    def input_matrix(self, q):
        gains = jnp.stack([self.k1, self.k2]).astype(q.dtype)
        return gains[:, None] * super().input_matrix(q)

    def generalised_force(self, q, qd, u=None, Q=None):
        offset = jnp.stack([self.b1, self.b2]).astype(q.dtype)
        return super().generalised_force(q, qd, u, Q) + offset


def build(**params):
    return TorqueGainDoublePendulum(**params)

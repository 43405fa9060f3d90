"""The classical fourth-order Runge–Kutta method on the first-order form."""

import dataclasses
import functools

import equinox as eqx
import jax
import jax.numpy as jnp

from .base import AbstractIntegrator, explicit_info

# The classical tableau for the looped form: nodes c_i and weights 6 b_i.
_NODES = (0.0, 0.5, 0.5, 1.0)
_WEIGHTS = (1.0, 2.0, 2.0, 1.0)


class RK4(AbstractIntegrator):
    """Classical RK4 on y = (q, q̇), y' = F(y) = (q̇, a(q, q̇, u)) with u held over the step:

        k1 = F(y),  k2 = F(y + h/2 k1),  k3 = F(y + h/2 k2),  k4 = F(y + h k3),
        y_{k+1} = y_k + h/6 (k1 + 2 k2 + 2 k3 + k4).

    Four accelerations per step; order 4. Velocity-dependent forces need nothing special (the first-order form
    treats q and q̇ alike). Neither symplectic nor symmetric: on q̈ = −ω²q the area factor per step is
    1 − (ωh)⁶/72 + (ωh)⁸/576 < 1, so over thousands of periods the energy drifts down.

    `loop_stages`: evaluate the stages in a loop over the tableau instead of unrolled (equal to rounding; see
    `compact_form`).
    """

    # False: the stages unrolled, four copies of the acceleration in the program (fastest on one sample at a time:
    # a control loop, an export). True: one loop over the tableau, one copy (`compact_form`).
    loop_stages: bool = eqx.field(static=True, default=False)

    def init(self, model, q, qd, u):
        return None

    def step(self, model, q, qd, u, dt, state):
        if self.loop_stages:
            q1, qd1 = self._looped(model, q, qd, u, dt)
        else:
            q1, qd1 = self._unrolled(model, q, qd, u, dt)
        return q1, qd1, None, explicit_info(q.dtype)

    @property
    def rematerialised(self) -> bool:
        return self.loop_stages  # the looped stages checkpoint the acceleration

    def compact_form(self) -> "RK4":
        """RK4 with its stages as a loop, the acceleration rematerialised: one copy of the acceleration and of its
        derivative in the program instead of four, so it compiles faster, and differentiated it keeps each stage's
        (q, v) rather than every intermediate of the model; it uses more memory than the unrolled, checkpointed
        step and is slower for single-state control solves. Training uses it (`lagnet.train.fit`); rollouts,
        control and export keep the unrolled stages. Measurements: the benchmarks page (benchmarks/RESULTS.md)."""
        return dataclasses.replace(self, loop_stages=True)  # a subclass stays itself

    @staticmethod
    def _unrolled(model, q, qd, u, dt):
        half = 0.5 * dt
        a1 = model.acceleration(q, qd, u)
        v2 = qd + half * a1
        a2 = model.acceleration(q + half * qd, v2, u)
        v3 = qd + half * a2
        a3 = model.acceleration(q + half * v2, v3, u)
        v4 = qd + dt * a3
        a4 = model.acceleration(q + dt * v3, v4, u)
        sixth = dt / 6
        return q + sixth * (qd + 2 * v2 + 2 * v3 + v4), qd + sixth * (a1 + 2 * a2 + 2 * a3 + a4)

    @staticmethod
    def _looped(model, q, qd, u, dt):
        # The same arithmetic in the same order as `_unrolled` (c_i h, integer weights, one division by 6).
        dtype = jnp.result_type(q, qd, dt)

        # Rematerialised: differentiated, the loop keeps each stage's (q, v) and recomputes the acceleration's
        # internals in its backward pass, instead of stacking every intermediate of the model once per stage.
        # A rollout then needs no checkpoint around the whole step (`rematerialised`).
        @functools.partial(jax.checkpoint, prevent_cse=False)  # the scan keeps the stages apart
        def acceleration(q, v):
            return model.acceleration(q, v, u).astype(dtype)

        def stage(carry, node_weight):
            # Stage i evaluates F at y + c_i h k_{i-1}; its k_i = (v_i, a_i) enters the sums with weight 6 b_i.
            v_prev, a_prev, q_sum, qd_sum = carry
            c, b = node_weight
            v = qd + c * dt * a_prev
            a = acceleration(q + c * dt * v_prev, v)
            return (v, a, q_sum + b * v, qd_sum + b * a), None

        zero = jnp.zeros(q.shape, dtype)
        tableau = (jnp.asarray(_NODES, dtype), jnp.asarray(_WEIGHTS, dtype))
        (_, _, q_sum, qd_sum), _ = jax.lax.scan(stage, (zero, zero, zero, zero), tableau)
        sixth = dt / 6
        return q + sixth * q_sum, qd + sixth * qd_sum

    # The method's properties (see AbstractIntegrator), constant for this class.
    order = 4
    explicit = True
    symplectic = False
    symmetric = False

"""The training loss (PINODE eq. 11–12) on predicted states after one or k integrator steps."""

import equinox as eqx
import jax
import jax.numpy as jnp

from .._types import Array, Float, Int
from ..integrators.base import AbstractIntegrator, StepInfo
from ..rollout import rollout
from .first_steps import held_rollout


class StateLoss(eqx.Module):
    """L = mean over steps and coordinates of λ_q e_q² / σ_q² + λ_q̇ (q̇ − q̇')² / σ_q̇².

    For angles the position error is taken on the (cos, sin) embedding, e² = |(cos a, sin a) − (cos b, sin b)|²
    = 2 − 2 cos(a − b) (≈ (a − b)² near zero and 2π-periodic), so a prediction one turn off costs nothing.
    σ are the data's standard deviations when normalising (1 for angles), else 1.
    """

    angles: tuple[bool, ...] = eqx.field(static=True)
    weights_q: Float[Array, " n"]
    weights_qd: Float[Array, " n"]
    scale_q: Float[Array, " n"]
    scale_qd: Float[Array, " n"]
    # λ of the training loss's residual term (`residual_penalty`); 0 leaves the state loss alone.
    residual_weight: float = eqx.field(static=True, default=0.0)

    def per_step(self, q_pred, qd_pred, q_true, qd_true):
        """ℓ_j = Σ_i λ_q e_q,ij² / σ_q,i² + λ_q̇ (q̇ − q̇')_ij² / σ_q̇,i², one value per step j (shape (steps,))."""
        is_angle = jnp.asarray(self.angles)
        dq = q_pred - q_true
        err_q = jnp.where(is_angle, 2.0 - 2.0 * jnp.cos(dq), dq**2) / self.scale_q**2
        err_qd = (qd_pred - qd_true) ** 2 / self.scale_qd**2
        return jnp.sum(self.weights_q * err_q + self.weights_qd * err_qd, axis=-1)

    def __call__(self, q_pred, qd_pred, q_true, qd_true):
        return jnp.mean(self.per_step(q_pred, qd_pred, q_true, qd_true))


class FirstSteps(AbstractIntegrator):
    """`integrator` for the first `steps` steps of a rollout, then the state held: (q, q̇)_{j+1} = (q, q̇)_j.

    A rollout over a window padded to a longest horizon K then costs only `steps` real steps, and `steps` is a
    traced value, not a shape: every horizon ≤ K of a curriculum runs one compiled program. The hold is a
    `lax.cond` on the step count, which `vmap` over windows leaves unbatched (all windows share `steps`), so the
    held steps are skipped, not computed and discarded; and a held state never steps into the padding, which
    therefore cannot make the loss or its gradient non-finite. `batch_loss` differentiates the same rollout through
    `held_rollout` instead, whose reverse pass compiles smaller.
    """

    integrator: AbstractIntegrator
    steps: Int[Array, ""]

    def init(self, model, q, qd, u):
        return self.integrator.init(model, q, qd, u), jnp.zeros((), jnp.int32)

    # Rollouts do not checkpoint this step again (see `step`).
    rematerialised = True

    def step(self, model, q, qd, u, dt, state):
        inner, taken = state

        def advance(inner):
            return self.integrator.step(model, q, qd, u, dt, inner)

        if not self.integrator.rematerialised:
            # Rematerialised here rather than around the whole scan body: the cond then keeps only its inputs
            # for the backward pass, so a held step stores and zero-fills no residuals.
            advance = jax.checkpoint(advance, prevent_cse=False)

        def hold(inner):
            # The branches must agree in dtypes: a step may promote (float64 parameters on a float32 state).
            like = jax.eval_shape(advance, inner)
            info = StepInfo(jnp.array(True), jnp.zeros((), like[3].error.dtype))
            held = (q, qd, inner, info)
            return jax.tree.map(lambda x, s: jnp.asarray(x).astype(s.dtype), held, like)

        q1, qd1, inner, info = jax.lax.cond(taken < self.steps, advance, hold, inner)
        return q1, qd1, (inner, taken + 1), info

    @property
    def order(self):
        return self.integrator.order

    @property
    def explicit(self):
        return self.integrator.explicit

    @property
    def symplectic(self):
        return self.integrator.symplectic

    @property
    def symmetric(self):
        return self.integrator.symmetric


def window_rollout(model, integrator, q0, qd0, us, dts, *, steps=None):
    """The states predicted after each of the k = len(us) steps of a window, shapes (k, n), never throwing.

    With `steps` (a traced integer h ≤ k) only the first h steps are taken and the state is then held (see
    `FirstSteps`): a window padded to k is rolled out to its horizon h.
    """
    # No throw: a non-finite loss is caught by the training step (skipped and counted), not raised mid-scan.
    stepper = integrator if steps is None else FirstSteps(integrator, steps)
    qs, qds = rollout(model, stepper, q0, qd0, us, dts, throw=False)
    return qs[1:], qds[1:]


def mean_over_steps(per_step, steps=None):
    """(1/h) Σ_{j<h} ℓ_j: the mean of a window's per-step losses over its first h = `steps` (default: all)."""
    if steps is None:
        return jnp.mean(per_step)
    scored = jnp.arange(per_step.shape[0]) < steps
    return jnp.sum(jnp.where(scored, per_step, 0.0)) / steps


def window_loss(
    model, integrator, loss: StateLoss, q0, qd0, us, dts, q_true, qd_true, *, steps=None
):
    """Loss of one window: roll out k = len(us) steps from the measured (q0, q̇0) with the recorded inputs.

    With `steps` (a traced integer h ≤ k) only the first h steps are taken and scored, L = (1/h) Σ_{j<h} ℓ_j:
    the loss of the window's first h steps, from a window padded to k steps.
    """
    qs, qds = window_rollout(model, integrator, q0, qd0, us, dts, steps=steps)
    return mean_over_steps(loss.per_step(qs, qds, q_true, qd_true), steps)


def as_batch(windows):
    """A batched `lagnet.data.Window` as the tuple (q0, q̇0, us, dts, q_true, q̇_true) of `batch_loss`."""
    return (
        windows.q[:, 0],
        windows.qd[:, 0],
        windows.u,
        windows.dt,
        windows.q[:, 1:],
        windows.qd[:, 1:],
    )


def batch_loss(model, integrator, loss, batch, *, steps=None):
    """Mean window loss over a batch (vmapped over the windows); `steps`: as for `window_loss`, shared by all.

    With `steps`, the windows are rolled out by `held_rollout` (the same states, a reverse pass that compiles
    smaller than `FirstSteps`'s); differentiable in reverse mode only."""
    penalty = 0.0
    if loss.residual_weight:
        penalty = loss.residual_weight * residual_penalty(model, batch, steps=steps)
    if steps is None:
        per_window = jax.vmap(lambda *w: window_loss(model, integrator, loss, *w))(*batch)
        return jnp.mean(per_window) + penalty
    q0, qd0, us, dts, q_true, qd_true = batch
    qs, qds = held_rollout(model, integrator, q0, qd0, us, dts, steps)
    per_step = jax.vmap(loss.per_step)(qs, qds, q_true, qd_true)
    return jnp.mean(jax.vmap(lambda p: mean_over_steps(p, steps))(per_step)) + penalty


def residual_penalty(model, batch, *, steps=None):
    """mean over windows and their (first `steps`) steps j of ‖g · Q_θ(q_j, q̇_j, u_j)‖² at the measured states.

    The minimal-norm term of APHYNITY (Yin et al., 2021): among residuals that fit equally well, training
    prefers the smallest, so the physics (refined alongside) explains all it can and the network only the rest.
    """
    q0, qd0, us, _, q_true, qd_true = batch
    qs = jnp.concatenate([q0[:, None], q_true[:, :-1]], axis=1)
    qds = jnp.concatenate([qd0[:, None], qd_true[:, :-1]], axis=1)
    size = jax.vmap(jax.vmap(model.residual_size))(qs, qds, us)
    return jnp.mean(jax.vmap(lambda p: mean_over_steps(p, steps))(size))

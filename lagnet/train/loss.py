"""The training loss (PINODE eq. 11–12) on predicted states after one or k integrator steps."""

import equinox as eqx
import jax
import jax.numpy as jnp

from .._types import Array, Float
from ..rollout import rollout


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

    def __call__(self, q_pred, qd_pred, q_true, qd_true):
        is_angle = jnp.asarray(self.angles)
        dq = q_pred - q_true
        err_q = jnp.where(is_angle, 2.0 - 2.0 * jnp.cos(dq), dq**2) / self.scale_q**2
        err_qd = (qd_pred - qd_true) ** 2 / self.scale_qd**2
        return jnp.mean(jnp.sum(self.weights_q * err_q + self.weights_qd * err_qd, axis=-1))


def window_loss(model, integrator, loss: StateLoss, q0, qd0, us, dts, q_true, qd_true):
    """Loss of one window: roll out k = len(us) steps from the measured (q0, q̇0) with the recorded inputs."""
    # No throw: a non-finite loss is caught by the training step (skipped and counted), not raised mid-scan.
    qs, qds = rollout(model, integrator, q0, qd0, us, dts, throw=False)
    return loss(qs[1:], qds[1:], q_true, qd_true)


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


def batch_loss(model, integrator, loss, batch):
    """Mean window loss over a batch (vmapped over the windows)."""
    per_window = jax.vmap(lambda *w: window_loss(model, integrator, loss, *w))(*batch)
    return jnp.mean(per_window)

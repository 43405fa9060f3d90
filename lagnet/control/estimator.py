"""State estimation for control: an extended Kalman filter on a model's dynamics, in front of any controller.

A rig's sensors read the state with noise. A controller fed the raw reading acts on the noise: an LQR's velocity
gains turn it into input noise, and a model with stiff Coulomb friction (atan(q̇ / ε)) predicts a torque of the
noise's sign. The filter fuses the model's prediction under the inputs it knows were commanded with each
reading:

    predict   x̂⁻ = step(x̂, u_{t−1}),   P⁻ = A P Aᵀ + Q,   A = ∂step/∂x
    correct   K = P⁻ (P⁻ + R)⁻¹,   x̂ = x̂⁻ + K (y − x̂⁻),   P = (I − K) P⁻

with the full state read (y = x + noise of covariance R). The innovation y − x̂⁻ of an angle is wrapped to
[−π, π): a plant that reports angles wrapped moves the estimate by the short way round. A model with an input
history (an actuator's lag) predicts with the past commands it carries, so the filter knows what the drive
applies; a period of several of the model's steps fills that many places of the history.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .controllers import AbstractController
from .dynamics import Dynamics


class KalmanFilter(eqx.Module):
    """The extended Kalman filter of `dyn` at the period `dt`: Q = diag(process_noise²) per period and
    R = diag(measurement_noise²) (standard deviations per state entry (2n,), or one number for all)."""

    dyn: Dynamics
    dt: float = eqx.field(static=True)
    q: Float[Array, "s s"]
    r: Float[Array, "s s"]
    angles: tuple[bool, ...] = eqx.field(static=True)

    def __init__(self, dyn: Dynamics, dt: float, *, process_noise, measurement_noise):
        s = 2 * dyn.n_dof
        stds = {}
        for name, value in (
            ("process_noise", process_noise),
            ("measurement_noise", measurement_noise),
        ):
            v = np.asarray(value, float)
            if v.ndim > 1 or v.size not in (1, s) or np.any(~np.isfinite(v)) or np.any(v <= 0):
                raise ValueError(
                    f"KalmanFilter: {name} must be > 0 and finite, one per state entry ({s},) or one "
                    f"number, got {value}"
                )
            stds[name] = np.broadcast_to(v, (s,))
        self.dyn, self.dt = dyn, float(dt)
        try:
            dyn.history_steps(self.dt)
        except ValueError as e:
            raise ValueError(f"KalmanFilter: {e}") from None
        self.q = jnp.diag(jnp.asarray(stds["process_noise"] ** 2))
        self.r = jnp.diag(jnp.asarray(stds["measurement_noise"] ** 2))
        try:
            angles = np.asarray(dyn.system.angles, bool)
        except (
            TypeError
        ):  # a model without a known system (a black box): no coordinate is known to wrap
            angles = np.zeros(dyn.n_dof, bool)
        self.angles = tuple(bool(a) for a in np.concatenate([angles, np.zeros_like(angles)]))

    def start(self, y) -> tuple:
        """The filter's state (x̂, P, u_past) at a run's start from the reading y: the drive at rest."""
        dtype = jnp.result_type(self.q)
        k, m = self.dyn.history.lags, self.dyn.n_inputs
        return jnp.asarray(y, dtype), self.r, jnp.zeros((k, m), dtype)

    def update(self, state: tuple, u, y) -> tuple:
        """(x̂, P, u_past) after one period under the commanded u, corrected by the reading y."""
        x, p, u_past = state
        u = jnp.asarray(u, x.dtype)

        def predict(x):
            x_next, u_next = self.dyn.hold_with_history(x, u, u_past, self.dt)
            return x_next, (x_next, u_next)

        # A = ∂step/∂x and the prediction itself from one pass.
        a, (x_pred, u_past) = jax.jacfwd(predict, has_aux=True)(x)
        p = a @ p @ a.T + self.q
        gain = jnp.linalg.solve((p + self.r).T, p.T).T
        d = jnp.asarray(y, x.dtype) - x_pred
        d = jnp.where(jnp.asarray(self.angles), jnp.mod(d + jnp.pi, 2 * jnp.pi) - jnp.pi, d)
        x = x_pred + gain @ d
        p = (jnp.eye(x.size, dtype=x.dtype) - gain) @ p
        return x, p, u_past


class EstimatingController(AbstractController):
    """`controller` acting on the state `filter` estimates from the readings, instead of on the readings: each
    call after the first (whose reading `reset` took as the start) corrects the estimate with the reading and the
    input commanded at the previous call, one period before."""

    def __init__(self, controller: AbstractController, filter: KalmanFilter):
        self.controller, self.filter = controller, filter
        # Closed over (its arrays constants of the program): a call dispatches without filtering its leaves.
        self._update = jax.jit(lambda state, u, y: filter.update(state, u, y))
        self._state, self._u, self._first = None, None, True

    def reset(self, x0) -> None:
        self.controller.reset(x0)
        self._state = self.filter.start(x0)
        self._u = jnp.zeros((self.filter.dyn.n_inputs,), self._state[0].dtype)
        # Compiled here, before anything is timed.
        jax.block_until_ready(self._update(self._state, self._u, self._state[0]))
        self._first = True

    def estimate(self) -> np.ndarray:
        """The latest state estimate x̂ (2n,)."""
        return np.asarray(self._state[0])

    def __call__(self, y, t: float):
        if self._u is None:
            raise RuntimeError("EstimatingController: reset(x0) before the first call")
        if not self._first:
            self._state = self._update(self._state, self._u, y)
        self._first = False
        u = self.controller(self._state[0], t)
        self._u = jnp.asarray(u, self._state[0].dtype).reshape(self._u.shape)
        return u

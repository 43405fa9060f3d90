"""The cart-pole rig recorded for control: swing-up and balance under feedback, and identification inputs.

The same rig as `CartPoleRig` (plant, actuator, sensors: `AbstractCartPoleRig`), driven not by a hand but by a
schedule of segments:

- feedback: an energy-pumping swing-up (u = −k_E (Ē* − Ē) tanh(φ̇ cos φ / ω₀) plus a weak centring of the cart)
  that hands over to an LQR near upright, u = −K (x − x_ref, φ − π, ẋ, φ̇); each segment draws its own
  stabilising gain K (the discrete LQR of the known model at upright with random weights) and cart target
  x_ref: random stabilising policies, so the recording holds the upright region at several closed-loop
  bandwidths rather than one controller's narrow trajectory;
- identification: a PRBS, a chirp or a multisine force on the cart with a PD on the cart's position keeping it
  on the rail; the pole falls and swings;
- exploration noise (an Ornstein–Uhlenbeck force) on top of everything.

Ē = E / (g a) is the pole's energy about its pivot, E = ½ J φ̇² − g a cos φ: −1 hanging at rest, +1 upright.
"""

from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

from .. import excitation
from .cartpole import MAPPING, AbstractCartPoleRig
from .common import ou_noise

__all__ = ["MAPPING", "CartPoleControlRig"]


def _upright_linearisation(system, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """The zero-order-hold discretisation (A_d, B_d) of the known cart-pole linearised at upright."""

    def f(x, u):
        return jnp.concatenate([x[2:], system.acceleration(x[:2], x[2:], u)])

    with jax.enable_x64(True):
        x0 = jnp.array([0.0, jnp.pi, 0.0, 0.0])
        a, b = jax.jacfwd(f, argnums=(0, 1))(x0, jnp.zeros(1))
        a, b = np.asarray(a), np.asarray(b)
    # exp([[A, B], [0, 0]] dt) = [[A_d, B_d], [0, I]].
    block = np.zeros((5, 5))
    block[:4, :4], block[:4, 4:] = a, b
    phi = scipy.linalg.expm(block * dt)
    return phi[:4, :4], phi[:4, 4:]


class CartPoleControlRig(AbstractCartPoleRig):
    """The cart-pole rig driven by feedback controllers and identification inputs (see the module docstring)."""

    GENERATOR: ClassVar[str] = "lagnet.simulate.rigs.cartpole_control.CartPoleControlRig"

    # Segments: the share of feedback (swing-up and balance) segments and their lengths (s).
    feedback_prob: float = 0.5
    feedback_time: tuple[float, float] = (6.0, 14.0)
    excite_time: tuple[float, float] = (4.0, 10.0)
    # Swing-up: energy gain (N per unit of 1 − Ē), centring (N/m, N s/m), hand-over to the LQR (rad, rad/s).
    pump_gain: tuple[float, float] = (10.0, 20.0)
    centre_kp: float = 4.0
    centre_kd: float = 2.0
    catch_angle: float = 0.35
    catch_rate: float = 3.0
    # The swing-up aims a little above the upright's energy: friction takes some on the way, and the pole
    # should pass through the LQR's catch region rather than stall short of it.
    energy_target: float = 1.15
    # LQR weights Q = diag(10^w) with w drawn per segment from these ranges (x, φ, ẋ, φ̇), R = 1.
    lqr_log_weights: tuple[tuple[float, float], ...] = (
        (1.5, 2.5),
        (2.0, 3.0),
        (0.0, 1.0),
        (0.0, 1.0),
    )
    balance_target: float = 0.15
    # Identification inputs: amplitude (N), PRBS hold (samples), chirp / multisine band (Hz), rail PD.
    excite_amplitude: tuple[float, float] = (1.0, 4.0)
    prbs_hold: tuple[int, int] = (1, 6)
    excite_band: tuple[float, float] = (0.2, 8.0)
    rail_kp: float = 14.0
    rail_kd: float = 3.0
    # Exploration noise (N, s).
    exploration_noise: float = 0.3
    exploration_time: float = 0.05

    def lqr_gain(self, log_weights) -> np.ndarray:
        """K (1, 4) of the discrete LQR of the known model at upright for Q = diag(10^w), R = 1."""
        a, b = _upright_linearisation(self.known_system(), self.dt)
        q = np.diag(10.0 ** np.asarray(log_weights, float))
        p = scipy.linalg.solve_discrete_are(a, b, q, np.eye(1))
        return np.linalg.solve(np.eye(1) + b.T @ p @ b, b.T @ p @ a)

    def excitation(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """A PRBS, a chirp or a multisine (chosen at random) of n samples."""
        amplitude = rng.uniform(*self.excite_amplitude)
        low, high = self.excite_band
        kind = rng.integers(3)
        if kind == 0:
            hold = int(rng.integers(self.prbs_hold[0], self.prbs_hold[1] + 1))
            return excitation.prbs(n, amplitude=amplitude, hold=hold, rng=rng)
        if kind == 1:
            f0, f1 = (low, high) if rng.random() < 0.5 else (high, low)
            return excitation.chirp(
                n, self.dt, amplitude=amplitude, f0=f0, f1=f1, logarithmic=bool(rng.random() < 0.5)
            )
        if n < 8:
            return np.zeros(n)
        lines = excitation.band_lines(n, self.dt, low, high, int(rng.integers(5, 20)))
        return excitation.multisine(n, self.dt, amplitude=amplitude, lines=lines, rng=rng)

    def schedule(self, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Per sample: the mode (1 feedback, 0 identification), the LQR gain and target, the swing-up gain,
        the identification force and the exploration noise."""
        dt = self.dt
        mode, x_ref, pump, force = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)
        gain = np.zeros((n, 4))
        i = 0
        while i < n:
            if rng.random() < self.feedback_prob:
                length = int(rng.uniform(*self.feedback_time) / dt)
                stop = min(i + length, n)
                w = [rng.uniform(lo, hi) for lo, hi in self.lqr_log_weights]
                mode[i:stop] = 1.0
                gain[i:stop] = self.lqr_gain(w)[0]
                x_ref[i:stop] = rng.uniform(-self.balance_target, self.balance_target)
                pump[i:stop] = rng.uniform(*self.pump_gain)
            else:
                length = int(rng.uniform(*self.excite_time) / dt)
                stop = min(i + length, n)
                force[i:stop] = self.excitation(length, rng)[: stop - i]
            i = stop
        noise = ou_noise(rng, n, dt, self.exploration_noise, self.exploration_time)
        return {
            "mode": mode,
            "gain": gain,
            "x_ref": x_ref,
            "pump": pump,
            "force": force,
            "noise": noise,
        }

    def policy(self, q, qd, s):
        """Feedback (swing-up, then LQR near upright) or an identification force on a rail PD, plus noise."""
        a = self.length * (0.5 * self.rod_mass + self.tip_mass)
        inertia = self.length**2 * (self.rod_mass / 3 + self.tip_mass)
        energy = (0.5 * inertia * qd[1] ** 2 - self.g * a * jnp.cos(q[1])) / (self.g * a)
        tilt = jnp.mod(q[1], 2 * jnp.pi) - jnp.pi  # φ − π wrapped to [−π, π)
        error = jnp.stack([q[0] - s["x_ref"], tilt, qd[0], qd[1]])
        lqr = -jnp.dot(s["gain"], error)
        # Cart acceleration ẍ feeds the pole −a cos φ ẍ: pushing against φ̇ cos φ adds energy (Ē < 1) and
        # with it removes energy (Ē > 1).
        pump = -s["pump"] * (self.energy_target - energy) * jnp.tanh(qd[1] * jnp.cos(q[1]) / 0.5)
        centre = -self.centre_kp * q[0] - self.centre_kd * qd[0]
        near = (jnp.abs(tilt) < self.catch_angle) & (jnp.abs(qd[1]) < self.catch_rate)
        feedback = jnp.where(near, lqr, pump + centre)
        identify = s["force"] - self.rail_kp * q[0] - self.rail_kd * qd[0]
        u = s["mode"] * feedback + (1 - s["mode"]) * identify + s["noise"]
        return jnp.reshape(u, (1,))

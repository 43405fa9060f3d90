"""The simulated cart-pole rig's swing-up as a `learn_to_control` problem: the rig as the plant, its
identification excitation, and its swing-up MPC as the controller.

    result = learn_to_control(config, out=..., **cartpole_swingup(CartPoleRig()))

A feedback-free random force would drive the cart into its end stops, so the excitation is the rig's own
identification input (a PRBS, chirp or multisine force on a rail PD, `CartPoleControlRig` with identification
segments only). The controller is the model's swing-up MPC with its upright LQR near the top
(`lagnet.control.cartpole_evaluation.SwingUp`); success: the pole within 0.1 rad of upright over an episode's last
`hold` seconds, the cart inside ±0.3 m throughout (the `cartpole-swingup` task's test).
"""

import dataclasses

import numpy as np

from ..control.cartpole_evaluation import SwingUp, cartpole_task
from ..control.controllers import MemoryController
from ..control.plant import RigPlant
from ..simulate import CartPoleRig
from ..simulate.rigs.cartpole_control import CartPoleControlRig
from .recording import Recording

STATE_COLUMNS = ("x", "phi", "x_dot", "phi_dot")


@dataclasses.dataclass(frozen=True)
class RigExcitation:
    """`seconds` of the rig's random identification input from hanging near rest (no feedback segments),
    measured by its sensors; it runs the rig's own simulation (the same plant and sensors as `RigPlant(rig)`)."""

    rig: CartPoleRig

    def __call__(self, plant, task, seconds: float, seed: int) -> Recording:
        explore = CartPoleControlRig(
            **{f.name: getattr(self.rig, f.name) for f in dataclasses.fields(CartPoleRig)},
            feedback_prob=0.0,
            excite_time=(seconds, seconds),
        )
        cols, _ = explore.record(seconds, seed=seed, recording="excitation", truth=True)
        y = np.stack([cols[k] for k in STATE_COLUMNS], axis=1)
        xs = np.stack([cols[f"true_{k}"] for k in STATE_COLUMNS], axis=1)
        return Recording(cols["t"], y, cols["force"][:, None], float(seconds), xs)


@dataclasses.dataclass(frozen=True)
class SwingUpFactory:
    """The model's swing-up MPC on `rig` (`SwingUp(dyn, rig, horizon=, iterations=)`) as a task's controller."""

    rig: CartPoleRig
    horizon: int = 30
    iterations: int = 10

    def __call__(self, dyn, task, dt: float) -> MemoryController:
        swing = SwingUp(dyn, self.rig, horizon=self.horizon, iterations=self.iterations)
        return MemoryController(swing.controller, swing.memory0, prepare=swing.compile)


def cartpole_swingup(
    rig: CartPoleRig | None = None,
    *,
    episode_seconds: float = 7.0,
    hold: float = 5.0,
    sensors: bool = False,
    seed: int = 0,
) -> dict:
    """`learn_to_control`'s plant, task, controller and excitation for the rig's swing-up: episodes of
    `episode_seconds` from hanging (cart within ±0.05 m, pole within ±0.1 rad, at rest), held over the last
    `hold` s. The controller reads the true state, as the rig's MPC evaluation does (`sensors=True`: the rig's
    sensors, seeded by `seed`), and each episode is recorded as the controller saw it; the excitation is read by
    the sensors either way."""
    rig = CartPoleRig() if rig is None else rig
    task = dataclasses.replace(
        cartpole_task(rig, episode_seconds, hold), start_spread=[0.05, 0.1, 0.0, 0.0]
    )
    return {
        "plant": RigPlant(rig, sensors=sensors, seed=seed),
        "task": task,
        "controller": SwingUpFactory(rig),
        "excitation": RigExcitation(rig),
    }

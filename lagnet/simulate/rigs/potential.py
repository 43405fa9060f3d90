"""The lecture's learned-potential data: an unforced, frictionless pendulum θ̈ = −sin θ, as one-step pairs.

States (θ, θ̇) drawn uniformly over the phase plane [−2.2, 2.2] × [−1.6, 1.6] and the exact state 0.1 s later
(RK4 with 100 sub-steps: error ~1e-12), as in the lecture's neural-ODE / learned V_θ experiment.
"""

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from ...integrators import RK4
from ...rollout import rollout
from ...systems import Pendulum
from .common import metadata, recording_rng

COLUMNS = {
    "pair": "id of the pair (an episode of two rows)",
    "t": "time within the pair",
    "theta": "angle (rad), 0 hanging down",
    "theta_dot": "angular velocity (rad/s), exact",
}
UNITS = {"t": "s", "theta": "rad", "theta_dot": "rad/s"}
MAPPING = {
    "time": "t",
    "positions": ["theta"],
    "velocities": ["theta_dot"],
    "episode": "pair",
}


@dataclasses.dataclass(frozen=True)
class PotentialPairs:
    """Parameters of the pair set; `Pendulum()` defaults (m = l = g = 1)."""

    # Its recordings' `meta["generator"]`, the class path when data/sim was written (see `CartPoleRig`).
    GENERATOR: ClassVar[str] = "lagnet.data.rigs.potential.PotentialPairs"

    pairs: int = 400
    theta_range: float = 2.2
    theta_dot_range: float = 1.6
    h: float = 0.1
    substeps: int = 100

    def pairs_at(self, theta0: np.ndarray, theta_dot0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The exact states h later from each (θ0, θ̇0)."""
        with jax.enable_x64(True):
            system = Pendulum()
            us = jnp.zeros((self.substeps, 1))

            def one(q0, qd0):
                qs, qds = rollout(system, RK4(), q0, qd0, us, self.h / self.substeps)
                return qs[-1], qds[-1]

            q1, qd1 = jax.jit(jax.vmap(one))(
                jnp.asarray(theta0)[:, None], jnp.asarray(theta_dot0)[:, None]
            )
            return np.asarray(q1[:, 0]), np.asarray(qd1[:, 0])

    def record(self, *, seed: int, recording: str = "train") -> tuple[dict[str, np.ndarray], dict]:
        rng = recording_rng(seed, recording)
        theta0 = rng.uniform(-self.theta_range, self.theta_range, self.pairs)
        theta_dot0 = rng.uniform(-self.theta_dot_range, self.theta_dot_range, self.pairs)
        theta1, theta_dot1 = self.pairs_at(theta0, theta_dot0)
        cols = {
            "pair": np.repeat(np.arange(self.pairs), 2).astype(np.int64),
            "t": np.tile([0.0, self.h], self.pairs),
            "theta": np.stack([theta0, theta1], axis=1).reshape(-1),
            "theta_dot": np.stack([theta_dot0, theta_dot1], axis=1).reshape(-1),
        }
        meta = metadata(
            self.GENERATOR,
            self,
            seed=seed,
            recording=recording,
            duration=self.h,
            columns=COLUMNS,
            units=UNITS,
            mapping=MAPPING,
            system="Pendulum",
            system_params={"mass": 1.0, "length": 1.0, "g": 1.0},
        )
        return cols, meta

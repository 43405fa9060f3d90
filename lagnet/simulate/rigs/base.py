"""The interfaces of the simulated rigs and of the forces they add to their known systems.

A rig is an `AbstractRig`: a known system, the true plant (that system plus the `AbstractRigForce`s it leaves
out), an actuator, a hand that drives it (a sampled `schedule` and a `policy`), and sensors that turn the true
run into a recording (`record`). Each concrete rig is final: it implements the abstract members and is not
subclassed (rigs that share parameters share an abstract base, as the two cart-poles do).
"""

import abc
from typing import Any

import equinox as eqx
import jax
import numpy as np

from ..._types import Q, QDot
from ...systems.base import AbstractSystem
from ..actuator import Actuator
from ..plant import Plant
from ..sensors import StateSensors
from .common import simulate_rig


class AbstractRigForce(eqx.Module):
    """A force of a real rig that its known system leaves out (friction, end stops, cogging, an offset): a
    generalised force Q(q, q̇) on all n coordinates, nonzero on coordinate `index` only. `Plant` sums them."""

    index: eqx.AbstractVar[int]

    @abc.abstractmethod
    def __call__(self, q: Q, qd: QDot) -> Q:
        """The generalised force (n,) at the state (q, q̇)."""


class AbstractRig(eqx.Module):
    """A simulated test rig whose recordings `lagnet data generate` writes (and `lagnet data verify` checks).

    `GENERATOR` is the name its recordings carry in `meta["generator"]`, by which `rig_from_meta` rebuilds it;
    `dt` is the sample step (s) and `substeps` the integration steps per sample.
    """

    GENERATOR: eqx.AbstractClassVar[str]
    dt: eqx.AbstractVar[float]
    substeps: eqx.AbstractVar[int]

    @abc.abstractmethod
    def known_system(self) -> AbstractSystem:
        """The model a PINODE starts from: the rig's system as documented, without what it leaves out."""

    @abc.abstractmethod
    def plant(self) -> Plant:
        """The true plant: the rig's system with its `AbstractRigForce`s."""

    @abc.abstractmethod
    def actuator(self) -> Actuator:
        """What turns the hand's command into the applied input (delay, lag, limit)."""

    @abc.abstractmethod
    def input_limit(self) -> np.ndarray:
        """(m,) the largest command the drive delivers, per input (a controller's |u| ≤ limit)."""

    @abc.abstractmethod
    def sensors(self) -> StateSensors:
        """What a controller reads of the rig each sample: its position sensors, velocities by differences."""

    @abc.abstractmethod
    def schedule(self, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """The hand's plan for n samples: arrays of length n that `policy` reads one sample at a time."""

    @abc.abstractmethod
    def policy(self, q: Q, qd: QDot, s: dict[str, jax.Array]) -> jax.Array:
        """The hand's command (m,) at the state (q, q̇), given this sample `s` of the schedule."""

    @abc.abstractmethod
    def initial_position(self, rng: np.random.Generator) -> np.ndarray:
        """Where a run starts (at rest), drawn after the schedule."""

    @abc.abstractmethod
    def record(
        self, duration: float, *, seed: int, recording: str = "train", truth: bool = False
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """A measured recording of `duration` s: its columns and the metadata that regenerates it; with `truth`,
        the true state and applied input as well (`true_<column>`)."""

    def simulate(self, duration: float, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """The true (noise-free) run: t, q, qd, u_cmd, u_applied at every sample (duration / dt + 1 of them)."""
        return simulate_rig(self, duration, rng, self.initial_position)

"""When `fit` stops: patience (epochs without improvement, once the last horizon has started), a budget in
optimiser steps or in seconds (checked between steps, so within an epoch too), and too many non-finite steps
(an error)."""

import dataclasses
import time

import numpy as np

from .._errors import LagnetError


class TrainingDiverged(LagnetError, RuntimeError):
    """Too many steps had a non-finite loss or gradient."""


def _limit(value) -> int | float:
    return np.inf if value is None else value


@dataclasses.dataclass(frozen=True)
class StopPolicy:
    """The four stop checks of `fit`, each written once; None turns a limit off."""

    patience: int | None = None
    max_steps: int | None = None
    max_seconds: float | None = None
    max_skipped_steps: int | None = None
    # The epoch the last horizon starts at: patience waits for it.
    last_start: int = 0
    # `time.perf_counter()` when the fit began; `max_seconds` counts from there.
    start_time: float = 0.0

    def check_finite(self, skipped_total: int, epoch: int) -> None:
        """Raise `TrainingDiverged` when more steps than `max_skipped_steps` were not finite."""
        if skipped_total > _limit(self.max_skipped_steps):
            raise TrainingDiverged(
                f"{skipped_total} training steps had a non-finite loss or gradient "
                f"(stopped at epoch {epoch})"
            )

    def reason(
        self, epoch: int, stale: int, steps: int, *, clock: bool = True, patience: bool = True
    ) -> str | None:
        """Why training stops after `epoch` ("patience", "max_steps", "max_seconds"), or None to go on.

        `stale` epochs without improvement, `steps` optimiser steps so far; `clock=False` leaves the time out
        (before the first epoch of a resumed fit, which has not begun to spend its budget), `patience=False`
        the patience (within an epoch, where only the budgets stop).
        """
        if patience and stale >= _limit(self.patience) and epoch >= self.last_start:
            return "patience"
        if steps >= _limit(self.max_steps):
            return "max_steps"
        if clock and time.perf_counter() - self.start_time >= _limit(self.max_seconds):
            return "max_seconds"
        return None

    def steps_limit(self) -> int | float:
        return _limit(self.max_steps)

    def steps_left(self, steps: int) -> int | float:
        """How many more optimiser steps the budget allows after `steps` (inf: no budget)."""
        return _limit(self.max_steps) - steps

"""The horizon curriculum of `fit`: its stages, learned from the windows function before training, and the one
layout every stage is padded to, so that a whole run compiles one epoch program."""

import dataclasses
import warnings
from collections.abc import Callable

import numpy as np

from .. import parallel
from ..data.windows import WindowDataset


@dataclasses.dataclass(frozen=True)
class Stages:
    """Where each horizon starts, the optimiser steps each epoch takes, and the one layout (rows, windows, k)
    every stage is padded to (None: one stage, nothing to pad)."""

    horizon_starts: tuple[int, ...]
    steps_per_epoch: tuple[int, ...]
    layout: tuple[int, int, int] | None

    @property
    def last_start(self) -> int:
        return self.horizon_starts[-1]

    def lay_out(self, raw: WindowDataset) -> WindowDataset:
        """A stage's windows in the run's one layout."""
        return raw if self.layout is None else raw.padded(*self.layout)

    def steps_before(self, epoch: int) -> int:
        """The optimiser steps of the epochs before `epoch`."""
        return int(sum(self.steps_per_epoch[:epoch]))

    def epochs_within(self, epochs: int, max_steps: int | float) -> int:
        """How many of `epochs` a budget of `max_steps` optimiser steps reaches into (the progress bar's total)."""
        if not np.isfinite(max_steps):
            return epochs
        reached = np.cumsum(self.steps_per_epoch) >= max_steps
        return min(epochs, int(np.argmax(reached)) + 1) if reached.any() else epochs


def survey(window_fn: Callable[[int], WindowDataset], epochs: int, batch_size: int) -> Stages:
    """The stages of `window_fn` over `epochs` epochs of mini-batches of `batch_size` windows.

    One call per epoch (the windows function is asked for the same datasets again while training), keeping
    only the previous dataset alive. Warns of a stage with fewer windows than a batch.
    """
    horizon_starts, steps, shapes, small = [], [], set(), {}
    previous, prev_k = None, None
    for epoch in range(max(epochs, 1)):
        raw = window_fn(epoch)
        if raw is not previous:
            shapes.add((raw.q.shape[0], raw.k, len(raw)))
            if len(raw) < batch_size:
                small[raw.k] = len(raw)
            previous = raw
        if raw.k != prev_k:
            horizon_starts.append(epoch)
            prev_k = raw.k
        steps.append(max(len(raw) // batch_size, 1))
    for k, n in small.items():
        warnings.warn(
            f"the batch size {batch_size} is larger than the {n} training windows of {k} steps: each step "
            f"repeats every window about {batch_size / n:.0f}× and an epoch is a single step; use a batch size "
            f"≤ {n} (training.batch_size), more data, or a budget in steps (training.max_steps)",
            stacklevel=3,
        )
    layout = None
    if len(shapes) > 1:
        k = max(s[1] for s in shapes)
        layout = (max(rows - h for rows, h, _ in shapes) + k, max(s[2] for s in shapes), k)
    return Stages(tuple(horizon_starts), tuple(steps), layout)


class Placed:
    """The current stage's windows, laid out and on the mesh; only one stage is kept on the device."""

    def __init__(self, stages: Stages, mesh):
        self.stages, self.mesh, self.held = stages, mesh, {}

    def __call__(self, raw: WindowDataset) -> WindowDataset:
        if id(raw) not in self.held:
            self.held = {id(raw): parallel.replicate(self.stages.lay_out(raw), self.mesh)}
        return self.held[id(raw)]

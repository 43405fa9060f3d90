"""What `fit` shows while it runs (on stderr, process 0 only): the compile, a progress bar over the epochs (and
one over the steps of a long epoch), why it stopped; and how long JAX spent compiling."""

import sys
import time

import jax
import numpy as np
from tqdm.auto import tqdm

from ..config.schema import SELECT_BY


def say(message: str, end: str = "\n") -> None:
    print(message, end=end, file=sys.stderr, flush=True)


class CompileClock:
    """Wall-clock seconds in which JAX was tracing, lowering or compiling while open (its monitoring events; time
    in which two programs compiled at once counts once)."""

    EVENTS = (
        "/jax/core/compile/jaxpr_trace_duration",
        "/jax/core/compile/jaxpr_to_mlir_module_duration",
        "/jax/core/compile/backend_compile_duration",
    )

    def __init__(self):
        self.spans = []

    def _listen(self, event, duration, **kwargs):
        if event in self.EVENTS:
            end = time.perf_counter()  # each event is reported as it ends
            self.spans.append((end - duration, end))

    @property
    def seconds(self) -> float:
        total, reached = 0.0, -np.inf
        for start, end in sorted(self.spans):
            total += max(end - max(start, reached), 0.0)
            reached = max(reached, end)
        return total

    def __enter__(self):
        jax.monitoring.register_event_duration_secs_listener(self._listen)
        return self

    def __exit__(self, *exc):
        jax.monitoring.unregister_event_duration_listener(self._listen)


class Progress:
    """`fit`'s messages and its bar over the epochs; silent unless `talk`."""

    def __init__(self, talk: bool, desc: str):
        self.talk, self.desc, self.bar, self.inner = talk, desc, None, None

    def compiling(self):
        """A context around the compile: says it starts, then how long it took (an error ends the line)."""
        return _Compiling(self)

    def epochs(self, first: int, total: int):
        """The bar over epochs `first` … `total` − 1 (disabled unless talking)."""
        self.bar = tqdm(
            range(first, total),
            desc=self.desc,
            disable=not self.talk,
            unit="epoch",
            initial=first,
            total=total,
        )
        return self.bar

    def show(self, record: dict) -> None:
        self.bar.set_postfix(
            loss=f"{record['train_loss']:.4g}",
            val=f"{record['validation_loss']:.4g}",
            h=record["horizon"],
        )

    def within(self, epoch: int, done: int, total: int) -> None:
        """`done` of the `total` optimiser steps of a long epoch (one the steps program runs in parts): a
        second bar, under the epochs'."""
        if not self.talk:
            return
        if self.inner is None:
            self.inner = tqdm(
                total=total, desc=f"epoch {epoch}", unit="step", leave=False, position=1
            )
        self.inner.update(done - self.inner.n)

    def within_done(self) -> None:
        if self.inner is not None:
            self.inner.close()
            self.inner = None

    def close(self) -> None:
        # A message after the bar (an error, the reason for stopping) starts on a line of its own.
        self.within_done()
        if self.bar is not None:
            self.bar.close()

    def stopped(
        self, reason: str, epoch: int, *, stale, best_epoch, best, select_by, steps, max_seconds
    ):
        """Why training stopped before its last epoch (nothing when it ran them all)."""
        if not self.talk:
            return
        metric = SELECT_BY[select_by]
        if reason == "patience":
            say(
                f"stopped early at epoch {epoch}: no improvement for {stale} epochs; "
                f"best epoch {best_epoch} ({metric} {best:.4g})"
            )
        elif reason == "max_steps":
            say(f"stopped at epoch {epoch}: {steps} optimiser steps reached max_steps")
        elif reason == "max_seconds":
            say(f"stopped at epoch {epoch}: {max_seconds:g} s reached (max_seconds)")


class _Compiling:
    def __init__(self, progress: Progress):
        self.progress = progress

    def __enter__(self):
        if self.progress.talk:
            say(f"{self.progress.desc}: compiling the training step …", end=" ")
        self.t = time.perf_counter()
        return self

    def __exit__(self, kind, *exc):
        if self.progress.talk:
            say("" if kind is not None else f"{time.perf_counter() - self.t:.1f} s")

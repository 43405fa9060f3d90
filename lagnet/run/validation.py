"""Checks on the validation data before it selects a model: a segment unlike the others misleads selection."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..data.angles import wrap
from ..data.windows import make_windows
from ..train.loss import window_rollout


def segment_errors(model, integrator, loss, trajs, horizon: int, *, windows_per_segment: int = 64):
    """Per validation segment (trajectory), the model's mean end-of-window error over `horizon` steps, each
    coordinate of (q, q̇) in units of the loss's scale and averaged: one number per segment (NaN: too short)."""
    scores = np.full(len(trajs), np.nan)
    parts = [i for i, t in enumerate(trajs) if t.n_rows > horizon]
    if not parts:
        return scores
    # One set of windows over every segment (one compiled program), about `windows_per_segment` from each.
    rows = np.asarray([trajs[i].n_rows for i in parts])
    stride = max(1, int(np.median(rows - horizon)) // windows_per_segment)
    data = make_windows([trajs[i] for i in parts], horizon, stride=stride, dtype=loss.scale_q.dtype)
    integrator = integrator.compact_form()

    @eqx.filter_jit
    def ends(model, w):
        def one(start):
            x = w.window(start)
            qs, qds = window_rollout(model, integrator, x.q[0], x.qd[0], x.u, x.dt)
            dq = qs[-1] - x.q[-1]
            dq = jnp.where(jnp.asarray(loss.angles), wrap(dq), dq)
            e = jnp.concatenate(
                [jnp.abs(dq) / loss.scale_q, jnp.abs(qds[-1] - x.qd[-1]) / loss.scale_qd]
            )
            return jnp.mean(e)

        return jax.vmap(one)(w.starts)

    errors = np.asarray(ends(model, data))
    segment = np.searchsorted(np.cumsum(rows), np.asarray(data.starts), side="right")
    for j, i in enumerate(parts):
        mine = errors[segment == j]
        if mine.size:
            scores[i] = float(np.mean(mine))
    return scores


def outlier_segments(scores, trajs, factor: float = 3.0) -> list[str]:
    """Messages for segments whose score is over `factor` × the median of the others (with 3 or more)."""
    finite = np.flatnonzero(np.isfinite(scores))
    if finite.size < 3:
        return []
    out = []
    for i in finite:
        others = np.median(np.delete(scores, i)[np.isfinite(np.delete(scores, i))])
        if others > 0 and scores[i] > factor * others:
            out.append(
                f"validation segment {trajs[i].source or i}: the untrained model's end-of-window error there "
                f"is {scores[i] / others:.1f}× the median of the other segments. A segment unlike the others "
                "(another regime, e.g. balancing under feedback) dominates the selection of the best epoch: "
                "check it, or name whole validation runs in data.validation"
            )
    return out

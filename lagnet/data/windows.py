"""Train/validation/test splits, windows of k steps, and seeded mini-batches that stay on the device.

Splits are made of whole trajectories or contiguous time blocks, before any window is cut, and windows never cross
a block: a sample belongs to one split only, so overlapping windows cannot leak between splits.

A `WindowDataset` holds the concatenated samples as device arrays and the start row of every valid window. A
training loop draws a whole epoch of start rows at once (`epoch(key, batch_size)`, shape (batches, batch_size))
and gathers each batch inside `jit`/`lax.scan` with `batch(starts)`: no host round trip per step.
"""

from collections.abc import Mapping, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from .._errors import DataError
from .trajectory import Trajectory


def split_by_time(
    trajectories: Trajectory | Sequence[Trajectory],
    fractions: Mapping[str, float],
    *,
    blocks: int = 1,
    gap: int = 0,
    seed: int = 0,
) -> dict[str, list[Trajectory]]:
    """Cut each trajectory into contiguous time blocks and give each block to a split.

    With `blocks=1` each trajectory is cut once per split, in the order of `fractions` (e.g. the first 70 % of
    the time is train, the next 15 % validation, the last 15 % test). With `blocks=b > 1` it is cut into
    `b · len(fractions)` equal blocks which are dealt to the splits at random (seeded) in proportion to the
    fractions, so every split sees the whole recording's range of conditions. `gap` rows between consecutive
    blocks are dropped, decorrelating neighbouring blocks.

    Returns:
        split name → list of trajectory blocks (their `source` records the rows, e.g. `file.npz[0:16800]`).
    """
    names, weights = _check_fractions(fractions)
    trajs = [trajectories] if isinstance(trajectories, Trajectory) else list(trajectories)
    rng = np.random.default_rng(seed)
    out: dict[str, list[Trajectory]] = {k: [] for k in names}
    for traj in trajs:
        n_blocks = blocks * len(names)
        if blocks == 1:
            owner = np.arange(len(names))
            bounds = np.round(np.concatenate([[0], np.cumsum(weights)]) * traj.n_rows).astype(int)
        else:
            counts = _apportion(weights, n_blocks)
            owner = rng.permutation(np.repeat(np.arange(len(names)), counts))
            bounds = np.round(np.linspace(0, traj.n_rows, n_blocks + 1)).astype(int)
        for j, who in enumerate(owner):
            start = bounds[j] + (gap if j > 0 else 0)
            stop = bounds[j + 1]
            if stop - start >= 2:
                out[names[who]].append(traj.slice(int(start), int(stop)))
    return out


def split_by_file(
    trajectories: Sequence[Trajectory], fractions: Mapping[str, float], *, seed: int = 0
) -> dict[str, list[Trajectory]]:
    """Deal whole trajectories (files, episodes) to the splits at random (seeded), in proportion to the fractions.

    Every split with a positive fraction gets at least one trajectory when there are enough of them.
    """
    names, weights = _check_fractions(fractions)
    trajs = list(trajectories)
    counts = _apportion(weights, len(trajs))
    order = np.random.default_rng(seed).permutation(len(trajs))
    out, i = {}, 0
    for name, c in zip(names, counts, strict=True):
        out[name] = [trajs[j] for j in order[i : i + c]]
        i += c
    return out


def _check_fractions(fractions: Mapping[str, float]) -> tuple[list[str], np.ndarray]:
    names = list(fractions)
    w = np.asarray([float(fractions[k]) for k in names])
    if not names or np.any(w < 0) or not np.isclose(w.sum(), 1.0):
        raise DataError(f"split fractions must be non-negative and sum to 1, got {dict(fractions)}")
    return names, w


def _apportion(weights: np.ndarray, total: int) -> np.ndarray:
    # Largest remainder, but a positive weight gets at least one item when there are enough to go round.
    raw = weights * total
    counts = np.floor(raw).astype(int)
    for j in np.argsort(-(raw - counts))[: total - counts.sum()]:
        counts[j] += 1
    for j in np.flatnonzero((weights > 0) & (counts == 0)):
        donor = int(np.argmax(counts))
        if counts[donor] > 1:
            counts[donor] -= 1
            counts[j] += 1
    return counts


class Window(eqx.Module):
    """k steps of a trajectory: states at k + 1 samples, the inputs and steps between them.

    Batched (from `WindowDataset.batch`) every field has a leading batch axis.
    """

    # A field cannot refer to another field's axis by an expression: `states` is k + 1.
    q: Float[Array, "*batch states n"]
    qd: Float[Array, "*batch states n"]
    u: Float[Array, "*batch k m"]
    dt: Float[Array, "*batch k"]


class WindowDataset(eqx.Module):
    """All windows of `k` steps in a set of trajectories, as device arrays.

    The trajectories are concatenated; `starts` holds the row of every window that lies within one trajectory
    (every `stride` rows). `dt[r]` is the measured step from row r to r + 1 (0 at a trajectory's last row, which
    no window steps from).

    A padded dataset (`padded`) has arrays of a fixed size whatever its horizon: windows of `k` steps of which the
    first `steps` are trained on, and `starts[:count]` the valid windows. `steps` and `count` are arrays, so
    datasets of different horizons padded alike share one compiled training program. Unpadded, both are None.
    """

    q: Float[Array, "rows n"]
    qd: Float[Array, "rows n"]
    u: Float[Array, "rows m"]
    dt: Float[Array, " rows"]
    starts: Int[Array, " windows"]
    k: int = eqx.field(static=True)
    angles: tuple[bool, ...] = eqx.field(static=True)
    steps: Int[Array, ""] | None = None
    count: Int[Array, ""] | None = None

    def __len__(self) -> int:
        """The number of windows (padded: of window slots, `count` of which are windows)."""
        return int(self.starts.shape[0])

    def padded(self, rows: int, windows: int, k: int) -> "WindowDataset":
        """The same windows in arrays of `rows` rows and `windows` start slots, each window `k` steps long with
        its first `self.k` steps to be trained on (`steps`): the layout a curriculum's stages share.

        Rows past the data are zero; they are only ever read by steps beyond `steps`, which training holds
        (`lagnet.train.loss.FirstSteps`) and does not score.
        """
        if self.count is not None:
            raise DataError("this WindowDataset is already padded")
        n = len(self)
        need = self.q.shape[0] - self.k + k  # the last window's start + k + 1
        if k < self.k or windows < n or rows < need:
            raise DataError(
                f"cannot pad {n} windows of {self.k} steps in {self.q.shape[0]} rows to {windows} windows of "
                f"{k} steps in {rows} rows (needs at least {n} windows, {self.k} steps, {need} rows)"
            )

        def pad(x, length):
            return jnp.concatenate([x, jnp.zeros((length - x.shape[0], *x.shape[1:]), x.dtype)])

        return WindowDataset(
            q=pad(self.q, rows),
            qd=pad(self.qd, rows),
            u=pad(self.u, rows),
            dt=pad(self.dt, rows),
            starts=pad(self.starts, windows),
            k=k,
            angles=self.angles,
            steps=jnp.asarray(self.k, jnp.int32),
            count=jnp.asarray(n, jnp.int32),
        )

    def epoch_batches(self, batch_size: int) -> int | Int[Array, ""]:
        """How many of the rows of `epoch(key, batch_size)` are mini-batches to train on: ⌊n / batch_size⌋, at
        least 1 (n the number of windows; a traced value for a padded dataset)."""
        if self.count is None:
            return max(len(self) // batch_size, 1)
        return jnp.maximum(self.count // batch_size, 1)

    def window(self, start: Int[Array, ""]) -> Window:
        """The window that begins at row `start` (a traced integer is fine)."""
        k = self.k

        def take(x, length):
            return jax.lax.dynamic_slice_in_dim(x, start, length, axis=0)

        return Window(
            q=take(self.q, k + 1), qd=take(self.qd, k + 1), u=take(self.u, k), dt=take(self.dt, k)
        )

    def batch(self, starts: Int[Array, " batch"]) -> Window:
        """The windows beginning at rows `starts`, stacked along a leading batch axis."""
        return jax.vmap(self.window)(starts)

    def epoch(
        self, key: Array, batch_size: int, *, drop_last: bool = True
    ) -> Int[Array, "batches batch"]:
        """A shuffled epoch of window start rows, shape (batches, batch_size).

        Each window appears once. With `drop_last` the remainder (< batch_size windows) is left out, a different
        one each epoch; otherwise the last batch is filled by wrapping round to the first windows of the
        permutation. Reproducible from `key`, and jit-able (shapes depend only on len(self) and batch_size).
        A padded dataset always returns max(len(self) // batch_size, 1) rows, of which the first
        `epoch_batches(batch_size)` are its windows' batches as above (wrapping round when there are fewer
        windows than `batch_size`, whatever `drop_last`).
        """
        n = len(self)
        if not 0 < batch_size:
            raise DataError(f"batch_size must be positive, got {batch_size}")
        # One sort by random 32-bit keys, the round that `jax.random.permutation` repeats to make ties rarer (two
        # rounds at 20 000 windows): a tie keeps two windows in their order, which a mini-batch order does not
        # feel, and one round is 28 fewer kernels to compile in `fit`'s epoch program.
        keys = jax.random.bits(key, (n,), jnp.uint32)
        if self.count is not None:
            # The valid slots first, in random order; n_batches rows of which `epoch_batches` are trained on.
            last = jnp.asarray(np.iinfo(np.uint32).max, jnp.uint32)  # after every valid slot's key
            keys = jnp.where(jnp.arange(n) < self.count, keys >> 1, last)
            n_batches = max(n // batch_size, 1)
            idx = jnp.arange(n_batches * batch_size) % self.count
            return self.starts[jnp.argsort(keys)[idx]].reshape(n_batches, batch_size)
        perm = self.starts[jnp.argsort(keys)]
        if drop_last:
            n_batches = n // batch_size
            if n_batches == 0:
                raise DataError(
                    f"batch_size={batch_size} is more than the {n} windows; "
                    f"use a smaller batch or drop_last=False"
                )
            return perm[: n_batches * batch_size].reshape(n_batches, batch_size)
        n_batches = -(-n // batch_size)
        idx = jnp.arange(n_batches * batch_size) % n
        return perm[idx].reshape(n_batches, batch_size)

    def all(self) -> Window:
        """Every window, stacked (for evaluation of a small set)."""
        return self.batch(self.starts)


def _window_starts(trajs, k: int, stride: int, skip_short: bool):
    """(index, trajectory, its windows' first rows) for every trajectory that holds a window of k steps, as
    `make_windows` lays them out; a shorter one is skipped with `skip_short`, else a ValueError naming it."""
    out = []
    for i, traj in enumerate(trajs):
        if traj.n_rows < k + 1:
            if skip_short:
                continue
            raise DataError(
                f"{traj.source}: {traj.n_rows} rows, too few for a window of k={k} steps "
                f"(needs at least {k + 1})"
            )
        out.append((i, traj, np.arange(0, traj.n_rows - k, stride)))
    if not out:
        raise DataError(f"no trajectory has the k + 1 = {k + 1} rows a window needs")
    return out


def window_recordings(
    trajectories: Sequence[Trajectory], k: int, *, stride: int = 1, skip_short: bool = False
) -> Int[np.ndarray, " windows"]:
    """The index in `trajectories` of the one each window of `make_windows(trajectories, k, ...)` lies in."""
    laid = _window_starts(list(trajectories), k, stride, skip_short)
    return np.concatenate([np.full(len(local), i) for i, _, local in laid])


def make_windows(
    trajectories: Trajectory | Sequence[Trajectory],
    k: int,
    *,
    stride: int = 1,
    skip_short: bool = False,
    dtype=None,
) -> WindowDataset:
    """All windows of `k` steps (k + 1 samples) within each trajectory, every `stride` rows.

    Raises:
        ValueError: a trajectory has fewer than k + 1 rows (naming it), unless `skip_short`; or none is left.
    """
    if not isinstance(k, int) or k < 1:
        raise DataError(f"window length k must be a positive integer, got {k!r}")
    if not isinstance(stride, int) or stride < 1:
        raise DataError(f"window stride must be a positive integer, got {stride!r}")
    trajs = [trajectories] if isinstance(trajectories, Trajectory) else list(trajectories)
    if not trajs:
        raise DataError("make_windows needs at least one trajectory")
    first = trajs[0]
    for traj in trajs[1:]:
        if traj.coordinate_names != first.coordinate_names or traj.input_names != first.input_names:
            raise DataError(
                f"{traj.source}: coordinates {traj.coordinate_names} / inputs {traj.input_names} differ "
                f"from {first.source}'s {first.coordinate_names} / {first.input_names}"
            )
    qs, qds, us, dts, starts = [], [], [], [], []
    offset = 0
    for _, traj, local in _window_starts(trajs, k, stride, skip_short):
        qs.append(traj.q)
        qds.append(traj.qd)
        us.append(traj.u)
        dts.append(np.concatenate([traj.dt, [0.0]]))
        starts.append(offset + local)
        offset += traj.n_rows
    dtype = dtype or jnp.result_type(float)

    def dev(parts):
        return jnp.asarray(np.concatenate(parts, axis=0), dtype=dtype)

    return WindowDataset(
        q=dev(qs),
        qd=dev(qds),
        u=dev(us),
        dt=dev(dts),
        starts=jnp.asarray(np.concatenate(starts), dtype=jnp.int32),
        k=k,
        angles=first.angles,
    )

"""Splits without leakage, windows within blocks, seeded epochs that run under jit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import lagnet.data as ld


def counting_trajectory(n=200, source="count.csv"):
    # q = row index and t jittered, so any window can be traced back to its rows and its steps.
    t = np.cumsum(np.r_[0.0, 0.01 + 0.001 * np.sin(np.arange(n - 1))])
    rows = np.arange(n, dtype=float)[:, None]
    return ld.Trajectory(
        t=t, q=rows, qd=rows + 0.5, u=-rows, coordinate_names=("a",), input_names=("f",),
        angles=(False,), source=source,
    )  # fmt: skip


def rows_of(split):
    return np.concatenate([tr.q[:, 0] for tr in split]).astype(int)


@pytest.mark.parametrize("blocks, gap", [(1, 0), (4, 3)])
def test_time_splits_are_disjoint_contiguous_blocks(blocks, gap):
    tr = counting_trajectory()
    fr = {"train": 0.7, "val": 0.15, "test": 0.15}
    s1 = ld.split_by_time(tr, fr, blocks=blocks, gap=gap, seed=3)
    s2 = ld.split_by_time(tr, fr, blocks=blocks, gap=gap, seed=3)
    sets = {k: set(rows_of(v)) for k, v in s1.items()}
    assert not (sets["train"] & sets["val"]) and not (sets["train"] & sets["test"])
    assert not (sets["val"] & sets["test"])
    kept = 200 - gap * (3 * blocks - 1)
    assert sum(map(len, sets.values())) == kept
    assert abs(len(sets["train"]) / kept - 0.7) < 0.06
    for block in s1["train"]:
        assert np.all(np.diff(block.q[:, 0]) == 1)  # contiguous
    assert [b.source for b in s1["val"]] == [b.source for b in s2["val"]]  # reproducible


def test_windows_never_cross_a_block_and_keep_the_measured_steps():
    tr = counting_trajectory()
    splits = ld.split_by_time(tr, {"train": 0.5, "test": 0.5}, blocks=3, seed=0)
    k = 5
    ds = ld.make_windows(splits["train"], k)
    w = ds.all()
    assert w.q.shape == (len(ds), k + 1, 1) and w.u.shape == (len(ds), k, 1)
    rows = np.asarray(w.q[..., 0]).astype(int)
    assert np.all(np.diff(rows, axis=1) == 1)  # consecutive rows of one block
    train_rows = set(rows_of(splits["train"]))
    assert set(rows.ravel()) <= train_rows
    np.testing.assert_allclose(np.asarray(w.dt), np.diff(tr.t)[rows[:, :-1]])
    np.testing.assert_allclose(np.asarray(w.u[..., 0]), -rows[:, :-1])
    expected = sum(b.n_rows - k for b in splits["train"])
    assert len(ds) == expected


def test_stride():
    ds = ld.make_windows(counting_trajectory(50), 4, stride=3)
    np.testing.assert_array_equal(np.asarray(ds.starts), np.arange(0, 46, 3))


def test_epochs_are_seeded_permutations(key):
    ds = ld.make_windows(counting_trajectory(), 3)
    e1 = ds.epoch(key, 16)
    assert e1.shape == (len(ds) // 16, 16)
    np.testing.assert_array_equal(e1, ds.epoch(key, 16))
    assert not np.array_equal(e1, ds.epoch(jax.random.key(1), 16))
    assert len(set(np.asarray(e1).ravel())) == e1.size  # each window at most once
    full = ds.epoch(key, 16, drop_last=False)
    assert set(np.asarray(full).ravel()) == set(np.asarray(ds.starts))


def test_an_epoch_runs_on_device_in_one_scan(key):
    ds = ld.make_windows(counting_trajectory(), 3)

    @jax.jit
    def epoch_sum(ds, key):
        def step(total, starts):
            w = ds.batch(starts)
            return total + jnp.sum(w.q[:, -1] - w.q[:, 0]), None

        return jax.lax.scan(step, 0.0, ds.epoch(key, 8))[0]

    assert float(epoch_sum(ds, key)) == 3.0 * 8 * (len(ds) // 8)


def test_split_by_file_is_seeded_and_gives_every_split_a_file():
    trajs = [counting_trajectory(20, f"f{i}.csv") for i in range(7)]
    s = ld.split_by_file(trajs, {"train": 0.7, "val": 0.15, "test": 0.15}, seed=1)
    assert [len(v) for v in s.values()] == [5, 1, 1]
    names = [tr.source for v in s.values() for tr in v]
    assert sorted(names) == sorted(t.source for t in trajs)
    again = ld.split_by_file(trajs, {"train": 0.7, "val": 0.15, "test": 0.15}, seed=1)
    assert [t.source for t in again["val"]] == [t.source for t in s["val"]]


def test_bad_fractions_and_window_lengths():
    tr = counting_trajectory()
    with pytest.raises(ValueError, match="fractions must be non-negative and sum to 1"):
        ld.split_by_time(tr, {"train": 0.7, "test": 0.2})
    with pytest.raises(ValueError, match="window length k must be a positive integer, got 0"):
        ld.make_windows(tr, 0)
    with pytest.raises(ValueError, match="batch_size=1000 is more than the 197 windows"):
        ld.make_windows(tr, 3).epoch(jax.random.key(0), 1000)


def test_window_recordings_name_the_trajectory_each_window_lies_in():
    """Three trajectories, the middle one too short for a window: each window's label is the trajectory whose
    rows it starts in (the rows count from 0 in every trajectory here, so the offsets tell them apart)."""
    from lagnet.data.windows import window_recordings

    trajs = [
        counting_trajectory(30, "a"),
        counting_trajectory(4, "b"),
        counting_trajectory(20, "c"),
    ]
    k = 5
    w = ld.make_windows(trajs, k, skip_short=True)
    labels = window_recordings(trajs, k, skip_short=True)
    assert labels.shape == (len(w),)
    first_rows = np.asarray(w.q)[np.asarray(w.starts), 0]
    assert np.array_equal(labels, np.r_[np.zeros(25), np.full(15, 2)])
    # The window starting at a trajectory's row 0 is where the label changes.
    assert np.array_equal(
        np.flatnonzero(first_rows == 0), np.flatnonzero(np.r_[True, np.diff(labels) != 0])
    )
    with pytest.raises(ValueError, match="b: 4 rows"):
        window_recordings(trajs, k)

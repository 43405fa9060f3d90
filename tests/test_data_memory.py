"""Loading a large CSV holds each value about once: the block reader gives the arrays that parsing the whole file
in float64 (and rounding) gives, wherever the blocks and chunks end, and its traced peak stays near the arrays'
size."""

import csv
import gzip
import io
import sys
import tracemalloc

import numpy as np
import pytest

from lagnet.data import angles, loader
from lagnet.data.formats import csv_file
from lagnet.systems import CartPole

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[1] / "benchmarks"))
from loading_memory import MAPPING, write_cartpole_csv  # noqa: E402


def whole_file(text: str) -> dict[str, np.ndarray]:
    """The old path: every row of the file parsed into float64 at once (an empty cell is NaN)."""
    rows = list(csv.reader(io.StringIO(text.lstrip("\ufeff"))))
    header = [h.split(" [")[0].strip() for h in rows[0]]
    body = [r for r in rows[1:] if r]
    return {
        name: np.array([float(r[k].strip() or "nan") for r in body])
        for k, name in enumerate(header)
    }


def odd_text(rows=103, seed=0) -> str:
    rng = np.random.default_rng(seed)
    lines = ["\ufefft [s],θ [rad],x,force\r\n"]
    for k in range(rows):
        cells = [f"{0.01 * k:.2f}", f"{rng.normal():.9f}", f"{rng.normal() * 1e3:.6e}", ""]
        if k % 5:
            cells[3] = f'"{rng.normal():.4f}"'
        lines.append(",".join(cells) + ("\r\n" if k % 2 else "\n"))
        if k == 40:
            lines.append("\n")  # an empty line is skipped
    return "".join(lines)


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("block, chunk", [(7, 13), (1, 1), (64, 5), (4096, 1 << 20)])
def test_block_reader_gives_the_whole_file_arrays(tmp_path, monkeypatch, gz, block, chunk):
    """Blocks of 1, 7, 64 rows and chunks of 1, 5, 13 bytes (which split the 2-byte θ and the CRLF line ends):
    float64 columns equal the whole-file parse, float32 ones its rounding, and time stays float64."""
    monkeypatch.setattr(csv_file, "_BLOCK_ROWS", block)
    monkeypatch.setattr(csv_file, "_CHUNK_BYTES", chunk)
    text = odd_text()
    path = tmp_path / ("f.csv.gz" if gz else "f.csv")
    raw = text.encode("utf-8")
    path.write_bytes(gzip.compress(raw) if gz else raw)
    expected = whole_file(text)
    columns, meta = loader.read_table(path)
    assert list(columns) == ["t", "θ", "x", "force"] and meta["units"] == {"t": "s", "θ": "rad"}
    for name, want in expected.items():
        assert columns[name].dtype == np.float64
        np.testing.assert_array_equal(columns[name], want)
    table = loader._read(str(path), np.float32, ("t [s]",))
    assert table.columns["t"].dtype == np.float64
    np.testing.assert_array_equal(table.columns["t"], expected["t"])
    for name in ("θ", "x", "force"):
        assert table.columns[name].dtype == np.float32
        np.testing.assert_array_equal(table.columns[name], expected[name].astype(np.float32))
    assert np.isnan(table.columns["force"][::5]).all()


def test_errors_past_a_block_name_the_row_and_line(tmp_path, monkeypatch):
    monkeypatch.setattr(csv_file, "_BLOCK_ROWS", 7)
    monkeypatch.setattr(csv_file, "_CHUNK_BYTES", 13)
    lines = ["t,x"] + [f"{k},{k}" for k in range(50)]
    lines[31] = "30,abc"
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"column 'x' row 30 \(line 32\): cannot read 'abc'"):
        loader.read_table(path)
    path.write_bytes(b"t,x\n" + b"0,1\n" * 20 + b"1,\xe9\n")
    with pytest.raises(ValueError, match=r"byte 0xe9 at position 86 cannot be decoded"):
        loader.read_table(path)
    # Past float32's range a cell would become inf: refused when reading into float32.
    path.write_text("t,x\n" + "0,1\n" * 20 + "1,1e39\n")
    with pytest.raises(ValueError, match=r"column 'x' row 20 \(line 22\) is 1e\+39: too large"):
        loader._read(str(path), np.float32, ("t",))


def write_turning_cartpole(path, rows=5000, dt=0.02):
    """A cart-pole whose pole turns over and over (phi wrapped to [−π, π) in the file), velocities exact."""
    t = dt * np.arange(rows)
    phi = 0.5 * t + 0.8 * np.sin(1.3 * t)
    table = np.stack(
        [
            t,
            0.5 * np.sin(0.7 * t),
            np.mod(phi + np.pi, 2 * np.pi) - np.pi,
            0.35 * np.cos(0.7 * t),
            0.5 + 1.04 * np.cos(1.3 * t),
            np.sin(0.9 * t),
        ],
        axis=1,
    )
    np.savetxt(
        path, table, fmt="%.9g", delimiter=",", header="t,x,phi,x_dot,phi_dot,force", comments=""
    )


def test_float32_storage_is_the_float64_trajectory_rounded(tmp_path, monkeypatch):
    """q (phi wrapped, unwrapped a block at a time), read q̇ and u: within 1 float32 ulp of the float64
    trajectories; derived q̇ within the float32 cells' rounding; t identical."""
    monkeypatch.setattr(angles, "_UNWRAP_ROWS", 1000)
    monkeypatch.setattr(loader, "_FIT_ROWS", 777)
    monkeypatch.setattr(csv_file, "_BLOCK_ROWS", 333)
    path = tmp_path / "cp.csv"
    write_turning_cartpole(path)
    derived = {k: v for k, v in MAPPING.items() if k != "velocities"}
    for mapping in (MAPPING, derived):
        (a,) = loader.load_trajectories(path, mapping, system=CartPole())
        (b,) = loader.load_trajectories(path, mapping, system=CartPole(), storage="float32")
        assert b.t.dtype == np.float64 and np.array_equal(a.t, b.t)
        for name in ("q", "qd", "u"):
            x, y = getattr(a, name), getattr(b, name)
            assert y.dtype == np.float32
            if name == "qd" and mapping is derived:
                # Differences of float32 cells (|phi| ≤ π): off by up to ε₃₂ π / dt, not by ulps of q̇.
                np.testing.assert_allclose(
                    y, x, rtol=0, atol=np.finfo(np.float32).eps * np.pi / 0.02
                )
            else:
                np.testing.assert_array_max_ulp(y, x.astype(np.float32), maxulp=1)
        assert np.ptp(b.q[:, 1]) > 8 * np.pi  # unwrapped: the pole turned
    resampled = {**MAPPING, "resample": 0.03}
    (a,) = loader.load_trajectories(path, resampled, system=CartPole())
    (b,) = loader.load_trajectories(path, resampled, system=CartPole(), storage="float32")
    assert a.q.dtype == np.float64 and b.q.dtype == b.qd.dtype == b.u.dtype == np.float32
    np.testing.assert_allclose(b.q, a.q, rtol=1e-6, atol=1e-6)


def traced_peak(fn):
    tracemalloc.start()
    try:
        result = fn()
        return tracemalloc.get_traced_memory()[1], result
    finally:
        tracemalloc.stop()


def test_loading_peak_stays_near_the_arrays(tmp_path):
    """300 000 rows (17 MB of text, 8.4 MB as float32 with float64 time): reading peaks below 1.3x the columns
    and mapping into float32 trajectories below 2x theirs, each plus 4 MB for one block of rows (parsing the whole
    text into float64 copies, as before, peaked near 10x)."""
    path = tmp_path / "big.csv"
    write_cartpole_csv(str(path), 300_000)
    peak, table = traced_peak(lambda: loader._read(str(path), np.float32, ("t",)))
    size = sum(a.nbytes for a in table.columns.values())
    assert size == 300_000 * (8 + 5 * 4)
    assert peak < 1.3 * size + 4e6, (peak, size)
    del table
    peak, trajs = traced_peak(
        lambda: loader.load_trajectories(path, MAPPING, system=CartPole(), storage="float32")
    )
    size = sum(a.nbytes for tr in trajs for a in (tr.t, tr.q, tr.qd, tr.u))
    assert size == 300_000 * (8 + 5 * 4)
    assert peak < 2.0 * size + 4e6, (peak, size)

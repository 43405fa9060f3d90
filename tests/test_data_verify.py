"""The shipped simulated datasets regenerate from their generators (what `lagnet data verify` checks): bit for bit
on the CPU that wrote them, to rounding (1e-9 of a column's range, in unquantised columns only) on another."""

import numpy as np

from lagnet.cli import main
from lagnet.commands.data import compare_recordings


def test_shipped_simulations_regenerate(capsys):
    assert main(["data", "verify"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 6 and all(line.startswith("same") for line in lines), lines


def test_compare_recordings_tells_rounding_from_a_change(tmp_path):
    x = np.linspace(-1.0, 1.0, 50)
    np.savez(tmp_path / "a.npz", x=x, meta=np.array("m"))
    np.savez(tmp_path / "b.npz", x=x * (1 + 1e-12), meta=np.array("m"))
    np.savez(tmp_path / "c.npz", x=x + 1e-3, meta=np.array("m"))
    np.savez(tmp_path / "d.npz", x=x, meta=np.array("other"))
    assert compare_recordings(tmp_path / "a.npz", tmp_path / "a.npz") == (True, 0.0)
    exact, worst = compare_recordings(tmp_path / "a.npz", tmp_path / "b.npz")
    assert not exact and 0 < worst < 1e-11
    assert compare_recordings(tmp_path / "a.npz", tmp_path / "c.npz")[1] > 1e-4
    assert compare_recordings(tmp_path / "a.npz", tmp_path / "d.npz")[1] == float("inf")

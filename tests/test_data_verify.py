"""The shipped simulated datasets regenerate bit for bit from their generators (what `lagnet data verify` checks)."""

from lagnet.cli import main


def test_shipped_simulations_regenerate_bit_for_bit(capsys):
    assert main(["data", "verify"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 6 and all(line.startswith("same") for line in lines), lines

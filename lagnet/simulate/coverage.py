"""Where a dataset's states lie: per-coordinate ranges and the share of samples near a rig's equilibria.

A model learns the dynamics where its data is: a controller that balances a cart-pole upright needs recordings
with slow states near upright, which a recording of a swinging pole may barely have. `coverage` says how many
samples lie within given radii of the angle coordinates' equilibria (hanging θ = 0, upright θ = π), all of them
and the slow ones, beside each coordinate's and velocity's percentiles.
"""

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..data.angles import wrap
from ..data.loader import load_trajectories, read_table
from ..data.trajectory import Trajectory

# The equilibria of a chain of pendulums in lagnet's convention: every angle hanging (0) or upright (π).
EQUILIBRIA = {"hanging": 0.0, "upright": np.pi}
RADII = (0.1, 0.3, 0.5)
PERCENTILES = (0, 1, 50, 99, 100)


def load_recording(path: str | os.PathLike) -> list[Trajectory]:
    """The trajectories of a recording that carries its column mapping in its metadata (`lagnet data
    generate`'s NPZ files); float64."""
    _, meta = read_table(str(path))
    mapping = meta.get("mapping")
    if not mapping:
        raise ValueError(
            f"{path}: no column mapping in its metadata (meta['mapping']); coverage reads recordings written by "
            "`lagnet data generate` (NPZ with metadata)"
        )
    return load_trajectories(path, mapping, dtype="float64")


def coverage(
    trajectories: Sequence[Trajectory],
    *,
    radii: Sequence[float] = RADII,
    slow_rate: float = 1.0,
    slow_speed: float = 0.2,
) -> dict[str, Any]:
    """The coverage of the states of `trajectories` (together).

    A sample is within r of an equilibrium θ* when every angle coordinate has |wrap(θ − θ*)| < r; it is slow when
    every angle's rate is below `slow_rate` (rad/s) and every other velocity below `slow_speed` (m/s).

    Returns {"samples": N, "coordinates": {name: {"p0", "p1", "p50", "p99", "p100"}}, "velocities": {...},
    "equilibria": {"upright" | "hanging": {str(r): {"all": share, "slow": share}}}} (shares in [0, 1]; no
    "equilibria" entries without angle coordinates).
    """
    if not trajectories:
        raise ValueError("coverage: no trajectories")
    q = np.concatenate([t.q for t in trajectories])
    qd = np.concatenate([t.qd for t in trajectories])
    angles = np.asarray(trajectories[0].angles, bool)
    names = trajectories[0].coordinate_names
    out: dict[str, Any] = {"samples": int(q.shape[0]), "coordinates": {}, "velocities": {}}
    for i, name in enumerate(names):
        values = wrap(q[:, i]) if angles[i] else q[:, i]
        out["coordinates"][name] = _percentiles(values)
        out["velocities"][name] = _percentiles(qd[:, i])
    out["equilibria"] = {}
    if not angles.any():
        return out
    limits = np.where(angles, slow_rate, slow_speed)
    slow = np.all(np.abs(qd) < limits, axis=1)
    for label, centre in EQUILIBRIA.items():
        distance = np.max(np.abs(wrap(q[:, angles] - centre)), axis=1)
        out["equilibria"][label] = {
            f"{r:g}": {
                "all": float(np.mean(distance < r)),
                "slow": float(np.mean((distance < r) & slow)),
            }
            for r in radii
        }
    return out


def _percentiles(values: np.ndarray) -> dict[str, float]:
    return {
        f"p{p}": float(v)
        for p, v in zip(PERCENTILES, np.percentile(values, PERCENTILES), strict=True)
    }


def coverage_table(result: dict[str, Any], title: str = "") -> str:
    """`coverage`'s result as text: percentiles per coordinate and velocity, then the equilibria's shares."""
    lines = [f"{title} ({result['samples']} samples)" if title else f"{result['samples']} samples"]
    head = "  ".join(f"{p:>9s}" for p in (f"p{p}" for p in PERCENTILES))
    lines.append(f"  {'':14s}{head}")
    for kind in ("coordinates", "velocities"):
        for name, pct in result[kind].items():
            label = name if kind == "coordinates" else f"d{name}/dt"
            lines.append(f"  {label:14s}" + "  ".join(f"{v:9.3f}" for v in pct.values()))
    for label, shares in result["equilibria"].items():
        for r, share in shares.items():
            lines.append(
                f"  within {float(r):.2f} rad of {label:8s}: {100 * share['all']:6.2f} % of samples, "
                f"{100 * share['slow']:6.2f} % slow"
            )
    return "\n".join(lines)


def coverage_figure(
    trajectories: Sequence[Trajectory], path: str | os.PathLike, title: str = ""
) -> Path:
    """A PNG: a histogram per coordinate and velocity, and each angle's phase portrait (wrapped θ, θ̇)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    q = np.concatenate([t.q for t in trajectories])
    qd = np.concatenate([t.qd for t in trajectories])
    angles = np.asarray(trajectories[0].angles, bool)
    names = trajectories[0].coordinate_names
    n = q.shape[1]
    cols = 2 + int(angles.any())
    fig, axes = plt.subplots(n, cols, figsize=(4 * cols, 2.6 * n), squeeze=False)
    for i, name in enumerate(names):
        values = wrap(q[:, i]) if angles[i] else q[:, i]
        axes[i, 0].hist(values, bins=80, color="C0")
        axes[i, 0].set_xlabel(name + (" (wrapped)" if angles[i] else ""))
        axes[i, 1].hist(qd[:, i], bins=80, color="C1")
        axes[i, 1].set_xlabel(f"d{name}/dt")
        if cols == 3:
            ax = axes[i, 2]
            if angles[i]:
                ax.hist2d(wrap(q[:, i], 0.0), qd[:, i], bins=80, cmap="viridis", cmin=1)
                ax.axvline(np.pi, color="r", lw=0.8)
                ax.set_xlabel(f"{name} in [0, 2π) (red: upright)")
                ax.set_ylabel(f"d{name}/dt")
            else:
                ax.axis("off")
    fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path

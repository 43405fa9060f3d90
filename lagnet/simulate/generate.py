"""The generators of the simulated datasets by name (`lagnet data generate NAME`), and the way back from a
recording's metadata to the rig that wrote it."""

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..data.formats.npz_file import write_npz
from ..systems.base import AbstractDynamics
from .rigs import AbstractRig, arm, cartpole, cartpole_control, pendulum, potential


@dataclasses.dataclass(frozen=True)
class Generator:
    """A named generator: `recordings` maps each output file stem to its recording tag and duration (s);
    `shipped`: its recordings are in `data/sim` (what `lagnet data verify` and `generate all` cover)."""

    name: str
    make: Callable[[int, str, float], tuple[dict[str, np.ndarray], dict[str, Any]]]
    recordings: dict[str, tuple[str, float]]
    mapping: dict[str, Any]
    seed: int
    description: str
    shipped: bool = True


def _cartpole(seed, recording, duration):
    return cartpole.CartPoleRig().record(duration, seed=seed, recording=recording)


def _cartpole_control(seed, recording, duration):
    return cartpole_control.CartPoleControlRig().record(duration, seed=seed, recording=recording)


def _pendulum(seed, recording, duration):
    return pendulum.PendulumRig().record(duration, seed=seed, recording=recording)


def _iiwa(seed, recording, duration):
    return arm.ArmRig().record(duration, seed=seed, recording=recording)


def _potential(seed, recording, duration):
    return potential.PotentialPairs().record(seed=seed, recording=recording)


GENERATORS: dict[str, Generator] = {
    g.name: g
    for g in (
        Generator(
            "cartpole",
            _cartpole,
            {"cartpole_train": ("train", 480.0), "cartpole_test": ("test", 120.0)},
            cartpole.MAPPING,
            2020,
            cartpole.__doc__.splitlines()[0],
        ),
        Generator(
            "cartpole_control",
            _cartpole_control,
            {"cartpole_control_train": ("train", 480.0), "cartpole_control_test": ("test", 120.0)},
            cartpole_control.MAPPING,
            2021,
            cartpole_control.__doc__.splitlines()[0],
            shipped=False,
        ),
        Generator(
            "pendulum",
            _pendulum,
            {"pendulum_train": ("train", 180.0), "pendulum_test": ("test", 60.0)},
            pendulum.MAPPING,
            1,
            pendulum.__doc__.splitlines()[0],
        ),
        Generator(
            "pendulum_potential",
            _potential,
            {
                "pendulum_potential_train": ("train", 0.1),
                "pendulum_potential_test": ("test", 0.1),
            },
            potential.MAPPING,
            0,
            potential.__doc__.splitlines()[0],
        ),
        Generator(
            "iiwa",
            _iiwa,
            {"iiwa_train": ("train", 60.0), "iiwa_test": ("test", 30.0)},
            arm.MAPPING,
            14,
            arm.__doc__.splitlines()[0],
            shipped=False,
        ),
    )
}
SHIPPED = [name for name, g in GENERATORS.items() if g.shipped]


def output_paths(name: str, out: str | os.PathLike) -> list[Path]:
    """The files generator `name` writes into `out`."""
    if name not in GENERATORS:
        raise ValueError(
            f"unknown generator {name!r}; choose from {', '.join(GENERATORS)} or 'all'"
        )
    return [Path(out) / f"{stem}.npz" for stem in GENERATORS[name].recordings]


def check_overwrite(paths: list[Path], overwrite: bool) -> None:
    """Refuse to replace existing recordings (the shipped data sets among them) unless told to."""
    existing = [str(p) for p in paths if p.exists()]
    if existing and not overwrite:
        raise ValueError(
            f"{', '.join(existing)} already exist(s): pass --overwrite to replace them, or --out another folder"
        )


def generate(
    name: str,
    out: str | os.PathLike,
    *,
    seed: int | None = None,
    duration: float | None = None,
    overwrite: bool = False,
) -> list[Path]:
    """Write the recordings of generator `name` into `out` (default seed: the shipped one); returns the paths.

    `duration` overrides every recording's length (for quick checks; the shipped files use the defaults).
    Existing files are a ValueError unless `overwrite`.
    """
    if duration is not None and not duration > 0:
        raise ValueError(f"--duration must be > 0 s, got {duration!r}")
    check_overwrite(output_paths(name, out), overwrite)
    gen = GENERATORS[name]
    seed = gen.seed if seed is None else int(seed)
    paths = []
    for stem, (recording, length) in gen.recordings.items():
        try:
            cols, meta = gen.make(seed, recording, length if duration is None else float(duration))
        except IndexError:
            if duration is None:
                raise
            # A rig records two samples at least (a velocity is a difference).
            raise ValueError(
                f"--duration {duration:g} s is too short to record {name} ({recording}): give a longer "
                "one (0.05 s records every shipped rig)"
            ) from None
        meta["command"] = f"lagnet data generate {name} --seed {seed}" + (
            f" --duration {duration:g}" if duration is not None else ""
        )
        path = Path(out) / f"{stem}.npz"
        # Written beside it, then renamed: an interrupted run never leaves a half-written data set.
        tmp = path.with_name(f".tmp-{path.name}")
        try:
            write_npz(tmp, cols, meta)
            os.replace(tmp, path)
        finally:
            if tmp.exists():
                tmp.unlink()
        paths.append(path)
    return paths


# Every rig class by the name its recordings carry in `meta["generator"]` (and by its class path today).
_RIGS = {
    name: rig
    for rig in (
        cartpole.CartPoleRig,
        cartpole_control.CartPoleControlRig,
        pendulum.PendulumRig,
        potential.PotentialPairs,
        arm.ArmRig,
    )
    for name in (rig.GENERATOR, f"{rig.__module__}.{rig.__qualname__}")
}


def rig_from_meta(meta: dict[str, Any], *, strict: bool = False) -> Any | None:
    """The rig that wrote a recording, rebuilt from its metadata (`meta["generator"]`, `meta["params"]`).

    None for measured data or an unknown generator. Parameters the rig no longer has are left out, unless
    `strict`: then any difference between the recorded parameters and the rig's fields raises a ValueError.
    """
    rig = _RIGS.get(meta.get("generator", ""))
    if rig is None:
        return None
    fields = {f.name for f in dataclasses.fields(rig)}
    recorded = meta.get("params", {})
    if strict and set(recorded) != fields:
        raise ValueError(
            f"{meta['generator']}: the recording's parameters differ from the rig's: "
            f"{sorted(set(recorded) ^ fields)}"
        )
    # JSON has no tuples: the ranges (move_time, ...) come back as lists.
    params = {k: tuple(v) if isinstance(v, list) else v for k, v in recorded.items() if k in fields}
    return rig(**params)


def true_plant(meta: dict[str, Any]) -> AbstractDynamics | None:
    """The true plant of the rig that wrote a recording (`meta`: its metadata, `Trajectory.meta`).

    None for measured data, an unknown generator, or a generator without a plant (the exact potential pairs).
    """
    rig = rig_from_meta(meta)
    return rig.plant() if isinstance(rig, AbstractRig) else None

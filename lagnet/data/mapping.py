"""Which columns of a file are time, positions, velocities and inputs.

In a YAML config (every key but `positions` optional):

    mapping:
      time: t                    # column of time stamps; or omit it and give `dt: 0.02`
      positions: [x, phi]        # one column per coordinate, in the system's order (or one 2-D NPZ array)
      velocities: [x_dot, phi_dot]   # columns, or "central" / "backward": finite differences of positions
      inputs: [force]            # [] or omitted: unforced (zeros for each of the system's inputs)
      episode: null              # a column of episode ids: rows with equal id are separate trajectories
      units: {x: mm, phi: deg}   # per column; converted to SI, checked against the system's coordinates
      unwrap: true               # unwrap angle coordinates (data may arrive wrapped to [-π, π) or [0, 2π))
      resample: null             # a step in s: resample onto a uniform grid (else keep the measured dt)
"""

import dataclasses
from collections.abc import Mapping
from typing import Any

DERIVE = ("central", "backward")
_KEYS = (
    "time",
    "dt",
    "positions",
    "velocities",
    "inputs",
    "episode",
    "units",
    "unwrap",
    "resample",
)


def _names(value: Any, key: str, where: str) -> tuple[str, ...] | str:
    """`value` as a column name or a tuple of names; a `ValueError` naming `where.key` if it is neither."""
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ValueError(f"{where}.{key} must be a column name or a list of names, got {value!r}")


@dataclasses.dataclass(frozen=True)
class ColumnMapping:
    """From file columns to a `Trajectory`; see the module docstring for the YAML form.

    `positions` (and `velocities`, `inputs`) are a tuple of column names, one per coordinate, or a single name of a
    2-D NPZ array with one column per coordinate. `velocities` may instead be "central" (second-order differences
    on the measured, possibly non-uniform, time grid) or "backward" ((p_k − p_{k−1}) / (t_k − t_{k−1}), what a
    rig computes online; the first row uses the forward difference).
    """

    positions: tuple[str, ...] | str
    velocities: tuple[str, ...] | str = "central"
    time: str | None = "t"
    dt: float | None = None
    inputs: tuple[str, ...] | str = ()
    episode: str | None = None
    units: Mapping[str, str] = dataclasses.field(default_factory=dict)
    unwrap: bool = True
    resample: float | None = None

    def __post_init__(self) -> None:
        if self.time is None and self.dt is None:
            raise ValueError("ColumnMapping needs a time column (`time`) or a fixed step (`dt`)")
        if self.time is not None and self.dt is not None:
            raise ValueError(
                f"ColumnMapping takes a time column or a fixed step, not both "
                f"(time={self.time!r}, dt={self.dt!r})"
            )
        if self.dt is not None and not self.dt > 0:
            raise ValueError(f"ColumnMapping.dt must be > 0, got {self.dt!r}")
        if self.resample is not None and not self.resample > 0:
            raise ValueError(
                f"ColumnMapping.resample must be > 0 (a step in s), got {self.resample!r}"
            )
        if self.derive_velocities:
            return
        if isinstance(self.velocities, str) and isinstance(self.positions, tuple):
            raise ValueError(
                f"ColumnMapping.velocities must be columns (one per position) or one of {DERIVE}, "
                f"got {self.velocities!r}"
            )

    @property
    def derive_velocities(self) -> bool:
        """Whether velocities are derived from positions (`velocities` is "central" or "backward")."""
        return isinstance(self.velocities, str) and self.velocities in DERIVE

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "mapping") -> "ColumnMapping":
        """From a config dict; `where` names it in errors (e.g. "configs/cartpole.yaml: data.mapping")."""
        if not isinstance(d, Mapping):
            raise ValueError(f"{where} must be a mapping of keys {_KEYS}, got {type(d).__name__}")
        unknown = sorted(set(d) - set(_KEYS))
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {unknown}; expected some of {list(_KEYS)}")
        if "positions" not in d:
            raise ValueError(f"{where}.positions is required (the columns of q)")
        kwargs: dict[str, Any] = {"positions": _names(d["positions"], "positions", where)}
        if "velocities" in d:
            kwargs["velocities"] = _names(d["velocities"], "velocities", where)
        if "inputs" in d and d["inputs"] is not None:
            kwargs["inputs"] = _names(d["inputs"], "inputs", where)
        for key in ("time", "episode"):
            if key in d:
                if d[key] is not None and not isinstance(d[key], str):
                    raise ValueError(f"{where}.{key} must be a column name, got {d[key]!r}")
                kwargs[key] = d[key]
        if d.get("dt") is not None:
            kwargs["dt"] = float(d["dt"])
            kwargs.setdefault("time", None)
        if "units" in d:
            units = d["units"] or {}
            if not isinstance(units, Mapping) or not all(
                isinstance(v, str) for v in units.values()
            ):
                raise ValueError(
                    f"{where}.units must map column names to unit strings, got {units!r}"
                )
            kwargs["units"] = dict(units)
        if "unwrap" in d:
            kwargs["unwrap"] = bool(d["unwrap"])
        if d.get("resample") is not None:
            kwargs["resample"] = float(d["resample"])
        try:
            return cls(**kwargs)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None

    def to_dict(self) -> dict[str, Any]:
        """The YAML form (round-trips through `from_dict`)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else (dict(v) if f.name == "units" else v)
        return out

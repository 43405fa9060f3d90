"""Which columns of a file are time, positions, velocities and inputs, and the convention they were recorded in.

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
      sign: {phi: -1, force: -1} # per coordinate or input: recorded in the opposite direction
      offsets: {phi: pi}         # per coordinate: the recorded value where the system's coordinate is 0
      relative: {q2: q1}         # q2 is recorded absolute; the system's q2 is relative to q1: q2 − q1
      absolute: {q2: q1}         # q2 is recorded relative to q1; the system's q2 is absolute: q2 + q1

Conventions (`sign`, `offsets`, `relative`, `absolute`) convert data recorded in another convention into the
system's, without editing the files: a pendulum recorded with θ = π hanging down (`offsets: {theta: pi}`; a
lagnet pendulum hangs at 0), a double pendulum recorded with absolute link angles (`relative: {q2: q1}`;
`DoublePendulum`'s q2 is relative to link 1), an axis that points the other way (`sign: {x: -1}`).

Their keys (and the values of `relative` / `absolute`) name *coordinates*, by the system's coordinate names
(`DoublePendulum`: q1, q2; `CartPole`: x, phi), not the file's columns: a convention belongs to a coordinate and
covers both its position and velocity column (or a column of a 2-D NPZ array). Without a system the coordinates
are named by their position columns. `units` instead name columns, because each column (a position, a velocity)
carries its own unit. `sign` may also name an input (by the system's input names, else the input columns):
inputs are separate from coordinates, so a joint whose direction is flipped needs its torque flipped as well,
`sign: {q1: -1, tau1: -1}`; no other convention touches inputs (a joint motor's torque is the same whether its
angle is recorded absolute or relative).

The order of operations (`lagnet.data.loader`; steps 2–6 per episode):

1. units → SI (the time, positions, velocities and inputs columns);
2. angle coordinates unwrapped (`unwrap: true`), each recorded angle on its own;
3. per coordinate, q ← sign · (recorded − offset): `offsets` are in SI (rad, m) and in the recorded direction
   ("the reading where the system's coordinate is 0"); velocities q̇ ← sign · recorded; inputs u ← sign · u;
4. `absolute` and `relative`, from the results of step 3: with A the absolute angle of each coordinate (its value
   from step 3, or for q in `absolute: {q: p}` that value plus A(p), so chains accumulate),
   `relative: {q: p}` gives q ← q − A(p) and `absolute: {q: p}` gives q ← A(q); the same linear map for velocities;
5. velocities derived from the converted positions where `velocities` is "central" or "backward" (so they follow
   every conversion);
6. resampled (`resample`).

Unwrapping comes before the conversions: a wrapped recording is made continuous where it was wrapped, and
subtracting a constant or another continuous angle keeps it continuous (an offset of π on data wrapped to
[−π, π) gives continuous angles). As with plain unwrapping, the first sample keeps its value: from wrapped data
the converted angles equal the true ones modulo 2π.

An offset is a number (SI: rad or m), a multiple of π ("pi", "-pi", "pi/2", "-pi/2", "2pi", "3*pi/4", "π") or a
number with a unit ("180 deg", "-5 mm"); a sign is 1 or -1.
"""

import dataclasses
import math
import re
from collections.abc import Mapping
from typing import Any

from .._errors import DataError
from .units import UNITS

DERIVE = ("central", "backward")
CONVENTIONS = ("sign", "offsets", "relative", "absolute")
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
    *CONVENTIONS,
)

_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
# k·pi forms: "pi", "-pi", "2pi", "2*pi", "pi/2", "-3*pi/4", "0.5 pi", "π".
_PI = re.compile(rf"^([+-]?)\s*({_NUMBER})?\s*\*?\s*(?:pi|π)\s*(?:/\s*({_NUMBER}))?$")
_WITH_UNIT = re.compile(rf"^([+-]?{_NUMBER})\s*(\S+)$")


def parse_offset(value: Any, where: str) -> float:
    """An offset in SI from a number, a multiple of π ("pi", "-pi/2", "2pi", "3*pi/4") or a number with an angle
    or length unit ("180 deg"); a `ValueError` naming `where` otherwise."""
    return offset_and_kind(value, where)[0]


def offset_and_kind(value: Any, where: str) -> tuple[float, str | None]:
    """`parse_offset`'s value, and the kind it states: "angle" for a multiple of π or an angle unit, "length" for
    a length unit, None for a plain number."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        if math.isfinite(value):
            return float(value), None
    elif isinstance(value, str):
        text = value.strip()
        m = _PI.match(text)
        if m:
            sign, k, d = m.groups()
            den = float(d) if d else 1.0
            x = (float(k) if k else 1.0) * math.pi / den if den else math.inf
            if math.isfinite(x):
                return (-x if sign == "-" else x), "angle"
        try:
            x = float(text)
        except ValueError:
            m = _WITH_UNIT.match(text)
            unit = UNITS.get(m.group(2)) if m else None
            if unit is not None and unit[0] in ("angle", "length"):
                x = float(m.group(1)) * unit[1]
                if math.isfinite(x):
                    return x, unit[0]
        else:
            if math.isfinite(x):
                return x, None
    raise DataError(
        f"{where} must be a number (in SI: rad or m), a multiple of pi ('pi', '-pi', 'pi/2', '-pi/2', '2pi', "
        f"'3*pi/4') or a number with an angle or length unit ('180 deg'), got {value!r}"
    )


def _check_conventions(
    sign: Any, offsets: Any, relative: Any, absolute: Any, where: str
) -> tuple[dict, dict, dict, dict]:
    """The four conventions as dicts, checked for what needs no system: each maps names (strings) to ±1, an
    offset, or another name; no coordinate refers to itself, none is both `relative` and `absolute`, and the
    `absolute` references form no cycle. Errors name `where.key.name`."""
    out = []
    for key, value in zip(CONVENTIONS, (sign, offsets, relative, absolute), strict=True):
        value = {} if value is None else value
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise DataError(f"{where}.{key} must map coordinate names to values, got {value!r}")
        out.append(dict(value))
    sign, offsets, relative, absolute = out
    for name, s in sign.items():
        if isinstance(s, bool) or not isinstance(s, int | float) or s not in (1, -1):
            raise DataError(f"{where}.sign.{name} must be 1 or -1, got {s!r}")
    for name, value in offsets.items():
        parse_offset(value, f"{where}.offsets.{name}")
    for key, refs in (("relative", relative), ("absolute", absolute)):
        for name, ref in refs.items():
            if not isinstance(ref, str):
                raise DataError(
                    f"{where}.{key}.{name} must name a coordinate ({name} {key} to which one?), "
                    f"got {ref!r}"
                )
            if ref == name:
                raise DataError(f"{where}.{key}.{name}: a coordinate cannot be {key} to itself")
    both = sorted(set(relative) & set(absolute))
    if both:
        raise DataError(
            f"{where}: coordinate(s) {both} are in both relative and absolute (each is recorded one way)"
        )
    for name in absolute:
        chain = [name]
        while chain[-1] in absolute:
            chain.append(absolute[chain[-1]])
            if chain[-1] in chain[:-1]:
                raise DataError(
                    f"{where}.absolute.{name}: the references form a cycle {' → '.join(chain)}"
                )
    return sign, offsets, relative, absolute


def _seconds(value: Any, key: str, where: str) -> float:
    """`value` as a finite number of seconds; a `ValueError` naming `where.key` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DataError(f"{where}.{key} must be a finite number (a step in s), got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise DataError(f"{where}.{key} must be a finite number (a step in s), got {value!r}")
    return float(value)


def _names(value: Any, key: str, where: str) -> tuple[str, ...] | str:
    """`value` as a column name or a tuple of names; a `ValueError` naming `where.key` if it is neither."""
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise DataError(f"{where}.{key} must be a column name or a list of names, got {value!r}")


@dataclasses.dataclass(frozen=True)
class ColumnMapping:
    """From file columns to a `Trajectory`; see the module docstring for the YAML form.

    `positions` (and `velocities`, `inputs`) are a tuple of column names, one per coordinate, or a single name of a
    2-D NPZ array with one column per coordinate. `velocities` may instead be "central" (second-order differences
    on the measured, possibly non-uniform, time grid) or "backward" ((p_k − p_{k−1}) / (t_k − t_{k−1}), what a
    rig computes online; the first row uses the forward difference).

    `sign`, `offsets`, `relative` and `absolute` convert a recording in another convention into the system's
    (by coordinate name; `sign` also by input name): see the module docstring for their meaning and order.
    `offsets` keeps the values as given ("pi"); `offset_values` has them in SI.
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
    sign: Mapping[str, int | float] = dataclasses.field(default_factory=dict)
    offsets: Mapping[str, int | float | str] = dataclasses.field(default_factory=dict)
    relative: Mapping[str, str] = dataclasses.field(default_factory=dict)
    absolute: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_conventions(self.sign, self.offsets, self.relative, self.absolute, "ColumnMapping")
        if self.time is None and self.dt is None:
            raise DataError("ColumnMapping needs a time column (`time`) or a fixed step (`dt`)")
        if self.time is not None and self.dt is not None:
            raise DataError(
                f"ColumnMapping takes a time column or a fixed step, not both "
                f"(time={self.time!r}, dt={self.dt!r})"
            )
        if self.dt is not None and not self.dt > 0:
            raise DataError(f"ColumnMapping.dt must be > 0, got {self.dt!r}")
        if self.resample is not None and not self.resample > 0:
            raise DataError(
                f"ColumnMapping.resample must be > 0 (a step in s), got {self.resample!r}"
            )
        if self.derive_velocities:
            return
        if isinstance(self.velocities, str) and isinstance(self.positions, tuple):
            raise DataError(
                f"ColumnMapping.velocities must be columns (one per position) or one of {DERIVE}, "
                f"got {self.velocities!r}"
            )

    def roles(self) -> dict[str, list[str]]:
        """Each mapped column and what it is mapped to, e.g. {"x": ["positions[0]"], "t": ["time"]}."""
        roles: dict[str, list[str]] = {}
        for key in ("time", "positions", "velocities", "inputs", "episode"):
            value = getattr(self, key)
            if value is None or (key == "velocities" and self.derive_velocities):
                continue
            for i, name in enumerate((value,) if isinstance(value, str) else value):
                roles.setdefault(name, []).append(key if isinstance(value, str) else f"{key}[{i}]")
        return roles

    @property
    def offset_values(self) -> dict[str, float]:
        """`offsets` in SI (rad or m), by coordinate name: "pi" → π, "180 deg" → π."""
        return {k: parse_offset(v, f"ColumnMapping.offsets.{k}") for k, v in self.offsets.items()}

    @property
    def converts(self) -> bool:
        """Whether any convention (`sign`, `offsets`, `relative`, `absolute`) is given."""
        return any(getattr(self, key) for key in CONVENTIONS)

    @property
    def derive_velocities(self) -> bool:
        """Whether velocities are derived from positions (`velocities` is "central" or "backward")."""
        return isinstance(self.velocities, str) and self.velocities in DERIVE

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "mapping") -> "ColumnMapping":
        """From a config dict; `where` names it in errors (e.g. "configs/cartpole.yaml: data.mapping")."""
        if not isinstance(d, Mapping):
            raise DataError(f"{where} must be a mapping of keys {_KEYS}, got {type(d).__name__}")
        unknown = sorted(set(d) - set(_KEYS))
        if unknown:
            raise DataError(f"{where}: unknown key(s) {unknown}; expected some of {list(_KEYS)}")
        if "positions" not in d:
            raise DataError(f"{where}.positions is required (the columns of q)")
        kwargs: dict[str, Any] = {"positions": _names(d["positions"], "positions", where)}
        if "velocities" in d:
            kwargs["velocities"] = _names(d["velocities"], "velocities", where)
        if "inputs" in d and d["inputs"] is not None:
            kwargs["inputs"] = _names(d["inputs"], "inputs", where)
        for key in ("time", "episode"):
            if key in d:
                if d[key] is not None and not isinstance(d[key], str):
                    raise DataError(f"{where}.{key} must be a column name, got {d[key]!r}")
                kwargs[key] = d[key]
        if d.get("dt") is not None:
            kwargs["dt"] = _seconds(d["dt"], "dt", where)
            kwargs.setdefault("time", None)
        if "units" in d:
            units = d["units"] or {}
            if not isinstance(units, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in units.items()
            ):
                raise DataError(
                    f"{where}.units must map column names to unit strings, got {units!r}"
                )
            kwargs["units"] = dict(units)
        if "unwrap" in d:
            if not isinstance(d["unwrap"], bool):
                raise DataError(f"{where}.unwrap must be true or false, got {d['unwrap']!r}")
            kwargs["unwrap"] = d["unwrap"]
        if d.get("resample") is not None:
            kwargs["resample"] = _seconds(d["resample"], "resample", where)
        conventions = _check_conventions(*(d.get(key) for key in CONVENTIONS), where)
        kwargs.update(
            (key, value) for key, value in zip(CONVENTIONS, conventions, strict=True) if value
        )
        try:
            return cls(**kwargs)
        except ValueError as e:
            raise DataError(f"{where}: {e}") from None

    def to_dict(self) -> dict[str, Any]:
        """The YAML form (round-trips through `from_dict`)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = (
                list(v) if isinstance(v, tuple) else (dict(v) if isinstance(v, Mapping) else v)
            )
        return out

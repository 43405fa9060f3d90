"""Load trajectories from CSV (optionally gzipped) and NPZ files through a `ColumnMapping`.

Every problem with a file is a `ValueError` (or `FileNotFoundError`) that names the file, the column and the row:
a missing column, a value that is not a finite number, time that does not increase, a unit or a number of columns
that does not fit the system's coordinates.
"""

import csv
import gzip
import io
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..systems.base import AbstractSystem
from .angles import unwrap
from .mapping import ColumnMapping
from .trajectory import Trajectory
from .units import parse_unit

META_KEY = "meta"


class _Table:
    """Columns of one file, and how to name a row of it in an error."""

    def __init__(self, path: str, columns: dict[str, np.ndarray], meta: dict[str, Any], csv: bool):
        self.path, self.columns, self.meta, self.csv = path, columns, meta, csv

    def row(self, i: int) -> str:
        # CSV rows are also given as the file's line (1-based, the header is line 1), for an editor.
        return f"row {i} (line {i + 2})" if self.csv else f"row {i}"

    def get(self, name: str, role: str) -> np.ndarray:
        if name not in self.columns:
            raise ValueError(
                f"{self.path}: column {name!r} ({role}) not found; "
                f"the file has columns {sorted(self.columns)}"
            )
        return self.columns[name]


def read_table(path: str | os.PathLike) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The columns (name → array) and metadata of a `.csv`, `.csv.gz` or `.npz` file."""
    table = _read(str(path))
    return table.columns, table.meta


def _read(path: str) -> _Table:
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    if path.endswith(".npz"):
        return _read_npz(path)
    if path.endswith(".csv") or path.endswith(".csv.gz"):
        return _read_csv(path)
    raise ValueError(f"{path}: unknown file type; expected .csv, .csv.gz or .npz")


def _read_npz(path: str) -> _Table:
    with np.load(path, allow_pickle=False) as f:
        columns = {k: f[k] for k in f.files if k != META_KEY}
        meta = json.loads(f[META_KEY].item()) if META_KEY in f.files else {}
    for name, arr in columns.items():
        if arr.ndim not in (1, 2):
            raise ValueError(
                f"{path}: array {name!r} has shape {arr.shape}; columns must be 1-D (rows,) "
                f"or 2-D (rows, width)"
            )
    return _Table(path, columns, meta, csv=False)


def _read_csv(path: str) -> _Table:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", newline="") as f:
        text = f.read()
    reader = csv.reader(io.StringIO(text))
    try:
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise ValueError(
                f"{path}: empty file (expected a header row of column names)"
            ) from None
        if len(set(header)) != len(header):
            dup = sorted({h for h in header if header.count(h) > 1})
            raise ValueError(f"{path}: duplicate column name(s) {dup} in the header")
        rows = []
        for i, row in enumerate(reader):
            if not row:
                continue
            if len(row) != len(header):
                raise ValueError(
                    f"{path}: row {len(rows)} (line {i + 2}) has {len(row)} fields, "
                    f"the header has {len(header)}"
                )
            rows.append(row)
    except csv.Error as e:
        # Malformed CSV (a stray carriage return, an unclosed quote): say where, not csv's traceback.
        raise ValueError(f"{path}: line {reader.line_num}: not valid CSV ({e})") from None
    cells = np.array(rows, dtype=object).reshape(len(rows), len(header))
    columns = {}
    for j, name in enumerate(header):
        raw = [c.strip() or "nan" for c in cells[:, j]]
        try:
            columns[name] = np.array(raw, dtype=float)
        except ValueError:
            for i, c in enumerate(raw):
                try:
                    float(c)
                except ValueError:
                    raise ValueError(
                        f"{path}: column {name!r} row {i} (line {i + 2}): "
                        f"cannot read {c!r} as a number"
                    ) from None
    return _Table(path, columns, {}, csv=True)


def _columns(table: _Table, names, role: str, width: int | None, what: str) -> list[np.ndarray]:
    """One (rows,) array per coordinate from a list of 1-D columns or one 2-D array."""
    if isinstance(names, str):
        arr = table.get(names, role)
        arr = arr[:, None] if arr.ndim == 1 else arr
        if width is not None and arr.shape[1] != width:
            raise ValueError(
                f"{table.path}: array {names!r} ({role}) has shape {arr.shape}, "
                f"expected (rows, {width}) for {what}"
            )
        return [arr[:, i] for i in range(arr.shape[1])]
    if width is not None and len(names) != width:
        raise ValueError(
            f"{table.path}: mapping.{role} lists {len(names)} column(s) {list(names)}, "
            f"expected {width} for {what}"
        )
    return [_column(table, name, f"{role}[{i}]") for i, name in enumerate(names)]


def _column(table: _Table, name: str, role: str) -> np.ndarray:
    """The 1-D column `name`, or a `ValueError` naming its `role`."""
    arr = table.get(name, role)
    if arr.ndim != 1:
        raise ValueError(
            f"{table.path}: column {name!r} ({role}) has shape {arr.shape}, expected (rows,)"
        )
    return arr


def _declared_units(table: _Table, mapping: ColumnMapping) -> dict[str, str]:
    """The units of the columns: the file's metadata, overridden by the mapping's."""
    return {**table.meta.get("units", {}), **mapping.units}


def _check_finite(table: _Table, name: str, arr: np.ndarray) -> None:
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.argmax(bad.reshape(bad.shape[0], -1).any(axis=1)))
        raise ValueError(f"{table.path}: column {name!r} {table.row(i)} is {arr[i]} (not finite)")


def _unit_factor(
    table: _Table, mapping: ColumnMapping, name: str, allowed: Sequence[str], what: str
) -> float:
    declared = _declared_units(table, mapping)
    if name not in declared:
        return 1.0
    kind, factor = parse_unit(declared[name], f"{table.path}: column {name!r}")
    if kind not in allowed:
        raise ValueError(
            f"{table.path}: column {name!r} has unit {declared[name]!r} ({kind}) but {what} "
            f"needs {' or '.join(allowed)}"
        )
    return factor


def load_trajectories(
    path: str | os.PathLike,
    mapping: ColumnMapping | Mapping[str, Any],
    *,
    system: AbstractSystem | None = None,
    angles: Sequence[bool] | None = None,
) -> list[Trajectory]:
    """All trajectories (one per episode) in a CSV/NPZ file, mapped by `mapping`.

    Positions, velocities and inputs are checked against `system` (number of columns, units of angle and length
    coordinates) and take its names. Without a system, `angles` (or the declared angle units) says which
    coordinates are angles. Angle coordinates are unwrapped, so files may hold them wrapped to [−π, π) or
    [0, 2π). Velocities are read, or derived from the (unwrapped) positions by finite differences on the
    measured time grid.

    Raises:
        FileNotFoundError: no such file.
        ValueError: naming the file, the column and the row of what is wrong.
    """
    if not isinstance(mapping, ColumnMapping):
        mapping = ColumnMapping.from_dict(mapping)
    path = str(path)
    table = _read(path)

    n = system.n_dof if system is not None else None
    what = (
        f"{type(system).__name__}'s {system.n_dof} coordinate(s) {system.coordinate_names}"
        if system is not None
        else "the coordinates"
    )
    pos = _columns(table, mapping.positions, "positions", n, what)
    n = len(pos)
    pos_names = _column_names(mapping.positions, n)
    if system is not None:
        is_angle = tuple(system.angles)
    elif angles is not None:
        is_angle = tuple(bool(a) for a in angles)
        if len(is_angle) != n:
            raise ValueError(f"{path}: angles has {len(is_angle)} entries for {n} coordinates")
    else:
        units = _declared_units(table, mapping)
        is_angle = tuple(
            isinstance(mapping.positions, tuple)
            and parse_unit(units[c], f"{path}: column {c!r}")[0] == "angle"
            if c in units
            else False
            for c in pos_names
        )
    coord_names = tuple(system.coordinate_names) if system is not None else tuple(pos_names)

    vel = None
    vel_names: list[str] = []
    if not mapping.derive_velocities:
        vel = _columns(table, mapping.velocities, "velocities", n, what)
        vel_names = _column_names(mapping.velocities, n)

    m = system.n_inputs if system is not None else None
    if mapping.inputs:
        in_what = (
            f"{type(system).__name__}'s {system.n_inputs} input(s) {system.input_names}"
            if system is not None
            else "the inputs"
        )
        inp = _columns(table, mapping.inputs, "inputs", m, in_what)
        in_names = _column_names(mapping.inputs, len(inp))
    else:
        inp, in_names = None, []
    input_names = tuple(system.input_names) if system is not None else tuple(in_names)

    t = _column(table, mapping.time, "time") if mapping.time is not None else None
    episode = table.get(mapping.episode, "episode") if mapping.episode is not None else None

    # Every used column: the same number of rows, finite values.
    used = {}
    if t is not None:
        used[mapping.time] = t
    used.update(zip(pos_names, pos, strict=True))
    if vel is not None:
        used.update(zip(vel_names, vel, strict=True))
    if inp is not None:
        used.update(zip(in_names, inp, strict=True))
    if episode is not None:
        used[mapping.episode] = episode
    n_rows = {k: v.shape[0] for k, v in used.items()}
    if len(set(n_rows.values())) > 1:
        raise ValueError(f"{path}: columns have different numbers of rows: {n_rows}")
    rows = next(iter(n_rows.values()))
    for name, arr in used.items():
        _check_finite(table, name, arr)

    # Units: convert to SI, and refuse a length where the system has an angle (and vice versa).
    def kinds(i, rate=False):
        if is_angle[i]:
            return ("angle/time",) if rate else ("angle",)
        return ("length/time", "dimensionless") if rate else ("length", "dimensionless")

    def coord(i):
        return f"coordinate {coord_names[i]!r} ({'an angle' if is_angle[i] else 'not an angle'})"

    if t is not None:
        t = t.astype(float) * _unit_factor(table, mapping, mapping.time, ("time",), "time")
    else:
        t = mapping.dt * np.arange(rows, dtype=float)
    pos = [
        p.astype(float) * _unit_factor(table, mapping, c, kinds(i), coord(i))
        for i, (c, p) in enumerate(zip(pos_names, pos, strict=True))
    ]
    if vel is not None:
        vel = [
            v.astype(float)
            * _unit_factor(table, mapping, c, kinds(i, True), f"the velocity of {coord(i)}")
            for i, (c, v) in enumerate(zip(vel_names, vel, strict=True))
        ]
    if inp is not None:
        inp = [x.astype(float) for x in inp]

    q_all = np.stack(pos, axis=1)
    qd_all = np.stack(vel, axis=1) if vel is not None else None
    u_all = (
        np.stack(inp, axis=1)
        if inp is not None
        else np.zeros((rows, 0 if system is None else system.n_inputs))
    )

    if episode is None:
        groups = [("", np.arange(rows))]
    else:
        ids, first = np.unique(episode, return_index=True)
        groups = [
            (f"episode {ids[j]:g}", np.flatnonzero(episode == ids[j])) for j in np.argsort(first)
        ]

    out = []
    for label, idx in groups:
        source = f"{path} {label}".strip()
        if idx.size < 2:
            raise ValueError(f"{source}: only {idx.size} row(s); a trajectory needs at least 2")
        te = t[idx]
        step = np.diff(te)
        if np.any(step <= 0):
            k = int(np.argmax(step <= 0)) + 1
            name = mapping.time if mapping.time is not None else "dt"
            raise ValueError(
                f"{path}: column {name!r} {table.row(int(idx[k]))}: time {float(te[k])!r} is not after "
                f"the previous row's {float(te[k - 1])!r} (time must increase strictly)"
                + (f" in {label}" if label else "")
            )
        q = q_all[idx].copy()
        if mapping.unwrap:
            for i in range(n):
                if is_angle[i]:
                    q[:, i] = unwrap(q[:, i])
        if qd_all is not None:
            qd = qd_all[idx]
        else:
            qd = finite_difference(q, te, mapping.velocities)
        traj = Trajectory(
            t=te,
            q=q,
            qd=qd,
            u=u_all[idx],
            coordinate_names=coord_names,
            input_names=input_names,
            angles=is_angle,
            source=source,
            meta=table.meta,
        )
        if mapping.resample is not None:
            traj = traj.resample(mapping.resample)
        out.append(traj)
    return out


def load_trajectory(
    path: str | os.PathLike,
    mapping: ColumnMapping | Mapping[str, Any],
    *,
    system: AbstractSystem | None = None,
    angles: Sequence[bool] | None = None,
) -> Trajectory:
    """The one trajectory in a file; see `load_trajectories` (which also reads files of several episodes)."""
    trajs = load_trajectories(path, mapping, system=system, angles=angles)
    if len(trajs) != 1:
        raise ValueError(
            f"{path}: holds {len(trajs)} episodes; use load_trajectories to read them all"
        )
    return trajs[0]


def finite_difference(p: np.ndarray, t: np.ndarray, method: str = "central") -> np.ndarray:
    """Velocities from positions p (N, n) on a possibly non-uniform grid t (N,).

    "central": second order on the non-uniform grid (`np.gradient`), one-sided at the ends.
    "backward": (p_k − p_{k−1}) / (t_k − t_{k−1}), what a rig computes online; row 0 takes row 1's value.
    Angles must be unwrapped first (a jump of 2π is not a velocity).
    """
    if method == "central":
        if p.shape[0] < 2:
            raise ValueError(f"central differences need at least 2 rows, got {p.shape[0]}")
        return np.gradient(p, t, axis=0)
    if method == "backward":
        v = np.diff(p, axis=0) / np.diff(t)[:, None]
        return np.concatenate([v[:1], v], axis=0)
    raise ValueError(f"finite_difference method must be 'central' or 'backward', got {method!r}")


def _column_names(names, width: int) -> list[str]:
    if isinstance(names, str):
        return [names] if width == 1 else [f"{names}[{i}]" for i in range(width)]
    return list(names)

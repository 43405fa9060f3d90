"""Load trajectories from CSV (optionally gzipped) and NPZ files through a `ColumnMapping`.

Every problem with a file is a `ValueError` (or `FileNotFoundError`) that names the file, the column and the row:
a missing column, a value that is not a finite number, time that does not increase, a unit or a number of columns
that does not fit the system's coordinates.
"""

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from jaxtyping import Float, Int, Shaped

from .._errors import DataError
from ..systems.base import AbstractSystem
from .angles import unwrap_into
from .formats import CSVFormat, format_for, reading_progress
from .mapping import ColumnMapping, offset_and_kind
from .table import META_KEY, Table
from .trajectory import Trajectory
from .units import parse_unit

# The names this module had before the formats moved out (`lagnet.data.formats`).
_Table = Table
__all__ = [
    "META_KEY",
    "finite_difference",
    "load_trajectories",
    "load_trajectory",
    "read_table",
    "reading_progress",
]


def read_table(
    path: str | os.PathLike,
) -> tuple[dict[str, Shaped[np.ndarray, "_rows ..."]], dict[str, Any]]:
    """The columns (name → array) and metadata of a data file in a registered format (`lagnet.data.formats`:
    `.csv`, `.csv.gz` or `.npz`)."""
    table = _read(str(path))
    return table.columns, table.meta


def _read(path: str, dtype=None, exact=()) -> _Table:
    """The table of a file; checks that it exists and is in a registered format.

    A CSV file is read into `dtype` (float64 if None) but its columns named in `exact` (time) in float64."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    if os.path.isdir(path):
        raise DataError(f"{path}: is a directory, expected a data file (.csv, .csv.gz or .npz)")
    fmt = format_for(path)
    try:
        if dtype is not None and isinstance(fmt, CSVFormat):
            return fmt.read(path, np.dtype(dtype), exact)
        return fmt.read(path)
    except PermissionError as e:
        raise DataError(f"{path}: cannot be read ({e.strerror})") from None


def _columns(
    table: _Table, names: tuple[str, ...] | str, role: str, width: int | None, what: str
) -> list[Shaped[np.ndarray, " _rows"]]:
    """One (rows,) array per coordinate from a list of 1-D columns or one 2-D array.

    Checks that the columns exist, are 1-D (or the array 2-D), and that there are `width` of them (if not None).
    """
    if isinstance(names, str):
        arr = table.get(names, role)
        arr = arr[:, None] if arr.ndim == 1 else arr
        if width is not None and arr.shape[1] != width:
            raise DataError(
                f"{table.path}: array {names!r} ({role}) has shape {arr.shape}, "
                f"expected (rows, {width}) for {what}"
            )
        return [arr[:, i] for i in range(arr.shape[1])]
    if width is not None and len(names) != width:
        raise DataError(
            f"{table.path}: mapping.{role} lists {len(names)} column(s) {list(names)}, "
            f"expected {width} for {what}"
        )
    return [_column(table, name, f"{role}[{i}]") for i, name in enumerate(names)]


def _column(table: _Table, name: str, role: str) -> Shaped[np.ndarray, " _rows"]:
    """The 1-D column `name`, or a `ValueError` naming its `role`."""
    arr = table.get(name, role)
    if arr.ndim != 1:
        raise DataError(
            f"{table.path}: column {name!r} ({role}) has shape {arr.shape}, expected (rows,)"
        )
    return arr


def _declared_units(table: _Table, mapping: ColumnMapping) -> dict[str, str]:
    """The units of the columns (by their own names): the file's, and the mapping's (`_check_units`)."""
    return {**table.units, **{table.name(c): u for c, u in mapping.units.items()}}


def _check_roles(table: _Table, mapping: ColumnMapping) -> None:
    """Checks that no column is mapped twice: two coordinates, a position and a velocity, or an input, read from
    one column would train on data that cannot be what the system means."""
    roles = {}
    for column, where in mapping.roles().items():
        roles.setdefault(table.name(column), []).extend(where)
    twice = {name: where for name, where in roles.items() if len(where) > 1}
    if twice:
        raise DataError(
            f"{table.path}: the mapping reads a column for more than one role: "
            + "; ".join(f"{name!r} is {' and '.join(where)}" for name, where in twice.items())
        )


def _check_units(table: _Table, mapping: ColumnMapping) -> None:
    """Checks that the mapping's `units` name columns of the file, in units it knows, and agree with the units
    the file declares (NPZ metadata, a CSV header `x [m]`): a contradiction is an error, not an override."""
    for column, unit in mapping.units.items():
        name = table.name(column)
        if name not in table.columns:
            raise DataError(
                f"{table.path}: mapping.units names column {column!r}, which the file does not have; "
                f"the file has columns {sorted(table.columns)}"
            )
        kind, factor = parse_unit(unit, f"{table.path}: column {column!r}")
        declared = table.units.get(name)
        if declared is not None and parse_unit(declared, f"{table.path}: column {name!r}") != (
            kind,
            factor,
        ):
            raise DataError(
                f"{table.path}: mapping.units.{column} is {unit!r}, but the file declares column "
                f"{name!r} in {declared!r}; remove the mapping's unit (or correct the file)"
            )


def _check_finite(table: _Table, name: str, arr: Shaped[np.ndarray, "_rows ..."]) -> None:
    """Checks that every value of column `name` is finite; names the first row that is not."""
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.argmax(bad.reshape(bad.shape[0], -1).any(axis=1)))
        raise DataError(f"{table.path}: column {name!r} {table.row(i)} is {arr[i]} (not finite)")


def _unit_factor(
    table: _Table, mapping: ColumnMapping, name: str, allowed: Sequence[str], what: str
) -> float:
    """The factor to SI of column `name`'s declared unit (1 if none); checks that its kind is one of `allowed`."""
    declared = _declared_units(table, mapping)
    name = table.name(name)
    if name not in declared:
        return 1.0
    kind, factor = parse_unit(declared[name], f"{table.path}: column {name!r}")
    if kind not in allowed:
        raise DataError(
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
    dtype: str | np.dtype = "float32",
    storage: str | np.dtype | None = None,
) -> list[Trajectory]:
    """All trajectories (one per episode) in a CSV/NPZ file, mapped by `mapping`.

    `storage`: the dtype of the trajectories' q, q̇ and u (None: float64; t is float64 either way). `lagnet train`
    passes its precision, so that a large CSV file is read into float32 columns a block at a time and each value
    is held once in float32 (with float64 only one coordinate's column at a time, for unit conversion, unwrapping
    and derivatives, which are computed in float64 and then rounded).

    Positions, velocities and inputs are checked against `system` (number of columns, units of angle and length
    coordinates) and take its names. Without a system, `angles` (or the declared angle units) says which
    coordinates are angles. Angle coordinates are unwrapped, so files may hold them wrapped to [−π, π) or
    [0, 2π). The mapping's conventions (`sign`, `offsets`, `relative`, `absolute`) then convert the unwrapped
    recording into the system's convention. Velocities are read (and converted alike), or derived from the
    converted positions by finite differences on the measured time grid.

    The steps, in the order in which their errors are raised: read the file (`_read`); find the mapped columns
    (`_mapped_columns`); check the mapping's units against the file's (`_check_units`); check the conventions
    against the coordinates (`_convention`); check that the columns have the same number of rows and finite
    values (`_check_rows`); convert to SI units (`_time_seconds`, `_coordinates_si`, `_inputs_array`) and check
    that the values fit `dtype` (`_check_magnitude`: the loss squares them, so |x| ≤ √max, 1.8e19 in float32);
    split into episodes (`_episodes`); check each episode's time and build its trajectory
    (`_episode_trajectory`: unwrap, convert, derive velocities, resample); check that read velocities are the
    rate of the positions (`_check_velocities`).

    Raises:
        FileNotFoundError: no such file.
        ValueError: naming the file, the column and the row of what is wrong.
    """
    if not isinstance(mapping, ColumnMapping):
        mapping = ColumnMapping.from_dict(mapping)
    table = _read(str(path), storage, () if mapping.time is None else (mapping.time,))
    cols = _mapped_columns(table, mapping, system, angles)
    _check_roles(table, mapping)
    _check_units(table, mapping)
    conv = _convention(table, mapping, cols)
    rows = _check_rows(table, mapping, cols)
    t = _time_seconds(table, mapping, cols.time, rows)
    q, qd = _coordinates_si(table, mapping, cols, np.dtype(storage or np.float64))
    u = _inputs_array(cols, rows, system, np.dtype(storage or np.float64))
    # The file's columns are all in q, q̇, u and t now: drop them (on a large file, the largest arrays).
    table.columns = {}
    cols = dataclasses.replace(
        cols, time=None, positions=[], velocities=None if qd is None else [], inputs=None
    )
    _check_magnitude(table, cols.position_columns, q, dtype)
    if qd is not None:
        _check_magnitude(table, cols.velocity_columns, qd, dtype)
    _check_magnitude(table, cols.input_columns, u, dtype)
    if conv is not None:
        u *= conv.input_sign.astype(u.dtype)
    trajs = [
        _episode_trajectory(table, mapping, cols, conv, label, idx, t, q, qd, u)
        for label, idx in _episodes(cols.episode, rows)
    ]
    if cols.velocities is not None:
        # On the measured samples: a coarse `resample` would make any velocity look like another's rate.
        _check_velocities(table, cols, trajs)
    if mapping.resample is not None:
        trajs = [_resampled(traj, mapping.resample) for traj in trajs]
    return trajs


def _resampled(traj: Trajectory, dt: float) -> Trajectory:
    """`traj` on a uniform grid of step `dt` (`mapping.resample`), in its own storage dtype."""
    _check_resample(dt, traj)
    dtype = traj.q.dtype
    traj = traj.resample(dt)
    # Interpolation computes in float64; the trajectory keeps the loader's storage dtype.
    cast = {k: getattr(traj, k).astype(dtype, copy=False) for k in ("q", "qd", "u")}
    return dataclasses.replace(traj, **cast)


# Read velocities are compared with the positions' motion over spans this long (at least one step): long enough
# that the integral of q̇ averages its noise out, short enough that it does not drift.
_VELOCITY_SPAN = 0.1
# The positions' increments over a span must be 1/2 to 2 times, and correlate at least this well with, the
# integral of the read velocities. Every shipped recording gives a ratio within 1 ± 0.01 and a correlation above
# 0.99; a swapped column, a flipped sign, or a unit mixed up (deg vs rad/s, ms vs s) is far outside.
_VELOCITY_RATIO = (0.5, 2.0)
_VELOCITY_CORRELATION = 0.5


# Span differences accumulated at a time by `_velocity_fit`.
_FIT_ROWS = 1 << 16


def _integral(qd: Float[np.ndarray, " k"], t: Float[np.ndarray, " k"]) -> Float[np.ndarray, " k"]:
    """∫ q̇ dt from t_0 at each sample (trapezoidal), in float64, a block of rows at a time."""
    out = np.empty(t.shape[0])
    out[0], carry = 0.0, 0.0
    for a in range(0, t.shape[0] - 1, _FIT_ROWS):
        b = min(t.shape[0] - 1, a + _FIT_ROWS)
        v = np.asarray(qd[a : b + 1], dtype=float)
        inc = 0.5 * (v[1:] + v[:-1]) * np.diff(t[a : b + 1])
        out[a + 1 : b + 1] = np.cumsum(np.concatenate([[carry], inc]))[1:]
        carry = out[b]
    return out


def _velocity_fit(trajs: list[Trajectory], i: int, j: int) -> tuple[float, float] | None:
    """How the increments of q_i over spans of `_VELOCITY_SPAN` follow those of ∫ q̇_j dt (trapezoidal), pooled
    over the episodes: the least-squares ratio Δq ≈ r ∫q̇ and the correlation; None where q_i never moves.

    Accumulated as sums (Σ Δq, Σ Δq², Σ Δq ∫q̇, ...) a block of spans at a time, so a long recording needs one
    float64 column for ∫q̇ (and one for an angle's unwrapped q), not copies of every difference."""
    sums = np.zeros(8)  # n, ΣΔq, ΣI, ΣΔq², ΣI², ΣΔq·I, Σ|Δq|, Σ|I| (I: the integral's increment)
    for traj in trajs:
        integral = _integral(traj.qd[:, j], traj.t)
        span = int(np.clip(round(_VELOCITY_SPAN / np.median(traj.dt)), 1, traj.n_rows - 1))
        # A wrapped recording read with `unwrap: false` jumps by 2π; the loss compares angles modulo 2π too.
        col = traj.q[:, i]
        q = unwrap_into(col, np.empty(col.shape[0])) if traj.angles[i] else col
        for a in range(0, traj.n_rows - span, _FIT_ROWS):
            b = min(traj.n_rows - span, a + _FIT_ROWS)
            dq = np.subtract(q[a + span : b + span], q[a:b], dtype=float)
            di = integral[a + span : b + span] - integral[a:b]
            sums += [
                b - a,
                dq.sum(),
                di.sum(),
                dq @ dq,
                di @ di,
                dq @ di,
                float(np.abs(dq).sum()),
                float(np.abs(di).sum()),
            ]
    n, sdq, sdi, sdq2, sdi2, sdqdi, adq, adi = sums
    if sdq2 == 0:
        return None
    if sdi2 == 0:
        return 0.0, 0.0
    ratio = float(sdqdi / sdi2)
    std_dq = np.sqrt(max(sdq2 / n - (sdq / n) ** 2, 0.0))
    std_di = np.sqrt(max(sdi2 / n - (sdi / n) ** 2, 0.0))
    # A constant rate (a steady drift) leaves only rounding noise to correlate: the ratio alone decides.
    if std_dq <= 1e-6 * adq / n or std_di <= 1e-6 * adi / n:
        return ratio, 1.0
    return ratio, float((sdqdi / n - sdq / n * sdi / n) / (std_dq * std_di))


def _check_velocities(table: _Table, cols: "_Columns", trajs: list[Trajectory]) -> None:
    """Checks that each read velocity column is the rate of its position column: over short spans the position
    moves as the velocity's integral (`_VELOCITY_RATIO`, `_VELOCITY_CORRELATION`).

    This is what catches a mapping whose columns are in the wrong order, a velocity recorded with the other sign,
    or positions and velocities in units that do not match (deg with rad/s, a time column in ms read as s).
    """

    def fits(fit):
        lo, hi = _VELOCITY_RATIO
        return fit is None or (lo <= fit[0] <= hi and fit[1] >= _VELOCITY_CORRELATION)

    n = len(cols.coordinate_names)
    for i in range(n):
        fit = _velocity_fit(trajs, i, i)
        if fits(fit):
            continue
        other = [
            cols.velocity_columns[j]
            for j in range(n)
            if j != i
            and _velocity_fit(trajs, i, j) is not None
            and fits(_velocity_fit(trajs, i, j))
        ]
        hint = (
            f"; velocity column {other[0]!r} fits it: are columns swapped in the mapping?"
            if other
            else "; check the mapping's column order, the sign and the units (deg vs rad/s, ms vs s)"
        )
        raise DataError(
            f"{table.path}: velocity column {cols.velocity_columns[i]!r} is not the rate of position column "
            f"{cols.position_columns[i]!r} (coordinate {cols.coordinate_names[i]!r}): over "
            f"{_VELOCITY_SPAN:g} s spans the position moves {fit[0]:.3g} × the velocity's integral "
            f"(correlation {fit[1]:.2f}; expected 1){hint}, or derive the velocities from the positions "
            f"(velocities: central)"
        )


def _check_magnitude(
    table: _Table, names: list[str], x: Float[np.ndarray, "rows k"], dtype: str | np.dtype
) -> None:
    """Checks that every value (in SI) of the columns `names` squares without overflow in `dtype`.

    The state loss squares errors in the run's precision: a value past √max (1.8e19 in float32) makes it inf,
    and one past max (3.4e38) is inf already when cast. No recording in SI units comes near; a corrupt cell does.
    """
    limit = float(np.sqrt(np.finfo(dtype).max))
    big = np.abs(x) > limit
    if big.any():
        i, j = (int(k[0]) for k in np.nonzero(big))
        raise DataError(
            f"{table.path}: column {names[j]!r} {table.row(i)} is {x[i, j]:g} (in SI units): too large "
            f"for {np.dtype(dtype).name} training, which squares values (|x| <= {limit:.2g}); a corrupt "
            f"cell?"
        )


@dataclasses.dataclass(frozen=True)
class _Columns:
    """The columns that a mapping selects from a file, as read: not yet checked for rows, values or units.

    Each of `positions`, `velocities` and `inputs` is one (rows,) array per coordinate (or input), named by
    `position_columns`, `velocity_columns` and `input_columns`; `velocities` is None where they are derived,
    `inputs` None where the mapping lists none. `coordinate_names`, `input_names` and `angles` are what the
    trajectories take: the system's names, else the columns'.
    """

    time: Shaped[np.ndarray, " _rows"] | None
    positions: list[Shaped[np.ndarray, " _rows"]]
    position_columns: list[str]
    velocities: list[Shaped[np.ndarray, " _rows"]] | None
    velocity_columns: list[str]
    inputs: list[Shaped[np.ndarray, " _rows"]] | None
    input_columns: list[str]
    episode: Shaped[np.ndarray, "_rows ..."] | None
    coordinate_names: tuple[str, ...]
    input_names: tuple[str, ...]
    angles: tuple[bool, ...]


def _mapped_columns(
    table: _Table,
    mapping: ColumnMapping,
    system: AbstractSystem | None,
    angles: Sequence[bool] | None,
) -> _Columns:
    """The mapped columns of `table`, in this order: positions, which of them are angles, velocities, inputs, time,
    episode.

    Checks that every mapped column exists, that time is 1-D, and that positions, velocities and inputs have as
    many columns as the system has coordinates and inputs (without a system: velocities as many as positions).
    """
    what = _coordinates_what(system)
    pos = _columns(
        table, mapping.positions, "positions", None if system is None else system.n_dof, what
    )
    pos_names = _column_names(mapping.positions, len(pos))
    is_angle = _angle_flags(table, mapping, system, angles, pos_names)
    vel, vel_names = _velocity_columns(table, mapping, len(pos), what)
    inp, in_names = _input_columns(table, mapping, system)
    return _Columns(
        time=_column(table, mapping.time, "time") if mapping.time is not None else None,
        positions=pos,
        position_columns=pos_names,
        velocities=vel,
        velocity_columns=vel_names,
        inputs=inp,
        input_columns=in_names,
        episode=_column(table, mapping.episode, "episode") if mapping.episode is not None else None,
        coordinate_names=tuple(system.coordinate_names) if system is not None else tuple(pos_names),
        input_names=tuple(system.input_names) if system is not None else tuple(in_names),
        angles=is_angle,
    )


def _coordinates_what(system: AbstractSystem | None) -> str:
    """The coordinates, as named in an error about the number of position or velocity columns."""
    if system is None:
        return "the coordinates"
    return f"{type(system).__name__}'s {system.n_dof} coordinate(s) {system.coordinate_names}"


def _angle_flags(
    table: _Table,
    mapping: ColumnMapping,
    system: AbstractSystem | None,
    angles: Sequence[bool] | None,
    pos_names: list[str],
) -> tuple[bool, ...]:
    """Which coordinates are angles: the system's, else `angles`, else those of a declared angle unit.

    Checks that `angles` has one entry per coordinate, and that the declared units of the position columns parse
    (only where neither a system nor `angles` is given; a single 2-D array is then never an angle).
    """
    if system is not None:
        return tuple(system.angles)
    if angles is not None:
        is_angle = tuple(bool(a) for a in angles)
        if len(is_angle) != len(pos_names):
            raise DataError(
                f"{table.path}: angles has {len(is_angle)} entries for {len(pos_names)} coordinates"
            )
        return is_angle
    units = _declared_units(table, mapping)
    return tuple(
        isinstance(mapping.positions, tuple)
        and parse_unit(units[table.name(c)], f"{table.path}: column {c!r}")[0] == "angle"
        if table.name(c) in units
        else False
        for c in pos_names
    )


def _velocity_columns(
    table: _Table, mapping: ColumnMapping, n: int, what: str
) -> tuple[list[Shaped[np.ndarray, " _rows"]] | None, list[str]]:
    """The velocity columns and their names, one per coordinate; (None, []) where they are to be derived.

    Checks that they exist and that there are `n` of them.
    """
    if mapping.derive_velocities:
        return None, []
    vel = _columns(table, mapping.velocities, "velocities", n, what)
    return vel, _column_names(mapping.velocities, n)


def _input_columns(
    table: _Table, mapping: ColumnMapping, system: AbstractSystem | None
) -> tuple[list[Shaped[np.ndarray, " _rows"]] | None, list[str]]:
    """The input columns and their names; (None, []) where the mapping lists none.

    Checks that they exist and that there is one per input of `system`.
    """
    if not mapping.inputs:
        return None, []
    if system is None:
        m, in_what = None, "the inputs"
    else:
        m = system.n_inputs
        in_what = f"{type(system).__name__}'s {system.n_inputs} input(s) {system.input_names}"
    inp = _columns(table, mapping.inputs, "inputs", m, in_what)
    return inp, _column_names(mapping.inputs, len(inp))


@dataclasses.dataclass(frozen=True)
class _Convention:
    """The mapping's conventions as arrays: q ← (sign ⊙ (q − offset)) Tᵀ, q̇ ← (sign ⊙ q̇) Tᵀ, u ← input_sign ⊙ u.

    `matrix` T (n, n) holds `relative` and `absolute` (entries 0, ±1: exact in floating point); the identity
    where there are none.
    """

    sign: Float[np.ndarray, " n"]
    offset: Float[np.ndarray, " n"]
    matrix: Float[np.ndarray, "n n"]
    input_sign: Float[np.ndarray, " m"]

    def positions(self, q: Float[np.ndarray, "k n"]) -> Float[np.ndarray, "k n"]:
        """Recorded positions (SI, unwrapped) in the system's convention."""
        return (self.sign * (q - self.offset)) @ self.matrix.T

    def velocities(self, qd: Float[np.ndarray, "k n"]) -> Float[np.ndarray, "k n"]:
        """Recorded velocities (SI) in the system's convention (offsets do not move them)."""
        return (self.sign * qd) @ self.matrix.T


def _convention(table: _Table, mapping: ColumnMapping, cols: _Columns) -> _Convention | None:
    """The mapping's conventions for these coordinates and inputs; None where it gives none.

    Checks that every name is a coordinate (`sign`: or an input), that an offset stated as an angle (a multiple of
    π, an angle unit) is on an angle coordinate and one with a length unit on another, and that `relative` /
    `absolute` pair two angles or two non-angles.
    """
    if not mapping.converts:
        return None
    sign, input_sign = _signs(table, mapping, cols)
    offset = np.zeros(len(cols.coordinate_names))
    for name, value in mapping.offsets.items():
        i = _coordinate(table, cols, name, "offsets")
        offset[i], kind = offset_and_kind(value, f"{table.path}: mapping.offsets.{name}")
        if kind is not None and (kind == "angle") != cols.angles[i]:
            stated = "an angle" if kind == "angle" else "a length"
            raise DataError(
                f"{table.path}: mapping.offsets.{name}: {value!r} is {stated} but coordinate {name!r} is "
                + ("an angle" if cols.angles[i] else "not an angle")
                + ("" if cols.angles[i] else " (without a system, give `angles` or an angle unit)")
            )
    for key in ("relative", "absolute"):
        for name, ref in getattr(mapping, key).items():
            i, j = _coordinate(table, cols, name, key), _coordinate(table, cols, ref, key)
            if cols.angles[i] != cols.angles[j]:
                a, b = (name, ref) if cols.angles[i] else (ref, name)
                raise DataError(
                    f"{table.path}: mapping.{key}.{name}: coordinate {a!r} is an angle but {b!r} is not; "
                    f"{key} coordinates are both angles or both not"
                )
    index = {c: i for i, c in enumerate(cols.coordinate_names)}
    return _Convention(sign, offset, _convention_matrix(mapping, index), input_sign)


def _coordinate(table: _Table, cols: _Columns, name: str, key: str) -> int:
    """The index of coordinate `name`, named in `mapping.key`; a `ValueError` (with the coordinate a column
    name stands for) if there is none."""
    names = cols.coordinate_names
    if name in names:
        return names.index(name)
    raise DataError(
        f"{table.path}: mapping.{key}: unknown coordinate {name!r}; the coordinates are {list(names)}"
        + _column_hint(cols, name)
    )


def _column_hint(cols: _Columns, name: str) -> str:
    """Where `name` is a position or input column but not a coordinate or input: which one it stands for."""
    for columns, names in (
        (cols.position_columns, cols.coordinate_names),
        (cols.input_columns, cols.input_names),
    ):
        if name in columns and len(names) == len(columns):
            return (
                f" (conventions name coordinates and inputs, not columns: column {name!r} is "
                f"{names[columns.index(name)]!r})"
            )
    return ""


def _signs(
    table: _Table, mapping: ColumnMapping, cols: _Columns
) -> tuple[Float[np.ndarray, " n"], Float[np.ndarray, " m"]]:
    """The signs of the coordinates and of the inputs (1 where `mapping.sign` names neither).

    Checks that each name is a coordinate or an input, and not both.
    """
    names, inputs = cols.coordinate_names, cols.input_names
    sign, input_sign = np.ones(len(names)), np.ones(len(inputs))
    for name, s in mapping.sign.items():
        if name in names and name in inputs:
            raise DataError(
                f"{table.path}: mapping.sign.{name}: {name!r} names both a coordinate and an input"
            )
        if name in inputs:
            input_sign[inputs.index(name)] = s
        elif name in names:
            sign[names.index(name)] = s
        else:
            raise DataError(
                f"{table.path}: mapping.sign: unknown coordinate or input {name!r}; the coordinates are "
                f"{list(names)}, the inputs {list(inputs)}" + _column_hint(cols, name)
            )
    return sign, input_sign


def _convention_matrix(mapping: ColumnMapping, index: dict[str, int]) -> Float[np.ndarray, "n n"]:
    """T with (T r)[q] = r[q] − A(p) for `relative: {q: p}`, A(q) for `absolute`, r[q] otherwise, where A is the
    absolute value of each coordinate: r[q], plus A(p) for `absolute: {q: p}` (the mapping has no cycles)."""
    eye = np.eye(len(index))
    rows: dict[str, Float[np.ndarray, " n"]] = {}

    def absolute(name: str) -> Float[np.ndarray, " n"]:
        if name not in rows:
            ref = mapping.absolute.get(name)
            rows[name] = eye[index[name]] + (absolute(ref) if ref is not None else 0.0)
        return rows[name]

    matrix = eye.copy()
    for name, ref in mapping.relative.items():
        matrix[index[name]] = eye[index[name]] - absolute(ref)
    for name in mapping.absolute:
        matrix[index[name]] = absolute(name)
    return matrix


def _check_rows(table: _Table, mapping: ColumnMapping, cols: _Columns) -> int:
    """The number of rows, after checking that every used column has that many and only finite values.

    The columns are checked in the order time, positions, velocities, inputs, episode; the error names the first
    bad one and its first bad row.
    """
    used: dict[str, Shaped[np.ndarray, "_rows ..."]] = {}
    if cols.time is not None:
        used[mapping.time] = cols.time
    used.update(zip(cols.position_columns, cols.positions, strict=True))
    if cols.velocities is not None:
        used.update(zip(cols.velocity_columns, cols.velocities, strict=True))
    if cols.inputs is not None:
        used.update(zip(cols.input_columns, cols.inputs, strict=True))
    if cols.episode is not None:
        used[mapping.episode] = cols.episode
    n_rows = {k: v.shape[0] for k, v in used.items()}
    if len(set(n_rows.values())) > 1:
        raise DataError(f"{table.path}: columns have different numbers of rows: {n_rows}")
    rows = next(iter(n_rows.values()))
    for name, arr in used.items():
        _check_finite(table, name, arr)
    return rows


def _time_seconds(
    table: _Table, mapping: ColumnMapping, t: Shaped[np.ndarray, " rows"] | None, rows: int
) -> Float[np.ndarray, " rows"]:
    """The time column in s, or `mapping.dt` steps from 0 where there is none.

    Checks that the time column's declared unit, if any, is a time.
    """
    if t is None:
        return mapping.dt * np.arange(rows, dtype=float)
    factor = _unit_factor(table, mapping, mapping.time, ("time",), "time")
    # The file's own float64 column in s is used as it is (the table is dropped once it is read).
    if factor == 1.0 and t.dtype == np.float64:
        return t
    return np.multiply(t, factor, dtype=float)


def _coordinates_si(
    table: _Table, mapping: ColumnMapping, cols: _Columns, dtype: np.dtype
) -> tuple[Float[np.ndarray, "rows n"], Float[np.ndarray, "rows n"] | None]:
    """Positions (and velocities, where read) in SI units, as (rows, n) arrays of `dtype` (each column scaled in
    float64, then rounded: one float64 column at a time).

    Checks that each column's declared unit fits its coordinate: an angle (per time) for an angle, a length (per
    time) or dimensionless for any other; positions first, then velocities.
    """

    def stacked(columns, names, rate):
        out = np.empty((columns[0].shape[0], len(columns)), dtype)
        for i, (c, x) in enumerate(zip(names, columns, strict=True)):
            what = _describe(cols, i)
            what = f"the velocity of {what}" if rate else what
            kinds = _allowed_kinds(cols.angles[i], rate=rate)
            # Scaled in float64 a buffer at a time, written rounded to `dtype`: no float64 copy of the column.
            factor = _unit_factor(table, mapping, c, kinds, what)
            np.multiply(x, factor, out=out[:, i], dtype=float, casting="unsafe")
        return out

    q_all = stacked(cols.positions, cols.position_columns, False)
    qd_all = None
    if cols.velocities is not None:
        qd_all = stacked(cols.velocities, cols.velocity_columns, True)
    return q_all, qd_all


def _allowed_kinds(is_angle: bool, rate: bool = False) -> tuple[str, ...]:
    """The unit kinds that a coordinate (`rate`: its velocity) may be declared in."""
    if is_angle:
        return ("angle/time",) if rate else ("angle",)
    return ("length/time", "dimensionless") if rate else ("length", "dimensionless")


def _describe(cols: _Columns, i: int) -> str:
    """Coordinate `i`, as named in an error about its unit."""
    kind = "an angle" if cols.angles[i] else "not an angle"
    return f"coordinate {cols.coordinate_names[i]!r} ({kind})"


def _inputs_array(
    cols: _Columns, rows: int, system: AbstractSystem | None, dtype: np.dtype
) -> Float[np.ndarray, "rows m"]:
    """The inputs as (rows, m) floats of `dtype`; zeros, one column per input of `system` (none without), where
    unmapped."""
    if cols.inputs is None:
        return np.zeros((rows, 0 if system is None else system.n_inputs), dtype)
    out = np.empty((rows, len(cols.inputs)), dtype)
    for i, x in enumerate(cols.inputs):
        out[:, i] = x
    return out


def _episodes(
    episode: Shaped[np.ndarray, "rows ..."] | None, rows: int
) -> list[tuple[str, Int[np.ndarray, " _k"]]]:
    """(label, row indices) of each episode, in the order of their first rows; one unlabelled one without ids."""
    if episode is None:
        return [("", np.arange(rows))]
    ids, first = np.unique(episode, return_index=True)
    return [(f"episode {ids[j]:g}", np.flatnonzero(episode == ids[j])) for j in np.argsort(first)]


def _episode_trajectory(
    table: _Table,
    mapping: ColumnMapping,
    cols: _Columns,
    conv: _Convention | None,
    label: str,
    idx: Int[np.ndarray, " k"],
    t: Float[np.ndarray, " rows"],
    q_all: Float[np.ndarray, "rows n"],
    qd_all: Float[np.ndarray, "rows n"] | None,
    u_all: Float[np.ndarray, "rows m"],
) -> Trajectory:
    """The trajectory of the rows `idx` (episode `label`): angles unwrapped, converted by `conv` (the mapping's
    conventions), velocities read and converted or derived from the converted positions (resampled later, if
    the mapping asks, `_resampled`).

    Checks that the episode has at least 2 rows and that its time increases strictly.
    """
    source = f"{table.path} {label}".strip()
    if idx.size < 2:
        raise DataError(f"{source}: only {idx.size} row(s); a trajectory needs at least 2")
    # An episode of consecutive rows is a view (q_all, qd_all and u_all are the loader's own arrays).
    rows = slice(int(idx[0]), int(idx[-1]) + 1) if idx[-1] - idx[0] + 1 == idx.size else idx
    te = t[rows]
    _check_time_increases(table, mapping, label, idx, te)
    q = q_all[rows]
    derived = None if qd_all is not None or conv is not None else np.empty_like(q)
    for i in range(q.shape[1]):
        turns = mapping.unwrap and cols.angles[i]
        if derived is None:
            if turns:
                unwrap_into(q[:, i], q[:, i])
            continue
        # One coordinate in float64: unwrapped, differentiated, then stored (rounded to q's dtype).
        x = unwrap_into(q[:, i], np.empty(q.shape[0])) if turns else q[:, i].astype(float)
        q[:, i] = x
        derived[:, i] = finite_difference(x[:, None], te, mapping.velocities)[:, 0]
    if conv is not None:
        _convert_rows(q, conv.positions)
    if qd_all is not None:
        qd = qd_all[rows]
        if conv is not None:
            _convert_rows(qd, conv.velocities)
    else:
        qd = derived if derived is not None else _derivatives(q, te, mapping.velocities)
    traj = Trajectory(
        t=te,
        q=q,
        qd=qd,
        u=u_all[rows],
        coordinate_names=cols.coordinate_names,
        input_names=cols.input_names,
        angles=cols.angles,
        source=source,
        meta=table.meta,
    )
    return traj


# Finer than this many times the measured samples, `resample` invents data (and memory runs out long before).
MAX_UPSAMPLING = 100


def _check_resample(dt: float, traj: Trajectory) -> None:
    """`mapping.resample` leaves at least 2 samples of the recording and does not multiply them absurdly."""
    rows = int(np.floor(traj.duration / dt + 1e-9)) + 1 if np.isfinite(traj.duration) else 0
    if rows < 2:
        raise DataError(
            f"mapping.resample = {dt:g} s is longer than the recording {traj.source} ({traj.duration:.6g} s): "
            "it would leave one sample; give a step shorter than the recording"
        )
    if rows > MAX_UPSAMPLING * traj.n_rows:
        raise DataError(
            f"mapping.resample = {dt:g} s would make {rows} samples of the {traj.n_rows} measured in "
            f"{traj.source} (more than {MAX_UPSAMPLING}× finer): give a step near the measured one"
        )


def _check_time_increases(
    table: _Table,
    mapping: ColumnMapping,
    label: str,
    idx: Int[np.ndarray, " k"],
    te: Float[np.ndarray, " k"],
) -> None:
    """Checks that the times `te` of the rows `idx` (episode `label`) increase strictly; names the first row that
    does not."""
    # t_k ≤ t_{k−1} is t_k − t_{k−1} ≤ 0, without a float copy of the column.
    bad = te[1:] <= te[:-1]
    if np.any(bad):
        k = int(np.argmax(bad)) + 1
        name = mapping.time if mapping.time is not None else "dt"
        raise DataError(
            f"{table.path}: column {name!r} {table.row(int(idx[k]))}: time {float(te[k])!r} is not after "
            f"the previous row's {float(te[k - 1])!r} (time must increase strictly)"
            + (f" in {label}" if label else "")
        )


# Rows converted at a time: the float64 copy `_convert_rows` makes stays small.
_CONVERT_ROWS = 65_536


def _convert_rows(x: Float[np.ndarray, "k n"], convert) -> None:
    """x ← convert(x) in place, a block of rows at a time in float64 (a convention mixes coordinates)."""
    for start in range(0, x.shape[0], _CONVERT_ROWS):
        block = x[start : start + _CONVERT_ROWS]
        block[:] = convert(block.astype(float))


def _derivatives(
    q: Float[np.ndarray, "k n"], t: Float[np.ndarray, " k"], method: str
) -> Float[np.ndarray, "k n"]:
    """`finite_difference` of each coordinate of q, one float64 column at a time, in q's dtype."""
    out = np.empty_like(q)
    for i in range(q.shape[1]):
        out[:, i] = finite_difference(q[:, i : i + 1].astype(float), t, method)[:, 0]
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
        raise DataError(
            f"{path}: holds {len(trajs)} episodes; use load_trajectories to read them all"
        )
    return trajs[0]


def finite_difference(
    p: Float[np.ndarray, "rows n"], t: Float[np.ndarray, " rows"], method: str = "central"
) -> Float[np.ndarray, "rows n"]:
    """Velocities from positions p (N, n) on a possibly non-uniform grid t (N,).

    "central": second order on the non-uniform grid (`np.gradient`), one-sided at the ends.
    "backward": (p_k − p_{k−1}) / (t_k − t_{k−1}), what a rig computes online; row 0 takes row 1's value.
    Angles must be unwrapped first (a jump of 2π is not a velocity).
    """
    if method == "central":
        if p.shape[0] < 2:
            raise DataError(f"central differences need at least 2 rows, got {p.shape[0]}")
        return np.gradient(p, t, axis=0)
    if method == "backward":
        v = np.diff(p, axis=0) / np.diff(t)[:, None]
        return np.concatenate([v[:1], v], axis=0)
    raise DataError(f"finite_difference method must be 'central' or 'backward', got {method!r}")


def _column_names(names: tuple[str, ...] | str, width: int) -> list[str]:
    """The names of the `width` coordinates of `names`: the columns, or for a 2-D array its name (width 1) or
    `name[i]`."""
    if isinstance(names, str):
        return [names] if width == 1 else [f"{names}[{i}]" for i in range(width)]
    return list(names)

"""Systems a config names by a source instead of a registered name: the user's Python, a Lagrangian, a robot.

    system: {name: python, source: my_rig.py:build, params: {...}}       # build(**params) -> AbstractSystem
    system: {name: python, source: mypackage.rigs:build}                 # an importable module
    system: {name: lagrangian, source: my_rig.py, coordinates: [q1, q2], angles: [q1, q2], params: {...}}
    system: {name: urdf, source: robot.urdf, params: {armature: [...], actuated: [...]}}
    system: {name: mjcf, source: robot.xml}

Python sources are *run* (imported) when the config is built: name only files you trust. A file path is relative
to the config; `lagnet train` copies the file into the run (`system/`), so the run keeps the code it was trained
with and loads without the original.
"""

import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable

import numpy as np

from ..systems._params import as_param
from ..systems.base import AbstractSystem
from ..systems.lagrangian import Lagrangian
from .errors import ConfigError

LAGRANGIAN_FUNCTIONS = ("kinetic", "potential", "input_matrix")


def split_source(source: str) -> tuple[str, str | None]:
    """ "file.py:function" or "package.module:function" → (location, function); "robot.urdf" → (it, None)."""
    location, sep, attr = source.rpartition(":")
    # A Windows drive ("C:\\...") or a path without a function keeps its colon.
    if not sep or not attr.isidentifier():
        return source, None
    return location, attr


def is_file(location: str) -> bool:
    """Whether a source location names a file (a path or a .py/.urdf/.xml name) rather than a module."""
    return os.sep in location or "/" in location or os.path.splitext(location)[1] != ""


def _module(location: str, key: str):
    """The Python module at `location`: a .py file (imported under a name derived from its path) or a module."""
    if not is_file(location):
        try:
            return importlib.import_module(location)
        except ImportError as e:
            raise ConfigError(f"{key}: cannot import module {location!r}: {e}") from None
    if not os.path.isfile(location):
        raise ConfigError(f"{key}: file not found: {location}")
    name = "lagnet_user_" + hashlib.sha1(os.path.abspath(location).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, location)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        del sys.modules[name]
        raise ConfigError(f"{key}: running {location} failed: {type(e).__name__}: {e}") from e
    return module


def _attribute(module, name: str, key: str, location: str, required: bool = True):
    value = getattr(module, name, None)
    if value is None and required:
        raise ConfigError(f"{key}: {location} defines no {name!r}")
    if value is not None and not callable(value):
        raise ConfigError(f"{key}: {name!r} in {location} is not callable")
    return value


def _checked(system, key: str, what: str) -> AbstractSystem:
    if not isinstance(system, AbstractSystem):
        raise ConfigError(
            f"{key}: {what} returned {type(system).__name__}, expected a lagnet AbstractSystem "
            "(e.g. a lagnet.systems.Lagrangian)"
        )
    return system


def _call(factory: Callable, params: dict, key: str, what: str):
    try:
        return factory(**params)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"system.params: {e} ({what})") from None


def python_system(sc) -> AbstractSystem:
    """`name: python`: `source` = file.py:function or module:function, called with `params`."""
    location, function = split_source(sc.source)
    if function is None:
        raise ConfigError(
            f"system.source: expected file.py:function or module:function, got {sc.source!r}"
        )
    factory = _attribute(_module(location, "system.source"), function, "system.source", location)
    return _checked(
        _call(factory, sc.params, "system.source", sc.source), "system.source", sc.source
    )


def lagrangian_system(sc) -> AbstractSystem:
    """`name: lagrangian`: kinetic(q, qd, params), potential(q, params) [, input_matrix(q, params)] from `source`.

    `params` become arrays the functions receive as a dict (so `model.learn_parameters` can learn them).
    """
    location, _ = split_source(sc.source)
    module = _module(location, "system.source")
    kinetic, potential, input_matrix = (
        _attribute(module, f, "system.source", location, required=f != "input_matrix")
        for f in LAGRANGIAN_FUNCTIONS
    )
    if not sc.coordinates:
        raise ConfigError("system.coordinates: a lagrangian system needs its coordinate names")
    coordinates = tuple(sc.coordinates)
    angles = tuple(sc.angles or ())
    unknown = [a for a in angles if a not in coordinates]
    if unknown:
        raise ConfigError(
            f"system.angles: {unknown} are not among system.coordinates {list(coordinates)}"
        )
    bad = {k: v for k, v in sc.params.items() if isinstance(v, bool | str | dict)}
    if bad:
        raise ConfigError(f"system.params: a lagrangian's parameters must be numbers, got {bad}")
    _check_coordinates_used(location, coordinates, sc.params, kinetic, potential, input_matrix)
    try:
        return Lagrangian(
            kinetic,
            potential,
            len(coordinates),
            input_matrix=input_matrix,
            params={k: as_param(v) for k, v in sc.params.items()},
            coordinate_names=coordinates,
            input_names=None if sc.inputs is None else tuple(sc.inputs),
            angles=tuple(c in angles for c in coordinates),
        )
    except Exception as e:
        raise ConfigError(
            f"system: the Lagrangian in {location} failed: {type(e).__name__}: {e}"
        ) from None


def _check_coordinates_used(
    location: str, coordinates: tuple[str, ...], params: dict, kinetic, potential, input_matrix
) -> None:
    """Checks that the functions index no coordinate beyond `coordinates`.

    JAX clamps an out-of-range index (q[1] of a 1-vector reads q[0]), so a Lagrangian that uses more degrees of
    freedom than `system.coordinates` declares builds and trains, on wrong physics. Called once on numpy
    vectors, which raise `IndexError` instead; any other failure is left to the build, which reports it.
    """
    n = len(coordinates)
    q = np.zeros(n)
    args = {k: np.asarray(v, float) for k, v in params.items()}
    calls = [
        ("kinetic", lambda: kinetic(q, q.copy(), args)),
        ("potential", lambda: potential(q, args)),
    ]
    if input_matrix is not None:
        calls.append(("input_matrix", lambda: input_matrix(q, args)))
    for name, call in calls:
        try:
            call()
        except IndexError as e:
            raise ConfigError(
                f"system.source: {name}(q, ...) in {location} indexes past the {n} coordinate(s) that "
                f"system.coordinates declares {list(coordinates)} ({e}): declare every degree of freedom "
                f"the functions use"
            ) from None
        except Exception:
            pass


def robot_system(kind: str):
    """`name: urdf | mjcf`: a `RigidBodyTree` from the description `source`, options from `params`."""

    def build(sc) -> AbstractSystem:
        from ..systems.robot import RigidBodyTree

        location, _ = split_source(sc.source)
        if not os.path.isfile(location):
            raise ConfigError(f"system.source: file not found: {location}")
        factory = RigidBodyTree.from_urdf if kind == "urdf" else RigidBodyTree.from_mjcf
        try:
            return factory(location, **sc.params)
        except (TypeError, ValueError) as e:
            raise ConfigError(f"system ({kind} {location}): {e}") from None

    return build


# Each builds the system from the validated `system` section.
SOURCED: dict[str, Callable] = {
    "python": python_system,
    "lagrangian": lagrangian_system,
    "urdf": robot_system("urdf"),
    "mjcf": robot_system("mjcf"),
}


def source_file(source: str) -> str | None:
    """The file a source names (to copy into a run), or None for an importable module."""
    location, _ = split_source(source)
    return location if is_file(location) else None

"""Systems a config names by a source instead of a registered name: the user's Python, a Lagrangian, a robot.

    system: {name: python, source: my_rig.py:build, params: {...}}       # build(**params) -> AbstractSystem
    system: {name: python, source: mypackage.rigs:build}                 # an importable module
    system: {name: lagrangian, source: my_rig.py, coordinates: [q1, q2], angles: [q1, q2], params: {...}}
    system: {name: urdf, source: robot.urdf, params: {armature: [...], actuated: [...]}}
    system: {name: mjcf, source: robot.xml}

Python sources are *run* (imported) when the config is built, so they are built only when the user opts in
(`trust_code`, below, and docs/guides/security.md): a config is data until its reader says its code may run. A
file path is relative to the config; `lagnet train` copies the file into the run (`system/`), so the run keeps the
code it was trained with and loads without the original. URDF and MJCF descriptions are data and need no opt-in.
"""

import contextlib
import contextvars
import functools
import hashlib
import importlib
import importlib.machinery
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable

import numpy as np

from ..systems._params import as_param
from ..systems.base import AbstractSystem
from ..systems.lagrangian import Lagrangian
from .errors import ConfigError

LAGRANGIAN_FUNCTIONS = ("kinetic", "potential", "input_matrix")

TRUST_ENV = "LAGNET_TRUST_CODE"
PACKAGES_ENV = "LAGNET_TRUSTED_PACKAGES"
HOW_TO_TRUST = (
    f"pass --trust-code to the lagnet command, set {TRUST_ENV}=1, or call with trust_code=True "
    "(lagnet.load, train_run, load_run) or inside `with lagnet.config.sources.trust_code():`"
)
# Whether the caller opted in to running the code a config names (a context variable: threads and asyncio
# tasks each see their own caller's choice).
_TRUSTED = contextvars.ContextVar("lagnet_trust_code", default=False)
# The run folders (real paths) whose kept code the caller trusts when a config points at them (--trust-run).
_TRUSTED_RUNS: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "lagnet_trusted_runs", default=frozenset()
)
# Inside a run that a config points at (`model.start_from`): (the run, the key naming it), else None.
_RECEIVED: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar(
    "lagnet_received_run", default=None
)
# Modules of Python itself: never a system source, trusted or not (`os:system` would run a shell command).
_STDLIB = frozenset(sys.stdlib_module_names) | {"builtins", "__main__"}


class UntrustedCode(ConfigError):
    """A config names code (a Python file or module) that the user has not allowed lagnet to run."""


def code_trusted() -> bool:
    """Whether code named by a config may run here: inside `trust_code()`, or with LAGNET_TRUST_CODE=1; inside
    a run that a config points at (`received_run`), only if the caller trusts that run (`trust_runs`)."""
    if _RECEIVED.get() is not None:
        return _TRUSTED.get()
    return _TRUSTED.get() or os.environ.get(TRUST_ENV, "").strip().lower() in ("1", "true", "yes")


@contextlib.contextmanager
def trust_runs(paths=()):
    """Within the block, the run folders `paths` may run the code they keep when a config points at them
    (`model.start_from`): `trust_code` covers the files a config names itself, not those of another run."""
    token = _TRUSTED_RUNS.set(_TRUSTED_RUNS.get() | {os.path.realpath(os.fspath(p)) for p in paths})
    try:
        yield
    finally:
        _TRUSTED_RUNS.reset(token)


@contextlib.contextmanager
def received_run(run_dir: str, key: str):
    """Within the block, code runs only if the caller trusts the run `run_dir` (`trust_runs`, --trust-run),
    which the config's `key` names: the opt-in for the config's own files does not extend to it."""
    trusted = os.path.realpath(run_dir) in _TRUSTED_RUNS.get()
    tokens = (_TRUSTED.set(trusted), _RECEIVED.set((run_dir, key)))
    try:
        yield
    finally:
        _RECEIVED.reset(tokens[1])
        _TRUSTED.reset(tokens[0])


@contextlib.contextmanager
def trust_code(trusted: bool = True):
    """Within the block, configs may run the Python files they name (and modules of trusted packages).

    `trust_code(False)` leaves the caller's choice as it was: trust is only ever added by an explicit opt-in.
    """
    token = _TRUSTED.set(_TRUSTED.get() or bool(trusted))
    try:
        yield
    finally:
        _TRUSTED.reset(token)


def trusted_packages() -> tuple[str, ...]:
    """The top-level packages whose modules a config may name as `source` (LAGNET_TRUSTED_PACKAGES, comma-
    separated), once code is trusted."""
    raw = os.environ.get(PACKAGES_ENV, "")
    return tuple(p.strip() for p in raw.split(",") if p.strip())


def accepts_trust_code(function: Callable) -> Callable:
    """`function` with keywords `trust_code: bool = False` and `trust_runs=()` that run it inside
    `trust_code(...)` and `trust_runs(...)`."""

    @functools.wraps(function)
    def trusting(*args, trust_code: bool = False, trust_runs=(), **kwargs):
        with _trust(trust_code), _trust_runs(trust_runs):
            return function(*args, **kwargs)

    signature = inspect.signature(function)
    keywords = [
        inspect.Parameter("trust_code", inspect.Parameter.KEYWORD_ONLY, default=False),
        inspect.Parameter("trust_runs", inspect.Parameter.KEYWORD_ONLY, default=()),
    ]
    parameters = list(signature.parameters.values())
    at = next((i for i, p in enumerate(parameters) if p.kind is p.VAR_KEYWORD), len(parameters))
    trusting.__signature__ = signature.replace(
        parameters=[*parameters[:at], *keywords, *parameters[at:]]
    )
    trusting.__doc__ = (function.__doc__ or "") + (
        "\n\n    `trust_code=True` lets the config's Python system source run; `trust_runs=[RUN, ...]` the "
        "code kept in those runs where the config points at them (`model.start_from`); see "
        "docs/guides/security.md.\n"
    )
    return trusting


_trust = trust_code  # the decorator's keywords shadow the context managers' names
_trust_runs = trust_runs


def _refuse_untrusted(what: str, key: str) -> None:
    if code_trusted():
        return
    received = _RECEIVED.get()
    if received is not None:
        run_dir, via = received
        raise UntrustedCode(
            f"{key}: {via} names the run {run_dir}, and loading it would run {what}, code kept in that run: "
            "--trust-code trusts the files your own config names, not the code of a run it points at. If "
            f"you trust that run, pass --trust-run {run_dir} to the lagnet command (trust_runs=[...] in "
            "Python)"
        )
    raise UntrustedCode(
        f"{key}: building this config would run {what}, and lagnet runs code named by a config only when "
        f"you opt in: if you trust it, {HOW_TO_TRUST}"
    )


def check_module_allowed(location: str, key: str) -> None:
    """A module source: not Python's own, in a package the user listed, and code trusted."""
    top = location.split(".")[0]
    if top in _STDLIB:
        raise UntrustedCode(
            f"{key}: {location!r} is a module of Python's standard library; a system source is your own "
            "file (my_rig.py:build) or a module of a package you list in " + PACKAGES_ENV
        )
    if top not in trusted_packages():
        listed = ", ".join(trusted_packages()) or "none"
        raise UntrustedCode(
            f"{key}: the module {location!r} is not in a package you trust (listed: {listed}): to let "
            f"configs name modules of {top!r}, set {PACKAGES_ENV}={top} (comma-separated) and opt in "
            f"({HOW_TO_TRUST})"
        )
    _refuse_untrusted(f"the module {location!r}", key)


def split_source(source: str) -> tuple[str, str | None]:
    """ "file.py:function" or "package.module:function" → (location, function); "robot.urdf" → (it, None)."""
    location, sep, attr = source.rpartition(":")
    # A Windows drive ("C:\\...") or a path without a function keeps its colon.
    if not sep or not attr.isidentifier():
        return source, None
    return location, attr


# Suffixes that make a dotted name a file ("my_rig.py"), not a module ("mypackage.rigs").
FILE_SUFFIXES = ("py", "urdf", "xml", "mjcf")


def is_file(location: str) -> bool:
    """Whether a source location names a file (a path, or a name ending .py/.urdf/.xml/.mjcf or in no dotted
    identifier) rather than a module."""
    if os.sep in location or "/" in location:
        return True
    parts = location.split(".")
    return not all(p.isidentifier() for p in parts) or parts[-1].lower() in FILE_SUFFIXES


def _failure(e: BaseException) -> str:
    if isinstance(e, SystemExit):
        return f"it called sys.exit({e.code!r})"
    return f"{type(e).__name__}: {e}"


def _module(location: str, key: str):
    """The Python module at `location`: a .py file (imported under a name derived from its path) or a module
    of a trusted package; only with code trusted (`trust_code`)."""
    if not is_file(location):
        check_module_allowed(location, key)
        try:
            return importlib.import_module(location)
        except ImportError as e:
            raise ConfigError(f"{key}: cannot import module {location!r}: {e}") from None
        except (Exception, SystemExit) as e:
            # A module that exits or raises while imported would otherwise end or crash the command silently.
            raise ConfigError(f"{key}: importing {location} failed: {_failure(e)}") from e
    if not os.path.isfile(location):
        raise ConfigError(f"{key}: file not found: {location}")
    name = "lagnet_user_" + hashlib.sha1(os.path.abspath(location).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, location)
    if spec is None:
        raise ConfigError(f"{key}: {location} is not a Python file (expected a .py file)")
    _refuse_untrusted(f"the Python file {location}", key)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as e:
        del sys.modules[name]
        # Chained: in Python the user's own traceback stays visible (the CLI shows the message alone).
        raise ConfigError(f"{key}: running {location} failed: {_failure(e)}") from e
    return module


def _attribute(module, name: str, key: str, location: str, required: bool = True):
    value = getattr(module, name, None)
    if value is None and required:
        raise ConfigError(f"{key}: {location} defines no {name!r}")
    if value is not None and not callable(value):
        raise ConfigError(f"{key}: {name!r} in {location} is not callable")
    routine = inspect.isroutine(value) or inspect.isclass(value)
    origin = str(getattr(value, "__module__", None) or "").split(".")[0] if routine else ""
    if origin in _STDLIB - {"__main__"}:
        # `from os import system` in a trusted file must not make `my_rig.py:system` a shell.
        raise UntrustedCode(
            f"{key}: {name!r} in {location} is Python's own {origin}.{getattr(value, '__name__', name)}, "
            "not a function of the file: a system source names a function the file defines"
        )
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
    except (Exception, SystemExit) as e:
        # The user's build failing in any other way is still a config problem: name the code and the error.
        raise ConfigError(f"{key}: {what} failed: {_failure(e)}") from e


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
        expand = sc.params.get("expand")
        if expand is not None and not isinstance(expand, bool):
            # "yes" or 1 read as "never expand" (only `expand is True` forces it), silently.
            raise ConfigError(
                f"system.params.expand: expand must be true, false or null (the default: trees of up to "
                f"three hinges), got {expand!r}"
            )
        try:
            return factory(location, **sc.params)
        except (TypeError, ValueError) as e:
            raise ConfigError(f"system ({kind} {location}): {e}") from None
        except Exception as e:
            # A description is data: whatever breaks while reading it is a problem of that file.
            raise ConfigError(f"system ({kind} {location}): {type(e).__name__}: {e}") from None

    return build


# Each builds the system from the validated `system` section.
SOURCED: dict[str, Callable] = {
    "python": python_system,
    "lagrangian": lagrangian_system,
    "urdf": robot_system("urdf"),
    "mjcf": robot_system("mjcf"),
}


def module_file(location: str) -> str | None:
    """The source file of the module `location` ("package.module"), found on sys.path without importing it or
    its packages (`PathFinder` reads the file system only); None for a module without one (a namespace package,
    a compiled extension is still its file)."""
    spec, path = None, None
    parts = location.split(".")
    for k in range(len(parts)):
        try:
            spec = importlib.machinery.PathFinder.find_spec(".".join(parts[: k + 1]), path)
        except (ImportError, ValueError):
            return None
        if spec is None:
            return None
        path = spec.submodule_search_locations
        if path is None and k < len(parts) - 1:
            return None
    return (
        spec.origin if spec.has_location and spec.origin and os.path.isfile(spec.origin) else None
    )


def source_module(source: str) -> str | None:
    """The module a source names ("package.module" of "package.module:build"), or None for a file."""
    location, _ = split_source(source)
    return None if is_file(location) else location


def source_file(source: str) -> str | None:
    """The file a source names (to copy into a run), or None for an importable module."""
    location, _ = split_source(source)
    return location if is_file(location) else None

"""A trained model as StableHLO (`jax.export`): `f` and `step` callable from JAX alone, without lagnet.

One file, a zip archive (no pickle) of

- `metadata.json`: the format, the lagnet and JAX versions, dt, dtype, the state layout x = (q, q̇) with the
  coordinate and input names, the input history k, and each function's argument and result shapes;
- `NAME.jaxexport`: each function serialised by `jax.export` (StableHLO bytecode with its calling convention;
  `jax.export.deserialize(bytes).call(...)` runs it);
- `NAME.mlir`: the same module as StableHLO text, for compilers outside JAX (IREE, XLA AOT).

The metadata holds the SHA-256 of every other member (`sha256`) and of itself (`metadata_sha256`, over its
canonical JSON without that key): `load_exported` refuses an archive whose bytes, names, step, shapes or dtypes
no longer agree (a `DamagedExport`). The checksums find damage and edits, not an attacker, who can recompute them.

The functions, for one sample each (the weights are constants in the module; dt is the run's):

    f(x, u) → ẋ                          ẋ = (q̇, q̈(q, q̇, u)), u (m,) held over any input history
    step(x, u) → x⁺                      one step of the training integrator, u held (zero-order hold)
    f_jacobians(x, u) → (A, B)           ∂f/∂x (2n, 2n), ∂f/∂u (2n, m): the continuous linearisation
    step_jacobians(x, u) → (A_d, B_d)    the same of step: the discrete linearisation (LQR, linear MPC)
    f_history(x, u, u_past) → ẋ          with input history k > 0: u_past (k, m) the last inputs, newest first
    step_history(x, u, u_past) → (x⁺, u_past⁺)      u_past⁺ = (u, u_past[0], …, u_past[k − 2])
    f_batch, step_batch                  f and step over a leading batch axis of any size b (symbolic)

An exported function neither vmaps nor (stored without its VJP, which would triple the export time)
differentiates: batches and Jacobians are entry points of their own.
"""

import dataclasses
import hashlib
import json
import math
import os
import zipfile

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._errors import LagnetError
from .._version import __version__
from ..config.bounded import parse_json
from ..run.files import atomic_write, writable_folder
from ..run.load import load_run
from .dynamics import Dynamics, linearise

FORMAT = "lagnet-export/1"
METADATA = "metadata.json"
SUFFIX = ".jaxexport"
# The backends `jax.export` lowers for; it accepts any name, and a module for an unknown one fails when called.
PLATFORMS = ("cpu", "cuda", "rocm", "tpu")
# No member of an archive comes near this; a larger one is damage (or a zip bomb), not a model.
MAX_MEMBER_BYTES = 1 << 30


class DamagedExport(LagnetError, ValueError):
    """An export archive that cannot be trusted to be what `lagnet export` wrote: truncated, edited or not one."""


def _canonical(meta: dict) -> bytes:
    """The metadata's bytes for its checksum: sorted keys, no spaces, without `metadata_sha256` itself."""
    rest = {k: v for k, v in meta.items() if k != "metadata_sha256"}
    return json.dumps(rest, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def check_platforms(platforms) -> tuple[str, ...] | None:
    """`platforms` as a tuple of the backends JAX lowers for (`PLATFORMS`), or None (this machine's)."""
    if platforms is None:
        return None
    if isinstance(platforms, str):
        platforms = (platforms,)
    platforms = tuple(platforms)
    unknown = [p for p in platforms if p not in PLATFORMS]
    if unknown or not platforms:
        raise ValueError(
            f"export: unknown platform(s) {unknown or '(none given)'}; JAX lowers for {', '.join(PLATFORMS)} "
            "(e.g. --platforms cpu,cuda)"
        )
    return platforms


def _entry_points(dyn: Dynamics):
    """{name: (function of (dyn, arguments…), {argument: shape}, {result: shape}, what it computes, batched)}."""
    n2, m, k = 2 * dyn.n_dof, dyn.n_inputs, dyn.history.lags
    xu = {"x": (n2,), "u": (m,)}
    history = {"x": (n2,), "u": (m,), "u_past": (k, m)}
    entries = {
        "f": (
            lambda d, x, u: d.f(x, u),
            xu,
            {"x_dot": (n2,)},
            "ẋ = (q̇, q̈(q, q̇, u)), u held over the input history",
            True,
        ),
        "step": (
            lambda d, x, u: d.step(x, u),
            xu,
            {"x_next": (n2,)},
            f"x after one step of {type(dyn.integrator).__name__} (dt = {dyn.dt}) with u held",
            True,
        ),
        "f_jacobians": (
            lambda d, x, u: linearise(d.f, x, u),
            xu,
            {"A": (n2, n2), "B": (n2, m)},
            "(∂f/∂x, ∂f/∂u) at (x, u): ẋ ≈ A δx + B δu",
            False,
        ),
        "step_jacobians": (
            lambda d, x, u: linearise(d.step, x, u),
            xu,
            {"A_d": (n2, n2), "B_d": (n2, m)},
            "(∂step/∂x, ∂step/∂u) at (x, u): x⁺ ≈ A_d δx + B_d δu",
            False,
        ),
    }
    if k:
        entries["f_history"] = (
            lambda d, x, u, u_past: d.f(x, jnp.concatenate([u, u_past.reshape(-1)])),
            history,
            {"x_dot": (n2,)},
            "ẋ with the past inputs u_past (k, m) = (u_{t−1}, …, u_{t−k}), newest first",
            False,
        )
        entries["step_history"] = (
            lambda d, x, u, u_past: d.step_with_history(x, u, u_past),
            history,
            {"x_next": (n2,), "u_past_next": (k, m)},
            "(x⁺, u_past⁺) with u_past⁺ = (u, u_past[0], …, u_past[k − 2]): the history as a state",
            False,
        )
    return entries


def _specs(shapes: dict, dtype, batch):
    """ShapeDtypeStructs for the arguments, with a leading symbolic batch axis when `batch` is one."""
    lead = () if batch is None else (batch,)
    return [jax.ShapeDtypeStruct(lead + tuple(s), dtype) for s in shapes.values()]


def export(
    dyn: Dynamics,
    path: str,
    *,
    platforms: tuple[str, ...] | None = None,
    metadata: dict | None = None,
    overwrite: bool = False,
) -> dict:
    """Write `dyn`'s `f`, `step`, their Jacobians and batched forms (and with input history `f_history`,
    `step_history`) to the archive `path` (see the module's docstring); returns the metadata written.

    The precision is the model's (its leaves' dtype); `platforms` the backends to lower for (default: this
    process's, e.g. ("cpu",); ("cpu", "cuda") gives one module for both). `metadata` adds entries (the run).
    An existing file at `path` is refused unless `overwrite`; the archive is written atomically either way.
    """
    check_out_path(path, overwrite=overwrite)
    platforms = check_platforms(platforms)
    leaves = [x for x in jax.tree_util.tree_leaves(dyn.model) if eqx.is_inexact_array(x)]
    # A known system without learned parts has no array leaves: its precision is JAX's default.
    dtype = jnp.result_type(*leaves) if leaves else jnp.result_type(float)
    if dtype not in (jnp.float32, jnp.float64):
        raise ValueError(f"export: the model's leaves are {dtype}; float32 or float64 expected")
    system = dyn.system
    (batch,) = jax.export.symbolic_shape("b")
    weights, rest = eqx.partition(dyn, eqx.is_array)

    def bind(fn, name):
        # The weights are constants of the module, behind a barrier: XLA would otherwise fold arithmetic on
        # them at compile time and round differently (by one ulp) from `lagnet.load(RUN).step`, where they
        # are arguments. With the barrier the exported step equals it bit for bit.
        def bound(*args):
            return fn(eqx.combine(jax.lax.optimization_barrier(weights), rest), *args)

        bound.__name__ = name  # the module's name, `jit_NAME` (IREE calls it by that name)
        return bound

    functions, files, lowered_for = {}, {}, ()
    for name, (fn, args, results, doc, batched) in _entry_points(dyn).items():
        one = bind(fn, name)
        variants = [("", None, one)]
        if batched:
            variants.append(("_batch", batch, jax.vmap(bind(fn, name + "_batch"))))
        for suffix, lead, wrapped in variants:
            exported = jax.export.export(jax.jit(wrapped), platforms=platforms)(
                *_specs(args, dtype, lead)
            )
            lowered_for = exported.platforms
            files[f"{name}{suffix}{SUFFIX}"] = bytes(exported.serialize())
            if lead is None:
                files[f"{name}.mlir"] = exported.mlir_module().encode()
            axis = [] if lead is None else ["b"]
            functions[name + suffix] = {
                "arguments": {a: axis + list(shape) for a, shape in args.items()},
                "results": {r: axis + list(shape) for r, shape in results.items()},
                "computes": doc if lead is None else f"{name} over a leading batch axis b",
            }
    meta = {
        "format": FORMAT,
        "lagnet_version": __version__,
        "jax_version": jax.__version__,
        "platforms": list(lowered_for),
        "dtype": str(jnp.dtype(dtype)),
        "dt": float(dyn.dt),
        "integrator": type(dyn.integrator).__name__,
        "model": type(dyn.model).__name__,
        "system": type(system).__name__,
        "n_dof": dyn.n_dof,
        "n_inputs": dyn.n_inputs,
        "input_history": dyn.history.lags,
        "state": "x = (q, q̇): the n coordinates, then their n velocities",
        "coordinate_names": list(system.coordinate_names),
        "state_names": list(dyn.state_names),
        "input_names": list(system.input_names),
        "functions": functions,
        **(metadata or {}),
        "sha256": {name: hashlib.sha256(content).hexdigest() for name, content in files.items()},
    }
    meta["metadata_sha256"] = hashlib.sha256(_canonical(meta)).hexdigest()
    _write_archive(path, meta, files)
    return meta


def check_out_path(path: str, *, overwrite: bool = False) -> str:
    """`path` as a file to write: not a folder, no file where its folders would go, and no file there already
    unless `overwrite` (a `ValueError`)."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise ValueError(f"{path} is a folder; give a file name, e.g. {path}/model{SUFFIX}")
    if os.path.lexists(path) and not overwrite:
        raise ValueError(
            f"{path} already exists: pass --overwrite (overwrite=True) to replace it, or give another --out"
        )
    try:
        writable_folder(os.path.dirname(os.path.abspath(path)))
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot write {path}: {getattr(e, 'strerror', None) or e}") from None
    return path


def _write_archive(path: str, meta: dict, files: dict) -> None:
    def write(f):
        with zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr(METADATA, json.dumps(meta, indent=2, ensure_ascii=False))
            for name, content in files.items():
                z.writestr(name, content)

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    atomic_write(path, write)


def export_run(
    path: str,
    out: str,
    which: str = "best",
    *,
    platforms: tuple[str, ...] | None = None,
    overwrite: bool = False,
    trust_code: bool = False,
) -> dict:
    """Export the run `path` (or its checkpoint `RUN/checkpoints/NAME.eqx`) to `out` in the run's own precision
    (a float64 run needs `jax_enable_x64`, as `lagnet.load`); returns the metadata written. A run whose
    system is Python code needs `trust_code=True`, as `lagnet.load`."""
    # Before the work of loading and lowering.
    check_out_path(out, overwrite=overwrite)
    platforms = check_platforms(platforms)
    run = load_run(path, which, trust_code=trust_code)
    dyn = Dynamics(run.model, run.integrator, run.dt)
    meta = {"run": os.path.abspath(run.path), "config_name": run.config.name, "checkpoint": which}
    return export(dyn, out, platforms=platforms, metadata=meta, overwrite=overwrite)


@dataclasses.dataclass(frozen=True)
class ExportedModel:
    """An exported model, loaded: `metadata` and the functions by name (`f`, `step`, `step_history`, …,
    `NAME_batch`); each is the `jax.export.Exported.call` of its module. `model.step(x, u)` → x⁺."""

    metadata: dict
    exported: dict

    def __getattr__(self, name):
        try:
            return self.exported[name].call
        except KeyError:
            raise AttributeError(
                f"the exported model has no function {name!r}; it has {sorted(self.exported)}"
            ) from None

    @property
    def dt(self) -> float:
        return self.metadata["dt"]

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.metadata["dtype"])


def load_exported(path: str) -> ExportedModel:
    """The archive `lagnet export` wrote. Needs only JAX (and flatbuffers); the README shows the same in five
    lines without lagnet. A float64 model needs `jax_enable_x64` on, as its inputs must be float64.

    Every member is checked against its SHA-256 in the metadata, the metadata against its own, and each
    function's name, argument and result shapes and dtype against the metadata: any damage is a
    `DamagedExport` (a ValueError) naming what is wrong.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no exported model at {path}")
    try:
        meta, members = _read_members(path)
        _check_metadata(meta, members)
        exported = {}
        for name in meta["functions"]:
            try:
                exported[name] = jax.export.deserialize(bytearray(members[name + SUFFIX]))
            except (
                Exception
            ) as e:  # flatbuffers' own errors (struct.error, IndexError, …) on bad bytes
                raise DamagedExport(
                    f"{name}{SUFFIX} cannot be read ({type(e).__name__}: {e})"
                ) from None
            _check_function(name, exported[name], meta)
    except DamagedExport as e:
        raise DamagedExport(f"{path}: not a lagnet export archive, or a damaged one: {e}") from None
    if meta["dtype"] == "float64" and not jax.config.jax_enable_x64:
        raise ValueError(
            f"{path} is float64, but JAX runs without 64-bit floats: call "
            "`jax.config.update('jax_enable_x64', True)` first"
        )
    return ExportedModel(meta, exported)


def _read_members(path: str) -> tuple[dict, dict[str, bytes]]:
    """The metadata and every other member's bytes, each checked against its SHA-256."""
    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
            big = [i.filename for i in infos if i.file_size > MAX_MEMBER_BYTES]
            if big:
                raise DamagedExport(f"members {big} claim more than {MAX_MEMBER_BYTES} bytes")
            content = {i.filename: z.read(i) for i in infos}
    except DamagedExport:
        raise
    except IsADirectoryError:
        raise DamagedExport("it is a folder") from None
    except (
        Exception
    ) as e:  # zipfile's errors on damaged bytes are many (BadZipFile, zlib.error, EOFError, …)
        raise DamagedExport(f"not a readable zip archive ({type(e).__name__}: {e})") from None
    if METADATA not in content:
        raise DamagedExport(f"no {METADATA}")
    try:
        meta = parse_json(content.pop(METADATA), METADATA)
    except ValueError as e:
        raise DamagedExport(str(e)) from None
    if not isinstance(meta, dict):
        raise DamagedExport(f"{METADATA} is not a JSON object")
    if meta.get("format") != FORMAT:
        raise DamagedExport(f"format {meta.get('format')!r}, this lagnet reads {FORMAT!r}")
    digests = meta.get("sha256")
    if not isinstance(digests, dict) or not isinstance(meta.get("metadata_sha256"), str):
        raise DamagedExport(
            f"{METADATA} has no checksums (an archive from an older lagnet: export the run again)"
        )
    if hashlib.sha256(_canonical(meta)).hexdigest() != meta["metadata_sha256"]:
        raise DamagedExport(f"{METADATA} was changed after export (its SHA-256 does not match)")
    if set(digests) != set(content):
        missing, extra = sorted(set(digests) - set(content)), sorted(set(content) - set(digests))
        raise DamagedExport(f"members missing {missing}, members not written by lagnet {extra}")
    for name, data in content.items():
        if hashlib.sha256(data).hexdigest() != digests[name]:
            raise DamagedExport(f"{name} was changed after export (its SHA-256 does not match)")
    return meta, content


def _whole(value, least: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _check_metadata(meta: dict, members: dict) -> None:
    """The metadata's fields have the types and sizes `export` writes, and name the archive's functions."""
    if meta.get("dtype") not in ("float32", "float64"):
        raise DamagedExport(f"dtype {meta.get('dtype')!r}, expected 'float32' or 'float64'")
    dt = meta.get("dt")
    if not (
        isinstance(dt, int | float) and not isinstance(dt, bool) and math.isfinite(dt) and dt > 0
    ):
        raise DamagedExport(f"dt {dt!r}, expected a step > 0 in s")
    for key in ("n_dof", "n_inputs", "input_history"):
        if not _whole(meta.get(key), 1 if key == "n_dof" else 0):
            raise DamagedExport(f"{key} {meta.get(key)!r}, expected a whole number")
    sizes = {
        "state_names": 2 * meta["n_dof"],
        "coordinate_names": meta["n_dof"],
        "input_names": meta["n_inputs"],
    }
    for key, size in sizes.items():
        names = meta.get(key)
        if not (
            isinstance(names, list)
            and len(names) == size
            and all(isinstance(n, str) for n in names)
        ):
            raise DamagedExport(f"{key} {names!r}, expected {size} names")
    platforms = meta.get("platforms")
    if not (isinstance(platforms, list) and platforms and all(p in PLATFORMS for p in platforms)):
        raise DamagedExport(f"platforms {platforms!r}, expected some of {list(PLATFORMS)}")
    functions = meta.get("functions")
    expected = ["f", "step", "f_jacobians", "step_jacobians", "f_batch", "step_batch"]
    expected += ["f_history", "step_history"] if meta["input_history"] else []
    if not isinstance(functions, dict) or set(functions) != set(expected):
        got = sorted(functions) if isinstance(functions, dict) else functions
        raise DamagedExport(f"functions {got!r}, expected {sorted(expected)}")
    modules = {n[: -len(SUFFIX)] for n in members if n.endswith(SUFFIX)}
    if set(functions) != modules:
        raise DamagedExport(
            f"functions {sorted(functions)} in {METADATA}, modules {sorted(modules)} in the archive"
        )
    for name, entry in functions.items():
        ok = isinstance(entry, dict) and all(
            isinstance(entry.get(part), dict)
            and all(
                isinstance(shape, list) and all(_whole(d) or d == "b" for d in shape)
                for shape in entry[part].values()
            )
            for part in ("arguments", "results")
        )
        if not ok:
            raise DamagedExport(
                f"functions.{name}: expected arguments and results with their shapes"
            )


def _check_function(name: str, exported, meta: dict) -> None:
    """The module is the function the metadata names, with its argument and result shapes and dtype."""
    if exported.fun_name != name:
        raise DamagedExport(
            f"{name}{SUFFIX} holds the function {exported.fun_name!r}, not {name!r}"
        )
    entry = meta["functions"][name]
    for part, avals in (("arguments", exported.in_avals), ("results", exported.out_avals)):
        want = [[str(d) for d in shape] for shape in entry[part].values()]
        got = [[str(d) for d in a.shape] for a in avals]
        if want != got:
            raise DamagedExport(f"{name}: its {part} have shapes {got}, {METADATA} says {want}")
        dtypes = {str(a.dtype) for a in avals}
        if dtypes != {meta["dtype"]}:
            raise DamagedExport(
                f"{name}: its {part} are {sorted(dtypes)}, {METADATA} says {meta['dtype']}"
            )

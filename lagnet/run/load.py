"""A trained run loaded without the training machinery: its model, integrator, step and precision."""

import dataclasses
import os
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp

from .._errors import RunFolderError
from ..config import Config, ConfigError, load_config, sources
from ..config.sources import UntrustedCode, received_run
from ..integrators.base import AbstractIntegrator
from ..models.base import AbstractModel
from ..models.consistency import check_physical
from .build import build_integrator, build_model, build_system
from .checkpoints import DamagedManifest, check_model_file
from .files import load_tree
from .lock import training_holder
from .spec import RunSpec

CONFIG_FILE = "config.yaml"


def as_dtype(tree, dtype):
    """Every inexact array leaf of `tree` cast to `dtype`."""
    return jax.tree_util.tree_map(lambda x: x.astype(dtype) if eqx.is_inexact_array(x) else x, tree)


def check_precision(dtype: str, what: str) -> None:
    """float64 needs `jax_enable_x64` on before any array is made; say so rather than switch it for the process."""
    if dtype == "float64" and not jax.config.jax_enable_x64:
        raise RunFolderError(
            f"{what} is float64, but JAX runs without 64-bit floats: call "
            "`jax.config.update('jax_enable_x64', True)` first (the lagnet CLI does)"
        )


@dataclasses.dataclass(frozen=True)
class Run:
    """A trained run: `model` (its leaves from a checkpoint), the `integrator` and step `dt` it was trained
    with, and its `config` and `spec`. `lagnet.load` wraps it as control-ready `Dynamics`."""

    path: str
    config: Config
    spec: RunSpec
    model: AbstractModel
    integrator: AbstractIntegrator

    @property
    def dt(self) -> float:
        return self.spec.dt


def read_config(run_dir: str) -> Config:
    path = os.path.join(run_dir, CONFIG_FILE)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{run_dir}: not a run directory (no {CONFIG_FILE})")
    return load_config(path, saved=True)


def model_skeleton(config: Config, dtype) -> AbstractModel:
    """The model the config describes, with placeholder leaves of the right shapes and `dtype`."""
    skeleton = build_model(config, build_system(config), None, key=jax.random.key(0))
    return as_dtype(skeleton, dtype)


def split_checkpoint_path(path: str, which: str = "best") -> tuple[str, str]:
    """`RUN` or `RUN/checkpoints/NAME.eqx` → (RUN, NAME)."""
    path = os.fspath(path)
    if os.path.isfile(path) and path.endswith(".eqx"):
        which = os.path.basename(path)[: -len(".eqx")]
        path = os.path.dirname(os.path.dirname(os.path.abspath(path)))
    return path, which


def check_run_source(run_dir: str, config: Config, spec: RunSpec) -> None:
    """The run's system source file (or module) is the one run.json records, unchanged
    (`RunSpec.check_source`)."""
    source = config.system.source
    if config.system.name in sources.SOURCED and source is not None:
        module = sources.source_module(source)
        if module is not None:
            # Python's own modules, unlisted packages and untrusted code are refused before any digest.
            sources.check_module_allowed(module, "system.source")
        spec.check_source(run_dir, sources.source_file(source) or module)


def load_run(
    path: str,
    which: str = "best",
    *,
    dtype: str | None = None,
    trust_code: bool = False,
) -> Run:
    """The run in directory `path` (or a checkpoint file `RUN/checkpoints/NAME.eqx`), with the leaves of
    checkpoints/<which>.eqx. `dtype` casts the model (default: the run's own precision).

    best.eqx and last.eqx are checked against the newest committed training state (their SHA-256 in the
    checkpoint manifest): in a finished run a mismatch is a ValueError, in an interrupted one a warning
    (`lagnet.run.checkpoints.check_model_file`).

    A run whose system is Python code (`system.name: python | lagrangian`) runs that code to rebuild the model:
    only with `trust_code=True` (or the CLI's --trust-code, LAGNET_TRUST_CODE=1), and only the copy in the
    run's `system/` folder whose SHA-256 run.json records (see docs/guides/security.md)."""
    with sources.trust_code(trust_code):
        return _load_run(path, which, dtype)


def _load_run(path: str, which: str, dtype: str | None) -> Run:
    run_dir, which = split_checkpoint_path(path, which)
    config = read_config(run_dir)
    spec = RunSpec.read(run_dir)
    check_run_source(run_dir, config, spec)
    check_precision(spec.dtype, f"the run {run_dir}")
    holder = training_holder(run_dir)
    if holder is not None:
        # Checkpoints are written whole (atomically) and committed by the manifest: the newest one is complete.
        warnings.warn(
            f"{run_dir} is being trained by {holder}: loading its last complete checkpoint ({which}.eqx as "
            "saved so far); load it again when the training has ended for the final one",
            stacklevel=3,
        )
    folder = os.path.join(run_dir, "checkpoints")
    try:
        # A save cut short by a kill may leave best.eqx/last.eqx behind the committed training state.
        check_model_file(
            folder, f"{which}.eqx", finished=os.path.exists(os.path.join(run_dir, "summary.json"))
        )
    except DamagedManifest as e:
        warnings.warn(f"{e}; loading {which}.eqx unchecked", stacklevel=2)
    try:
        skeleton = model_skeleton(config, jnp.dtype(spec.dtype))
        integrator = build_integrator(config)
    except ConfigError as e:
        if type(e) is not ConfigError or CONFIG_FILE in str(e):
            raise
        # A received run's config.yaml may say anything: its errors name the file.
        raise ConfigError(f"{os.path.join(run_dir, CONFIG_FILE)}: {e}") from None
    model = load_tree(os.path.join(folder, f"{which}.eqx"), skeleton)
    # A model whose mass matrix is not positive definite somewhere is refused, naming its parameters.
    check_physical(model, f"the run {run_dir} ({which}.eqx)")
    if dtype is not None:
        model = as_dtype(model, jnp.dtype(dtype))
    return Run(run_dir, config, spec, model, integrator)


def start_from(run_dir: str, model):
    """`model.start_from`: the model with the physics of the run in `run_dir` (its best checkpoint)."""
    key = "model.start_from"
    if model.physics_prior() is None:
        raise ConfigError(
            f"{key}: a {type(model).__name__} has no physics to start; a PINODE (pinode, pure_ode) has"
        )
    if not os.path.exists(os.path.join(run_dir, "checkpoints", "best.eqx")):
        raise ConfigError(f"{key}: {run_dir!r} holds no trained run (no checkpoints/best.eqx)")
    try:
        # The run's own code (a Python system it keeps) runs only with consent naming it (--trust-run).
        with received_run(run_dir, key):
            started = load_run(run_dir).model
        return model.with_physics_from(started)
    except UntrustedCode:
        raise
    except ValueError as e:
        raise ConfigError(f"{key}: {run_dir}: {e}") from None

"""What a trained run is, beyond its config: the step it was trained at, its precision and the SHA-256 of the
system source it keeps, in `run.json`."""

import dataclasses
import math
import os

from .._errors import RunFolderError
from ..config import sources
from ..config.bounded import read_json
from .files import save_json, sha256_file

SPEC_FILE = "run.json"
# The run's own copy of a system source file (`lagnet.run.folder.keep_system_source` writes it).
SOURCE_DIR = "system"


# run.json's key for a module source's digest: "module:package.module".
MODULE_KEY = "module:"


def module_digest(config) -> dict[str, str]:
    """{"module:NAME": SHA-256 of its source file} for a config whose system source is a module, else {}.

    A module is not copied into the run (it belongs to an installed package); its digest makes a later load
    refuse the run if the module's file changed since training."""
    source = config.system.source
    name = None if source is None else sources.source_module(source)
    if name is None or config.system.name not in sources.SOURCED:
        return {}
    path = sources.module_file(name)
    return {f"{MODULE_KEY}{name}": (sha256_file(path) if path else None) or "missing"}


def source_digests(run_dir: str) -> dict[str, str]:
    """{"system/NAME": SHA-256 hex} of every file in the run's `system/` folder."""
    folder = os.path.join(run_dir, SOURCE_DIR)
    try:
        names = sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return {}
    paths = {f"{SOURCE_DIR}/{n}": os.path.join(folder, n) for n in names if not n.startswith(".")}
    return {rel: sha256_file(path) for rel, path in paths.items() if os.path.isfile(path)}


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """The facts of a trained run that its config alone does not fix.

    - `dt`: the sample step of the training data in s (the median of the measured steps, or `integrator.dt`
      which is checked against them): the step `lagnet.load(run).step` takes. Its one source.
    - `dtype`: "float32" or "float64", the precision of the saved leaves.
    - `input_history`: k, the past inputs the model reads (its inputs have m (k + 1) entries).
    - `sources`: {"system/NAME": SHA-256} of the system source files the run keeps, recorded by `save`,
      and {"module:NAME": SHA-256} of a module source's file (None for a run written before they were
      recorded). A run whose source differs is refused on load.
    """

    dt: float
    dtype: str
    input_history: int
    lagnet_version: str
    sources: dict[str, str] | None = None

    def save(self, run_dir: str) -> None:
        """Write run.json, with the digests of the files in `run_dir/system/` as they are now (and a module
        source's, given in `sources`)."""
        modules = {k: v for k, v in (self.sources or {}).items() if k.startswith(MODULE_KEY)}
        record = {**dataclasses.asdict(self), "sources": {**source_digests(run_dir), **modules}}
        save_json(os.path.join(run_dir, SPEC_FILE), record)

    @classmethod
    def read(cls, run_dir: str) -> "RunSpec":
        path = os.path.join(run_dir, SPEC_FILE)
        try:
            raw = read_json(path, SPEC_FILE)
            required = [f.name for f in dataclasses.fields(cls) if f.name != "sources"]
            sources = raw.get("sources")
            if sources is not None and not (
                isinstance(sources, dict)
                and all(isinstance(k, str) and isinstance(v, str) for k, v in sources.items())
            ):
                raise TypeError(
                    f"'sources' must map file names to SHA-256 strings, got {sources!r}"
                )
            spec = cls(**{name: raw[name] for name in required}, sources=sources)
            spec._check_types()
            return spec
        except FileNotFoundError:
            raise FileNotFoundError(
                f"{run_dir}: no {SPEC_FILE} (not a run directory, or one whose training never started)"
            ) from None
        except (KeyError, TypeError, AttributeError) as e:
            raise RunFolderError(
                f"{path}: not a valid run spec ({type(e).__name__}: {e})"
            ) from None

    def _check_types(self) -> None:
        """The fields as `save` writes them (a received run.json may hold anything)."""
        number = isinstance(self.dt, int | float) and not isinstance(self.dt, bool)
        if not (number and math.isfinite(self.dt) and self.dt > 0):
            raise TypeError(f"'dt' must be a positive number, got {self.dt!r}")
        if self.dtype not in ("float32", "float64"):
            raise TypeError(f"'dtype' must be 'float32' or 'float64', got {self.dtype!r}")
        if not (isinstance(self.input_history, int) and not isinstance(self.input_history, bool)):
            raise TypeError(f"'input_history' must be a whole number, got {self.input_history!r}")
        if self.input_history < 0:
            raise TypeError(f"'input_history' must be >= 0, got {self.input_history}")
        if not isinstance(self.lagnet_version, str):
            raise TypeError(f"'lagnet_version' must be text, got {self.lagnet_version!r}")

    def check_source(self, run_dir: str, source_path: str | None) -> None:
        """Refuse a system source file that is not the run's own recorded copy, or whose bytes changed.

        `source_path`: the file the run's config.yaml names, or the module ("package.module") it names
        (checked against the digest of the module's file; None: a registered system). The
        check keeps a run folder from running other code than it was trained with; it is no substitute for
        trusting the folder (run.json itself can be edited): see docs/guides/security.md.
        """
        if source_path is None or self.sources is None:
            return
        if not sources.is_file(source_path):
            self._check_module(run_dir, source_path)
            return
        rel = os.path.relpath(os.path.abspath(source_path), os.path.abspath(run_dir))
        rel = rel.replace(os.sep, "/")
        if rel not in self.sources:
            recorded = ", ".join(self.sources) or "none"
            raise RunFolderError(
                f"{run_dir}: config.yaml names the system source {source_path}, which is not a file the run "
                f"recorded in {SPEC_FILE} (recorded: {recorded}); a run loads only the source it was trained "
                "with"
            )
        digest = sha256_file(source_path)
        if digest != self.sources[rel]:
            raise RunFolderError(
                f"{run_dir}: the system source {rel} "
                + ("is missing" if digest is None else "changed since training")
                + f" (its SHA-256 is recorded in {SPEC_FILE}); restore the file the run was trained with, "
                "or retrain"
            )

    def _check_module(self, run_dir: str, name: str) -> None:
        """Refuse a module source that the run did not record, or whose file changed since training."""
        key = f"{MODULE_KEY}{name}"
        if key not in self.sources:
            raise RunFolderError(
                f"{run_dir}: config.yaml names the module {name!r} as its system source, which the run did "
                f"not record in {SPEC_FILE}; a run loads only the source it was trained with"
            )
        path = sources.module_file(name)
        digest = (sha256_file(path) if path else None) or "missing"
        if digest != self.sources[key]:
            where = path or "not found on sys.path"
            raise RunFolderError(
                f"{run_dir}: the system source module {name!r} ({where}) "
                + ("is missing" if path is None else "changed since training")
                + f" (its SHA-256 is recorded in {SPEC_FILE}); install the version the run was trained "
                "with, or retrain"
            )

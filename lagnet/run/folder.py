"""A run folder's safety and identity: what may be written where, what a run folder holds, the copy of its
system source, and the identity that ties its checkpoints to the config and data that wrote them."""

import dataclasses
import json
import os
import shutil
import warnings

from .._errors import RunFolderError
from ..config import Config, ConfigError
from ..config.sources import source_file, split_source
from .checkpoints import NOT_TRAINING
from .files import atomic_write, json_ready, sha256_file, writable_folder
from .load import CONFIG_FILE
from .spec import SPEC_FILE


def check_output_dir(run_dir: str, min_free_bytes: int = 20_000_000) -> None:
    """Fail before any work if the run directory cannot be written or its disk is (nearly) full.

    Probes the run directory, or its nearest existing parent, without creating either: a run that fails
    validation afterwards leaves nothing behind.
    """
    try:
        folder = writable_folder(run_dir)
    except (OSError, ValueError) as e:
        raise RunFolderError(
            f"run directory {run_dir!r} is not writable: {getattr(e, 'strerror', None) or e}"
        ) from None
    free = shutil.disk_usage(folder).free
    if free < min_free_bytes:
        raise RunFolderError(
            f"run directory {run_dir!r}: only {free / 1e6:.1f} MB free on its disk; "
            f"training needs at least {min_free_bytes / 1e6:.0f} MB for checkpoints"
        )


SYSTEM_DIR = "system"


def keep_system_source(config: Config, run_dir: str, *, write: bool = True) -> Config:
    """A system given by a source file is copied into `run_dir/system/`; the config then names the copy (so the run
    loads with the code and description it was trained with, even if the user's file changes or moves)."""
    source = config.system.source
    path = None if source is None else source_file(source)
    if path is None:
        return config
    _, function = split_source(source)
    copy = os.path.join(os.path.abspath(run_dir), SYSTEM_DIR, os.path.basename(path))
    if write and os.path.abspath(path) != copy:
        try:
            with open(path, "rb") as f:
                content = f.read()
        except OSError as e:
            raise ConfigError(f"system.source: cannot read {path}: {e}") from None
        os.makedirs(os.path.dirname(copy), exist_ok=True)
        atomic_write(copy, lambda f: f.write(content))
    kept = copy if function is None else f"{copy}:{function}"
    return dataclasses.replace(config, system=dataclasses.replace(config.system, source=kept))


def saved_config(config: Config) -> dict:
    """config.yaml's content: a copied system source is named relative to the run (the run can move)."""
    out = config.to_dict()
    source = config.system.source
    path = None if source is None else source_file(source)
    if path is not None and os.path.basename(os.path.dirname(path)) == SYSTEM_DIR:
        _, function = split_source(source)
        rel = f"{SYSTEM_DIR}/{os.path.basename(path)}"
        out["system"]["source"] = rel if function is None else f"{rel}:{function}"
    return out


def run_identity(config: Config) -> dict:
    """What makes checkpoints a run's own: its config (all but the budget `training.epochs | max_steps |
    max_seconds`, which a resume may raise, and the sections `NOT_TRAINING`), the bytes of its system source
    file, of the model it starts from and of every training and validation data file.

    Recorded in the checkpoint manifest with every state, so `--resume` compares against the run that wrote the
    states, not against a config.yaml that a later (killed) run may have replaced.
    """
    saved = config.to_dict()
    # The budget may grow on a resume (train longer); everything else decides what the states are.
    for budget in ("epochs", "max_steps", "max_seconds"):
        saved["training"].pop(budget, None)
    for section in NOT_TRAINING:
        saved.pop(section)
    source = config.system.source
    path = None if source is None else source_file(source)
    if path is not None:
        # Where the source lives may change (the run keeps a copy); what it holds may not.
        saved["system"]["source"] = {
            "file": os.path.basename(path),
            "function": split_source(source)[1],
            "sha256": (sha256_file(path) or "missing")[:16],
        }
    start = config.model.setting("start_from")
    if start is not None:
        # The model it starts from, by content: a resume must start from the same physics.
        best = os.path.join(start, "checkpoints", "best.eqx")
        saved["model"]["start_from"] = {
            "run": os.path.basename(os.path.normpath(start)),
            "sha256": (sha256_file(best) or "missing")[:16],
        }
    # 64 bits of each file's SHA-256 tell the files apart and keep the message of a difference readable.
    data = {
        role: [(sha256_file(p) or "missing")[:16] for p in paths]
        for role, paths in (("train", config.data.train), ("validation", config.data.validation))
    }
    return json_ready({**saved, "data_sha256": data})


# What a run directory holds: `--overwrite` removes exactly these, and refuses a folder with anything else.
# Where `lagnet evaluate RUN --control --seeds` trains the run's config again with other seeds (seed-K).
SEEDS_DIR = "seeds"
RUN_ENTRIES = (
    CONFIG_FILE,
    SPEC_FILE,
    "metrics.jsonl",
    "summary.json",
    "checkpoints",
    "evaluation",
    SYSTEM_DIR,
    SEEDS_DIR,
)


def check_run_target(run_dir: str, *, resume: bool, overwrite: bool) -> list[str]:
    """Refuse to train into a folder that holds a run, unless resuming it or told to overwrite it.

    Returns the entries `--overwrite` will remove (only once everything else is checked). Reads only.
    """
    if resume and overwrite:
        raise RunFolderError(
            "--resume continues a run and --overwrite replaces it: give one of them"
        )
    try:
        entries = sorted(os.listdir(run_dir))
    except (FileNotFoundError, NotADirectoryError):
        entries = []
    if resume:
        if CONFIG_FILE not in entries:
            raise FileNotFoundError(
                f"cannot resume {run_dir}: no {CONFIG_FILE} (not a run directory)"
            )
        return []
    if not entries:
        return []
    if not overwrite:
        raise RunFolderError(
            f"{run_dir} already holds a run ({', '.join(entries)}): pass --overwrite to replace it (its "
            "checkpoints and evaluation/ are deleted), --resume to continue it, or --out another folder"
        )
    foreign = [e for e in entries if e not in RUN_ENTRIES and not e.startswith(".tmp-")]
    if foreign:
        raise RunFolderError(
            f"{run_dir} holds files that lagnet did not write ({', '.join(foreign)}), so --overwrite would "
            "not replace a run: move them away, or choose another --out"
        )
    return entries


def remove_entries(run_dir: str, entries: list[str]) -> None:
    for name in entries:
        path = os.path.join(run_dir, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.unlink(path)


def read_metrics(path: str, last_epoch: int) -> list[str]:
    """metrics.jsonl's lines up to `last_epoch`; a line cut short by a kill is dropped, with a warning."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    kept, torn = [], 0
    for line in lines:
        try:
            epoch = json.loads(line)["epoch"]
        except (json.JSONDecodeError, KeyError, TypeError):
            torn += 1
            continue
        # Lines past the resumed epoch were written by the interrupted run: its next epochs are redone.
        if epoch <= last_epoch:
            kept.append(line + "\n")
    if torn:
        warnings.warn(
            f"{path}: dropped {torn} unreadable line(s), written when the run was interrupted",
            stacklevel=3,
        )
    return kept

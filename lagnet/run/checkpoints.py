"""A run's checkpoints: the training states of the last few epochs, the best and last models they imply, and the
manifest that commits them together with the identity of the run that wrote them."""

import hashlib
import json
import os
import warnings

from .._errors import LagnetError, RunFolderError
from ..config.bounded import read_json
from .files import load_tree, save_json, save_tree, sha256_file, write_bytes

MANIFEST = "manifest.json"


class DamagedManifest(LagnetError, ValueError):
    """manifest.json cannot be read: which state is the newest complete one, and whose, is unknown."""


def fingerprint(identity: dict) -> str:
    """A short hash of a run's identity (its config, system source and data, see `training.run_identity`)."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]


# Sections of a config that never change what training writes: a resume may change them freely.
NOT_TRAINING = ("evaluation", "control")


def differences(now: dict, before: dict, prefix: str = "") -> list[str]:
    """`key.path: old in the run, new now` for every value that differs between two nested dicts."""
    out = []
    for k in sorted(set(now) | set(before)):
        va, vb = now.get(k), before.get(k)
        if isinstance(va, dict) and isinstance(vb, dict):
            out += differences(va, vb, f"{prefix}{k}.")
        elif va != vb:
            out.append(f"{prefix}{k}: {vb!r} in the run, {va!r} now")
    return out


def read_manifest(folder: str) -> dict | None:
    """The manifest of a checkpoints folder; None if there is none, a ValueError if it cannot be read."""
    path = os.path.join(folder, MANIFEST)
    try:
        manifest = read_json(path, MANIFEST)
        if not isinstance(manifest, dict) or not isinstance(manifest.get("states"), list):
            raise RunFolderError("no list of states")
        for e in manifest["states"]:
            if not (isinstance(e.get("file"), str) and isinstance(e.get("epoch"), int)):
                raise RunFolderError(f"malformed entry {e!r}")
        return manifest
    except FileNotFoundError:
        return None
    except (ValueError, UnicodeDecodeError, AttributeError, TypeError) as e:
        states = sorted(n for n in os.listdir(folder) if n.startswith("state-"))
        raise DamagedManifest(
            f"{path} is damaged ({type(e).__name__}: {e}), so which training state is the newest complete one, "
            f"and whose it is, is unknown (state files: {', '.join(states) or 'none'}); "
            "retrain with --overwrite, or restore the manifest"
        ) from None


class Checkpoints:
    """The training states of the last `keep` epochs and the models they imply, committed by one manifest.

    An epoch is saved in this order: its training state (a new file), then the manifest naming it with the run's
    `identity` and the SHA-256 of the best and last models (the commit), then last.eqx and best.eqx, then the
    states that fell out of the manifest are deleted. Each file is written atomically, so a crash (even
    `kill -9`) between any two writes leaves the previous epoch or this one committed; model files that lag
    behind the manifest are refused by `lagnet.run.load_run` and rewritten by `--resume` from the state.
    """

    def __init__(self, folder: str, keep: int, identity: dict):
        self.folder, self.keep, self.identity = folder, keep, identity
        self.fingerprint = fingerprint(identity)
        # The fingerprints whose states are this run's: its own, and the recorded one `check_identity` accepts.
        self.fingerprints = {self.fingerprint}

    def check_identity(self, what: str) -> None:
        """Refuse states written by another run: a different config, system source or data, named."""
        manifest = read_manifest(self.folder)
        if manifest is None:
            return
        before = manifest.get("identity")
        if before is None:
            raise RunFolderError(
                f"cannot resume {what}: its checkpoints do not record which config and data wrote them "
                "(an older lagnet); retrain with --overwrite"
            )
        # Runs written before the identity left out what does not change training recorded those sections too.
        diff = differences(
            self.identity, {k: v for k, v in before.items() if k not in NOT_TRAINING}
        )
        if diff:
            raise RunFolderError(
                f"cannot resume {what} with a different config: "
                + "; ".join(diff)
                + " (train it again into a new folder, or here with --overwrite)"
            )
        # Its states are tagged with the fingerprint of the identity as it was recorded.
        self.fingerprints.add(fingerprint(before))

    def save(self, state, epoch: int, models: dict[str, tuple[bytes, int]]) -> None:
        """Commit `state` (of `epoch`) and `models` (file name → (serialised model, its epoch)) as one step."""
        name = f"state-{epoch:06d}.eqx"
        save_tree(os.path.join(self.folder, name), state)
        manifest = read_manifest(self.folder) or {"states": []}
        # States of a later epoch belong to an interrupted run whose epochs are being redone.
        entries = [
            e
            for e in manifest["states"]
            if e["epoch"] < epoch and e.get("run") in self.fingerprints
        ]
        entries.append({"file": name, "epoch": epoch, "run": self.fingerprint})
        kept = entries[-self.keep :]
        hashes = {
            file: hashlib.sha256(content).hexdigest() for file, (content, _) in models.items()
        }
        save_json(
            os.path.join(self.folder, MANIFEST),
            {
                "identity": self.identity,
                "states": kept,
                "latest": name,
                "models": {
                    file: {"sha256": hashes[file], "epoch": e} for file, (_, e) in models.items()
                },
            },
        )
        for file, (content, _) in models.items():
            path = os.path.join(self.folder, file)
            if sha256_file(path) != hashes[file]:
                write_bytes(path, content)
        # Every state file the manifest does not name: also those of a save a kill cut short before this step.
        names = {k["file"] for k in kept}
        for file in os.listdir(self.folder):
            if file.startswith("state-") and file.endswith(".eqx") and file not in names:
                os.unlink(os.path.join(self.folder, file))

    def load_latest(self, like):
        """The newest loadable state (falling back to older ones if a file is damaged), or None."""
        manifest = read_manifest(self.folder)
        errors = []
        mine = [
            e for e in (manifest or {"states": []})["states"] if e.get("run") in self.fingerprints
        ]
        for e in reversed(mine):
            try:
                return load_tree(os.path.join(self.folder, e["file"]), like)
            except (ValueError, FileNotFoundError) as err:
                errors.append(str(err))
        if errors:
            raise RunFolderError("no training state could be loaded: " + "; ".join(errors))
        return None


def check_model_file(folder: str, file: str, *, finished: bool) -> None:
    """Whether checkpoints/`file` is the model of the newest committed training state (its SHA-256 in the manifest).

    It may lag one epoch behind only in a run killed while saving: then a warning (the model is a complete,
    validated one, and `--resume` rewrites it). In a finished run (`finished`: summary.json was written after the
    last commit) a mismatch means the file was replaced: a ValueError.
    """
    manifest = read_manifest(folder)
    record = (manifest or {}).get("models", {}).get(file)
    if record is None or sha256_file(os.path.join(folder, file)) == record["sha256"]:
        return
    path = os.path.join(folder, file)
    if finished:
        raise RunFolderError(
            f"{path} is not the model of the run's final training state (epoch {record['epoch']}, by the "
            "SHA-256 in manifest.json): it was replaced after training"
        )
    warnings.warn(
        f"{path} lags behind the run's newest training state (epoch {record['epoch']}): the run was "
        "interrupted while saving; `lagnet train CONFIG --out RUN --resume` brings it up to date",
        stacklevel=3,
    )

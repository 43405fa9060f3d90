"""The training states of a run directory: the last few epochs, each written atomically, and a manifest."""

import json
import os

from .files import load_tree, save_json, save_tree


class Checkpoints:
    """The training states of the last `keep` epochs, each written atomically, plus a manifest naming them.

    A crash (even `kill -9`) at any moment leaves the manifest pointing at complete files: a state file is
    renamed into place before the manifest that names it is replaced.
    """

    def __init__(self, folder: str, keep: int):
        self.folder, self.keep = folder, keep
        self.manifest = os.path.join(folder, "manifest.json")

    def entries(self) -> list[dict]:
        try:
            with open(self.manifest) as f:
                return json.load(f)["states"]
        except (FileNotFoundError, json.JSONDecodeError, KeyError):
            return []

    def save(self, state, epoch: int) -> None:
        name = f"state-{epoch:06d}.eqx"
        save_tree(os.path.join(self.folder, name), state)
        entries = [e for e in self.entries() if e["file"] != name] + [
            {"file": name, "epoch": epoch}
        ]
        old, entries = entries[: -self.keep], entries[-self.keep :]
        save_json(self.manifest, {"states": entries, "latest": name})
        for e in old:
            path = os.path.join(self.folder, e["file"])
            if os.path.exists(path):
                os.unlink(path)

    def load_latest(self, like):
        """The newest loadable state (falling back to older ones if a file is damaged), or None."""
        errors = []
        for e in reversed(self.entries()):
            try:
                return load_tree(os.path.join(self.folder, e["file"]), like)
            except (ValueError, FileNotFoundError) as err:
                errors.append(str(err))
        if errors:
            raise ValueError("no training state could be loaded: " + "; ".join(errors))
        return None

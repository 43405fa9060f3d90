"""Which defaults a config relies on, and which of them have changed since a run was made with it.

A config file names some keys and leaves the rest to lagnet's defaults; a run's config.yaml records every key as
it was resolved. When a default changes between versions, the same file means something else: retraining it
gives another model without a word. `changed_defaults` lists the keys the file leaves to a default whose value
now differs from what the run resolved.
"""

import os

from .files import _read_yaml, apply_override, load_config


def flatten(tree, prefix: str = "") -> dict:
    """A nested dict as {"a.b.c": value}; lists and scalars are values."""
    if not isinstance(tree, dict):
        return {prefix: tree}
    out = {}
    for k, v in tree.items():
        out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    return out


def _set_by_user(user: dict, path: str) -> bool:
    """Whether the file sets `path` or a section above it to a non-mapping value (a whole value given)."""
    node = user
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
        if not isinstance(node, dict):
            return True
    return True


def changed_defaults(config_path: str, run_dir: str, overrides: list[str] = ()) -> list[dict]:
    """The keys `config_path` (with `overrides`) leaves to defaults whose resolved value in the run `run_dir`
    (its config.yaml) differs from today's: [{"key", "run", "now"}], by key. A key the run lacks (added since)
    is listed with `run: None` when its default does something (is not None, False or empty)."""
    user = _read_yaml(os.fspath(config_path)) or {}
    for item in overrides:
        apply_override(user, item, source=os.fspath(config_path))
    now = flatten(load_config(config_path, list(overrides)).to_dict())
    then = flatten(_read_yaml(os.path.join(run_dir, "config.yaml")) or {})
    changed = []
    for key, value in sorted(now.items()):
        if _set_by_user(user, key):
            continue
        if key in then and then[key] != value:
            changed.append({"key": key, "run": then[key], "now": value})
        elif key not in then and value not in (None, False, [], {}, 0):
            changed.append({"key": key, "run": None, "now": value})
    return changed


def describe_changes(changed: list[dict], run_dir: str) -> str:
    """The changes as lines: `key: run's value → now`."""
    if not changed:
        return f"no default this config relies on differs from the run {run_dir}"
    lines = [
        f"defaults that differ from the run {run_dir} (the config file does not set these keys):"
    ]
    lines += [f"  {c['key']}: {c['run']!r} → {c['now']!r}" for c in changed]
    return "\n".join(lines)

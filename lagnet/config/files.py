"""Reading configs: YAML (`yaml.safe_load` only), `key.path=value` overrides, paths relative to the file."""

import dataclasses
import os

import yaml

from .schema import Config, ConfigError, validate
from .sources import is_file, split_source


def load_config(path: str | os.PathLike, overrides: list[str] = ()) -> Config:
    """Read a YAML config, apply `key.path=value` overrides, validate.

    Data paths and a system's source file are resolved relative to the config file's folder.
    """
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            user = yaml.safe_load(f)
    except FileNotFoundError:
        raise FileNotFoundError(f"config file not found: {path}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e)
        raise ConfigError(f"{path}: YAML syntax error{line}: {problem}") from None
    user = {} if user is None else user
    for item in overrides:
        apply_override(user, item, source=path)
    config = validate(user, source=path)
    base = os.path.dirname(os.path.abspath(path))

    def resolve(files):
        return [p if os.path.isabs(p) else os.path.normpath(os.path.join(base, p)) for p in files]

    data = dataclasses.replace(
        config.data,
        train=resolve(config.data.train),
        test=resolve(config.data.test),
        validation=resolve(config.data.validation),
    )
    system = config.system
    if system.source is not None:
        location, function = split_source(system.source)
        if is_file(location):
            location = resolve([location])[0]
        source = location if function is None else f"{location}:{function}"
        system = dataclasses.replace(system, source=source)
    return dataclasses.replace(config, data=data, system=system)


def apply_override(user: dict, item: str, *, source: str = "--set") -> None:
    """`training.epochs=10` → user["training"]["epochs"] = 10 (the value parsed as YAML)."""
    if "=" not in item:
        raise ConfigError(f"--set expects key.path=value, got {item!r}")
    if not isinstance(user, dict):
        raise ConfigError(
            f"{source}: the config must be a mapping of keys to values, got {type(user).__name__}"
        )
    key, raw = item.split("=", 1)
    value = yaml.safe_load(raw)
    node = user
    parts = key.strip().split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"--set {key}: {part!r} is not a section")
    node[parts[-1]] = value

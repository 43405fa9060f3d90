"""Reading configs: YAML (`yaml.SafeLoader` only, a key given twice refused), `key.path=value` overrides, paths
relative to the file."""

import dataclasses
import os
import re
import typing
import warnings
from collections.abc import Hashable

import yaml

from .bounded import MAX_YAML_BYTES, BoundedComposer, TooLarge, read_bytes
from .schema import Config, ConfigError, drop_other_types, validate
from .sources import is_file, split_source


def load_config(
    path: str | os.PathLike, overrides: list[str] = (), *, saved: bool = False
) -> Config:
    """Read a YAML config, apply `key.path=value` overrides, validate.

    Data paths, a system's source file and `model.start_from` are resolved relative to the config file's folder.
    `saved`: the file is a run folder's config.yaml, written by lagnet; one written before model sections were
    per type holds every model key, and those its type does not read are dropped instead of refused.
    """
    path = os.fspath(path)
    user = _read_yaml(path)
    user = {} if user is None else user
    if saved and isinstance(user, dict) and isinstance(user.get("model"), dict):
        drop_other_types(user["model"], user["model"].get("type", "pinode"))
    for item in overrides:
        apply_override(user, item, source=path)
    check_printable(user, source=path)
    if isinstance(user, dict) and isinstance(user.get("model"), dict):
        # A file whose model.type was changed (pinode → pure_ode) keeps keys only the old type reads: dropped
        # with a word, as `--set model.type=` drops them, rather than refused one at a time.
        kind = user["model"].get("type", "pinode")
        dropped = drop_other_types(user["model"], kind)
        if dropped and not saved:
            warnings.warn(
                f"{path}: model.type is {kind}, which does not read model.{', model.'.join(dropped)}: "
                "ignored (remove them from the file to silence this)",
                stacklevel=2,
            )
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
    model = config.model
    if model.setting("start_from") is not None:
        model = dataclasses.replace(model, start_from=resolve([model.start_from])[0])
    system = config.system
    if system.source is not None:
        location, function = split_source(system.source)
        if is_file(location):
            location = resolve([location])[0]
        source = location if function is None else f"{location}:{function}"
        system = dataclasses.replace(system, source=source)
    return dataclasses.replace(config, data=data, system=system, model=model)


# Unicode's control characters (category Cc): C0, DEL and C1.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def control_character(text: str) -> str | None:
    """The first control character in `text` (a null byte, a newline, an escape, …), or None."""
    found = _CONTROL.search(text)
    return None if found is None else found.group()


def check_printable(value, key: str = "", *, source: str = "config") -> None:
    """Refuse a control character in any key or string of a config (`ConfigError` naming the key path and the
    character): names become folders and file names, where the OS would refuse or mangle them."""
    # Iterative, and each list or mapping once: aliases may repeat one many times (lagnet.config.bounded).
    seen: set[int] = set()
    stack = [(key, value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, dict | list | tuple):
            if id(item) in seen:
                continue
            seen.add(id(item))
            if isinstance(item, dict):
                for k, v in reversed(item.items()):
                    at = f"{path}.{k}" if path else str(k)
                    stack.append((at, v))
                    if isinstance(k, str):
                        stack.append((at, k))  # popped first: a key before its value
            else:
                stack.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(item))))
        elif isinstance(item, str) and (c := control_character(item)) is not None:
            raise ConfigError(
                f"{path or 'the config'}: {item!r} contains the control character {c!r} (U+{ord(c):04X}) at "
                f"position {item.index(c)} ({source}); names and paths must be printable"
            )


def apply_override(user: dict, item: str, *, source: str = "--set") -> None:
    """`training.epochs=10` → user["training"]["epochs"] = 10 (the value parsed as YAML)."""
    if "=" not in item:
        raise ConfigError(f"--set expects key.path=value, got {item!r}")
    if not isinstance(user, dict):
        raise ConfigError(
            f"{source}: the config must be a mapping of keys to values, got {type(user).__name__}"
        )
    key, raw = item.split("=", 1)
    try:
        value = yaml.load(raw, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as e:
        raise ConfigError(
            f"--set {item!r}: the value {raw!r} is not valid YAML ({_yaml_problem(e)})"
        ) from None
    node = user
    parts = key.strip().split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"--set {key}: {part!r} is not a section")
    node[parts[-1]] = value
    if parts == ["model", "type"]:
        # Another model type (`--set model.type=pure_ode` on a PINODE config): the file's keys of the old type
        # that the new one does not read are dropped.
        drop_other_types(node, value)


@typing.no_type_check  # called per mapping of a document (see BoundedComposer)
class _UniqueKeyLoader(BoundedComposer, yaml.SafeLoader):
    """`yaml.SafeLoader` that refuses a key given twice in one mapping, and documents beyond the bounds of
    `lagnet.config.bounded` (depth, size, aliases expanded).

    PyYAML keeps the last of duplicate keys, so a second `training:` section would silently replace the first.
    """

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *anchor` merges are YAML's own way of repeating keys
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, Hashable):
                continue  # SafeLoader's own error names it
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} is given twice in one mapping", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _yaml_problem(e: yaml.YAMLError) -> str:
    """A YAML error as `at line L, column C: problem` (lines of the parsed text)."""
    mark = getattr(e, "problem_mark", None)
    line = f"at line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return line + (getattr(e, "problem", None) or str(e))


def _read_yaml(path: str):
    """The YAML document in `path` (`safe_load` semantics, duplicate keys refused); errors name the file."""
    if os.path.isdir(path):
        raise ConfigError(f"{path}: is a directory, expected a YAML config file")
    try:
        text = read_bytes(path, MAX_YAML_BYTES, "a config").decode("utf-8-sig")
        return yaml.load(text, Loader=_UniqueKeyLoader)
    except FileNotFoundError:
        raise FileNotFoundError(f"config file not found: {path}") from None
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"{path}: not a text (UTF-8) file: byte 0x{e.object[e.start : e.start + 1].hex()} at position "
            f"{e.start} cannot be decoded; expected a YAML config"
        ) from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot be read: {e.strerror or e}") from None
    except ValueError as e:
        raise ConfigError(str(e)) from None
    except TooLarge as e:
        raise ConfigError(f"{path}: refused {_yaml_problem(e)}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: YAML syntax error {_yaml_problem(e)}") from None

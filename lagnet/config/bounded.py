"""Reading the YAML and JSON files lagnet may receive from someone else (configs, a run folder's config.yaml,
run.json, summary.json, checkpoint manifests, export metadata), bounded in time, memory and depth.

Each reader refuses, with a `ValueError` naming the file, a file larger than its limit, nesting deeper than
`MAX_DEPTH`, and (YAML) more than `MAX_NODES` values as written or `MAX_EXPANDED` once its aliases are expanded,
or an alias that refers to a value containing it. Aliases (`&anchor`, `*anchor`, `<<: *anchor` merges) stay
allowed: the expanded size is counted once per node, so a nested alias "bomb" is refused in milliseconds instead of
being walked path by path.
"""

import json
import os
import typing

import yaml

from .._errors import FileContentError

# PyYAML's pure-Python parser reads some 20 000 values a second on a fast core: these keep any config or run
# file well under a second (a shipped config has under 200 values and 4 KiB).
MAX_YAML_BYTES = 128 * 1024
MAX_NODES = 5_000
MAX_EXPANDED = 50_000
MAX_EXPANDED_CHARS = 10_000_000
MAX_DEPTH = 64
# JSON is parsed in C (some 100 MB/s): run.json, summary.json and metrics.json are far smaller.
MAX_JSON_BYTES = 16 * 1024 * 1024


class TooLarge(yaml.MarkedYAMLError):
    """A YAML document beyond the bounds above, or with a value Python cannot read (a YAML error, so it is
    reported with its line and column)."""


def read_bytes(path: str, limit: int, what: str) -> bytes:
    """The bytes of `path`, refused if more than `limit` (read no further: /dev/zero or a huge file cost
    nothing)."""
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise FileContentError(
            f"{path}: larger than {limit // 1024} KiB, the most lagnet reads as {what}; "
            "is it the right file?"
        )
    return data


# Called per value of a document: the test suite's run-time type checker (jaxtyping's import hook) would
# cost more than the parse.
@typing.no_type_check
class BoundedComposer:
    """A mixin for a PyYAML loader: the node graph is refused past the bounds above while it is composed (depth,
    values as written) and before it is constructed (recursive aliases, expanded size)."""

    def compose_document(self):
        self._nodes, self._depth = 0, 0
        return super().compose_document()

    def compose_node(self, parent, index):
        self._nodes += 1
        self._depth += 1
        try:
            if self._nodes > MAX_NODES:
                self._refuse(f"more than {MAX_NODES} values")
            if self._depth > MAX_DEPTH:
                self._refuse(f"nested deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def _refuse(self, problem: str, mark=None, bound: bool = True):
        mark = mark or self.peek_event().start_mark
        raise TooLarge(None, None, problem + (" (the most lagnet reads)" if bound else ""), mark)

    def construct_document(self, node):
        self._check_expanded(node)
        return super().construct_document(node)

    def _check_expanded(self, root) -> None:
        # Each node is measured once: an alias is the same node object as its anchor, so a node met again is
        # either measured (its sizes memoised) or an ancestor being measured (a recursive alias). Aliases point
        # back in document order only, so this recursion is as deep as the document's nesting (<= MAX_DEPTH).
        sizes: dict[int, tuple[int, int, int]] = {}
        active: set[int] = set()

        def measure(node) -> tuple[int, int, int]:
            key = id(node)
            if key in sizes:
                return sizes[key]
            if key in active:
                self._refuse(
                    "an alias refers to a value that contains it (a recursive alias)",
                    node.start_mark,
                    bound=False,
                )
            if isinstance(node, yaml.ScalarNode):
                sizes[key] = (1, 1, len(node.value))
                return sizes[key]
            active.add(key)
            children = (
                [c for pair in node.value for c in pair]
                if isinstance(node, yaml.MappingNode)
                else node.value
            )
            count, depth, chars = 1, 1, 0
            for child in children:
                c, d, n = measure(child)
                count, depth, chars = count + c, max(depth, d + 1), chars + n
                if count > MAX_EXPANDED:
                    self._refuse(
                        f"its aliases expand to more than {MAX_EXPANDED} values", node.start_mark
                    )
                if chars > MAX_EXPANDED_CHARS:
                    self._refuse(
                        f"its aliases expand to more than {MAX_EXPANDED_CHARS} characters",
                        node.start_mark,
                    )
                if depth > MAX_DEPTH:
                    self._refuse(
                        f"its aliases nest deeper than {MAX_DEPTH} levels", node.start_mark
                    )
            active.discard(key)
            sizes[key] = (count, depth, chars)
            return sizes[key]

        if root is not None:
            measure(root)

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as e:
            # A scalar Python cannot read as its type: an integer of more than 4300 digits, 2001-02-30.
            value = node.value if isinstance(node.value, str) else ""
            shown = value if len(value) <= 20 else f"{value[:20]}… ({len(value)} characters)"
            why = str(e).split(";")[0]  # not Python's advice to raise its digit limit
            raise TooLarge(
                None,
                None,
                f"{shown} cannot be read as {node.tag.rsplit(':', 1)[-1]} ({why})",
                node.start_mark,
            ) from None


def _check_depth(value, where: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH (iteratively: a deep value must not exhaust the stack here)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise FileContentError(
                f"{where}: nested deeper than {MAX_DEPTH} levels (the most lagnet reads)"
            )
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)


def parse_json(data: bytes | str, where: str):
    """JSON text or bytes (UTF-8) as Python values; a `ValueError` naming `where` for anything else: not UTF-8,
    not JSON, nested deeper than MAX_DEPTH, a number Python cannot read."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        value = json.loads(text)
    except UnicodeDecodeError as e:
        raise FileContentError(
            f"{where}: not a UTF-8 text file ({e.reason} at byte {e.start})"
        ) from None
    except RecursionError:
        raise FileContentError(
            f"{where}: nested deeper than {MAX_DEPTH} levels (the most lagnet reads)"
        ) from None
    except ValueError as e:
        # json.JSONDecodeError, or an integer of more than 4300 digits.
        raise FileContentError(f"{where}: not valid JSON ({e})") from None
    _check_depth(value, where)
    return value


def read_json(path: str | os.PathLike, what: str = "a JSON file"):
    """The JSON file at `path`, bounded (`MAX_JSON_BYTES`, `MAX_DEPTH`); `FileNotFoundError` if missing,
    `ValueError` naming the file for anything else."""
    path = os.fspath(path)
    try:
        data = read_bytes(path, MAX_JSON_BYTES, what)
    except (FileNotFoundError, ValueError):
        raise
    except OSError as e:
        raise FileContentError(f"{path}: cannot be read: {e.strerror or e}") from None
    return parse_json(data, path)

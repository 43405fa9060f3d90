"""mkdocs hook: the reference pages that are generated from the code at build time, so they cannot go stale.

A page holds a marker comment, followed by the generated Markdown (filled at every build; the config and CLI
references are committed filled, so that they read in the repository too, and `python docs/_hooks/generated.py`
rewrites them; a test fails when they are stale):

- `<!-- lagnet:config-reference -->`: every config key from the typed schema (`lagnet.config.schema`): its
  default, the YAML types it accepts and its meaning, one table per section;
- `<!-- lagnet:cli-reference -->`: every `lagnet` subcommand's help, from `lagnet.cli.build_parser`;
- `<!-- lagnet:longest-functions -->`: the ten longest functions in lagnet/ (`tools/longest_functions.py`).

The figures the experiments write (`experiments/out/*.png`) are served beside the results pages, which include
the experiments' Markdown as written (with links relative to `experiments/out/`).
"""

import argparse
import dataclasses
from pathlib import Path

import yaml

CONFIG_MARKER = "<!-- lagnet:config-reference -->"
CLI_MARKER = "<!-- lagnet:cli-reference -->"
LONGEST_MARKER = "<!-- lagnet:longest-functions -->"
ROOT = Path(__file__).resolve().parents[2]
FIGURES = ROOT / "experiments" / "out"

_TYPE_NAMES = {
    bool: "true / false",
    int: "integer",
    float: "number",
    str: "text",
    list: "list",
    tuple: "list",
    dict: "mapping",
    type(None): "null",
}


def _cell(text: str) -> str:
    """Text that is safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def _yaml_value(value) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
    return text.removesuffix("...").strip()


def _accepts(meta) -> str:
    names = []
    for kind in meta["types"]:
        name = _TYPE_NAMES.get(kind, kind.__name__)
        if name not in names:
            names.append(name)
    if meta.get("nullable") and "null" not in names:
        names.append("null")
    return ", ".join(names)


def config_reference(cls=None, prefix: str = "", readers=None) -> str:
    """One table per section of the config: key, default, accepted YAML types, meaning.

    The model section is a tagged union on `model.type`: its table has a column for the model types that read
    each key (`readers(name)`), and its subsections name theirs."""
    from lagnet.config import schema

    cls = cls or schema.Config
    union = cls is schema.ModelConfig
    fields = schema.model_fields() if union else {f.name: f for f in dataclasses.fields(cls)}
    readers = schema.model_types_reading if union else readers
    rows, sections = [], []
    for name, field in fields.items():
        key = f"{prefix}{name}"
        types = "" if readers is None else f"{', '.join(readers(name))} | "
        if dataclasses.is_dataclass(field.type):
            note = "" if readers is None else f"Read by model types {', '.join(readers(name))}.\n\n"
            sections.append(note + config_reference(field.type, key + "."))
            continue
        meta = field.metadata
        default = _yaml_value(field.default_factory())
        rows.append(
            f"| `{key}` | `{_cell(default)}` | {_cell(_accepts(meta))} | {types}{_cell(meta['doc'])} |"
        )
    title = prefix.rstrip(".") or "top level"
    out = []
    if rows:
        head = f"| key | default | accepts | {'model types | ' if union else ''}meaning |"
        out += [
            f"### `{title}`" if prefix else "### Top level",
            "",
            *([_UNION_NOTE, ""] if union else []),
            head,
            "| " + " | ".join(["---"] * (head.count("|") - 1)) + " |",
            *rows,
            "",
        ]
    return "\n".join(out + sections)


_UNION_NOTE = (
    "The model section depends on `model.type`: each type reads only its own keys (`MODEL_SECTIONS` in "
    "`lagnet/config/schema.py`), and a key of another type is an error naming the types that read it."
)


def _subcommands(parser: argparse.ArgumentParser):
    for action in parser._actions:  # argparse keeps its subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def cli_reference() -> str:
    """`lagnet --help` and each subcommand's help (nested subcommands too), as the parser prints them."""
    from lagnet.cli import build_parser

    parser = build_parser()
    out = ["## `lagnet`", "", "```text", parser.format_help().rstrip(), "```", ""]

    def walk(sub: argparse.ArgumentParser, name: str, level: int) -> None:
        out.extend(
            [f"{'#' * level} `{name}`", "", "```text", sub.format_help().rstrip(), "```", ""]
        )
        for child_name, child in _subcommands(sub):
            walk(child, f"{name} {child_name}", level + 1)

    for name, sub in _subcommands(parser):
        walk(sub, f"lagnet {name}", 2)
    return "\n".join(out)


def _help_width() -> None:
    # argparse wraps to the terminal's width: the pages must not depend on where they were built.
    import os

    os.environ["COLUMNS"] = "100"


def longest_functions(count: int = 10) -> str:
    """The `count` longest functions in lagnet/ as a Markdown table (function, file, lines)."""
    import runpy

    tool = runpy.run_path(str(ROOT / "tools" / "longest_functions.py"))
    rows = [f"| `{name}` | `{path}` | {lines} |" for lines, name, path in tool["lengths"]()[:count]]
    return "\n".join(["| function | file | lines |", "| --- | --- | --- |", *rows])


def _end(marker: str) -> str:
    return marker.replace("<!-- ", "<!-- end of ")


def fill(markdown: str, marker: str, content: str) -> str:
    """`markdown` with the section after `marker` (up to its end marker, or the marker alone) replaced by
    `content` between the marker and its end marker."""
    head, found, rest = markdown.partition(marker)
    if not found:
        return markdown
    _, ended, tail = rest.partition(_end(marker))
    return head + marker + "\n" + content.rstrip() + "\n" + _end(marker) + (tail if ended else rest)


def generated(marker: str) -> str:
    """The Markdown a committed reference page holds between `marker` and its end marker."""
    if marker == CLI_MARKER:
        _help_width()
        return cli_reference()
    return config_reference()


# The references committed in the repository (readable there), filled again at every build; a test fails when
# the committed text is stale: `python docs/_hooks/generated.py` rewrites them.
COMMITTED = {
    CONFIG_MARKER: ROOT / "docs/reference/config.md",
    CLI_MARKER: ROOT / "docs/reference/cli.md",
}


def on_page_markdown(markdown: str, page, config, files) -> str:
    for marker in COMMITTED:
        if marker in markdown:
            markdown = fill(markdown, marker, generated(marker))
    if LONGEST_MARKER in markdown:
        markdown = markdown.replace(LONGEST_MARKER, longest_functions())
    return markdown


def write_references() -> None:
    """Rewrite the committed reference pages from the code."""
    for marker, path in COMMITTED.items():
        path.write_text(
            fill(path.read_text(encoding="utf-8"), marker, generated(marker)), encoding="utf-8"
        )
        print(f"wrote {path.relative_to(ROOT)}")


def on_files(files, config):
    from mkdocs.structure.files import File

    for figure in sorted(FIGURES.glob("*.png")):
        files.append(File.generated(config, f"results/{figure.name}", abs_src_path=str(figure)))
    return files


if __name__ == "__main__":
    write_references()

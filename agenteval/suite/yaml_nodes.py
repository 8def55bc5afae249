"""YAML to plain data while remembering where every key came from.

PyYAML builds a node tree that knows line numbers; walking it ourselves gives plain Python data
plus a map from key path to line, and lets us reject duplicate keys (which PyYAML silently
overwrites). Dates become ISO strings so data stays JSON-shaped, and only true/false are
booleans (YAML 1.2), so a country code `NO` or an answer `yes` stays the string it looks like.

Untrusted YAML is bounded: nesting deeper than MAX_DEPTH is refused while parsing, and aliases
may not expand to more than ALIAS_BUDGET values beyond the size of the document itself (a few
hundred bytes of nested aliases can otherwise expand to billions). Merge keys (`<<: *base`)
work as in YAML 1.1: the merged mapping's keys, overridden by the keys written beside them.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any

import yaml

KeyPath = tuple[str | int, ...]
Lines = dict[KeyPath, int]
MAX_DEPTH = 100
ALIAS_BUDGET = 100_000
_BOOL = "tag:yaml.org,2002:bool"
_MERGE = "tag:yaml.org,2002:merge"


class YamlSyntaxError(Exception):
    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


class YamlTooLarge(YamlSyntaxError):
    """Readable YAML that is refused for its size: nested past MAX_DEPTH, or aliases past the budget."""


class _Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 booleans (only true/false) and a bound on nesting while composing."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.depth = 0
        self.node_count = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            return super().compose_node(parent, index)
        self.depth += 1
        self.node_count += 1
        if self.depth > MAX_DEPTH:
            line = self.peek_event().start_mark.line + 1
            raise YamlTooLarge(f"YAML nested deeper than {MAX_DEPTH} levels", line)
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


_Loader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != _BOOL]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))


def decode_utf8(data: bytes) -> str:
    """The text of a file, or YamlSyntaxError saying plainly where it is not UTF-8 (a BOM is dropped)."""
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise YamlSyntaxError(not_utf8(data, exc.start), data.count(b"\n", 0, exc.start) + 1) from None


def not_utf8(data: bytes, start: int) -> str:
    column = start - (data.rfind(b"\n", 0, start) + 1) + 1
    return f"not valid UTF-8 (byte 0x{data[start]:02x} at column {column}); save the file as UTF-8"


def load_yaml(text: str) -> tuple[Any, Lines, list[tuple[int, KeyPath, str]]]:
    """(data, line of each key path, duplicate-key problems as (line, path, message))."""
    try:
        loader = _Loader(text)
    except yaml.reader.ReaderError as exc:  # a control character: the reader checks the whole text first
        line = text.count("\n", 0, exc.position) + 1
        raise YamlSyntaxError(f"invalid YAML: character #x{exc.character:04x} is not allowed (a control character)", line) from None
    try:
        root = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise YamlSyntaxError(_yaml_message(exc), mark.line + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(str(exc), None) from None
    finally:
        loader.dispose()
    lines: Lines = {(): 1}
    duplicates: list[tuple[int, KeyPath, str]] = []
    if root is None:
        return None, lines, duplicates
    walk = _Walk(loader, lines, duplicates, budget=loader.node_count + max(ALIAS_BUDGET, loader.node_count))
    try:
        return walk.node(root, (), 1, True), lines, duplicates
    except yaml.MarkedYAMLError as exc:  # a value no constructor reads: an unknown `!tag`, a malformed timestamp
        mark = exc.problem_mark or exc.context_mark
        raise YamlSyntaxError(_yaml_message(exc), mark.line + 1 if mark else None) from None


def _yaml_message(exc: yaml.MarkedYAMLError) -> str:
    parts = [part for part in (exc.context, exc.problem) if part]
    hint = " (in double quotes a backslash starts an escape: write a regex in single quotes, '\\d+')" \
        if "unknown escape character" in str(exc.problem) else ""
    return "invalid YAML: " + ", ".join(parts) + hint


class _Walk:
    """One walk over a composed document. Collections met a second time come through an alias:
    their values count against the budget, and their lines are not recorded (a problem inside
    one points at the line where the alias is used)."""

    def __init__(self, loader: _Loader, lines: Lines, duplicates: list, budget: int) -> None:
        self.loader = loader
        self.lines = lines
        self.duplicates = duplicates
        self.left = budget
        self.budget = budget
        self.seen: set[int] = set()

    def node(self, node: yaml.Node, path: KeyPath, line: int, record: bool) -> Any:
        self.left -= 1
        if self.left < 0:
            raise YamlTooLarge(
                f"YAML aliases expand to more than {self.budget:,} values; write the values out or use fewer nested aliases",
                line,
            )
        if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
            record = record and id(node) not in self.seen
            self.seen.add(id(node))
            if isinstance(node, yaml.MappingNode):
                return self.mapping(node, path, line, record)
            items = []
            for index, item in enumerate(node.value):
                item_line = item.start_mark.line + 1 if record else line
                if record:
                    self.lines[path + (index,)] = item_line
                items.append(self.node(item, path + (index,), item_line, record))
            return items
        return _scalar(self.loader, node)

    def mapping(self, node: yaml.MappingNode, path: KeyPath, line: int, record: bool) -> dict[Any, Any]:
        mapping: dict[Any, Any] = {}
        first_line: dict[Any, int] = {}
        merged: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key_line = key_node.start_mark.line + 1 if record else line
            if key_node.tag == _MERGE:
                if "<<" in first_line:
                    self.duplicates.append((key_line, path, f"duplicate merge key `<<` (first at line {first_line['<<']})"))
                    continue
                first_line["<<"] = key_line
                self.merge(value_node, path, key_line, merged)
                continue
            key = _scalar(self.loader, key_node)
            if isinstance(key, (dict, list)):
                self.duplicates.append((key_line, path, "a mapping key must be a plain value"))
                continue
            if key in first_line:
                self.duplicates.append((key_line, path + (key,), f"duplicate key {key!r} (first at line {first_line[key]})"))
                continue
            first_line[key] = key_line
            if record:
                self.lines[path + (key,)] = key_line
            mapping[key] = self.node(value_node, path + (key,), key_line, record)
        for key, value in merged.items():
            if key not in mapping:
                mapping[key] = value
                if record:
                    self.lines.setdefault(path + (key,), first_line["<<"])
        return mapping

    def merge(self, value_node: yaml.Node, path: KeyPath, line: int, merged: dict[Any, Any]) -> None:
        """`<<: *base` or `<<: [*a, *b]`: keys of earlier mappings win over later ones."""
        sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
        for source in sources:
            if not isinstance(source, yaml.MappingNode):
                self.duplicates.append((line, path, "a merge key `<<` takes a mapping or a list of mappings"))
                return
            for key, value in self.node(source, path, line, False).items():
                merged.setdefault(key, value)


def _scalar(loader: _Loader, node: yaml.Node) -> Any:
    try:
        if not isinstance(node, yaml.ScalarNode):
            return loader.construct_object(node, deep=True)
        value = loader.construct_object(node)
    except yaml.MarkedYAMLError:
        raise  # load_yaml gives it its line
    except (ValueError, TypeError, AttributeError, OverflowError):  # PyYAML's constructors on a malformed `!!timestamp`, `!!int`...
        shown = node.value if isinstance(node.value, str) else "this value"
        raise YamlSyntaxError(f"invalid YAML: {shown[:80]!r} cannot be read as {node.tag}", node.start_mark.line + 1) from None
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    return value

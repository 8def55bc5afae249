"""YAML to plain data while remembering where every key came from.

PyYAML builds a node tree that knows line numbers; walking it ourselves gives plain Python data
plus a map from key path to line, and lets us reject duplicate keys (which PyYAML silently
overwrites). Dates become ISO strings so data stays JSON-shaped, and only true/false are
booleans (YAML 1.2), so a country code `NO` or an answer `yes` stays the string it looks like.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any

import yaml

KeyPath = tuple[str | int, ...]
Lines = dict[KeyPath, int]
_BOOL = "tag:yaml.org,2002:bool"


class _Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 booleans: only true/false. `NO`, `yes`, `on`, `off` stay strings."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != _BOOL]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))


class YamlSyntaxError(Exception):
    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


def load_yaml(text: str) -> tuple[Any, Lines, list[tuple[int, KeyPath, str]]]:
    """(data, line of each key path, duplicate-key problems as (line, path, message))."""
    loader = _Loader(text)
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
    return _walk(loader, root, (), lines, duplicates), lines, duplicates


def _yaml_message(exc: yaml.MarkedYAMLError) -> str:
    parts = [part for part in (exc.context, exc.problem) if part]
    return "invalid YAML: " + ", ".join(parts)


def _walk(loader: _Loader, node: yaml.Node, path: KeyPath, lines: Lines, duplicates: list) -> Any:
    if isinstance(node, yaml.MappingNode):
        mapping: dict[Any, Any] = {}
        first_line: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = _scalar(loader, key_node)
            line = key_node.start_mark.line + 1
            if isinstance(key, (dict, list)):
                duplicates.append((line, path, "a mapping key must be a plain value"))
                continue
            if key in mapping:
                duplicates.append((line, path + (key,), f"duplicate key {key!r} (first at line {first_line[key]})"))
                continue
            first_line[key] = line
            lines[path + (key,)] = line
            mapping[key] = _walk(loader, value_node, path + (key,), lines, duplicates)
        return mapping
    if isinstance(node, yaml.SequenceNode):
        items = []
        for index, item in enumerate(node.value):
            lines[path + (index,)] = item.start_mark.line + 1
            items.append(_walk(loader, item, path + (index,), lines, duplicates))
        return items
    return _scalar(loader, node)


def _scalar(loader: _Loader, node: yaml.Node) -> Any:
    if not isinstance(node, yaml.ScalarNode):
        return loader.construct_object(node, deep=True)
    value = loader.construct_object(node)
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    return value

"""`--set KEY=VALUE`: change one key of a suite from the command line before it is validated
(`--set target.model=gpt-4.1-mini`, `--set "targets['gpt-4.1'].temperature=0.2"`,
`--set evaluators[0].threshold=0.9`). The value is read as YAML, so numbers, booleans and lists
keep their types; the suite is then validated as if the file said it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agenteval.paths import compile_path


class OverrideError(ValueError):
    """A `--set` that cannot be applied: no `=`, a malformed key, or a key inside a value that is
    not a mapping or a list."""


def parse_override(text: str) -> tuple[tuple[Any, ...], Any]:
    """(key path, value) of one `KEY=VALUE`. VALUE is read as a suite file is (agenteval.suite.yaml_nodes:
    aliases and nesting bounded, duplicate keys refused); text that is not YAML is the text itself.
    Raises OverrideError."""
    from agenteval.suite.yaml_nodes import YamlSyntaxError, YamlTooLarge, load_yaml

    key, equals, value = text.partition("=")
    if not equals or not key.strip():
        raise OverrideError(f"--set {text}: give KEY=VALUE, e.g. --set target.model=gpt-4.1-mini")
    path = compile_path(key.strip())
    if path is None or not path:
        raise OverrideError(f"--set {text}: {key.strip()!r} is not a key path (write a.b, a[0].b or a['x.y'])")
    if not value.strip():
        return path, value
    try:
        parsed, _, duplicates = load_yaml(value)
    except YamlTooLarge as exc:
        raise OverrideError(f"--set {key.strip()}=...: {exc}") from None
    except YamlSyntaxError:
        return path, value  # not YAML: the text itself
    if duplicates:
        raise OverrideError(f"--set {key.strip()}=...: {duplicates[0][2]}")
    return path, parsed


def apply_overrides(data: dict[Any, Any], overrides: Iterable[str]) -> dict[Any, Any]:
    """A copy of `data` with each override applied in order (only the containers on each key's
    way are copied). Raises OverrideError."""
    result = dict(data)
    for text in overrides:
        path, value = parse_override(text)
        node: Any = result
        for depth, key in enumerate(path[:-1]):
            child = _child(node, key)
            if child is None:
                child = {}
            elif isinstance(child, dict):
                child = dict(child)
            elif isinstance(child, list):
                child = list(child)
            else:
                shown = ".".join(map(str, path[: depth + 1]))
                raise OverrideError(f"--set {text}: `{shown}` is a {type(child).__name__}, not a mapping or a list")
            _put(node, key, child, text)
            node = child
        _put(node, path[-1], value, text)
    return result


def _child(node: Any, key: Any) -> Any:
    if isinstance(node, dict):
        return node.get(key)
    index = _index(key)
    return node[index] if index is not None and -len(node) <= index < len(node) else None


def _put(node: Any, key: Any, value: Any, text: str) -> None:
    if isinstance(node, dict):
        node[key] = value
        return
    index = _index(key)
    if index is None or not -len(node) <= index < len(node):
        raise OverrideError(f"--set {text}: no item {key} in a list of {len(node)}")
    node[index] = value


def _index(key: Any) -> int | None:
    if isinstance(key, int):
        return key
    return int(key) if isinstance(key, str) and key.lstrip("-").isdigit() else None

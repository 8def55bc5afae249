"""Suite problems: where (file:line, key path) and what, in words a user can act on.

pydantic's errors carry a location inside the model (with union tags mixed in); we map them back
onto the user's data, find the line, and rewrite the message with a did-you-mean.
"""

from __future__ import annotations

import json
import re
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from agenteval.suite.yaml_nodes import KeyPath, Lines

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Problem:
    file: Path
    line: int | None
    key: KeyPath
    message: str
    severity: Severity = "error"

    def render(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else str(self.file)
        key = format_key(self.key)
        prefix = "warning: " if self.severity == "warning" else ""
        return f"{where}: {prefix}{key + ': ' if key else ''}{self.message}"


def format_key(path: KeyPath) -> str:
    """`evaluators[0].fields`; a key that would read ambiguously or break the line is quoted: `["a.b"]`."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif not str(part).isprintable() or any(mark in str(part) for mark in ".[]"):
            text += f"[{json.dumps(str(part), ensure_ascii=False)}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def line_of(lines: Lines, path: KeyPath) -> int | None:
    """The line of the deepest part of `path` that has one."""
    for end in range(len(path), -1, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return None


def from_validation_error(
    exc: ValidationError, model: type[BaseModel], data: Any, file: Path, lines: Lines, prefix: KeyPath = ()
) -> list[Problem]:
    mapped: dict[KeyPath, list[tuple[str, str]]] = {}
    for error in exc.errors(include_url=False):
        path = _data_path(data, error["loc"], error["type"] == "missing")
        if error["type"] == "union_tag_invalid":
            path += ("type",)
        mapped.setdefault(path, []).append((error["type"], _message(error, path, model, data)))
    # A union reports one error per member; where a member got deeper, its error is the real one.
    deeper = {path[:i] for path in mapped for i in range(len(path))}
    problems = []
    for path, found in mapped.items():
        if path in deeper and all(kind in _TYPE_ERRORS for kind, _ in found):
            continue
        messages = list(dict.fromkeys(message for _, message in found))
        if len(messages) > 1 and all(kind in _TYPE_ERRORS for kind, _ in found):
            messages = [_merge_type_messages(messages)]
        key = prefix + path
        problems.extend(Problem(file, line_of(lines, key), key, message) for message in messages)
    return problems


_TYPE_ERRORS = {
    "string_type", "float_type", "int_type", "bool_type", "list_type", "dict_type", "model_type",
    "model_attributes_type", "float_parsing", "int_parsing", "int_from_float", "bool_parsing",
}
_TYPE_WORDS = {
    "string_type": "a string", "float_type": "a number", "float_parsing": "a number",
    "int_type": "a whole number", "int_parsing": "a whole number", "int_from_float": "a whole number",
    "bool_type": "true or false", "bool_parsing": "true or false", "list_type": "a list",
    "dict_type": "a mapping", "model_type": "a mapping", "model_attributes_type": "a mapping",
}


def _merge_type_messages(messages: list[str]) -> str:
    wanted = [re.sub(r"^expected (.*), got .*$", r"\1", message) for message in messages]
    got = messages[0].rsplit(", got ", 1)[-1]
    return f"expected {' or '.join(wanted)}, got {got}"


def _data_path(data: Any, loc: tuple[Any, ...], names_missing_key: bool = False) -> KeyPath:
    """pydantic's location without union tags: the path into the user's own data.

    A part that is not in the data is a union tag (`command`, `list[Case]`), except the
    last part of a "missing" error, which names the missing key.
    """
    path: list[str | int] = []
    node = data
    for index, part in enumerate(loc):
        if isinstance(node, dict) and node.get("type") == part and index < len(loc) - 1:
            continue  # the union tag, even when a key has the same name (a command target's `command`)
        if isinstance(node, dict) and part in node:
            node = node[part]
            path.append(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
            path.append(part)
        elif names_missing_key and index == len(loc) - 1 and isinstance(node, dict):
            path.append(part)
    return tuple(path)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _message(error: Any, path: KeyPath, model: type[BaseModel], data: Any) -> str:
    kind = error["type"]
    ctx = error.get("ctx") or {}
    value = error.get("input")
    key = path[-1] if path else ""
    if kind == "missing":
        return "required key is missing"
    if kind == "extra_forbidden":
        known = _known_keys(model, data, path[:-1])
        hint = _other_name(str(key), known) or did_you_mean(str(key), known)
        if not hint and len(path) == 1 and model.__name__ == "Suite":
            hint = _misplaced(str(key), data) or " (top-level keys starting with `x-` are ignored: a place for YAML anchors)"
        return f"unknown key {key!r}" + hint
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        expected = re.findall(r"'([^']*)'", str(ctx.get("expected_tags", "")))
        what = "evaluator" if "evaluators" in path else "target" if path[:1] in (("target",), ("targets",)) else "model" if path[:1] == ("models",) else ""
        if kind == "union_tag_not_found":
            return f"missing `type` (one of: {', '.join(expected)})"
        tag = ctx.get("tag")
        if what == "model":
            from agenteval.targets.model_entries import type_problem

            if found := type_problem(str(tag)):
                return found
        spelled = str(tag).lower().replace("-", "_") in expected  # only spelled otherwise: the plain suggestion
        hint = (what == "evaluator" and not spelled and _other_tools_type(str(tag))) or did_you_mean(str(tag), expected)
        return f"unknown {what} type {tag!r}".replace("  ", " ") + hint + f" (known: {', '.join(expected)})"
    if kind == "literal_error":
        valid = re.findall(r"'([^']*)'|(\d+)", str(ctx.get("expected", "")))
        options = [a or b for a, b in valid]
        if key == "match":
            return f"Invalid match type: {value} (valid: {', '.join(options)})" + did_you_mean(str(value), options)
        return f"invalid value {_show(value)} (valid: {', '.join(options)})" + did_you_mean(str(value), options)
    if kind in _TYPE_WORDS:
        hint = f"; write {{path: {value}}}" if len(path) > 1 and path[-2] == "fields" and isinstance(value, str) and kind == "model_type" else ""
        return f"expected {_TYPE_WORDS[kind]}, got {_show(value)}{hint}"
    bounds = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}
    if kind in bounds:
        limit = next(iter(ctx.values()), "")
        percent = kind == "less_than_equal" and limit == 1 and type(value) in (int, float) and value in range(2, 101)
        return f"must be {bounds[kind]} {limit}, got {_show(value)}" + (f"; did you mean {value / 100:g}?" if percent else "")
    if kind == "too_short":
        return "must not be empty"
    if kind == "finite_number":
        return f"must be a finite number, got {_show(value)}"
    if kind == "value_error":
        return str(ctx.get("error", error["msg"]))
    return str(error["msg"])


def misspells(word: Any, option: str) -> bool:
    """Whether an unknown key is a typo of this known one (the same rule as the did-you-mean hints)."""
    return isinstance(word, str) and word != option and bool(did_you_mean(word, [option]))


# promptfoo's and AgentV's assertion types typed into a suite: the agenteval evaluator (and option) that checks the same
_OTHER_TOOLS = {
    "icontains": "`contains` with `case_sensitive: false`", "contains-any": "`contains` with `mode: any`",
    "icontains-any": "`contains` with `mode: any` and `case_sensitive: false`",
    "contains-all": "`contains` with a list as `reference` (all must be there)",
    "icontains-all": "`contains` with a list as `reference` and `case_sensitive: false`", "not-contains": "`not_contains`",
    "not-icontains": "`not_contains` with `case_sensitive: false`", "not-regex": "`regex` with `must_match: false`",
    "is-json": "`json_valid` (with a schema: `json_schema`)", "similar": "`semantic_similarity`",
    "levenshtein": "`text_similarity` with `algorithm: levenshtein`", "llm-rubric": "`llm_judge` with the rubric as a criterion",
    "model-graded-closedqa": "`llm_judge` with the criterion", "factuality": "`llm_judge` with a criterion naming the reference",
    "g-eval": "`llm_judge` with `scale: unit` criteria", "answer-relevance": "`llm_judge`",
    "tool-call-f1": "`tool_calls`", "trajectory:tool-used": "`tool_calls` with `min_calls`", "assert-set": "`composite`",
    "tool-trajectory": "`tool_calls`", "code-grader": "`code_judge`", "llm-grader": "`llm_judge`", "rubrics": "`llm_judge` criteria",
    "field-accuracy": "`field_accuracy`", "iou-score": "`iou_score`", "is-sql": "`python` (no SQL check is built in)",
}


def _other_tools_type(tag: str) -> str:
    """promptfoo's `icontains` or AgentV's `code-grader` typed into a suite: the evaluator and option to use."""
    found = _OTHER_TOOLS.get(tag.lower()) or _OTHER_TOOLS.get(tag.lower().replace("_", "-"))
    return f"; did you mean {found}? (promptfoo's or AgentV's {tag!r}; `agenteval import` converts a whole config)" if found else ""


# keys other tools (or other targets) use for one this model has: the key to write, and the form to write it in
_OTHER_NAMES = {
    "expected_output": ("expected", ""), "expectedOutput": ("expected", ""),
    "system": ("messages", " (write `messages: [{role: system, content: ...}, {role: user, content: \"{{ input }}\"}]`)"),
}


def _other_name(word: str, known: list[str]) -> str:
    """promptfoo's or LangSmith's `expected_output` on a case, an Anthropic-style `system` on a chat target: the key to write."""
    key, form = _OTHER_NAMES.get(word, ("", ""))
    if key not in known:
        return ""
    return f"; did you mean `{key}`?{form}" if form else f"; did you mean {key!r}?"


def _misplaced(key: str, data: Any) -> str:
    """A top-level key that one of the suite's evaluators (or its target) takes: indented one level too little."""
    from agenteval.evaluators import registry
    from agenteval.targets import TYPES, target_type

    evaluators = data.get("evaluators") if isinstance(data, dict) else None
    owners = [
        f"evaluators[{index}]" for index, item in enumerate(evaluators if isinstance(evaluators, list) else ())
        if isinstance(item, dict) and key not in item and key in getattr(registry().get(str(item.get("type"))), "model_fields", ())
    ]
    target = data.get("target") if isinstance(data, dict) else None
    if isinstance(target, dict) and key not in target and target.get("type") in TYPES and key in target_type(target["type"]).model_fields:
        owners.append("target")
    return f"; it may belong under {' or '.join(owners)} (check its indentation)" if owners else ""


def did_you_mean(word: str, options: list[str]) -> str:
    """A suggestion only when it is really close: a typo or two away (`fuzy` -> `fuzzy`), or the
    one option the word begins (`numeric` -> `numeric_tolerance`). `llm_judge` is not `code_judge`."""
    from rapidfuzz.distance import OSA

    lowered = word.lower()
    allowed = max(1, len(word) // 4)
    distances = sorted((OSA.distance(lowered, option.lower()), index) for index, option in enumerate(options))
    close = [options[index] for distance, index in distances if distance <= allowed][:1]
    if not close and len(word) >= 3:
        starting = [option for option in options if option.lower().startswith(lowered)]
        close = starting if len(starting) == 1 else []
    return f"; did you mean {close[0]!r}?" if close else ""


def _known_keys(model: type[BaseModel], data: Any, path: KeyPath) -> list[str]:
    """The keys the model accepts at `path` in `data` (following lists and `type` unions)."""
    annotation: Any = model
    node = data
    for part in (*path, None):
        annotation = _concrete(annotation, node)
        if part is None:
            break
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field = annotation.model_fields.get(str(part))
            if field is None:
                return []
            by_type = [mark for mark in field.metadata if hasattr(mark, "member")]  # (pydantic keeps a field's own marks here)
            annotation = typing.Annotated[field.annotation, *by_type] if by_type else field.annotation
        elif typing.get_origin(annotation) is list:
            annotation = typing.get_args(annotation)[0]
        elif typing.get_origin(annotation) is dict:
            annotation = typing.get_args(annotation)[1]
        else:
            return []
        node = node[part] if isinstance(node, (dict, list)) else None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return list(annotation.model_fields)
    return []


def _concrete(annotation: Any, node: Any) -> Any:
    """Strip Annotated/Optional, and pick the union member (or the evaluator, target or model type:
    an annotation whose `member(data)` names the class its `type` picks) that matches the data."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation, *marks = typing.get_args(annotation)
            by_type = next((mark for mark in marks if hasattr(mark, "member")), None)
            if by_type is not None:
                return by_type.member(node) or annotation
        elif origin in (typing.Union, types.UnionType):
            members = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
            annotation = _pick_member(members, node)
        else:
            return annotation


def _pick_member(members: list[Any], node: Any) -> Any:
    models = [m for m in members if isinstance(m, type) and issubclass(m, BaseModel)]
    if models and isinstance(node, dict):
        for member in models:
            tag = member.model_fields.get("type")
            if tag is not None and node.get("type") in typing.get_args(tag.annotation):
                return member
        return models[0]
    for member in members:
        if isinstance(node, list) and typing.get_origin(member) is list:
            return member
    return members[0]

"""What a cases file may do: it is data, often someone else's, so nothing in it may run code,
talk to a server of its own, read a file outside the suite's folder or name an environment
variable, unless the suite says it trusts its cases (`trust_cases: true`). And wherever an
evaluator names a file (a `*_file` key), suite or case, trusted or not, the file stays inside
the suite's folder.

Checked at load time, after (or, for `*_file` keys, before) a case is validated, naming the case
and the key. A case-level evaluator may still use `endpoint: NAME` of the suite's own `models:`:
where requests go and which secrets they carry is then the suite's choice, not the dataset's.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agenteval.endpoints.settings import env_references
from agenteval.evaluators import EvaluatorConfig
from agenteval.suite.yaml_nodes import KeyPath

FILE_SUFFIX = "_file"  # an evaluator key naming a file relative to the suite: prompt_file, schema_file, terms_file...
TRUST_KEY = "trust_cases"
OLD_TRUST_KEY = "trust_case_commands"  # the old name, still read
_NEEDS_TRUST = (
    f"; cases files are data, so this needs `{TRUST_KEY}: true` in the suite (only for a file you trust like your "
    "own code), or move the evaluator into the suite"
)


def trusted_by(data: dict[Any, Any]) -> bool:
    """Whether raw suite data (whose keys failed validation) says it trusts its cases."""
    return data.get(TRUST_KEY) is True or data.get(OLD_TRUST_KEY) is True


def file_keys(evaluators: Any, where: KeyPath) -> Iterator[tuple[KeyPath, str, Any]]:
    """(key path, key, value) of every `*_file` key of an evaluator mapping in raw case data,
    composites' children included: found before validation, which may already read the file."""
    stack: list[tuple[Any, KeyPath]] = [(evaluators, where)]
    while stack:
        value, path = stack.pop()
        if isinstance(value, list):
            stack.extend((item, path + (index,)) for index, item in reversed(list(enumerate(value))))
        elif isinstance(value, dict):
            is_evaluator = "type" in value
            for key, item in value.items():
                if is_evaluator and isinstance(key, str) and key.endswith(FILE_SUFFIX) and not isinstance(item, (dict, list)):
                    yield path + (key,), key, item
                elif isinstance(item, (dict, list)):
                    stack.append((item, path + (key,)))


def untrusted_files(case_id: Any, evaluators: Any, base_dir: Path) -> Iterator[tuple[KeyPath, str]]:
    """(key path, message) of each `*_file` of raw case-level evaluators that is not a path inside
    the suite's folder: checked before validation reads it. A file inside the folder is data the
    suite ships, so a cases file may name it without trust."""
    shown = f"case {case_id!r}: " if isinstance(case_id, (str, int)) and not isinstance(case_id, bool) else ""
    for where, key, value in file_keys(evaluators, ("evaluators",)):
        if not isinstance(value, str):
            continue  # not a path: validation says so, reading nothing
        problem = _outside(value, base_dir)
        if problem:
            yield where, f"{shown}`{key}` {value!r} {problem}"


def _outside(value: str, base_dir: Path) -> str | None:
    """Why `value` (relative to `base_dir`) is not a file inside it once symlinks are resolved, or None."""
    folder = base_dir.resolve()
    try:
        resolved = (folder / value).resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, a NUL
        return f"cannot be resolved: {exc}"
    if not resolved.is_relative_to(folder):
        return (
            f"is outside the suite's folder (it resolves to {resolved}); "
            "files a suite or case names must be inside the folder of the suite file"
        )
    return None


def untrusted_uses(case_id: str, evaluators: list[EvaluatorConfig], models: dict[str, Any] | None) -> Iterator[tuple[KeyPath, str]]:
    """(key path under the case's `evaluators`, message) for everything a case-level evaluator
    does that a cases file may not do without trust."""
    for index, evaluator in enumerate(evaluators):
        for where, inner in nested(evaluator, (index,)):
            for key, what in _uses(inner, models):
                yield where + key, f"case {case_id!r}: {what}{_NEEDS_TRUST}"


def untrusted_tools(case_id: Any, tools: Any) -> Iterator[tuple[KeyPath, str]]:
    """(key path, message) of each tool implementation in a case's raw `tools:` that runs code or
    talks to a server (`command`, `python`, `http`, `mcp`): a cases file may give `mock` results only."""
    from agenteval.agents.tools import NEEDS_TRUST

    shown = f"case {case_id!r}: " if isinstance(case_id, (str, int)) and not isinstance(case_id, bool) else ""
    for name, implementation in tools.items() if isinstance(tools, dict) else ():
        for key in NEEDS_TRUST if isinstance(implementation, dict) else ():
            if key in implementation:
                what = {"http": "talks to a server of its own", "mcp": "starts or names an MCP server"}.get(key, "runs a program or code")
                yield ("tools", name, key), f"{shown}a `{key}` tool implementation in a cases file {what}{_NEEDS_TRUST.replace('the evaluator', 'the tool')}"


def unknown_endpoints(case_id: str, evaluators: list[EvaluatorConfig], models: dict[str, Any]) -> Iterator[tuple[KeyPath, str]]:
    """`endpoint: NAME` of a case-level evaluator that the suite's `models:` lacks, or whose model cannot serve it."""
    from agenteval.targets.model_entries import use_problem

    for index, evaluator in enumerate(evaluators):
        for where, inner in nested(evaluator, (index,)):
            name = getattr(inner, "endpoint", None)
            if isinstance(name, str) and name not in models:
                known = ", ".join(sorted(models)) or "none defined"
                yield where + ("endpoint",), f"case {case_id!r}: endpoint {name!r} is not defined under the suite's `models:` (known: {known})"
            elif isinstance(name, str) and (problem := use_problem(models[name], name, getattr(inner, "model_use", "step"))):
                yield where + ("endpoint",), f"case {case_id!r}: {problem}"


def outside_files(evaluators: list[EvaluatorConfig], base_dir: Path, owner: str = "") -> Iterator[tuple[KeyPath, str]]:
    """(key path, message) of every `*_file` an evaluator names that is not inside `base_dir`
    once symlinks are resolved: a suite's files stay in its folder. `owner` starts each message."""
    for index, evaluator in enumerate(evaluators):
        for where, inner in nested(evaluator, (index,)):
            for name in type(inner).model_fields:
                value = getattr(inner, name) if name.endswith(FILE_SUFFIX) else None
                problem = _outside(value, base_dir) if isinstance(value, str) else None
                if problem:
                    yield where + (name,), f"{owner}`{name}` {value!r} {problem}"


def nested(evaluator: EvaluatorConfig, where: KeyPath) -> Iterator[tuple[KeyPath, EvaluatorConfig]]:
    """The evaluator and every evaluator inside it (composites), with their key paths."""
    stack = [(where, evaluator)]
    while stack:
        path, current = stack.pop()
        yield path, current
        children = []
        for name in _child_fields(type(current)):
            value = getattr(current, name)
            if isinstance(value, EvaluatorConfig):
                children.append((path + (name,), value))
            elif isinstance(value, list):
                children.extend((path + (name, i), child) for i, child in enumerate(value) if isinstance(child, EvaluatorConfig))
        stack.extend(reversed(children))


@functools.cache
def _child_fields(cls: type[EvaluatorConfig]) -> tuple[str, ...]:
    """The fields of an evaluator type that may hold evaluators (a composite's `evaluators`): those
    typed with evaluators, or loosely (Any). Found once per type: `nested` runs for every case-level evaluator."""
    return tuple(
        name for name, info in cls.model_fields.items()
        if "EvaluatorConfig" in repr(info.annotation) or "Any" in repr(info.annotation) or info.annotation is object
    )


def _uses(evaluator: EvaluatorConfig, models: dict[str, Any] | None) -> Iterator[tuple[KeyPath, str]]:
    """What this one evaluator (not its children) does that needs trust."""
    kind = evaluator.type
    if evaluator.runs_programs:
        yield ("type",), f"a `{kind}` evaluator in a cases file runs a program or code"
    if evaluator.transform is not None and not isinstance(evaluator.transform, str) and "transform" in evaluator.model_fields_set:
        shown = f"a `python:` transform in a cases file runs code ({evaluator.transform.python})" if hasattr(evaluator.transform, "python") \
            else "a `javascript:` transform in a cases file runs code"
        yield ("transform",), shown
    if evaluator.uses_network:
        own_server = "base_url" in evaluator.model_fields_set
        if getattr(evaluator, "endpoint", None) is None or own_server:
            yield ("base_url",) if own_server else ("type",), (
                f"a `{kind}` evaluator in a cases file talks to a server of its own (a case may only use "
                "`endpoint: NAME` of the suite's `models:`)"
            )
    set_fields = evaluator.model_fields_set
    values = [(name, getattr(evaluator, name)) for name in type(evaluator).model_fields if name in set_fields]
    values += list((evaluator.model_extra or {}).items())
    for name, value in values:
        if name == "api_key_env" and isinstance(value, str):
            yield (name,), f"`api_key_env` in a cases file names an environment variable ({value})"
        elif isinstance(value, EvaluatorConfig) or (isinstance(value, list) and any(isinstance(v, EvaluatorConfig) for v in value)):
            continue  # children are checked on their own
        else:
            for path, text in _strings(value, (name,)):
                for variable in dict.fromkeys(env_references(text)):
                    yield path, f"`${{{variable}}}` in a cases file names an environment variable"


def _strings(value: Any, where: KeyPath) -> Iterator[tuple[KeyPath, str]]:
    """Every string inside a config value (dict keys included), with its key path."""
    stack: list[tuple[Any, KeyPath]] = [(value, where)]
    while stack:
        current, path = stack.pop()
        if isinstance(current, str):
            yield path, current
        elif isinstance(current, dict):
            for key, item in current.items():
                if isinstance(key, str):
                    yield path, key
                stack.append((item, path + (key,)))
        elif isinstance(current, (list, tuple)):
            stack.extend((item, path + (index,)) for index, item in enumerate(current))
        elif isinstance(current, BaseModel) and not isinstance(current, EvaluatorConfig):
            stack.extend((getattr(current, name), path + (name,)) for name in current.model_fields_set)

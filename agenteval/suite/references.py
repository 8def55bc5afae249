"""What a suite names outside its own YAML: endpoints under `models:`, the scripts its commands
run, the Python modules its `python` evaluators import. Checked at load time, each at its own key
(and so its own line), all of them in one pass.

An unknown endpoint is an error (the suite cannot run). A script or module that is not there is
a warning: it may be created before the run (a build step), and a path that only looks like one
(`--out=a/b`) must not stop a suite; but nearly always it is a typo that would otherwise error on
every case.
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
import re
import shutil
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from agenteval.evaluators import EvaluatorConfig
from agenteval.suite.trust import nested
from agenteval.suite.yaml_nodes import KeyPath

# A word ending like this is a script file (`judge.py`, `run.sh`), not a subcommand or a value.
_SCRIPT = re.compile(r"\.(?:py|pyw|sh|bash|zsh|js|mjs|cjs|ts|rb|pl|php|r|jl|lua|exe|bat|cmd|ps1)$", re.IGNORECASE)
_INTERPRETERS = ("python", "python3")  # run with agenteval's own Python (agenteval.process.resolve_command)


def unknown_endpoint(name: Any, models: Iterable[str]) -> str | None:
    """Why `endpoint: NAME` cannot be used (with a did-you-mean), or None when `models:` defines it."""
    if not isinstance(name, str):
        return None
    known = sorted(map(str, models))
    if name in known:
        return None
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"{name!r} is not defined under `models:` (known: {', '.join(known) or 'none defined'}){hint}"


def model_use_problem(name: Any, models: Any, needs: str) -> str | None:
    """Why `endpoint: NAME` of the suite's `models:` cannot serve what uses it (`needs`: step, embed
    or a target type; agenteval.targets.model_entries.use_problem), or None."""
    from agenteval.targets.model_entries import use_problem

    if not isinstance(name, str) or not isinstance(models, Mapping) or name not in models:
        return None
    return use_problem(models[name], name, needs)


def target_endpoint_problem(target: Any, models: Any) -> str | None:
    """Why a target's `endpoint: NAME` cannot be used: not under `models:`, or a model of another type."""
    if not isinstance(target, Mapping):
        return None
    name = target.get("endpoint")
    return unknown_endpoint(name, models) or model_use_problem(name, models, str(target.get("type")))


def endpoint_problems(target: Any, evaluators: Any, models: Mapping[str, Any]) -> Iterator[tuple[KeyPath, str]]:
    """(key path, message) of every `endpoint: NAME` the suite's `models:` lacks or that names a model
    that cannot serve it: the target's and every evaluator's, composites' children included. Read
    from the raw data, so a use is checked even where its evaluator has other problems; only types
    that have an `endpoint` key count."""
    from agenteval.evaluators import evaluator_type

    if message := target_endpoint_problem(target, models):
        yield ("target", "endpoint"), message
    stack: list[tuple[Any, KeyPath]] = [(evaluators, ("evaluators",))]
    while stack:
        items, where = stack.pop()
        for index, item in reversed(list(enumerate(items)) if isinstance(items, list) else []):
            if not isinstance(item, Mapping) or not isinstance(item.get("type"), str):
                continue
            try:
                cls = evaluator_type(item["type"])
            except Exception:  # noqa: BLE001 - a broken plugin: its validation says so
                cls = None
            if cls is not None and "endpoint" in cls.model_fields and (
                message := unknown_endpoint(item.get("endpoint"), models)
                or model_use_problem(item.get("endpoint"), models, getattr(cls, "model_use", "step"))
            ):
                yield where + (index, "endpoint"), message
            stack.append((item.get("evaluators"), where + (index, "evaluators")))


def missing_programs(target: Any, evaluators: Iterable[tuple[int, EvaluatorConfig]], base_dir: Path, prefix: KeyPath = ("evaluators",)) -> Iterator[tuple[KeyPath, str]]:
    """(key path, warning) for each script a command names and each module a `python` evaluator
    imports that is not there. Commands run in the suite's folder, so scripts are looked for there."""
    command = getattr(target, "command", None)
    if isinstance(command, list):
        yield from ((("target", "command"), message) for message in command_problems(command, base_dir))
    for index, evaluator in evaluators:
        for where, inner in nested(evaluator, prefix + (index,)):
            command = getattr(inner, "command", None)
            if isinstance(command, list):
                yield from ((where + ("command",), message) for message in command_problems(command, base_dir))
            if inner.type == "python" and isinstance(getattr(inner, "function", None), str):
                if message := module_problem(inner.function, base_dir):
                    yield where + ("function",), message


def command_problems(argv: list[str], base_dir: Path) -> list[str]:
    """What is missing of a command: its program when that is a file of the suite (`./run.sh`,
    `judge.py`), and the first later argument that looks like a file (`judges/x.py`). A program
    looked up on PATH is not checked: the run's PATH may differ, and a program that cannot start
    is already each case's error naming it."""
    if not argv or not all(isinstance(arg, str) for arg in argv):
        return []
    problems = []
    program = argv[0]
    if program not in _INTERPRETERS and _looks_like_file(program):
        if not _exists(program, base_dir) and not ("/" not in program and _on_path(program)):
            problems.append(f"program {program!r} does not exist (looked for {base_dir / program})")
    script = next((arg for arg in argv[1:] if _looks_like_file(arg)), None)
    if script is not None and not _exists(script, base_dir):
        problems.append(f"script {script!r} does not exist (looked for {base_dir / script})")
    return problems


def module_problem(reference: str, base_dir: Path) -> str | None:
    """Why the module of `module:function` cannot be found: neither next to the suite nor installed."""
    from agenteval.evaluators.python_function import suite_module_file

    module = reference.partition(":")[0]
    if not module or suite_module_file(module, base_dir) is not None:
        return None
    try:
        installed = importlib.util.find_spec(module.split(".")[0]) is not None
    except (ImportError, ValueError):
        installed = False
    if installed:
        return None
    return f"module {module!r} does not exist: no {module.replace('.', '/')}.py next to the suite (in {base_dir}) and no installed module of that name"


@functools.lru_cache(maxsize=256)
def _on_path(program: str) -> bool:
    return shutil.which(program) is not None


def _looks_like_file(arg: str) -> bool:
    if not arg or arg.startswith("-") or "://" in arg or any(char.isspace() for char in arg) or "=" in arg:
        return False
    return "/" in arg or "\\" in arg or bool(_SCRIPT.search(arg))


def _exists(arg: str, base_dir: Path) -> bool:
    try:
        return (base_dir / Path(arg).expanduser()).exists()
    except (OSError, ValueError):
        return True  # not a path we can test: say nothing

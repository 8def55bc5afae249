"""`include:` shares evaluator profiles and criteria sets between suites.

In a suite's `evaluators:` list (composites' too), an item `{include: FILE}` is replaced by the
evaluators FILE holds (a list, or one evaluator); an evaluator's `criteria: {include: FILE}` by the
criteria FILE holds. FILE is YAML or JSON, relative to the file that names it, and must be inside
the suite file's folder (as every file a suite names); it may include further files, never itself
through a cycle. Paths inside it (`prompt_file`, ...) are relative to the suite file, as if written
there. A problem inside an included file is reported at that file's own line.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agenteval.suite.problems import Problem, line_of
from agenteval.suite.yaml_nodes import KeyPath, Lines, YamlSyntaxError, decode_utf8, load_yaml

KEY = "include"
MAX_DEPTH = 16  # files included through one another


@dataclass(frozen=True)
class Origin:
    """A subtree of the expanded suite (at `at`) that came from `file`, at `key` in that file's data
    (the suite file itself, for its own evaluators moved by includes before them)."""

    at: KeyPath
    file: Path
    key: KeyPath
    lines: Lines


def is_include(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and KEY in value


def expand(data: dict[Any, Any], suite: Path, lines: Lines, problems: list[Problem]) -> tuple[dict[Any, Any], Lines, list[Origin]]:
    """(data with every include replaced, its line map, where included subtrees came from); a file
    that cannot be included is a problem at the `include:` line and is left out."""
    if not _mentions_include(data.get("evaluators")):
        return data, lines, []
    expansion = _Expansion(suite.parent, problems)
    expanded = expansion.evaluators(data["evaluators"], ("evaluators",), ("evaluators",), _Source(suite, lines), ())
    return {**data, "evaluators": expanded}, expansion.relined(lines), expansion.origins


def locate(problems: list[Problem], suite: Path, origins: list[Origin]) -> list[Problem]:
    """Problems the suite's validation found inside included subtrees (and in the suite's own evaluators
    that includes moved), put back at their file, line and key path in that file."""
    if not origins:
        return problems
    moved = []
    for problem in problems:
        origin = next((o for o in reversed(origins) if problem.file == suite and problem.key[: len(o.at)] == o.at), None)
        if origin is not None:
            inner = origin.key + problem.key[len(origin.at):]
            problem = replace(problem, file=origin.file, line=line_of(origin.lines, inner), key=inner)
        moved.append(problem)
    return moved


def _mentions_include(value: Any) -> bool:
    """Whether any include node is inside the evaluators (most suites have none: nothing is copied)."""
    stack = [value]
    while stack:
        current = stack.pop()
        if is_include(current):
            return True
        if isinstance(current, list):
            stack.extend(current)
        elif isinstance(current, dict):
            stack.extend(v for k, v in current.items() if k in ("evaluators", "criteria") or isinstance(v, (dict, list)))
    return False


@dataclass(frozen=True)
class _Source:
    file: Path
    lines: Lines


class _Expansion:
    def __init__(self, folder: Path, problems: list[Problem]) -> None:
        self.folder = folder.resolve()
        self.problems = problems
        self.origins: list[Origin] = []
        self.moves: dict[KeyPath, KeyPath] = {}  # the suite's own evaluators: path in the file -> path after expansion
        self.include_lines: dict[KeyPath, int | None] = {}  # subtrees included by the suite file: the line of their `include:`

    def evaluators(self, items: Any, at: KeyPath, key: KeyPath, source: _Source, chain: tuple[Path, ...], into: list[Any] | None = None) -> Any:
        """The list with its includes spliced in (into `into`, when an included file's list is being spliced)."""
        if not isinstance(items, list):
            return items  # validation says what is wrong
        expanded: list[Any] = [] if into is None else into
        for index, item in enumerate(items):
            item_key = key + (index,)
            if is_include(item):
                found = self._read(item[KEY], item_key + (KEY,), source, chain)
                if found is None:
                    continue
                file, content, file_lines = found
                before = len(expanded)
                if isinstance(content, list):
                    self.evaluators(content, at, (), _Source(file, file_lines), (*chain, file), expanded)
                else:
                    self.origins.append(Origin(at + (before,), file, (), file_lines))
                    expanded.append(self.evaluator(content, at + (before,), (), _Source(file, file_lines), (*chain, file)))
                if not chain:  # named in the suite file: a problem about an included evaluator as a whole points there
                    for position in range(before, len(expanded)):
                        self.include_lines[at + (position,)] = line_of(source.lines, item_key + (KEY,))
                continue
            here = at + (len(expanded),)
            if chain:
                self.origins.append(Origin(here, source.file, item_key, source.lines))
            else:  # written in the suite file itself: its lines move with it
                self.moves[item_key] = here
                if here != item_key:
                    self.origins.append(Origin(here, source.file, item_key, source.lines))
            expanded.append(self.evaluator(item, here, item_key, source, chain))
        return expanded

    def evaluator(self, item: Any, at: KeyPath, key: KeyPath, source: _Source, chain: tuple[Path, ...]) -> Any:
        if not isinstance(item, dict):
            return item
        result = dict(item)
        if is_include(item.get("criteria")):
            found = self._read(item["criteria"][KEY], key + ("criteria", KEY), source, chain)
            if found is None:
                result.pop("criteria")
            else:
                file, content, file_lines = found
                self.origins.append(Origin(at + ("criteria",), file, (), file_lines))
                result["criteria"] = content
        if isinstance(item.get("evaluators"), list):
            result["evaluators"] = self.evaluators(item["evaluators"], at + ("evaluators",), key + ("evaluators",), source, chain)
        return result

    def _read(self, name: Any, key: KeyPath, source: _Source, chain: tuple[Path, ...]) -> tuple[Path, Any, Lines] | None:
        """(file, content, line map) of an included file, or None with the problem recorded where it is named."""
        line = line_of(source.lines, key)

        def refuse(message: str) -> None:
            self.problems.append(Problem(source.file, line, key, message))

        if not isinstance(name, str) or not name:
            refuse("`include` names a file (a path relative to this file)")
            return None
        try:
            file = (source.file.parent / name).resolve()
        except (OSError, RuntimeError, ValueError) as exc:
            refuse(f"cannot include {name!r}: {exc}")
            return None
        if not file.is_relative_to(self.folder):
            refuse(f"{name!r} is outside the suite's folder (it resolves to {file}); files a suite names must be inside the folder of the suite file")
            return None
        if file in chain or file == source.file.resolve():
            refuse(f"{name!r} includes itself (through {' -> '.join(p.name for p in (*chain, file))})")
            return None
        if len(chain) >= MAX_DEPTH:
            refuse(f"includes nested deeper than {MAX_DEPTH} files")
            return None
        try:
            content, file_lines, duplicates = load_yaml(decode_utf8(file.read_bytes()))
        except FileNotFoundError:
            refuse(f"included file not found: {name} (looked for {file})")
            return None
        except OSError as exc:
            refuse(f"cannot read the included file {name}: {exc.strerror or exc}")
            return None
        except YamlSyntaxError as exc:
            self.problems.append(Problem(file, exc.line, (), str(exc)))
            return None
        self.problems.extend(Problem(file, dup_line, dup_key, message) for dup_line, dup_key, message in duplicates)
        if content is None:
            self.problems.append(Problem(file, 1, (), "the included file is empty (it holds evaluators or criteria)"))
            return None
        return file, content, file_lines

    def relined(self, lines: Lines) -> Lines:
        """The suite's line map for the expanded data: its own evaluators at their new places, and an
        included subtree at the line of its `include:` (problems inside it are moved by `locate`)."""
        result: Lines = {}
        for path, line in lines.items():
            if path[:1] != ("evaluators",) or len(path) < 2:
                result[path] = line
                continue
            for end in range(len(path), 1, -1):
                if path[:end] in self.moves:
                    result[self.moves[path[:end]] + path[end:]] = line
                    break
        for origin in self.origins:
            line = self.include_lines.get(origin.at)
            if line is not None:
                result.setdefault(origin.at, line)
        return result

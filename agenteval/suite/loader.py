"""Load a suite file and its cases, validating everything before anything runs.

Every problem is collected (not just the first) with file:line and key path. Cases in a file are
read once to validate them and index their ids and tags, and streamed again when the run needs
them, so a large dataset is never held in memory whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from agenteval.evaluators import EvaluatorConfig
from agenteval.suite.models import Case, Suite
from agenteval.suite.problems import Problem, from_validation_error, line_of
from agenteval.suite.yaml_nodes import KeyPath, Lines, YamlSyntaxError, load_yaml

CASE_FILE_TYPES = (".jsonl", ".json", ".yaml", ".yml")


class SuiteInvalid(Exception):
    """The suite cannot run; `problems` says every reason."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(f"{sum(p.severity == 'error' for p in problems)} problem(s)")
        self.problems = sorted(problems, key=lambda p: (str(p.file), p.line or 0))


@dataclass(slots=True)
class CaseEntry:
    """What the loader remembers of each case: enough to select cases without re-reading them."""

    id: str
    tags: tuple[str, ...]


@dataclass
class LoadedSuite:
    suite: Suite
    path: Path
    cases_file: Path | None
    entries: list[CaseEntry]
    warnings: list[Problem] = field(default_factory=list)

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    def iter_cases(self) -> Iterator[Case]:
        """Every case, in file order. Cases were validated at load, so records are trusted here."""
        if self.cases_file is None:
            assert isinstance(self.suite.cases, list)
            yield from self.suite.cases
            return
        for record, _, _ in _read_records(self.cases_file):
            yield Case.model_validate(record)

    def evaluators_for(self, case: Case) -> list[EvaluatorConfig]:
        """The suite's evaluators, with the case's own added (or replacing those of the same name)."""
        if not case.evaluators:
            return list(self.suite.evaluators)
        merged = {evaluator.label: evaluator for evaluator in self.suite.evaluators}
        for evaluator in case.evaluators:
            merged[evaluator.label] = evaluator
        return list(merged.values())


def load_suite(path: str | Path) -> LoadedSuite:
    """The validated suite, or SuiteInvalid listing every problem found."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SuiteInvalid([Problem(path, None, (), "file not found")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteInvalid([Problem(path, None, (), f"cannot read the file: {exc}")]) from None
    try:
        data, lines, duplicates = load_yaml(text)
    except YamlSyntaxError as exc:
        raise SuiteInvalid([Problem(path, exc.line, (), str(exc))]) from None
    problems = [Problem(path, line, key, message) for line, key, message in duplicates]
    if not isinstance(data, dict):
        problems.append(Problem(path, 1, (), "a suite is a mapping with `name`, `evaluators` and `cases`"))
        raise SuiteInvalid(problems)
    try:
        suite = Suite.model_validate(data)
    except ValidationError as exc:
        problems += from_validation_error(exc, Suite, data, path, lines)
        _check_cases_reference(data, path, lines, problems)
        raise SuiteInvalid(problems) from None

    warnings = _evaluator_warnings(suite.evaluators, path, lines, ("evaluators",))
    problems += _duplicate_names(suite.evaluators, path, lines, ("evaluators",))
    cases_file, entries = None, []
    if isinstance(suite.cases, str):
        cases_file = _cases_path(suite.cases, path, lines, problems)
        if cases_file is not None:
            entries = _validate_case_file(cases_file, suite, problems, warnings)
    else:
        entries = _check_cases(
            ((case, lines.get(("cases", i)), ("cases", i)) for i, case in enumerate(suite.cases)),
            suite, path, problems, warnings,
        )
    if not entries and not problems:
        where = f"{suite.cases} has no cases" if cases_file else "the suite has no cases"
        problems.append(Problem(path, line_of(lines, ("cases",)), ("cases",), where))
    if problems:
        raise SuiteInvalid(problems + warnings)
    return LoadedSuite(suite, path, cases_file, entries, warnings)


def _check_cases_reference(data: dict[str, Any], path: Path, lines: Lines, problems: list[Problem]) -> None:
    """Report a missing cases file even when the rest of the suite has errors too."""
    if isinstance(data.get("cases"), str):
        _cases_path(data["cases"], path, lines, problems)


def _cases_path(reference: str, suite_path: Path, lines: Lines, problems: list[Problem]) -> Path | None:
    cases_file = (suite_path.parent / reference).resolve()
    line = line_of(lines, ("cases",))
    if cases_file.suffix.lower() not in CASE_FILE_TYPES:
        problems.append(Problem(suite_path, line, ("cases",), f"cases file must be .jsonl, .json or .yaml, got {reference!r}"))
        return None
    if not cases_file.is_file():
        problems.append(Problem(suite_path, line, ("cases",), f"cases file not found: {reference} (looked for {cases_file})"))
        return None
    return cases_file


def _read_records(file: Path) -> Iterator[tuple[Any, int | None, KeyPath | Lines]]:
    """(record, line, key prefix or line map) for each case in a cases file. Raises CaseFileError."""
    suffix = file.suffix.lower()
    if suffix == ".jsonl":
        with file.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                if number == 1:
                    raw = raw.removeprefix(b"\xef\xbb\xbf")  # a byte-order mark from some Windows editors
                if raw.strip():
                    try:
                        yield orjson.loads(raw), number, ()
                    except orjson.JSONDecodeError as exc:
                        raise CaseFileError(f"invalid JSON: {exc}", number) from None
        return
    if suffix == ".json":
        try:
            records = orjson.loads(file.read_bytes())
        except orjson.JSONDecodeError as exc:
            raise CaseFileError(f"invalid JSON: {exc}", None) from None
        if not isinstance(records, list):
            raise CaseFileError("a .json cases file holds a list of cases", None)
        for index, record in enumerate(records):
            yield record, None, (index,)
        return
    try:
        records, lines, duplicates = load_yaml(file.read_text(encoding="utf-8"))
    except YamlSyntaxError as exc:
        raise CaseFileError(str(exc), exc.line) from None
    if duplicates:
        line, key, message = duplicates[0]
        raise CaseFileError(message, line, key)
    if not isinstance(records, list):
        raise CaseFileError("a .yaml cases file holds a list of cases", 1)
    for index, record in enumerate(records):
        yield record, lines.get((index,)), lines


class CaseFileError(Exception):
    def __init__(self, message: str, line: int | None, key: KeyPath = ()) -> None:
        super().__init__(message)
        self.line = line
        self.key = key


def _validate_case_file(file: Path, suite: Suite, problems: list[Problem], warnings: list[Problem]) -> list[CaseEntry]:
    def validated() -> Iterator[tuple[Case, int | None, KeyPath]]:
        index = 0
        try:
            for record, line, where in _read_records(file):
                prefix: KeyPath = where if isinstance(where, tuple) else (index,)
                lines: Lines = where if isinstance(where, dict) else {prefix: line} if line else {}
                index += 1
                if not isinstance(record, dict):
                    problems.append(Problem(file, line, prefix, "a case must be an object with `id` and `expected`"))
                    continue
                try:
                    yield Case.model_validate(record), line, prefix
                except ValidationError as exc:
                    problems.extend(from_validation_error(exc, Case, record, file, lines, prefix))
        except CaseFileError as exc:
            problems.append(Problem(file, exc.line, exc.key, str(exc)))
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(Problem(file, None, (), f"cannot read the file: {exc}"))

    return _check_cases(validated(), suite, file, problems, warnings)


def _check_cases(
    cases: Iterator[tuple[Case, int | None, KeyPath]],
    suite: Suite,
    file: Path,
    problems: list[Problem],
    warnings: list[Problem],
) -> list[CaseEntry]:
    """Checks that span cases (unique ids, something to run) and the index of ids and tags."""
    entries: list[CaseEntry] = []
    first_seen: dict[str, int | None] = {}
    for case, line, prefix in cases:
        lines = {prefix: line} if line else {}
        if case.id in first_seen:
            where = f" (first at line {first_seen[case.id]})" if first_seen[case.id] else ""
            problems.append(Problem(file, line, prefix + ("id",), f"duplicate case id {case.id!r}{where}"))
            continue
        first_seen[case.id] = line
        entries.append(CaseEntry(case.id, tuple(case.tags)))
        if case.evaluators:
            problems.extend(_duplicate_names(case.evaluators, file, lines, prefix + ("evaluators",)))
            warnings.extend(_evaluator_warnings(case.evaluators, file, lines, prefix + ("evaluators",)))
        elif not suite.evaluators:
            problems.append(Problem(file, line, prefix, f"case {case.id!r} has no evaluators and the suite defines none"))
    return entries


def _duplicate_names(evaluators: list[EvaluatorConfig], file: Path, lines: Lines, prefix: KeyPath) -> list[Problem]:
    problems, seen = [], set()
    for index, evaluator in enumerate(evaluators):
        if evaluator.label in seen:
            key = prefix + (index, "name")
            message = f"two evaluators are named {evaluator.label!r}; give each a unique `name`"
            problems.append(Problem(file, line_of(lines, key), key, message))
        seen.add(evaluator.label)
    return problems


def _evaluator_warnings(evaluators: list[EvaluatorConfig], file: Path, lines: Lines, prefix: KeyPath) -> list[Problem]:
    found = []
    for index, evaluator in enumerate(evaluators):
        for where, message in evaluator.warnings():
            key = prefix + (index, *where)
            found.append(Problem(file, line_of(lines, key), key, message, "warning"))
    return found

"""Load a suite file and its cases, validating everything before anything runs.

Every problem is collected (not just the first) with file:line and key path, from every stage at
once: the suite's keys and evaluators, each case, and the checks across cases (unique ids). A
JSONL, CSV or TSV cases file is read once to validate it, keeping 4 bytes of fingerprint per
record; the run streams it again and builds each case without validating it twice, trusting only
records that still match their fingerprint. .json and .yaml cases files are read whole, so their
validated cases are kept. Selection (--filter, --tag, --shard) is decided while validating.
"""

from __future__ import annotations

import os
from array import array
from itertools import islice
from collections import ChainMap
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from agenteval.evaluators import EvaluatorConfig, EvaluatorSpec
from agenteval.extras import MissingExtra
from agenteval.suite.case_files import (
    CASE_FILE_TYPES,
    CaseFileError,
    CasesChanged,
    new_fingerprints,
    raw_id,
    read_whole,
    records,
    stream_validated,
    streamed,
    streamed_ids,
)
from agenteval.suite import includes
from agenteval.suite.case_index import CaseIndex, SelectedCases
from agenteval.cells import Cell
from agenteval.suite.matrix import suite_cells
from agenteval.suite.models import Case, CaseDefaults, Suite, plain_id
from agenteval.paths import MISSING, format_path
from agenteval.suite.problems import Problem, Severity, did_you_mean, from_validation_error, line_of, misspells
from agenteval.suite.selection import Selection
from agenteval.suite.conversation import conversation_problems
from agenteval.suite.references import endpoint_problems, missing_programs, target_endpoint_problem
from agenteval.suite.trust import nested, outside_files, trusted_by, unknown_endpoints, untrusted_files, untrusted_tools, untrusted_uses
from agenteval.suite.yaml_nodes import KeyPath, Lines, YamlSyntaxError, decode_utf8, load_yaml

__all__ = ["CaseFileError", "CasesChanged", "LoadedSuite", "Selection", "SuiteInvalid", "load_definition", "load_suite", "load_suite_data"]

IN_MEMORY = "<suite>"  # the file name problems show for a suite given as data
_EXTENSION_PREFIX = "x-"  # top-level keys ignored by the suite: a place for YAML anchors
_SAMPLE_RECORDS = 256  # records whose mean length estimates the number of cases


class SuiteInvalid(Exception):
    """The suite cannot run; `problems` says every reason."""

    shown = 20  # problems its message lists

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(f"{sum(p.severity == 'error' for p in problems)} problem(s)")
        self.problems = sorted(problems, key=lambda p: (str(p.file), p.line or 0))

    def __str__(self) -> str:
        """The problems as `agenteval validate` prints them (the first 20), so a traceback or a notebook says what is wrong."""
        lines = [problem.render() for problem in self.problems[: self.shown]]
        more = len(self.problems) - self.shown
        return "\n".join(lines + [f"... and {more} more"] * (more > 0)) or str(self.args[0])


@dataclass
class LoadedSuite:
    suite: Suite
    path: Path
    cases_file: Path | None
    index: CaseIndex
    found_warnings: list[Problem] = field(default_factory=list)
    cases: list[Case] | None = None  # inline, .json and .yaml cases; None: streamed from the JSONL file
    fingerprints: array | None = None  # JSONL: one per line, in order
    case_evaluators: list[EvaluatorConfig] = field(default_factory=list)  # one case-level evaluator of each kind
    parts: list[tuple[Path, array | None, list[Case] | None]] | None = None  # several cases files: each as above, in order
    env_values: dict[str, str] = field(default_factory=dict)  # what `env_file:` sets for the run (never in os.environ)
    shown_files: dict[Path, Path] = field(default_factory=dict)  # each cases file (as read) -> as messages name it (`shown_file`)
    unanswered: Problem | None = None  # cases without `output` while the recorded target answers: warned of only while it does
    unreachable_models: list[Problem] = field(default_factory=list)  # `models:` entries missing a credential (`credential_problems`)
    _prepared: bool = field(default=False, repr=False)
    _cells: list[Cell] | None = field(default=None, repr=False)

    @property
    def warnings(self) -> list[Problem]:
        """What validation warned about (the run goes on); cases without `output` only while the recorded
        target answers them (a task given to the Python API answers instead)."""
        recorded = self.unanswered is not None and _answers_recorded(self.suite)
        found = self.found_warnings + [self.unanswered] if recorded else self.found_warnings  # type: ignore[list-item]
        return sorted(found, key=lambda p: (str(p.file), p.line or 0)) if recorded else found

    @warnings.setter
    def warnings(self, found: list[Problem]) -> None:
        self.found_warnings = found

    @property
    def cells(self) -> list[Cell]:
        """The (target, prompt) cells the run covers: all of the suite's unless chosen (`choose_cells`)."""
        if self._cells is None:
            self._cells = suite_cells(self.suite)
        return self._cells

    def keep_cells(self, names: Iterable[tuple[str | None, str | None]]) -> None:
        """Keep the cells of these (target, prompt) names, in the suite's order (a Ray worker, told the run's cells)."""
        wanted = set(names)
        self._cells = [cell for cell in suite_cells(self.suite) if cell.names in wanted]

    def choose_cells(self, targets: Iterable[str] = (), prompts: Iterable[str] = ()) -> None:
        """Keep only the cells of these targets and prompts (`--target`, `--prompt`). Raises CellChoiceError."""
        self._cells = suite_cells(self.suite, targets, prompts)

    def prepare(self) -> None:
        """Have every kind of evaluator the run uses load what it loads on first use (see
        EvaluatorConfig.prepare), once, before the first case is timed."""
        if self._prepared:
            return
        self._prepared = True
        for evaluator in (*self.suite.evaluators, *self.case_evaluators):
            evaluator.prepare()

    def load_transport(self) -> None:
        """For targets that talk HTTP: load what their requests take (agenteval.endpoints.client.load_transport)
        before the first case that may send one starts, not in every worker's first case at once. (A run
        calls it when its first case goes to a thread, so a re-run answered from the cache loads nothing.)"""
        talking = [cell.spec for cell in self.cells if hasattr(cell.spec, "base_url") or hasattr(cell.spec, "url")]
        if talking:
            from agenteval.endpoints.client import load_transport

            load_transport(talking, self.suite.models)

    def credential_problems(self, cache_dir: Path | None = None, use_cache: bool = True, targets: bool = True) -> list[Problem]:
        """What to set before the run can reach its models: one Problem per `models:` entry (read at
        load, cache or not) and, with `targets`, per chosen target whose `credential_problem`
        (agenteval.agents.protocol) names one, read from the environment laid over `env_file:`'s values
        (the environment wins, as everywhere). While `use_cache` and the response cache (in
        `cache_dir`, default next to the suite) exists, a target whose replies are cached is skipped: a
        re-run replays offline without its credential, and a request the cache lacks is its case's
        error naming the same. `agenteval run` refuses to start while there are any; `validate` warns."""
        from agenteval.endpoints import cache_path
        from agenteval.targets.model_entries import credential_problem, replies_cached

        if not targets:
            return list(self.unreachable_models)
        environ = ChainMap(os.environ, self.env_values)  # (read by name, not copied)
        cached = use_cache and cache_path(self.base_dir, cache_dir).exists()
        found: dict[str, Problem] = {problem.render(): problem for problem in self.unreachable_models}
        for cell in self.cells:
            if cached and replies_cached(cell.spec, self.suite.models):
                continue
            if message := credential_problem(cell.spec, environ, self.suite.models):
                key = ("targets", cell.target) if cell.target is not None else ("target",)
                problem = Problem(self.path, None, key, message)
                found.setdefault(problem.render(), problem)  # (one per target, however many prompts it has)
        return list(found.values())

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    @property
    def case_count(self) -> int:
        return self.index.count

    @property
    def selected(self) -> SelectedCases | None:
        """The selected cases (len, `in`), or None when the run takes every case."""
        return None if self.index.selection.everything else SelectedCases(self.index)

    def iter_cases(self) -> Iterator[Case]:
        """The selected cases, in file order. Raises CasesChanged when the JSONL file no longer holds what was validated.
        (An iterator, not a generator of its own: each layer of generators costs every case a little.)"""
        defaults = self.suite.defaults
        return self._cases() if defaults.empty else map(defaults.apply, self._cases())

    def shown_file(self, file: Path) -> Path:
        """A cases file as messages name it: the suite's path as given joined with the name `cases:` gives."""
        return self.shown_files.get(file, file)

    def _cases(self) -> Iterator[Case]:
        if self.parts is not None:
            return self._parts()
        if self.cases is not None:
            return (case for position, case in enumerate(self.cases) if self.index.chosen(position))
        assert self.cases_file is not None and self.fingerprints is not None
        chosen = None if self.index.selection.everything else self.index.chosen
        return stream_validated(self.cases_file, self.fingerprints, chosen, validation_context(self.path), self.shown_file(self.cases_file))

    def _parts(self) -> Iterator[Case]:
        start = 0
        for file, fingerprints, cases in self.parts or ():
            if cases is not None:
                yield from (case for i, case in enumerate(cases) if self.index.chosen(start + i))
                start += len(cases)
            else:
                assert fingerprints is not None
                offset = start
                yield from stream_validated(
                    file, fingerprints, lambda i: self.index.chosen(offset + i), validation_context(self.path), self.shown_file(file))
                start += len(fingerprints)

    def evaluators_for(self, case: Case) -> list[EvaluatorConfig]:
        """The suite's evaluators, with the case's own added (or replacing those of the same name);
        a case's own evaluator without a `transform:` gets the suite's."""
        transform = self.suite.transform
        if transform is not None:
            for evaluator in case.evaluators or ():
                if evaluator.transform is None:
                    evaluator.transform = transform
        return merged_evaluators(self.suite.evaluators, case.evaluators)


def merged_evaluators(suite: list[EvaluatorConfig], case: list[EvaluatorConfig] | None) -> list[EvaluatorConfig]:
    if not case:
        return list(suite)
    merged = {evaluator.label: evaluator for evaluator in suite}
    for evaluator in case:
        merged[evaluator.label] = evaluator
    return list(merged.values())


def validation_context(suite_path: Path) -> dict[str, Any]:
    """What config models read while validating: `base_dir`, the folder that files named in the suite are relative to."""
    return {"base_dir": suite_path.parent}


def load_suite(path: str | Path, selection: Selection = Selection(), overrides: Iterable[str] = ()) -> LoadedSuite:
    """The validated suite with `selection` decided, or SuiteInvalid listing every problem found.
    `overrides` are `--set KEY=VALUE` changes applied before validating (agenteval.suite.overrides)."""
    path = Path(path)
    data, lines, problems = _read_suite_file(path)
    overrides = list(overrides)
    data = _overridden(data, overrides, path)
    try:
        loaded = _load(data, path, selection, lines, problems)
    except SuiteInvalid as invalid:
        raise SuiteInvalid(_set_by(invalid.problems, overrides, path)) from None
    loaded.warnings = _set_by(loaded.found_warnings, overrides, path)
    return loaded


def _set_by(problems: list[Problem], overrides: list[str], path: Path) -> list[Problem]:
    """Problems at a key a `--set` gave name it instead of a line of the file, which does not hold the value."""
    if not overrides:
        return problems
    from agenteval.suite.overrides import parse_override

    given = [(tuple(parse_override(text)[0]), text) for text in reversed(overrides)]  # the last --set of a key wins
    found = []
    for problem in problems:
        text = next((text for key, text in given if problem.file == path and problem.key[: len(key)] == key), None)
        found.append(problem if text is None else replace(problem, line=None, message=f"{problem.message} (from --set {text})"))
    return found


def _overridden(data: dict[Any, Any], overrides: Iterable[str], path: Path) -> dict[Any, Any]:
    overrides = list(overrides)
    if not overrides:
        return data
    from agenteval.suite.overrides import OverrideError, apply_overrides

    try:
        return apply_overrides(data, overrides)
    except OverrideError as exc:
        raise SuiteInvalid([Problem(path, None, (), str(exc))]) from None


def load_suite_data(data: Mapping[str, Any], base_dir: Path, selection: Selection = Selection()) -> LoadedSuite:
    """A suite given as data rather than a file (the Python API): the same checks, no line numbers;
    files it names are relative to `base_dir`. Raises SuiteInvalid."""
    if not isinstance(data, Mapping):
        raise SuiteInvalid([Problem(Path(IN_MEMORY), None, (), "a suite is a mapping with `name`, `evaluators` and `cases`")])
    return _load(dict(data), base_dir / IN_MEMORY, selection, {}, [])


def _load(data: dict[Any, Any], path: Path, selection: Selection, lines: Lines, problems: list[Problem]) -> LoadedSuite:
    data = _without_extensions(data)
    unincluded: list[Problem] = []  # files that could not be included: already at their own file and line
    data, lines, origins = includes.expand(data, path, lines, unincluded)
    try:
        loaded = _load_expanded(data, path, selection, lines, problems)
    except SuiteInvalid as invalid:
        raise SuiteInvalid(unincluded + includes.locate(invalid.problems, path, origins)) from None
    loaded.warnings = includes.locate(loaded.found_warnings, path, origins)
    if unincluded:
        raise SuiteInvalid(unincluded + loaded.warnings)
    return loaded


def _load_expanded(data: dict[Any, Any], path: Path, selection: Selection, lines: Lines, problems: list[Problem]) -> LoadedSuite:
    reference = data.get("cases")
    suite: Suite | None = None
    try:  # inline cases are validated one by one below, with the checks across cases
        suite = Suite.model_validate({**data, "cases": []} if isinstance(reference, list) else data, context=validation_context(path))
    except ValidationError as exc:
        problems += from_validation_error(exc, Suite, data, path, lines)

    warnings: list[Problem] = []
    # Every check runs whatever else is wrong: on the evaluators that are valid on their own when the suite is not.
    context = validation_context(path)
    evaluators = list(enumerate(suite.evaluators)) if suite is not None else _valid_evaluators(data.get("evaluators"), context)
    target = suite.target if suite is not None else _valid_target(data.get("target"), context)
    models = suite.models if suite is not None else data.get("models", {}) if isinstance(data.get("models", {}), dict) else None
    problems += _duplicate_names(data.get("evaluators"), path, lines, ("evaluators",))
    _check_evaluators(evaluators, path, lines, ("evaluators",), problems, warnings)
    problems += _located(_each(evaluators, lambda one: outside_files(one, path.parent)), path, lines, ("evaluators",))
    if models is not None:  # else `models:` itself is the problem
        problems += _located(endpoint_problems(data.get("target"), data.get("evaluators"), models), path, lines, ())
    warnings += _located(missing_programs(target, evaluators, path.parent), path, lines, (), "warning")
    raw_targets = data.get("targets")
    for name, raw in raw_targets.items() if isinstance(raw_targets, Mapping) and models is not None else ():
        if message := target_endpoint_problem(raw, models):
            problems += _located([(("targets", name, "endpoint"), message)], path, lines, ())
    for name, named in (suite.targets or {}).items() if suite is not None else ():
        found = missing_programs(named, [], path.parent)
        warnings += _located(((("targets", name, *key[1:]), message) for key, message in found), path, lines, (), "warning")
    if suite is not None and suite.evaluators and not any(evaluator.weight for evaluator in suite.evaluators):
        message = "every evaluator has weight 0: case scores are always 0"
        warnings.append(Problem(path, line_of(lines, ("evaluators",)), ("evaluators",), message, "warning"))
    checks = _CaseChecks(
        suite_evaluators=None if suite is None else suite.evaluators,
        # a misspelled `evaluators:` is the suite's problem, told once, not each case's
        has_evaluators=bool(data.get("evaluators")) or any(misspells(key, "evaluators") for key in data)
        if suite is None else bool(suite.evaluators),
        trusted=True,
        problems=problems,
        warnings=warnings,
        context=context,
        models=None if suite is None else suite.models,
        defaults=None if suite is None or suite.defaults.empty else suite.defaults,
        unseen=_UnseenPaths(None if suite is None else suite.evaluators),
        recorded=suite is not None and _answers_recorded(suite),
    )
    index = CaseIndex(selection)
    loaded_cases: list[Case] | None = None
    fingerprints: array | None = None
    cases_file: Path | None = None
    parts: list[tuple[Path, array | None, list[Case] | None]] | None = None
    shown: dict[Path, Path] = {}  # each cases file -> as its problems name it
    files = _case_files(reference, path, lines, problems, shown) if _names_files(reference) else None
    if files is not None:
        checks.trusted = trusted_by(data) if suite is None else suite.trust_cases
        parts = []
        for file in files:
            if streamed(file):
                parts.append((file, _validate_streamed(file, shown[file], checks, index), None))
            else:
                parts.append((file, None, _validate_whole_file(file, shown[file], checks, index)))
        if index.suspects:
            problems += _duplicates_across(parts, shown)
    elif isinstance(reference, str):
        cases_file = _cases_path(reference, path, lines, problems, shown)
        checks.trusted = trusted_by(data) if suite is None else suite.trust_cases
        if cases_file is not None and streamed(cases_file):
            fingerprints = _validate_streamed(cases_file, shown[cases_file], checks, index)
        elif cases_file is not None:
            loaded_cases = _validate_whole_file(cases_file, shown[cases_file], checks, index)
    elif isinstance(reference, list):
        located = [(record, lines.get(("cases", i)), ("cases", i)) for i, record in enumerate(reference)]
        loaded_cases = _validate_records(located, path, lines, checks, index)
        for number, case in enumerate(loaded_cases if suite is not None and not problems else ()):
            for evaluator in merged_evaluators(suite.evaluators, case.evaluators):  # type: ignore[union-attr]
                for message in getattr(evaluator, "expected_problems", lambda _: [])(case.expected):  # a path splitting a dotted key
                    key = ("cases", number, "expected")
                    problems.append(Problem(path, line_of(lines, key), key, f"case {case.id!r}: {evaluator.label}: {message}"))
    problems += checks.unscored.told("has no evaluators and the suite defines none", "have no evaluators, and the suite defines none")
    warnings += checks.unseen.warnings(path, lines)
    if suite is not None and not index.count and not problems:
        where = f"{reference} has no cases" if cases_file or parts is not None else "the suite has no cases"
        problems.append(Problem(path, line_of(lines, ("cases",)), ("cases",), where))
    env_values = _load_env_files(suite.env_file, path, lines, problems) if suite is not None and suite.env_file is not None else {}
    unreachable = _credential_problems(suite.models, ChainMap(os.environ, env_values), path, lines) if suite is not None else []
    if problems:
        raise SuiteInvalid(problems + warnings)
    assert suite is not None
    if isinstance(reference, list) and parts is None:
        suite.cases = loaded_cases or []
    index.finish()
    index.release_ids()
    warnings.sort(key=lambda p: (str(p.file), p.line or 0))
    return LoadedSuite(
        suite, path, cases_file, index, warnings, loaded_cases, fingerprints, list(checks.kinds.values()), parts=parts, env_values=env_values,
        shown_files=shown, unreachable_models=unreachable,
        unanswered=next(iter(checks.unanswered.told(
            "has no `output`, which the recorded target answers with: the run fails it unless --predictions gives its answer",
            "have no `output`, which the recorded target answers with: the run fails them unless --predictions gives their answers",
        )), None),
    )


def _credential_problems(models: Mapping[str, Any], environ: Mapping[str, str], path: Path, lines: Lines) -> list[Problem]:
    """A model under `models:` that cannot be reached for want of a credential: one line each, read at
    load and told by `LoadedSuite.credential_problems` (run refuses to start, validate warns)."""
    from agenteval.targets.model_entries import credential_problem

    found = []
    for name, entry in models.items():
        if message := credential_problem(entry, environ, models):
            key = ("models", name, "api_key_env") if "api_key_env" in entry.model_fields_set else ("models", name)
            found.append(Problem(path, line_of(lines, key), key, message))
    return found


def load_definition(source: Path | Mapping[str, Any], overrides: Iterable[str] = ()) -> LoadedSuite:
    """The suite's target and evaluators without its cases (a worker that is sent validated cases):
    from a suite file, or from a suite given as data, whose files are relative to the current folder."""
    if isinstance(source, Mapping):
        data, path = dict(source), Path.cwd() / IN_MEMORY
    else:
        data, _, _ = _read_suite_file(source)
        path = source
    data = _overridden(data, overrides, path)
    data, _, _ = includes.expand(_without_extensions(data), path, {}, [])
    suite = Suite.model_validate({**data, "cases": []}, context=validation_context(path))
    return LoadedSuite(suite, path, None, CaseIndex(Selection()), cases=[])


def _without_extensions(data: dict[Any, Any]) -> dict[Any, Any]:
    return {key: value for key, value in data.items() if not (isinstance(key, str) and key.startswith(_EXTENSION_PREFIX))}


def _read_suite_file(path: Path) -> tuple[dict[Any, Any], Lines, list[Problem]]:
    """The suite's YAML mapping, its line map and duplicate-key problems; SuiteInvalid when there is no mapping."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise SuiteInvalid([Problem(path, None, (), "file not found")]) from None
    except OSError as exc:
        raise SuiteInvalid([Problem(path, None, (), f"cannot read the file: {exc.strerror or exc}")]) from None
    try:
        data, lines, duplicates = load_yaml(decode_utf8(raw))
    except YamlSyntaxError as exc:
        raise SuiteInvalid([_cases_file_given(path) or Problem(path, exc.line, (), str(exc))]) from None
    problems = [Problem(path, line, key, message) for line, key, message in duplicates]
    looks_like_cases = not isinstance(data, dict) or ("name" not in data and "evaluators" not in data and "cases" not in data)
    if looks_like_cases and (given := _cases_file_given(path)):  # (one JSONL line is a YAML mapping too)
        raise SuiteInvalid([given])
    if not isinstance(data, dict):
        problems.append(Problem(path, 1, (), "a suite is a mapping with `name`, `evaluators` and `cases`"))
        raise SuiteInvalid(problems)
    return data, lines, problems


def _cases_file_given(path: Path) -> Problem | None:
    """A cases file given where a suite goes (`agenteval run cases.jsonl`): the suites beside it that name it."""
    if path.suffix.lower() not in (".jsonl", ".json", ".csv", ".tsv"):
        return None
    suites = [str(suite) for suite in sorted(path.parent.glob("*.y*ml")) if _names(suite, path.name)]
    return Problem(path, None, (), "this is a cases file, not a suite: run the suite that names it"
                   + (f" ({', '.join(suites)})" if suites else " (its `cases:`)"))


def _names(suite: Path, name: str) -> bool:
    """Whether a suite file names `name` in its first MiB (a suite's `cases:` is near its top; a huge file is not read whole)."""
    try:
        with suite.open("rb") as handle:
            return name.encode() in handle.read(1 << 20)
    except OSError:
        return False


def _answers_recorded(suite: Suite) -> bool:
    """Whether each case answers with its own `output`: the suite's one target is `recorded`."""
    return suite.targets is None and suite.target.type == "recorded"


def _load_env_files(names: str | list[str], suite_path: Path, lines: Lines, problems: list[Problem]) -> dict[str, str]:
    """The suite's `env_file:` values the environment lacks (the run's own: os.environ is not changed)."""
    from agenteval.suite.env_files import EnvFileError, suite_env

    files = []
    for i, name in enumerate([names] if isinstance(names, str) else names):
        key: KeyPath = ("env_file",) if isinstance(names, str) else ("env_file", i)
        file = suite_path.parent / name
        if not file.is_file():
            problems.append(Problem(suite_path, line_of(lines, key), key, f"env file not found: {name} (looked for {file})"))
        files.append(file)
    if not problems:
        try:
            return suite_env(files)
        except EnvFileError as exc:
            problems.append(Problem(suite_path, line_of(lines, ("env_file",)), ("env_file",), str(exc)))
    return {}


def _names_files(reference: Any) -> bool:
    """`cases:` names files (one, a glob, or a list of them) rather than holding cases inline."""
    if isinstance(reference, str):
        return any(char in reference for char in "*?[")
    return isinstance(reference, list) and bool(reference) and all(isinstance(item, str) for item in reference)


def _case_files(reference: str | list[str], suite_path: Path, lines: Lines, problems: list[Problem], shown: dict[Path, Path]) -> list[Path]:
    """The files `cases:` names, in order: each glob's matches sorted by name, each file once; `shown`
    gets how each is named in messages."""
    found: list[Path] = []
    for i, name in enumerate([reference] if isinstance(reference, str) else reference):
        key: KeyPath = ("cases",) if isinstance(reference, str) else ("cases", i)
        line = line_of(lines, key)
        if any(char in name for char in "*?["):
            matches = sorted(
                (m.resolve(), m) for m in suite_path.parent.glob(name) if m.is_file() and m.suffix.lower() in CASE_FILE_TYPES)
            if not matches:
                problems.append(Problem(suite_path, line, key, f"no cases file matches {name!r} (looked in {suite_path.parent})"))
            for file, match in matches:
                if file not in found:
                    found.append(file)
                    shown.setdefault(file, _shown_path(match, file))
        else:
            file = _cases_path(name, suite_path, {("cases",): line} if line else {}, problems, shown)
            if file is not None and file not in found:
                found.append(file)
    return found


def _shown_path(joined: Path, file: Path) -> Path:
    """How messages name a file the suite names: the suite's path as given joined with the name written
    (`joined`), with `.` and `a/..` taken out (absolute only where either was). `file` is where it
    resolves to: where taking `a/..` out would name another file (`a` a link), the join stays as it is."""
    normal = Path(os.path.normpath(joined))
    return normal if normal == joined or normal.resolve() == file else joined


def _duplicates_across(parts: list[tuple[Path, array | None, list[Case] | None]], shown: dict[Path, Path]) -> list[Problem]:
    """A case id used in two of the files (a duplicate inside one file is that file's own problem)."""
    problems: list[Problem] = []
    first: dict[str, tuple[Path, int | None]] = {}
    for file, fingerprints, cases in parts:
        ids = streamed_ids(file, fingerprints) if fingerprints is not None else ((c.id, None, ()) for c in cases or ())
        for case_id, line, prefix in ids:
            if case_id not in first:
                first[case_id] = (file, line)
            elif first[case_id][0] != file:
                where = f"{first[case_id][0].name}:{first[case_id][1]}" if first[case_id][1] else first[case_id][0].name
                problems.append(Problem(shown[file], line, prefix + ("id",), f"duplicate case id {case_id!r} (first in {where})"))
    return problems


def _cases_path(reference: str, suite_path: Path, lines: Lines, problems: list[Problem], shown: dict[Path, Path]) -> Path | None:
    """The cases file `cases:` names, resolved (`shown` gets how messages name it), or None with its problem."""
    joined = suite_path.parent / reference
    cases_file = joined.resolve()
    shown.setdefault(cases_file, _shown_path(joined, cases_file))
    line = line_of(lines, ("cases",))
    if cases_file.suffix.lower() not in CASE_FILE_TYPES:
        problems.append(Problem(suite_path, line, ("cases",), f"cases file must be .jsonl, .json, .yaml, .csv or .tsv, got {reference!r}"))
        return None
    if not cases_file.is_file():
        folder = reference[: len(reference) - len(Path(reference).name)]  # as written: `data/` of `data/cases.json`
        hint = did_you_mean(reference, [folder + name for name in _case_file_names(cases_file.parent)])
        problems.append(Problem(suite_path, line, ("cases",), f"cases file not found: {reference} (looked for {shown[cases_file]}){hint}"))
        return None
    return cases_file


def _case_file_names(folder: Path) -> list[str]:
    """The cases files in a folder, for a did-you-mean (none when it cannot be listed)."""
    try:
        return sorted(entry.name for entry in folder.iterdir() if entry.suffix.lower() in CASE_FILE_TYPES)
    except OSError:
        return []


@dataclass
class _CaseChecks:
    """The rules every case is held to, and where their problems go."""

    suite_evaluators: list[EvaluatorConfig] | None  # None: the suite's own keys are invalid
    has_evaluators: bool
    trusted: bool  # may case-level evaluators run code, use networks, files, variables (inline cases, or trust_cases)
    problems: list[Problem]
    warnings: list[Problem]
    context: dict[str, Any] = field(default_factory=dict)  # validation context: the suite's folder
    models: dict[str, Any] | None = None  # the suite's `models:`; None: the suite's own keys are invalid
    kinds: dict[type, EvaluatorConfig] = field(default_factory=dict)  # the first case-level evaluator of each type
    defaults: CaseDefaults | None = None  # the suite's `defaults:`, merged before the case is indexed (its tags select it)
    plain: Callable[[Any], Case | None] = field(default_factory=Case.plain_builder)  # validation's fast path for a plain record
    unseen: _UnseenPaths = field(default_factory=lambda: _UnseenPaths(None))  # field paths no `expected` has had yet
    recorded: bool = False  # the suite's one target is `recorded`: a case answers with its own `output`
    unanswered: _Shared = field(default_factory=lambda: _Shared("warning"))  # of those, cases without one
    unscored: _Shared = field(default_factory=lambda: _Shared("error"))  # cases with no evaluators in a suite that has none

    def case(self, record: Any, file: Path, line: int | None, prefix: KeyPath, lines: Lines) -> Case | None:
        """The validated case, or None with its problems recorded."""
        if not isinstance(record, dict):
            self.problems.append(Problem(file, line, prefix, "a case must be an object with an `id`"))
            return None
        if not self.trusted and record.get("tools"):  # a case's tool implementations: agenteval.suite.trust
            self.problems.extend(_located(untrusted_tools(record.get("id"), record["tools"]), file, lines, prefix))
        raw = record.get("evaluators")
        if raw:
            where = prefix + ("evaluators",)
            self.problems.extend(_duplicate_names(raw, file, lines, where))
            reads = list(untrusted_files(record.get("id"), raw, self.context["base_dir"]))
            if reads:  # before validation, which may read the files
                self.problems.extend(_located(reads, file, lines, prefix))
                if not self.trusted:  # and every other thing these evaluators may not do, at once
                    case_id, unread = _shown_id(record.get("id")), _without(raw, [key[1:] for key, _ in reads])
                    uses = _each(_valid_evaluators(unread, self.context), lambda one: untrusted_uses(case_id, one, self.models))
                    self.problems.extend(_located(uses, file, lines, where))
                return None
        base_dir = self.context["base_dir"]
        if record.get("turns") and (reads := list(conversation_problems(_shown_id(record.get("id")), record, None, self.models, self.trusted, base_dir))):
            self.problems.extend(_located(reads, file, lines, prefix))  # a turn's evaluators' files, before validation reads them
            return None
        case: Case | None = self.plain(record)
        if case is None:
            try:
                case = Case.model_validate(record, context=self.context)
            except ValidationError as exc:
                self.problems.extend(from_validation_error(exc, Case, record, file, lines, prefix))
        if case is not None and case.is_conversation:  # its endpoints and per-turn evaluators (agenteval.suite.conversation)
            self.problems.extend(_located(conversation_problems(case.id, record, case.turns or [], self.models, self.trusted, base_dir), file, lines, prefix))
        if case is not None and self.defaults is not None and self.defaults.input and not (case.input is None or isinstance(case.input, dict)):
            key = prefix + ("input",)
            self.problems.append(Problem(file, line_of(lines, key) or line, key, f"case {case.id!r}: `defaults.input` has keys to "
                                         f"merge, but this input is a {type(case.input).__name__}, not a mapping"))
        if case is not None and self.defaults is not None:
            self.defaults.apply(case)
        if case is not None and not case.evaluators and not self.has_evaluators and not any(t.evaluators for t in case.turns or ()):
            self.unscored.add(case.id, file, line, prefix)
        if self.recorded and case is not None and not case.has_output and not case.is_conversation:
            self.unanswered.add(case.id, file, line, prefix)
        if case is not None and self.unseen.pending:
            self.unseen.see(case.expected)
        if not raw:
            return case
        evaluators = list(enumerate(case.evaluators or ())) if case is not None else _valid_evaluators(raw, self.context)
        case_id = case.id if case is not None else _shown_id(record.get("id"))
        base_dir = self.context["base_dir"]
        _check_evaluators(evaluators, file, lines, where, self.problems, self.warnings)
        if not self.trusted:
            self.problems.extend(_located(_each(evaluators, lambda one: untrusted_uses(case_id, one, self.models)), file, lines, where))
        if self.models is not None:
            self.problems.extend(_located(_each(evaluators, lambda one: unknown_endpoints(case_id, one, self.models)), file, lines, where))
        self.problems.extend(_located(_each(evaluators, lambda one: outside_files(one, base_dir, f"case {case_id!r}: ")), file, lines, where))
        self.warnings.extend(_located(missing_programs(None, evaluators, base_dir, ()), file, lines, where, "warning"))
        if case is not None:
            self._weights(case, file, line, prefix)
            for evaluator in case.evaluators or ():
                self.kinds.setdefault(type(evaluator), evaluator)
        return case

    def _weights(self, case: Case, file: Path, line: int | None, prefix: KeyPath) -> None:
        suite = self.suite_evaluators
        if suite and any(e.weight for e in suite) and not any(e.weight for e in merged_evaluators(suite, case.evaluators)):
            message = f"case {case.id!r}: its evaluators all have weight 0, so its score is always 0"
            self.warnings.append(Problem(file, line, prefix + ("evaluators",), message, "warning"))


@dataclass
class _Shared:
    """A slip many cases may share (thousands of a cases file), told once: at the first of them, with how many."""

    severity: Severity
    count: int = 0
    first: Problem | None = None

    def add(self, case_id: str, file: Path, line: int | None, prefix: KeyPath) -> None:
        self.count += 1
        if self.first is None:
            self.first = Problem(file, line, prefix, f"case {case_id!r}", self.severity)

    def told(self, one: str, many: str) -> list[Problem]:
        """`case 'c0' ONE`, or `case 'c0' and 4,999 other cases MANY`; none when no case has the slip."""
        first, others = self.first, self.count - 1
        if first is None:
            return []
        said = f" {one}" if not others else f" and {others:,} other case{'s' if others > 1 else ''} {many}"
        return [replace(first, message=first.message + said)]


class _UnseenPaths:
    """The suite's field paths (`expected_paths()` of its evaluators) that no case's `expected` has held so
    far, counted while the cases are validated: a few lookups per case until each path has been seen, then
    none. For a path never seen, the keys found where its walk stopped (a bounded set) give a did-you-mean."""

    def __init__(self, evaluators: list[EvaluatorConfig] | None) -> None:
        self.pending = [
            ((index, *where), keys, get) for index, evaluator in enumerate(evaluators or ())
            for where, keys, get in getattr(evaluator, "expected_paths", list)()
        ]
        self.answers = 0  # cases with an `expected`, while a path is pending
        self.stops: dict[tuple[Any, ...], tuple[int, set[str]]] = {}  # path -> (depth its walk stopped at, keys there)

    def see(self, expected: Any) -> None:
        if not isinstance(expected, (dict, list)):  # (a text or a number has no fields: a different slip)
            return
        self.answers += 1
        still = [entry for entry in self.pending if entry[2](expected) is MISSING]
        for _, keys, _ in still if self.answers <= _SAMPLED else ():
            self._stop(keys, expected)
        self.pending = still

    def _stop(self, keys: tuple[Any, ...], node: Any) -> None:
        depth = 0
        for depth, key in enumerate(keys):
            if type(node) is not dict or key not in node:
                break
            node = node[key]
        if type(node) is not dict:
            return
        found, names = self.stops.get(keys, (-1, set()))
        if depth > found:
            found, names = depth, set()
        if depth == found and len(names) < _NAMES_KEPT:
            names.update(name for name in islice(node, _NAMES_KEPT) if isinstance(name, str))
        self.stops[keys] = (found, names)

    def warnings(self, file: Path, lines: Lines) -> list[Problem]:
        """A warning for each path no case's `expected` held (none when no case's `expected` is a mapping or a list)."""
        found = []
        for where, keys, _ in self.pending if self.answers else ():
            depth, names = self.stops.get(keys, (0, set()))
            word = keys[depth] if depth < len(keys) else None
            hint = did_you_mean(word, sorted(names)) if isinstance(word, str) else ""
            if hint:
                guess = hint.split("'")[1]
                hint = f"; did you mean {format_path((*keys[:depth], guess, *keys[depth + 1:]))!r}?"
            message = (f"{format_path(keys)!r} is in no case's `expected` (of the {self.answers:,} that have one), "
                       f"so every case skips it{hint}")
            key = ("evaluators", *where)
            found.append(Problem(file, line_of(lines, key), key, message, "warning"))
        return found


_SAMPLED = 64  # cases whose keys give a pending path's did-you-mean
_NAMES_KEPT = 256  # keys kept of the level where a path's walk stopped, for its did-you-mean


def _located(found: Iterable[tuple[KeyPath, str]], file: Path, lines: Lines, prefix: KeyPath, severity: Severity = "error") -> list[Problem]:
    """(key path under `prefix`, message) pairs as problems with their lines."""
    return [Problem(file, line_of(lines, prefix + key), prefix + key, message, severity) for key, message in found]


_EVALUATOR: TypeAdapter[EvaluatorConfig] = TypeAdapter(EvaluatorSpec)


def _valid_evaluators(raw: Any, context: dict[str, Any]) -> list[tuple[int, EvaluatorConfig]]:
    """(position, config) of each evaluator in raw data that is valid on its own: when the list as a
    whole failed, the checks on evaluators still run on these."""
    found: list[tuple[int, EvaluatorConfig]] = []
    for index, item in enumerate(raw if isinstance(raw, list) else ()):
        try:
            found.append((index, _EVALUATOR.validate_python(item, context=context)))
        except Exception:  # noqa: BLE001 - its problems are reported by the validation of the whole
            continue
    return found


def _without(raw: Any, keys: list[KeyPath]) -> Any:
    """A copy of raw evaluators without the keys at these paths (the files that must not be read)."""
    import copy

    trimmed = copy.deepcopy(raw)
    for key in keys:
        node = trimmed
        for part in key[:-1]:
            node = node[part]
        node.pop(key[-1], None)
    return trimmed


def _valid_target(raw: Any, context: dict[str, Any]) -> Any:
    from agenteval.targets import TargetSpec

    try:
        return TypeAdapter(TargetSpec).validate_python(raw, context=context) if isinstance(raw, dict) else None
    except Exception:  # noqa: BLE001 - its problems are reported by the validation of the whole
        return None


def _each(
    evaluators: list[tuple[int, EvaluatorConfig]], check: Callable[[list[EvaluatorConfig]], Iterable[tuple[KeyPath, str]]]
) -> Iterator[tuple[KeyPath, str]]:
    """A check written for a list of evaluators, run on each one at its own position."""
    for index, evaluator in evaluators:
        for key, message in check([evaluator]):
            yield (index, *key[1:]), message


def _shown_id(value: Any) -> str:
    return str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else "?"


def _validate_streamed(file: Path, shown: Path, checks: _CaseChecks, index: CaseIndex) -> array:
    """Validate every record of a JSONL or table file, keeping one fingerprint per record (0 for one with
    problems); its problems name it as `shown`."""
    fingerprints = new_fingerprints()
    try:
        size = file.stat().st_size
        with file.open("rb") as handle:
            found = records(file, handle)
            _validate_records_of(islice(found, _SAMPLE_RECORDS), shown, checks, index, fingerprints)
            if len(fingerprints) == _SAMPLE_RECORDS:
                index.expect(size * _SAMPLE_RECORDS // max(handle.tell(), 1))
                _validate_records_of(found, shown, checks, index, fingerprints)
    except CaseFileError as exc:
        checks.problems.append(Problem(shown, exc.line, exc.key, str(exc)))
        return fingerprints
    except OSError as exc:
        checks.problems.append(Problem(shown, None, (), f"cannot read the file: {exc.strerror or exc}"))
        return fingerprints
    if index.suspects:
        checks.problems.extend(_duplicate_ids(streamed_ids(file, fingerprints), index, shown))
    return fingerprints


_NO_TAGS: list[str] = []


def _validate_records_of(
    found: Iterator[tuple[int, int, Any]], file: Path, checks: _CaseChecks, index: CaseIndex, fingerprints: array
) -> None:
    """The loop of `_validate_streamed` (`file` as its problems name it). A plain record (`plain_id`) whose
    case `checks.case` would take as it is (no defaults to merge, evaluators in the suite) is indexed without building it."""
    plain = plain_id if checks.defaults is None and checks.has_evaluators else _never
    add, keep, unseen, recorded = index.add, fingerprints.append, checks.unseen, checks.recorded
    for number, mark, record in found:
        case_id = plain(record)
        if case_id is not None:
            add(case_id, record.get("tags", _NO_TAGS))
            keep(mark)
            if recorded and "output" not in record:
                checks.unanswered.add(case_id, file, number, ())
            if unseen.pending:
                unseen.see(record.get("expected"))
            continue
        if isinstance(record, CaseFileError):
            checks.problems.append(Problem(file, record.line, record.key, str(record)))
            keep(0)
            continue
        case = checks.case(record, file, number, (), {(): number})
        if case is not None:
            index.add(case.id, case.tags)
        elif (case_id := raw_id(record)) is not None:  # its id still counts for the duplicate check
            index.add(case_id, _NO_TAGS)
        keep(0 if case is None else mark)


def _never(record: Any) -> None:
    return None


def _validate_whole_file(file: Path, shown: Path, checks: _CaseChecks, index: CaseIndex) -> list[Case]:
    """The valid cases of a .json or .yaml file; its problems name it as `shown`."""
    try:
        records, lines, structure = read_whole(file)
    except CaseFileError as exc:
        checks.problems.append(Problem(shown, exc.line, exc.key, str(exc)))
        return []
    except OSError as exc:
        checks.problems.append(Problem(shown, None, (), f"cannot read the file: {exc.strerror or exc}"))
        return []
    checks.problems.extend(Problem(shown, line, key, message) for line, key, message in structure)
    located = [(record, lines.get((i,)), (i,)) for i, record in enumerate(records)]
    return _validate_records(located, shown, lines, checks, index)


def _validate_records(
    located: list[tuple[Any, int | None, KeyPath]], file: Path, lines: Lines, checks: _CaseChecks, index: CaseIndex
) -> list[Case]:
    """Cases held in memory (inline, .json, .yaml): validated in order, then the exact duplicate check."""
    valid: list[Case] = []
    ids: list[tuple[str, int | None, KeyPath]] = []  # (of invalid cases too: a duplicate id is told with their other problems)
    for record, line, prefix in located:
        case = checks.case(record, file, line, prefix, lines)
        case_id = case.id if case is not None else raw_id(record)
        if case is not None:
            index.add(case.id, case.tags)
            valid.append(case)
        elif case_id is not None:
            index.add(case_id, _NO_TAGS)
        if case_id is not None:
            ids.append((case_id, line, prefix))
    if index.suspects:
        checks.problems.extend(_duplicate_ids(ids, index, file))
    return valid


def _duplicate_ids(cases: Iterable[tuple[str, int | None, KeyPath]], index: CaseIndex, file: Path) -> list[Problem]:
    """The exact check behind equal id hashes: a duplicate id, named with the line of its first use."""
    problems: list[Problem] = []
    first: dict[str, int | None] = {}
    for case_id, line, prefix in cases:
        if not index.is_suspect(case_id):
            continue
        if case_id in first:
            where = f" (first at line {first[case_id]})" if first[case_id] else ""
            problems.append(Problem(file, line, prefix + ("id",), f"duplicate case id {case_id!r}{where}"))
        else:
            first[case_id] = line
    return problems


def _duplicate_names(raw: Any, file: Path, lines: Lines, prefix: KeyPath) -> list[Problem]:
    """Evaluators of one list sharing a name (`name`, else `type`), read from the raw data so that
    an evaluator with other problems still counts."""
    problems, seen = [], set()
    for index, item in enumerate(raw if isinstance(raw, list) else ()):
        if not isinstance(item, dict):
            continue
        label = item.get("name") or item.get("type")
        if not isinstance(label, str):
            continue
        if label in seen:
            key = prefix + (index, "name")
            message = f"two evaluators are named {label!r}; give each a unique `name`"
            problems.append(Problem(file, line_of(lines, key), key, message))
        seen.add(label)
    return problems


def _check_evaluators(
    evaluators: list[tuple[int, EvaluatorConfig]], file: Path, lines: Lines, prefix: KeyPath,
    problems: list[Problem], warnings: list[Problem],
) -> None:
    """Each evaluator's own load-time findings: a package it needs that is not installed is an
    error naming the (innermost) evaluator; anything else is a warning."""
    for index, evaluator in evaluators:
        found = evaluator.warnings()
        if not found:
            continue
        owners = sorted(nested(evaluator, (index,)), key=lambda pair: len(pair[0]), reverse=True)
        for where, message in found:
            key = prefix + (index, *where)
            if isinstance(message, MissingExtra):
                owner = next(inner for path, inner in owners if key[len(prefix):len(prefix) + len(path)] == path)
                text = f"evaluator {owner.label!r} ({owner.type}): {message}"
                problems.append(Problem(file, line_of(lines, key), key, text))
            else:
                warnings.append(Problem(file, line_of(lines, key), key, message, "warning"))

"""pytest plugin: an agenteval suite collected as tests, one item per case and cell.

`pytest --agenteval suite.yaml` (or the `agenteval_suites` ini setting, or suite files matching
`agenteval_suite_pattern`, default `*.agenteval.yaml`, where pytest looks for tests) gives items named `suite.yaml::case-id[target/prompt]`,
so `-k`, `--lf`, `-x`, `--junitxml` and pytest-xdist work as for any test. The cases of a suite
run together through `agenteval.run_suite` on the first of its items pytest runs (under xdist,
the cases handed to the worker so far), with the response cache, `--agenteval-repeat` and the gate per cell.

Imports of agenteval itself wait until a suite is collected: the plugin costs a session that
collects none nothing but this module.
"""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path
from typing import Any

import pytest

from agenteval.cells import cell_label as _cell_label

DEFAULT_PATTERN = "*.agenteval.yaml"
_STATE = pytest.StashKey["_Session"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agenteval", "agenteval suites as tests")
    group.addoption("--agenteval", action="append", default=[], metavar="SUITE", dest="agenteval_suites",
                    help="Collect this agenteval suite: one test per case and cell (repeatable).")
    group.addoption("--agenteval-repeat", type=int, default=None, metavar="N",
                    help="Run each case N times; its test passes when every repetition passes.")
    group.addoption("--agenteval-min-pass-rate", type=float, default=None, metavar="RATE",
                    help="The gate per cell: failing cases are expected failures (x) and one "
                    "`pass-rate` test per cell fails when fewer than RATE of its cases passed.")
    group.addoption("--agenteval-target", action="append", default=[], metavar="NAME",
                    help="Only this target of a suite's `targets:` (repeatable).")
    group.addoption("--agenteval-prompt", action="append", default=[], metavar="NAME",
                    help="Only this prompt of a suite's `prompts:` (repeatable).")
    group.addoption("--agenteval-no-cache", action="store_true", default=False,
                    help="Neither read nor write the response cache.")
    group.addoption("--agenteval-output", default=None, metavar="DIR",
                    help="Also write each suite run's results JSONL into DIR.")
    parser.addini("agenteval_suites", type="paths", default=[], help="agenteval suite files collected as tests.")
    parser.addini("agenteval_suite_pattern", type="args", default=[DEFAULT_PATTERN],
                  help=f"File name patterns of suites collected where pytest looks for tests (default {DEFAULT_PATTERN}).")
    parser.addini("agenteval_min_pass_rate", default="", help="The gate per cell, as --agenteval-min-pass-rate.")
    parser.addini("agenteval_repeat", default="", help="Runs per case, as --agenteval-repeat.")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "agenteval(suite=None, cases=None, evaluators=None, **options): "
                            "what the `agenteval_run` fixture evaluates (a suite file relative to the test "
                            "file, or inline cases and evaluators).")
    state = _Session(config)
    config.stash[_STATE] = state
    config.pluginmanager.register(state, "agenteval-session")  # (its pytest_testnodedown, under pytest-xdist)
    # Suites named on the command line are collected even where pytest would not look (testpaths).
    args = [Path(arg.split("::", 1)[0]).resolve() for arg in config.args]
    for suite in state.explicit:
        if not any(suite == arg or arg in suite.parents for arg in args):
            config.args.append(str(suite))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    state: _Session = parent.config.stash[_STATE]
    if file_path.suffix not in (".yaml", ".yml"):
        return None
    if file_path.resolve() in state.explicit or any(fnmatch.fnmatchcase(file_path.name, pattern) for pattern in state.patterns):
        return SuiteFile.from_parent(parent, path=file_path)
    return None


class SuiteError(Exception):
    """The suite did not validate: every problem, as `agenteval validate` lists them."""


class CaseFailed(AssertionError):
    """A case that did not pass: the plugin reports it with the case's misses."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class _Session:
    """The plugin's options and, per suite file, the results of the cases run so far."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        option = config.option
        self.explicit = {Path(item).resolve() for item in option.agenteval_suites}
        self.explicit |= {Path(item).resolve() for item in config.getini("agenteval_suites")}
        self.patterns = list(config.getini("agenteval_suite_pattern"))
        self.repeat = option.agenteval_repeat or _ini_number(config, "agenteval_repeat", int) or 1
        rate = option.agenteval_min_pass_rate
        self.min_pass_rate = rate if rate is not None else _ini_number(config, "agenteval_min_pass_rate", float)
        if self.repeat < 1:
            raise pytest.UsageError(f"--agenteval-repeat must be 1 or more, got {self.repeat}")
        if self.min_pass_rate is not None and not 0 <= self.min_pass_rate <= 1:
            raise pytest.UsageError(f"--agenteval-min-pass-rate must be between 0 and 1, got {self.min_pass_rate}")
        self.summaries: list[dict[str, Any]] = []  # each suite run's summary, for the file beside the JUnit report
        # per (suite file, target, prompt): whether each case run here passed (in pytest-xdist's controller,
        # each worker's, merged), and the lines of the gate the controller judged from them
        self.outcomes: dict[tuple[str, str | None, str | None], list[bool]] = {}
        self.gate_lines: list[str] = []

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """A pytest-xdist worker's case outcomes, merged in the controller as the worker ends."""
        for path, target, prompt, passed in getattr(node, "workeroutput", {}).get(_OUTCOME, ()):
            self.outcomes.setdefault((path, target, prompt), []).extend(bool(ok) for ok in passed)


def _ini_number(config: pytest.Config, name: str, kind: type) -> Any:
    text = str(config.getini(name) or "").strip()
    if not text:
        return None
    try:
        return kind(text)
    except ValueError:
        raise pytest.UsageError(f"ini setting {name} = {text!r} is not a number") from None


class SuiteFile(pytest.File):
    """A suite file: validated when collected, its cases run together when the first is run."""

    def collect(self) -> Any:
        from agenteval.suite.loader import SuiteInvalid, load_suite

        state: _Session = self.config.stash[_STATE]
        try:
            loaded = load_suite(self.path)
            loaded.choose_cells(self.config.option.agenteval_target, self.config.option.agenteval_prompt)
        except SuiteInvalid as exc:
            errors = sum(problem.severity == "error" for problem in exc.problems)
            lines = [problem.render() for problem in exc.problems]
            raise SuiteError("\n".join([*lines, f"{self.path.name}: {errors} error{'s' if errors != 1 else ''}"])) from None
        except Exception as exc:  # noqa: BLE001 - an unknown cell name: its message names the closest
            if type(exc).__name__ != "CellChoiceError":
                raise
            raise SuiteError(str(exc)) from None
        self.suite_name = loaded.suite.name
        self.cells = [(cell.target, cell.prompt) for cell in loaded.cells]
        self.results: dict[tuple[str, str | None, str | None], list[Any]] = {}
        self.problem: str | None = None  # why the run could not start: every case's failure
        self.case_count = 0
        for case in loaded.iter_cases():
            self.case_count += 1
            for target, prompt in self.cells:
                yield CaseItem.from_parent(self, name=_item_name(case.id, target, prompt), case_id=case.id, target=target, prompt=prompt)
        if state.min_pass_rate is not None and not hasattr(self.config, "workerinput"):  # (under xdist: pytest_sessionfinish)
            for target, prompt in self.cells:
                label = _cell_label(target, prompt)
                yield GateItem.from_parent(self, name=f"pass-rate[{label}]" if label else "pass-rate", target=target, prompt=prompt)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, SuiteError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def results_of(self, item: CaseItem) -> list[Any]:
        """The item's results (one per repetition), running the cases pending with it first."""
        key = (item.case_id, item.target, item.prompt)
        if key not in self.results and self.problem is None:  # (a run that could not start is not tried again)
            self._run(self._batch(item))
        return self.results.get(key, [])

    def _batch(self, item: CaseItem) -> list[CaseItem]:
        """The items of this suite that this process will run and has not: all of them in one
        process; in a pytest-xdist worker, `item` and those the worker has been handed so far."""
        items = self.session.items
        if hasattr(self.config, "workerinput"):
            items = [item, *(items[index] for index in _handed(self.config))]
        pending = [
            other for other in items
            if isinstance(other, CaseItem) and other.parent is self and (other.case_id, other.target, other.prompt) not in self.results
        ]
        return list(dict.fromkeys(pending)) or [item]

    def _run(self, batch: list[CaseItem]) -> None:
        """Run the batch's cases (the items of this suite this process runs)."""
        case_ids = {item.case_id for item in batch}
        cells = {(item.target, item.prompt) for item in batch}
        filters = [] if len(case_ids) == self.case_count else [_glob_of(case_id) for case_id in sorted(case_ids)]
        some = len(cells) < len(self.cells)
        targets = sorted({target for target, _ in cells if target is not None}) if some else []
        prompts = sorted({prompt for _, prompt in cells if prompt is not None}) if some else []
        for item in batch:
            self.results.setdefault((item.case_id, item.target, item.prompt), [])
        self._run_suite(filters, targets, prompts)

    def run_cell(self, target: str | None, prompt: str | None) -> None:
        """Run every case of one cell here (its gate's cases, when none of them ran in this session)."""
        self._run_suite([], [target] if target is not None else [], [prompt] if prompt is not None else [])

    def _run_suite(self, filters: list[str], targets: list[str], prompts: list[str]) -> None:
        """One `run_suite` of these cases and cells (the command line's cells when none is named),
        its results kept by case and cell. A run that cannot start (a credential missing, an output
        folder that is a file) is the failure of each case, in the words `agenteval run` would use."""
        from agenteval.api import run_suite
        from agenteval.runs import RunError
        from agenteval.suite.loader import SuiteInvalid

        state: _Session = self.config.stash[_STATE]
        output = None
        try:
            if self.config.option.agenteval_output:
                folder = Path(self.config.option.agenteval_output)
                folder.mkdir(parents=True, exist_ok=True)
                worker = getattr(self.config, "workerinput", {}).get("workerid")  # (each xdist worker writes its own files)
                output = str(folder / f"{_slug(self.suite_name)}-{worker + '-' if worker else ''}{len(state.summaries) + 1}.jsonl")
            run = run_suite(
                self.path, filters=filters, targets=targets or list(self.config.option.agenteval_target),
                prompts=prompts or list(self.config.option.agenteval_prompt), repeat=state.repeat,
                cache=not self.config.option.agenteval_no_cache, output=output, overwrite=True,
            )
        except SuiteInvalid as exc:
            self.problem = "\n".join(problem.render() for problem in exc.problems)
            return
        except (RunError, OSError) as exc:
            self.problem = f"the run cannot start: {exc}"
            return
        with run:
            for result in run:
                self.results.setdefault((result.case_id, result.target, result.prompt), []).append(result)
            summary = run.summary
        state.summaries.append({"suite": self.suite_name, "path": str(self.path), "summary": summary})

    def cell_results(self, target: str | None, prompt: str | None) -> list[list[Any]]:
        return [results for (_, t, p), results in self.results.items() if (t, p) == (target, prompt) and results]


class CaseItem(pytest.Item):
    """One case of a suite in one cell: passes when the case passed (every repetition)."""

    def __init__(self, *, case_id: str, target: str | None, prompt: str | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case_id, self.target, self.prompt = case_id, target, prompt

    def runtest(self) -> None:
        from agenteval.testing import failure_text

        suite: SuiteFile = self.parent  # type: ignore[assignment]
        results = suite.results_of(self)
        if not results and suite.problem is not None:
            raise CaseFailed(suite.problem)
        failing = [result for result in results if result.verdict != "pass"]
        state: _Session = self.config.stash[_STATE]
        state.outcomes.setdefault((str(self.path), self.target, self.prompt), []).append(bool(results) and not failing)
        if not results:
            raise CaseFailed(f"{self.case_id}: the run returned no result for this case")
        if not failing:
            return
        head = "" if len(results) == 1 else f"{len(results) - len(failing)} of {len(results)} repetitions passed\n"
        text = head + "\n".join(failure_text(result) for result in failing)
        if state.min_pass_rate is not None:
            pytest.xfail(f"allowed by the gate: {text}")
        raise CaseFailed(text)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, CaseFailed):
            return excinfo.value.text
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        label = _cell_label(self.target, self.prompt)
        return self.path, None, f"case {self.case_id}" + (f" [{label}]" if label else "")


class GateItem(pytest.Item):
    """The gate of one cell: at least `--agenteval-min-pass-rate` of its cases run here passed."""

    def __init__(self, *, target: str | None, prompt: str | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target, self.prompt = target, prompt

    def runtest(self) -> None:
        suite: SuiteFile = self.parent  # type: ignore[assignment]
        state: _Session = self.config.stash[_STATE]
        cases = suite.cell_results(self.target, self.prompt)
        if not cases:  # (`--lf` after the gate failed, `-k pass-rate`: none of its cases ran in this session)
            suite.run_cell(self.target, self.prompt)
            cases = suite.cell_results(self.target, self.prompt)
        passed = [all(result.verdict == "pass" for result in results) for results in cases]
        failing = sorted(results[0].case_id for results, ok in zip(cases, passed) if not ok)
        problem = _gate_problem(passed, state.min_pass_rate, _cell_label(self.target, self.prompt), failing)
        if problem:
            raise CaseFailed(problem)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, CaseFailed):
            return excinfo.value.text
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, self.name


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A cell's gate runs after every case of its suite (it reads their results)."""
    gates = [item for item in items if isinstance(item, GateItem)]
    if gates:
        items[:] = [item for item in items if not isinstance(item, GateItem)] + gates


_OUTCOME = "agenteval_outcomes"
"""What a pytest-xdist worker hands the controller (its `workeroutput`): [suite file, target, prompt, [passed, ...]] per cell."""


def _gate_problem(passed: list[bool], rate: float, label: str, failing: list[str]) -> str | None:
    """Why a cell's cases fail the gate (fewer than `rate` of them passed), or None."""
    if not passed:
        return f"no case of {label or 'the run'} ran: the gate of {rate:.0%} has nothing to pass"
    count = sum(passed)
    if count >= rate * len(passed):
        return None
    shown = ", ".join(failing[:20]) + (f" and {len(failing) - 20} more" if len(failing) > 20 else "")
    return (f"{count} of {len(passed)} cases passed ({count / len(passed):.0%}) in {label or 'the run'}, "
            f"below the gate of {rate:.0%}" + (f"; not passing: {shown}" if shown else ""))


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Under pytest-xdist (no `pass-rate` test in the workers, each of which sees some cases only):
    the gate of each cell over every case the workers reported, failing the session below it.
    Then each suite run's summary, written beside the JUnit report when pytest writes one."""
    state: _Session | None = session.config.stash.get(_STATE, None)
    workeroutput = getattr(session.config, "workeroutput", None)
    if state is not None and workeroutput is not None:  # a pytest-xdist worker: its cases' outcomes go to the controller
        workeroutput[_OUTCOME] = [[path, target, prompt, passed] for (path, target, prompt), passed in state.outcomes.items()]
    if state is not None and state.min_pass_rate is not None and session.config.pluginmanager.hasplugin("dsession"):  # (xdist's controller)
        for (path, target, prompt), passed in state.outcomes.items():
            label = _cell_label(target, prompt)
            problem = _gate_problem(passed, state.min_pass_rate, label, [])
            name = f"{Path(path).name}::pass-rate" + (f"[{label}]" if label else "")
            state.gate_lines.append(f"FAILED {name}: {problem}" if problem else f"passed {name}: {sum(passed)} of {len(passed)} cases")
            if problem:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
    _write_summaries(session, state)


def _write_summaries(session: pytest.Session, state: _Session | None) -> None:
    """Each suite run's summary, beside the JUnit report when pytest writes one (not under xdist's workers)."""
    xmlpath = getattr(session.config.option, "xmlpath", None)
    if state is None or not state.summaries or not xmlpath or hasattr(session.config, "workerinput"):
        return
    target = Path(xmlpath).with_suffix(".agenteval.json")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(state.summaries, indent=2, default=str) + "\n", encoding="utf-8")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    state: _Session | None = terminalreporter.config.stash.get(_STATE, None)
    if state is None or not (state.summaries or state.gate_lines):
        return
    terminalreporter.section("agenteval")
    for line in state.gate_lines:
        terminalreporter.write_line(line, red=line.startswith("FAILED"), green=not line.startswith("FAILED"))
    for entry in state.summaries:
        summary = entry["summary"]
        counts = summary.get("counts") or {}
        total, passed = counts.get("total", 0), counts.get("passed", 0)
        rate = f"{passed / total:.0%}" if total else "-"
        terminalreporter.write_line(f"{entry['suite']}: {passed} of {total} passed ({rate}), run {summary.get('run_id', '?')}")


@pytest.fixture
def agenteval_run(request: pytest.FixtureRequest) -> Any:
    """Run the suite (or inline cases) of the test's `agenteval` marker with a task:
    `results = agenteval_run(task=my_function)`; then `agenteval.testing.assert_passed(results)`."""
    marker = request.node.get_closest_marker("agenteval")
    settings = dict(marker.kwargs) if marker is not None else {}
    state: _Session = request.config.stash[_STATE]
    base = Path(str(request.node.path)).parent

    def run(task: Any = None, **options: Any) -> RunResults:
        from agenteval.api import evaluate, run_suite

        merged = {**settings, **options}
        suite = merged.pop("suite", None)
        cases, evaluators = merged.pop("cases", None), merged.pop("evaluators", None)
        if suite is not None:
            merged.setdefault("repeat", state.repeat)
            merged.setdefault("cache", not request.config.option.agenteval_no_cache)
            source = suite if isinstance(suite, dict) else base / suite
            outcome = run_suite(source, task=task, base_dir=base, **merged)
        elif cases is not None and evaluators is not None:
            outcome = evaluate(cases, evaluators, task=task, base_dir=base, **merged)
        else:
            raise pytest.UsageError("mark the test with @pytest.mark.agenteval(suite=...) or (cases=..., evaluators=...), or pass them to agenteval_run")
        with outcome:
            results = RunResults(outcome)
            results.summary = outcome.summary
        return results

    return run


class RunResults(list):  # type: ignore[type-arg]
    """The finished run's results (CaseResult, in the order they finished), with its `summary`."""

    def __init__(self, run: Any) -> None:
        super().__init__(run)
        self.run_id: str = run.run_id
        self.summary: dict[str, Any] = {}


def _handed(config: pytest.Config) -> list[int]:
    """The indices of the items queued in this pytest-xdist worker (handed to it and not yet run),
    read from xdist's worker loop; none when that cannot be read (then each item runs alone)."""
    for plugin in config.pluginmanager.get_plugins():
        queue = getattr(plugin, "torun", None) if type(plugin).__name__ == "WorkerInteractor" else None
        if queue is None:
            continue
        try:
            with queue.lock() as queued:
                return [index for index in queued if type(index) is int]
        except Exception:  # noqa: BLE001 - another xdist's loop: run the item alone
            return []
    return []


def _item_name(case_id: str, target: str | None, prompt: str | None) -> str:
    label = _cell_label(target, prompt)
    return f"{case_id}[{label}]" if label else case_id


def _glob_of(case_id: str) -> str:
    """A glob matching exactly this case id (`--filter` takes globs)."""
    return "".join(f"[{char}]" if char in "*?[" else char for char in case_id)


def _slug(name: str) -> str:
    return "".join(char if char.isalnum() or char in "-_" else "-" for char in name) or "suite"

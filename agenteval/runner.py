"""Cases x evaluators: get each candidate answer, score it, yield one CaseResult per case.

With one worker the loop runs inline (no thread overhead on fast in-process scoring); with more,
daemon threads (agenteval.scheduling) keep at most a few cases in flight per worker, since
targets and judges spend their time waiting on other processes. Results come back as they
finish. Either way a watchdog holds each case's scoring to `limits.case_seconds`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any


from agenteval.answers import admit
from agenteval.cells import Cell, cell_key, cell_label
from agenteval.conversations.driver import drives, play
from agenteval.conversations.scoping import RunOne, plan
from agenteval.conversations.transcript import is_conversation
from agenteval.evaluators import EvalContext, EvaluatorConfig, EvaluatorResult
from agenteval.endpoints.spans import case_span, leave_case, tracing_cases
from agenteval.evaluators.base import run_evaluator
from agenteval.process import Processes, decode_json
from agenteval.results import CaseResult, CaseVerdict
from agenteval.run_context import RunContext
from agenteval.scheduling import CaseThreads, CaseTimeout, Slot, Watchdog
from agenteval.suite.loader import LoadedSuite
from agenteval.suite.models import Case, TracesSettings
from agenteval.targets import Answer, TargetRun
from agenteval.targets.recorded import RecordedTarget
from agenteval.usable import problem

if TYPE_CHECKING:
    from agenteval.endpoints import Endpoints
    from agenteval.targets.traces import TracesTarget
    from agenteval.traces.receiver import SpanReceiver

LIVE_TARGETS = frozenset({"http", "command", "python"})
"""Targets that call the system under test, and so pass it a W3C `traceparent` (agenteval.traces.propagation)."""

MODEL_TARGETS = frozenset({"openai", "anthropic", "gemini", "bedrock", "azure_openai"})
"""Targets whose answer is one model request (without `tools`): one the response cache holds is had at
once, with nothing else done, so a run on threads tries such a case in its own thread first (`_from_cache`)."""


class PredictionsError(Exception):
    pass


class Predictions:
    """Candidate answers from a JSONL file of `{"id" | "case_id": ..., "output": ...}` lines.

    Only each id's byte offset is kept in memory; an answer is read back when its case runs.
    A results file from an earlier run works as a predictions file.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offsets: dict[str, int] = {}
        self._cells: dict[tuple[str | None, str | None], list[int]] = {}  # cell a line names -> [first line, lines]
        problems = []
        try:
            with path.open("rb") as handle:
                offset = 0
                for number, raw in enumerate(handle, start=1):
                    where = offset
                    offset += len(raw)
                    if not raw.strip():
                        continue
                    try:
                        record = decode_json(raw)
                    except ValueError as exc:
                        problems.append(f"{path}:{number}: invalid JSON: {exc}")
                        continue
                    key = _prediction_key(record)
                    if key is None:
                        problems.append(f"{path}:{number}: a prediction needs `id` (or `case_id`) and `output`")
                    elif key in self._offsets:
                        problems.append(f"{path}:{number}: duplicate prediction for case {_shown(key)}")
                    else:
                        self._offsets[key] = where
                        named = (None, None) if isinstance(key, str) else key[1:]
                        seen = self._cells.setdefault(named, [number, 0])
                        seen[1] += 1
        except OSError as exc:
            raise PredictionsError(f"{path}: cannot read predictions: {exc.strerror or exc}") from None
        if problems:
            raise PredictionsError("\n".join(problems[:20]) + (f"\n... and {len(problems) - 20} more" if len(problems) > 20 else ""))
        self._handle = path.open("rb")
        self._lock = threading.Lock()  # workers share the handle: seek + read must not interleave

    def check_cells(self, cells: Iterable[tuple[str | None, str | None]]) -> None:
        """In a run of several cells, every line must name one of them (its `target` and `prompt`):
        a line naming another, or none, would be ignored without a word. Raises PredictionsError
        listing them, by the first line of each."""
        known = set(cells)
        if known == {(None, None)}:
            return
        targets = sorted({target for target, _ in known if target is not None})
        prompts = sorted({prompt for _, prompt in known if prompt is not None})
        cells_of = f"(targets: {', '.join(targets) or 'one unnamed'}; prompts: {', '.join(prompts) or 'none'})"
        problems = [
            f"{self.path}:{first}: {f'{count} lines name' if count > 1 else 'names'} "
            + (f"no cell, in a run of several cells {cells_of}: give each line `target` (and `prompt`)" if names == (None, None)
               else f"cell {cell_label(*names)!r}, which the suite does not have {cells_of}")
            for names, (first, count) in sorted(self._cells.items(), key=lambda item: item[1][0]) if names not in known
        ]
        if problems:
            raise PredictionsError("\n".join(problems[:20]) + (f"\n... and {len(problems) - 20} more" if len(problems) > 20 else ""))

    def answer(self, case_id: str, target: str | None = None, prompt: str | None = None) -> Answer:
        """The answer recorded for the case (in a matrix run, for the case in that cell: the line's
        `target` and `prompt`, as a results file of a matrix run has them)."""
        key = cell_key(case_id, target, prompt)
        offset = self._offsets.get(key)
        if offset is None:
            return Answer(error=f"no prediction for case {_shown(key)} in {self.path.name}")
        with self._lock:
            self._handle.seek(offset)
            line = self._handle.readline()
        try:
            record = decode_json(line)
        except ValueError as exc:  # the file changed since it was read
            return Answer(error=f"{self.path.name}: the prediction for case {case_id!r} is no longer valid JSON: {exc}")
        if _prediction_key(record) != key:
            return Answer(error=f"{self.path.name} changed during the run: the prediction for case {_shown(key)} moved")
        return Answer(record["output"])

    def close(self) -> None:
        self._handle.close()


def _prediction_key(record: Any) -> str | tuple[str, str | None, str | None] | None:
    """The case (and cell) a prediction line is for: its id, and its `target`/`prompt` when it names them."""
    case_id = _prediction_id(record)
    if case_id is None:
        return None
    target, prompt = record.get("target"), record.get("prompt")
    return cell_key(case_id, target if isinstance(target, str) else None, prompt if isinstance(prompt, str) else None)


def _shown(key: str | tuple[str, str | None, str | None]) -> str:
    if isinstance(key, str):
        return repr(key)
    case_id, target, prompt = key
    return f"{case_id!r} in cell {cell_label(target, prompt)!r}"


def _prediction_id(record: Any) -> str | None:
    if not isinstance(record, dict) or "output" not in record:
        return None
    case_id = record.get("id", record.get("case_id"))
    if type(case_id) is int:
        return str(case_id)
    return case_id if isinstance(case_id, str) else None


@dataclass
class Runner:
    loaded: LoadedSuite
    run_id: str
    processes: Processes
    predictions: Predictions | None = None
    only: frozenset[str] | None = None  # --evaluator: run just these evaluators (by name)
    endpoints: Endpoints | None = None  # the run's HTTP client and response cache; without one, no cache
    repeat: int = 1  # --repeat: each case this many times
    done: Mapping[str, set[tuple[str | None, str | None]]] | None = None  # --resume: case id -> cells already run
    traces: TracesTarget | None = None  # --traces FILE: each case's answer is its recorded trace, in place of the target
    receiver: SpanReceiver | None = None  # `traces: {receive: true}`: spans the system exports join its answer
    _watchdog: Watchdog | None = field(default=None, init=False, repr=False)  # the case time limit, while scoring
    _evaluators: list[EvaluatorConfig] | None = field(default=None, init=False, repr=False)  # a case's, unless it has its own
    _watched: bool = field(default=True, init=False, repr=False)  # whether the case time limit must watch `_evaluators`
    _pure: bool = field(default=False, init=False, repr=False)  # recorded answers scored by pure evaluators only (see _run_case)
    _base_dir: Path = field(default=Path(), init=False, repr=False)

    def __post_init__(self) -> None:
        self._base_dir = self.loaded.base_dir
        if self.endpoints is None:
            from agenteval.endpoints import Endpoints

            self.endpoints = Endpoints(models=self.loaded.suite.models, prices=self.loaded.suite.prices, environ=self.processes.environ)

    def answer(self, case: Case, repetition: int = 0, cell: Cell | None = None, context: RunContext | None = None) -> Answer:
        """The candidate answer from --predictions, else from the cell's target (every target has `answer`),
        admitted here for every source: a value no evaluator or store can take is the case's error."""
        cell = cell or self.loaded.cells[0]
        limits = self.loaded.suite.limits
        if self.predictions is not None:
            answer = self.predictions.answer(case.id, cell.target, cell.prompt)
        elif self.traces is not None:  # --traces FILE
            run = TargetRun(self._base_dir, self.processes, self.endpoints, repetition, limits.answer_depth, limits=limits)
            answer = self.traces.answer(case, run)
        elif type(cell.spec) is RecordedTarget:  # the case's own `output`: no run context to build
            answer = cell.spec.answer(case, None)  # type: ignore[arg-type]
        else:
            context = context or self.context(case, repetition, cell)
            run = TargetRun(self._base_dir, self.processes, self.endpoints, repetition, limits.answer_depth, context, limits)
            ticket = self.receiver.expect(context.traceparent) if self.receiver is not None and context.traceparent else None
            # a case with `turns:` or `user:` is a conversation the target holds (agenteval.conversations)
            try:
                answer = play(case, cell.spec, run, limits) if drives(case, cell.spec) else cell.spec.answer(case, run)
            finally:
                if ticket is not None:  # (a target that raised still releases the trace it claimed)
                    spans, problem = self.receiver.collect(ticket, self._wait_seconds())  # type: ignore[union-attr]
            if ticket is not None:
                answer = _with_spans(answer, spans, problem, self.endpoints)
            if context.traceparent:
                answer = _with_trace_id(answer, context.traceparent)
        return admit(answer, limits)

    def _wait_seconds(self) -> float:
        settings = self.loaded.suite.traces
        return settings.wait_seconds if settings is not None else TracesSettings.model_fields["wait_seconds"].default

    def run_case(self, case: Case, repetition: int = 0, cell: Cell | None = None) -> CaseResult:
        cell = cell or self.loaded.cells[0]
        traced = case_span((self.run_id, case.id, cell.target, cell.prompt, repetition))  # --otel: model and tool spans under it
        try:
            return self._run_case(case, repetition, cell)
        except CaseTimeout:  # raised at the very edge of the case's scoring: still this case's error
            return self.given_up(case, repetition, None, cell)
        finally:
            if traced is not None:
                leave_case(traced)

    def given_up(self, case: Case, repetition: int, slot: Slot | None, cell: Cell | None = None) -> CaseResult:
        """The result of a case whose evaluators ran past `limits.case_seconds`."""
        where = f" (in evaluator `{slot.evaluator}`)" if slot is not None and slot.evaluator else ""
        message = self.loaded.suite.limits.message(
            "case_seconds", f"scoring took longer than {self.loaded.suite.limits.case_seconds:g} s{where}"
        )
        cell = cell or self.loaded.cells[0]
        return CaseResult(
            self.run_id, self.loaded.suite.name, case.id, 0.0, "error", None, [], message, 0.0, case.tags, case.metadata,
            repetition=repetition, expected=case.expected, **provenance(case, cell),
        )

    def _inline(self, case: Case, repetition: int, cell: Cell) -> CaseResult:
        """`run_case` in one thread, for recorded answers scored by pure evaluators without case
        spans (`score` says when): the usual case without its layers (no time limit to catch, no span)."""
        return self._recorded(case, repetition, cell) if _offline(case) else self.run_case(case, repetition, cell)

    def _run_case(self, case: Case, repetition: int, cell: Cell) -> CaseResult:
        if self._pure and type(cell.spec) is RecordedTarget and _offline(case):
            return self._recorded(case, repetition, cell)
        return self._answered(case, repetition, cell)

    def _recorded(self, case: Case, repetition: int, cell: Cell) -> CaseResult:
        """The usual offline case (`_run_case` says which): the answer recorded in the case, admitted,
        scored by the suite's evaluators, which read only the case's values (no run context to
        build, no watchdog to arm). An answer admission refuses, or a conversation, goes the usual way."""
        started = time.perf_counter()
        output, suite = case.output, self.loaded.suite
        limits = suite.limits
        if problem(output, limits.answer_depth) is not None or is_conversation(output):
            return self._answered(case, repetition, cell)
        evaluators = self._evaluators
        ctx = EvalContext(case.id, case.input, case.expected, output, case.metadata, self._base_dir, self.processes,
                          self.endpoints, None, limits)
        results = [run_evaluator(evaluator, ctx) for evaluator in evaluators]  # type: ignore[union-attr]
        score, verdict = combine(evaluators, results, case.threshold if case.threshold is not None else suite.pass_score)  # type: ignore[arg-type]
        return CaseResult(
            self.run_id, suite.name, case.id, score, verdict, output, results, None,
            (time.perf_counter() - started) * 1000, case.tags, case.metadata,
            None, repetition, now(), case.input, *_who(case.metadata), case.expected, cell.target, cell.prompt, None,
        )

    def _answered(self, case: Case, repetition: int, cell: Cell) -> CaseResult:
        """A case's result the general way: its answer from the target (or --predictions, --traces), scored."""
        started = time.perf_counter()
        suite_name, limits = self.loaded.suite.name, self.loaded.suite.limits
        context = self.context(case, repetition, cell)
        try:
            answer = self.answer(case, repetition, cell, context)
        except Exception as exc:  # noqa: BLE001 - a target's unexpected failure is this case's error, not the run's
            answer = Answer(error=f"{cell.spec.type} target failed: {type(exc).__name__}: {exc}")
        if answer.error is not None:
            return CaseResult(
                self.run_id, suite_name, case.id, 0.0, "error", None, [], answer.error,
                (time.perf_counter() - started) * 1000, case.tags, case.metadata,
                answer.usage, repetition, now(), case.input, *_who(case.metadata), case.expected, cell.target, cell.prompt,
                answer.trace_id,
            )
        output = answer.output
        ctx = EvalContext(
            case.id, case.input, case.expected, output, case.metadata, self._base_dir, self.processes,
            self.endpoints, answer.usage, limits, run=context,
        )
        own = case.evaluators
        if own or self._evaluators is None:
            evaluators = self.loaded.evaluators_for(case)
            if self.only is not None:
                evaluators = [evaluator for evaluator in evaluators if evaluator.label in self.only]
        else:  # the suite's evaluators, as every case without its own has them
            evaluators = self._evaluators
        run_one: RunOne = run_evaluator
        if case.turns or is_conversation(output):  # a conversation's scopes and turns
            evaluators, run_one = plan(evaluators, case, output, run_evaluator, self.only)
        results = self._scores(evaluators, ctx, run_one)
        for evaluator in own or ():
            evaluator.close()
        score, verdict = combine(evaluators, results, case.threshold if case.threshold is not None else self.loaded.suite.pass_score)
        limit = getattr(answer, "limit_reached", None)
        if limit is not None:  # an agent stopped by a limit (max_steps, budget, timeout): scored, and failed
            results.append(EvaluatorResult("agent_limits", "agent_limits", 0.0, "fail", misses=[limit]))
            verdict = "error" if verdict == "error" else "fail"
        return CaseResult(
            self.run_id, suite_name, case.id, score, verdict, output, results, None,
            (time.perf_counter() - started) * 1000, case.tags, case.metadata,
            answer.usage, repetition, now(), case.input, *_who(case.metadata), case.expected, cell.target, cell.prompt,
            answer.trace_id,
        )

    def context(self, case: Case, repetition: int, cell: Cell) -> RunContext:
        """Which run, suite, cell and case: what the case's target and judges are told."""
        traceparent = None
        if self.predictions is None and self.traces is None and cell.spec.type in LIVE_TARGETS:
            from agenteval.traces.propagation import new_traceparent

            traceparent = new_traceparent()
        endpoint = self.receiver.endpoint if self.receiver is not None else None
        return RunContext(self.run_id, self.loaded.suite.name, case.id, cell.target, cell.prompt, repetition, traceparent, endpoint)

    def _scores(self, evaluators: list[EvaluatorConfig], ctx: EvalContext, run: RunOne = run_evaluator) -> list[EvaluatorResult]:
        """Each evaluator's result, within the case's time limit (the watchdog's CaseTimeout ends a
        runaway one: it and the evaluators after it become errors naming the limit)."""
        watchdog = self._watchdog
        watched = self._watched if evaluators is self._evaluators else any(evaluator.needs_watchdog for evaluator in evaluators)
        if watchdog is None or not watched:  # (evaluators whose work `limits:` bounds need no watching)
            return [run(evaluator, ctx) for evaluator in evaluators]
        results: list[EvaluatorResult] = []
        slot = watchdog.begin()
        try:
            for evaluator in evaluators:
                slot.evaluator = evaluator.label
                results.append(run(evaluator, ctx))
        except CaseTimeout:
            limits = ctx.limits
            stuck = limits.message("case_seconds", f"scoring took longer than {limits.case_seconds:g} s in this evaluator")
            results.append(evaluators[len(results)].error_result(stuck))
            results.extend(
                evaluator.error_result(f"not run: the case ran past `limits.case_seconds` in `{slot.evaluator}`")
                for evaluator in evaluators[len(results):]
            )
        finally:
            watchdog.end(slot)
        return results

    def run(self, cases: Iterable[Case], workers: int = 1) -> Iterator[CaseResult]:
        try:
            yield from self.score(cases, workers)
        finally:
            for evaluator in self.loaded.suite.evaluators:
                evaluator.close()
            if self.receiver is not None:
                self.receiver.close()

    def score(self, cases: Iterable[Case], workers: int = 1) -> Iterator[CaseResult]:
        """Like `run`, but leaves the evaluators open for more cases (a Ray worker's next batch)."""
        self.loaded.prepare()  # first-use imports happen here, not inside the first case's time
        only = self.only
        self._evaluators = [evaluator for evaluator in self.loaded.suite.evaluators if only is None or evaluator.label in only]
        self._watched = any(evaluator.needs_watchdog for evaluator in self._evaluators)
        self._pure = not self._watched and self.predictions is None and self.traces is None and self.receiver is None
        cells, done, repeat = self.loaded.cells, self.done or {}, self.repeat
        if len(cells) == 1 and not done and repeat == 1:  # the usual run: each case once, in its one cell
            (cell,) = cells
            runs: Iterator[tuple[Case, int, Cell]] = ((case, 0, cell) for case in cases)
        else:
            runs = (
                (case, repetition, cell)
                for case in cases for cell in cells if cell.names not in done.get(case.id, ()) for repetition in range(repeat)
            )
        self._watchdog = watchdog = Watchdog(self.loaded.suite.limits.case_seconds, start=self._watched)
        try:
            if workers <= 1:
                self.loaded.load_transport()
                inline = self._pure and all(type(cell.spec) is RecordedTarget for cell in cells) and not tracing_cases()
                score_one = self._inline if inline else self.run_case
                for case, repetition, cell in runs:
                    yield score_one(case, repetition, cell)
                return
            threads = CaseThreads(
                lambda item: self.run_case(*item), workers, watchdog,
                lambda item, slot: self.given_up(item[0], item[1], slot, item[2]),
                self._from_cache if self._answers_from_cache() else None, before_threads=self.loaded.load_transport,
            )
            yield from threads.results(runs)
        finally:
            watchdog.close()

    def _answers_from_cache(self) -> bool:
        """Whether a case may be tried in the run's own thread from the response cache alone: every
        cell's target is a model request without tools (nothing done before the request, nothing
        but it), scored by evaluators that read the case or ask models and nothing more (no command,
        no code, no transform), with a cache to read, and no spans, traces or predictions in the way.
        (A judge's time limit is watched in the run's thread as in a run on one thread.)"""
        endpoints = self.endpoints
        return (
            all((evaluator.pure or evaluator.replayable) and evaluator.transform is None for evaluator in self._evaluators or ())
            and self.predictions is None and self.traces is None and self.receiver is None
            and endpoints is not None and endpoints.cache is not None and not endpoints.refresh and not tracing_cases()
            and all(cell.spec.type in MODEL_TARGETS and getattr(cell.spec, "tools", None) is None for cell in self.loaded.cells)
        )

    def _from_cache(self, item: tuple[Case, int, Cell]) -> CaseResult | None:
        """The case's result when the response cache holds its answer, else None (nothing was sent:
        the case then runs on a thread as usual)."""
        case, repetition, cell = item
        if case.evaluators or case.is_conversation or case.tools:  # (its own checks, a conversation, tools: the usual way)
            return None
        from agenteval.endpoints.client import NotCached, cache_only

        try:
            with cache_only():
                return self.run_case(case, repetition, cell)
        except NotCached:
            return None


def _with_trace_id(answer: Answer, traceparent: str) -> Answer:
    """The answer with the trace id its system was sent, for the case's result (found in a backend by it)."""
    from agenteval.traces.propagation import trace_id_of

    answer.trace_id = trace_id_of(traceparent)
    return answer


def _with_spans(answer: Answer, spans: list[Any], problem: str | None, endpoints: Any) -> Answer:
    """A live answer joined by the spans its system exported (`traces: {receive: true}`): the
    reply with the trace's tool calls, steps and usage; a receiver's problem is the case's error."""
    if answer.error is not None:
        return answer
    if problem is not None:
        return Answer(error=f"traces: {problem}", duration_ms=answer.duration_ms, usage=answer.usage)
    from agenteval.traces.answer import joined, trace_answer
    from agenteval.traces.otlp import TraceError

    try:
        traced = trace_answer(spans, getattr(endpoints, "prices", None))
    except TraceError as exc:
        return Answer(error=f"traces: the spans the system exported: {exc}", duration_ms=answer.duration_ms, usage=answer.usage)
    return Answer(
        joined(answer.output, traced), duration_ms=answer.duration_ms, usage=answer.usage, limit_reached=answer.limit_reached,
        trace_id=answer.trace_id,
    )


def provenance(case: Case, cell: Cell | None = None) -> dict[str, Any]:
    """What a result records beside its scores (the PRD's AggregatedEvaluationResult): when, the
    input as evaluated, the agent and session named in the case's metadata, and the cell."""
    agent_id, session_id = _who(case.metadata)
    return {
        "timestamp": now(),
        "input": case.input,
        "agent_id": agent_id,
        "session_id": session_id,
        "target": None if cell is None else cell.target,
        "prompt": None if cell is None else cell.prompt,
    }


def _offline(case: Case) -> bool:
    """Whether a case (of a recorded target) is scored on its own `output` by the suite's evaluators alone."""
    return not (case.evaluators or case.turns) and case.has_output


def _who(metadata: dict[str, Any]) -> tuple[str | None, str | None]:
    """The agent and session a case's metadata names (None when it names none)."""
    if not metadata:
        return None, None
    return _identifier(metadata.get("agent_id")), _identifier(metadata.get("session_id"))


def _identifier(value: Any) -> str | None:
    return str(value) if type(value) in (str, int) else None


_second: tuple[int, str] = (-1, "")  # the last whole second `now` formatted, and its text (replaced whole: threads share it)


def now() -> str:
    """The time in UTC as `datetime.now(timezone.utc).isoformat(timespec="microseconds")` writes it,
    formatting the date and time once a second rather than once a case."""
    global _second
    seconds, nanoseconds = divmod(time.time_ns(), 1_000_000_000)
    second = _second
    if second[0] != seconds:
        second = _second = (seconds, datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S"))
    return f"{second[1]}.{nanoseconds // 1000:06d}+00:00"


def combine(
    evaluators: list[EvaluatorConfig], results: list[EvaluatorResult], threshold: float | None = None
) -> tuple[float, CaseVerdict]:
    """Case score = weighted mean of evaluator scores (0 when they weigh nothing); pass iff every
    verdict passes, or, with the case's `threshold`, iff the score reaches it (promptfoo's per-test
    threshold: a failed check of small weight may be outweighed). An error is an error either way."""
    if len(results) == 1 and len(evaluators) == 1:  # one evaluator: the same figures without the sums and the set
        weight, result = evaluators[0].weight, results[0]
        score = result.score * weight / weight if weight > 0 else 0.0
        if result.verdict == "error":
            return score, "error"
        if threshold is not None:
            return score, "pass" if score >= threshold else "fail"
        return score, "pass" if result.verdict == "pass" else "fail"
    total_weight = sum(e.weight for e in evaluators)
    score = sum(r.score * e.weight for e, r in zip(evaluators, results)) / total_weight if total_weight > 0 else 0.0
    verdicts = {r.verdict for r in results}
    if "error" in verdicts:
        return score, "error"
    if threshold is not None:
        return score, "pass" if results and score >= threshold else "fail"
    return score, "pass" if verdicts <= {"pass"} and results else "fail"

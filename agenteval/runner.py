"""Cases x evaluators: get each candidate answer, score it, yield one CaseResult per case.

With one worker the loop runs inline (no thread overhead on fast in-process scoring); with more,
a bounded thread pool keeps at most a few cases in flight per worker, since targets and judges
spend their time waiting on other processes. Results come back as they finish.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any


from agenteval.evaluators import EvalContext, EvaluatorConfig, EvaluatorResult
from agenteval.evaluators.base import run_evaluator
from agenteval.process import Processes, decode_json
from agenteval.results import CaseResult, CaseVerdict
from agenteval.suite.loader import LoadedSuite
from agenteval.suite.models import Case
from agenteval.targets import Answer, TargetRun

if TYPE_CHECKING:
    from agenteval.endpoints import Endpoints


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
                    case_id = _prediction_id(record)
                    if case_id is None:
                        problems.append(f"{path}:{number}: a prediction needs `id` (or `case_id`) and `output`")
                    elif case_id in self._offsets:
                        problems.append(f"{path}:{number}: duplicate prediction for case {case_id!r}")
                    else:
                        self._offsets[case_id] = where
        except OSError as exc:
            raise PredictionsError(f"{path}: cannot read predictions: {exc.strerror or exc}") from None
        if problems:
            raise PredictionsError("\n".join(problems[:20]) + (f"\n... and {len(problems) - 20} more" if len(problems) > 20 else ""))
        self._handle = path.open("rb")
        self._lock = threading.Lock()  # workers share the handle: seek + read must not interleave

    def answer(self, case_id: str) -> Answer:
        offset = self._offsets.get(case_id)
        if offset is None:
            return Answer(error=f"no prediction for case {case_id!r} in {self.path.name}")
        with self._lock:
            self._handle.seek(offset)
            line = self._handle.readline()
        return Answer(decode_json(line)["output"])

    def close(self) -> None:
        self._handle.close()


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

    def __post_init__(self) -> None:
        if self.endpoints is None:
            from agenteval.endpoints import Endpoints

            self.endpoints = Endpoints(models=self.loaded.suite.models, prices=self.loaded.suite.prices)

    def answer(self, case: Case, repetition: int = 0) -> Answer:
        """The candidate answer from --predictions, else from the suite's target (every target has `answer`)."""
        if self.predictions is not None:
            return self.predictions.answer(case.id)
        run = TargetRun(self.loaded.base_dir, self.processes, self.endpoints, repetition)
        return self.loaded.suite.target.answer(case, run)

    def run_case(self, case: Case, repetition: int = 0) -> CaseResult:
        started = time.perf_counter()
        suite_name = self.loaded.suite.name
        answer = self.answer(case, repetition)
        if answer.error is not None:
            return CaseResult(
                self.run_id, suite_name, case.id, 0.0, "error", None, [], answer.error,
                (time.perf_counter() - started) * 1000, case.tags, case.metadata,
                usage=answer.usage, repetition=repetition,
                **provenance(case),
            )
        ctx = EvalContext(
            case.id, case.input, case.expected, answer.output, case.metadata, self.loaded.base_dir, self.processes,
            endpoints=self.endpoints, usage=answer.usage, limits=self.loaded.suite.limits,
        )
        evaluators = self.loaded.evaluators_for(case)
        if self.only is not None:
            evaluators = [evaluator for evaluator in evaluators if evaluator.label in self.only]
        results = [run_evaluator(evaluator, ctx) for evaluator in evaluators]
        for own in case.evaluators or ():
            own.close()
        score, verdict = combine(evaluators, results)
        return CaseResult(
            self.run_id, suite_name, case.id, score, verdict, answer.output, results, None,
            (time.perf_counter() - started) * 1000, case.tags, case.metadata,
            usage=answer.usage, repetition=repetition,
            **provenance(case),
        )

    def run(self, cases: Iterable[Case], workers: int = 1) -> Iterator[CaseResult]:
        try:
            yield from self.score(cases, workers)
        finally:
            for evaluator in self.loaded.suite.evaluators:
                evaluator.close()

    def score(self, cases: Iterable[Case], workers: int = 1) -> Iterator[CaseResult]:
        """Like `run`, but leaves the evaluators open for more cases (a Ray worker's next batch)."""
        runs = ((case, repetition) for case in cases for repetition in range(self.repeat))
        if workers <= 1:
            for case, repetition in runs:
                yield self.run_case(case, repetition)
            return
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="agenteval")
        pending: set[Future[CaseResult]] = set()
        try:
            while True:
                while len(pending) < workers * 2:
                    item = next(runs, None)
                    if item is None:
                        break
                    pending.add(pool.submit(self.run_case, *item))
                if not pending:
                    return
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    yield future.result()
        finally:
            pool.shutdown(wait=False, cancel_futures=True)


def provenance(case: Case) -> dict[str, Any]:
    """What a result records beside its scores (the PRD's AggregatedEvaluationResult): when, the
    input as evaluated, and the agent and session named in the case's metadata."""
    return {
        "timestamp": datetime.now(timezone.utc).isoformat(timespec="microseconds"),
        "input": case.input,
        "agent_id": _identifier(case.metadata.get("agent_id")),
        "session_id": _identifier(case.metadata.get("session_id")),
    }


def _identifier(value: Any) -> str | None:
    return str(value) if type(value) in (str, int) else None


def combine(evaluators: list[EvaluatorConfig], results: list[EvaluatorResult]) -> tuple[float, CaseVerdict]:
    """Case score = weighted mean of evaluator scores (0 when they weigh nothing); pass iff every verdict passes."""
    total_weight = sum(e.weight for e in evaluators)
    score = sum(r.score * e.weight for e, r in zip(evaluators, results)) / total_weight if total_weight > 0 else 0.0
    verdicts = {r.verdict for r in results}
    verdict: CaseVerdict = "error" if "error" in verdicts else "pass" if verdicts <= {"pass"} and results else "fail"
    return score, verdict

"""OpenTelemetry spans for a run (`--otel`, the `otel` extra): one per case, one per evaluator,
and in the GenAI semantic conventions a client span per model request, an `execute_tool` span per
tool call (agenteval.endpoints.spans) and a `gen_ai.evaluation.result` event per verdict.

The case span starts with the case (in its worker thread, so the model and tool spans of its
target, simulated user and judges are its children) and ends when the run loop receives its
result, with the result's attributes; its evaluators' spans are laid end to end before the case's
end (evaluators run one after another, last in the case). A case run elsewhere (Ray workers) has
its span made from the result alone, without model or tool spans. Each verdict is an event
`gen_ai.evaluation.result` on the case span, the operation it evaluated (a span event, which every
trace backend reads), with `gen_ai.response.id` of the answer's last model reply when it had one.

Export follows the standard settings: OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT),
OTEL_EXPORTER_OTLP_PROTOCOL (`http/protobuf`, the default, or `grpc`), ..._HEADERS,
OTEL_SERVICE_NAME. An application that configured an SDK TracerProvider itself (Python API)
gets the spans through it instead.
"""

from __future__ import annotations

import os
import threading
from datetime import datetime
from typing import Any

from agenteval.extras import require
from agenteval.results import CaseResult
from agenteval.version import __version__

FEATURE = "--otel"
EVALUATION_EVENT = "gen_ai.evaluation.result"  # the conventions' event (the semconv package names no events)
QUEUE_SPANS = 16_384  # spans that wait for a slow collector; past them a span is dropped, and counted in the warning
FLUSH_SECONDS = 10  # how long the end of a run waits for the collector to take the spans still waiting


class CollectorUnreachable(Exception):
    """The OTLP collector does not answer: no spans can be exported."""


class RunTracer:
    """Turns case results into spans; `close` flushes them when the provider is ours."""

    def __init__(self, provider: Any, owned: bool, exporter: Any = None, content: bool | None = None) -> None:
        from agenteval.endpoints import spans

        self._provider = provider
        self._owned = owned
        self._exporter = exporter  # ours (_CountingExporter) when the provider is ours
        self._tracer = provider.get_tracer("agenteval", __version__)
        self._ids = _PresetIds(self._tracer.id_generator)
        self._tracer.id_generator = self._ids  # this tracer's only: the application's other tracers keep theirs
        spans.enable(self._tracer, content)  # model and tool spans from now on (content: the conventions' opt-in)

    def case(self, result: CaseResult) -> None:
        from opentelemetry import trace
        from opentelemetry.trace import Status, StatusCode

        from agenteval.endpoints.spans import finish_case

        end = _end_ns(result)
        attributes = {
            "agenteval.run_id": result.run_id, "agenteval.suite": result.suite, "agenteval.case_id": result.case_id,
            "agenteval.repetition": result.repetition, "agenteval.score": result.score,
            "agenteval.verdict": result.verdict, "agenteval.duration_ms": result.duration_ms,
            "agenteval.evaluators": len(result.evaluator_results),
        }
        for key, value in (("agent_id", result.agent_id), ("session_id", result.session_id), ("error", result.error)):
            if value is not None:
                attributes[f"agenteval.{key}"] = value
        live = finish_case((result.run_id, result.case_id, result.target, result.prompt, result.repetition))
        response_id = live.response_id if live is not None else None
        self._ids.preset = live.ids if live is not None else None  # the ids the case's model and tool spans name as parent
        within = None  # a case run elsewhere (Ray): in the current context, as ever
        if live is not None:  # the ids its spans named: in the span it ran in, else a trace of its own
            from opentelemetry.context import Context

            within = trace.set_span_in_context(trace.NonRecordingSpan(live.parent)) if live.parent else Context()
        try:
            span = self._tracer.start_span("agenteval.case", context=within, start_time=end - _ns(result.duration_ms), attributes=attributes)
        finally:
            self._ids.preset = None
        if result.verdict == "error":
            span.set_status(Status(StatusCode.ERROR, result.error or "an evaluator could not score the case"))
        parent = trace.set_span_in_context(span)
        cursor = end - sum(_ns(evaluator.duration_ms) for evaluator in result.evaluator_results)
        for evaluator in result.evaluator_results:
            child_attributes = {
                "agenteval.case_id": result.case_id, "agenteval.evaluator.name": evaluator.name,
                "agenteval.evaluator.type": evaluator.type, "agenteval.score": evaluator.score,
                "agenteval.verdict": evaluator.verdict, "agenteval.misses_count": len(evaluator.misses),
                "agenteval.duration_ms": evaluator.duration_ms,
            }
            if evaluator.error is not None:
                child_attributes["agenteval.error"] = evaluator.error
            child = self._tracer.start_span("agenteval.evaluator", context=parent, start_time=cursor, attributes=child_attributes)
            if evaluator.verdict == "error":
                child.set_status(Status(StatusCode.ERROR, evaluator.error or "error"))
            cursor += _ns(evaluator.duration_ms)
            child.end(end_time=cursor)
            span.add_event(EVALUATION_EVENT, evaluation_attributes(evaluator, response_id), timestamp=cursor)
        span.end(end_time=end)

    def close(self) -> str | None:
        """Flush the spans; a one-line warning when some could not be exported."""
        from agenteval.endpoints import spans

        spans.disable()
        if not self._owned:
            self._provider.force_flush()
            return None
        flushing = threading.Thread(target=self._provider.force_flush, name="agenteval-otel-flush", daemon=True)
        flushing.start()  # (the SDK's flush exports every batch in turn, each waiting out the exporter's timeout)
        flushing.join(FLUSH_SECONDS)
        if flushing.is_alive() and self._exporter is not None:
            self._exporter.give_up()  # a collector that takes no more: what is left fails at once, and is counted
            flushing.join()
        self._provider.shutdown()
        return self._exporter.warning() if self._exporter is not None else None


class _PresetIds(threading.local):
    """The tracer's id generator, except for a case span whose ids were chosen when the case
    started (its model and tool spans were made as its children then): `preset`, in this thread."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.preset: Any = None

    def generate_trace_id(self) -> int:
        return self.preset.trace_id if self.preset is not None else self.inner.generate_trace_id()

    def generate_span_id(self) -> int:
        return self.preset.span_id if self.preset is not None else self.inner.generate_span_id()

    def is_trace_id_random(self) -> bool:
        return bool(self.inner.is_trace_id_random())


def run_tracer() -> RunTracer:
    """The application's SDK provider when it set one, else one exporting over OTLP as the
    environment says. Raises MissingDependency without the `otel` extra, CollectorUnreachable
    when nothing listens at the collector's address (so a run never waits on retries)."""
    trace = require("opentelemetry.trace", FEATURE)
    sdk_trace = require("opentelemetry.sdk.trace", FEATURE)
    require("opentelemetry.semconv._incubating.attributes.gen_ai_attributes", FEATURE)  # the GenAI attribute names
    current = trace.get_tracer_provider()
    if isinstance(current, sdk_trace.TracerProvider):
        return RunTracer(current, owned=False)
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create()
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "agenteval"}))
    exporter, address = _otlp_exporter()
    _check_reachable(address)
    import logging

    logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)  # failed exports: one line at the end, not a log per retry
    counting = _CountingExporter(exporter, address)
    provider = sdk_trace.TracerProvider(resource=resource)

    class CountingBatch(BatchSpanProcessor):  # type: ignore[misc,valid-type]
        """The SDK's batch processor, counting the spans it is given: those the exporter never
        saw were dropped from a full queue (the SDK drops them without a word)."""

        def on_end(self, span: Any) -> None:
            if span.context and span.context.trace_flags.sampled:
                counting.ended()
            super().on_end(span)

    provider.add_span_processor(CountingBatch(counting, max_queue_size=QUEUE_SPANS))
    return RunTracer(provider, owned=True, exporter=counting)


def _otlp_exporter() -> tuple[Any, str]:
    """The OTLP exporter the environment asks for, and the collector's address (for messages)."""
    protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf"
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if protocol == "grpc":
        return require("opentelemetry.exporter.otlp.proto.grpc.trace_exporter", FEATURE).OTLPSpanExporter(), endpoint or "http://localhost:4317"
    return require("opentelemetry.exporter.otlp.proto.http.trace_exporter", FEATURE).OTLPSpanExporter(), endpoint or "http://localhost:4318"


def _check_reachable(address: str) -> None:
    """A quick TCP connect to the collector, so a missing one is said once, at the start."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(address if "://" in address else f"http://{address}")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise CollectorUnreachable(f"--otel: the collector address {address!r} is not a URL") from None
    try:
        socket.create_connection((parts.hostname or "localhost", port), timeout=1.0).close()
    except OSError as exc:
        raise CollectorUnreachable(
            f"--otel: no OpenTelemetry collector answers at {address} ({exc.strerror or exc}); "
            "set OTEL_EXPORTER_OTLP_ENDPOINT, or run without --otel"
        ) from None


class _CountingExporter:
    """The OTLP exporter, counting the spans the run made, those it was given and those it could
    not deliver: every span that did not reach the collector is said in one line at the end."""

    def __init__(self, inner: Any, address: str) -> None:
        self._inner = inner
        self._address = address
        self._lock = threading.Lock()
        self.made = self.given = self.failed = 0
        self._gave_up = False

    def ended(self) -> None:
        with self._lock:
            self.made += 1

    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        if self._gave_up:
            outcome = SpanExportResult.FAILURE
        else:
            try:
                outcome = self._inner.export(spans)
            except Exception:  # noqa: BLE001 - a collector problem must not stop the run
                outcome = SpanExportResult.FAILURE
        with self._lock:
            self.given += len(spans)
            if outcome != SpanExportResult.SUCCESS:
                self.failed += len(spans)
        return outcome

    def give_up(self) -> None:
        """Send nothing more (the end of the run waited long enough): later exports fail at once."""
        self._gave_up = True

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return bool(self._inner.force_flush(timeout_millis))

    def warning(self) -> str | None:
        dropped = max(0, self.made - self.given)  # never given to the exporter: dropped from a full queue
        lost = self.failed + dropped
        if not lost:
            return None
        why = f" ({dropped} of them dropped while the collector was too slow to keep up)" if dropped else ""
        return f"warning: --otel: {lost} of {self.made} spans could not be exported to {self._address}{why}"


def evaluation_attributes(evaluator: Any, response_id: str | None = None) -> dict[str, Any]:
    """A verdict as the `gen_ai.evaluation.result` event's attributes: the evaluator's name, score,
    label (`pass`, `fail`, `error`), explanation (the judge's reasoning, else the first miss or the
    error) and `error.type` when it could not score."""
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
    from opentelemetry.semconv.attributes.error_attributes import ERROR_TYPE

    attributes: dict[str, Any] = {
        gen_ai.GEN_AI_EVALUATION_NAME: evaluator.name, gen_ai.GEN_AI_EVALUATION_SCORE_LABEL: evaluator.verdict,
    }
    if evaluator.verdict != "error":
        attributes[gen_ai.GEN_AI_EVALUATION_SCORE_VALUE] = float(evaluator.score)
    explanation = _judge_reasoning(evaluator) or evaluator.reasoning or (evaluator.misses[0] if evaluator.misses else None) or evaluator.error
    if explanation:
        attributes[gen_ai.GEN_AI_EVALUATION_EXPLANATION] = str(explanation)[:4000]
    if evaluator.verdict == "error":
        attributes[ERROR_TYPE] = "evaluator_error"
    if response_id:
        attributes[gen_ai.GEN_AI_RESPONSE_ID] = response_id
    return attributes


def _judge_reasoning(evaluator: Any) -> str | None:
    """A model judge's reasoning per criterion (`details.criteria`), as `name: reasoning; ...`."""
    criteria = evaluator.details.get("criteria") if isinstance(evaluator.details, dict) else None
    if not isinstance(criteria, dict):
        return None
    said = [f"{name}: {entry['reasoning']}" for name, entry in criteria.items()
            if isinstance(entry, dict) and isinstance(entry.get("reasoning"), str) and entry["reasoning"]]
    return "; ".join(said) or None


def _ns(milliseconds: float) -> int:
    return int(milliseconds * 1_000_000)


def _end_ns(result: CaseResult) -> int:
    """When the case finished, from its timestamp (results from older runs have none: now)."""
    import time

    if result.timestamp:
        try:
            return int(datetime.fromisoformat(result.timestamp).timestamp() * 1_000_000_000)
        except ValueError:
            pass
    return time.time_ns()

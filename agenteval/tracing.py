"""OpenTelemetry spans for a run (`--otel`, the `otel` extra): one per case, one per evaluator.

Spans are made from each finished result as the run loop receives it, with the times the runner
measured: a case span from its start to its end, and its evaluators' spans laid end to end
before the case's end (evaluators run one after another, last in the case). So tracing adds no
code to the scoring path and works the same with workers, threads or Ray.

Export follows the standard settings: OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT),
OTEL_EXPORTER_OTLP_PROTOCOL (`http/protobuf`, the default, or `grpc`), ..._HEADERS,
OTEL_SERVICE_NAME. An application that configured an SDK TracerProvider itself (Python API)
gets the spans through it instead.
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any

from agenteval.extras import require
from agenteval.results import CaseResult
from agenteval.version import __version__

FEATURE = "--otel"


class CollectorUnreachable(Exception):
    """The OTLP collector does not answer: no spans can be exported."""


class RunTracer:
    """Turns case results into spans; `close` flushes them when the provider is ours."""

    def __init__(self, provider: Any, owned: bool, exporter: Any = None) -> None:
        self._provider = provider
        self._owned = owned
        self._exporter = exporter  # ours (_CountingExporter) when the provider is ours
        self._tracer = provider.get_tracer("agenteval", __version__)

    def case(self, result: CaseResult) -> None:
        from opentelemetry import trace
        from opentelemetry.trace import Status, StatusCode

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
        span = self._tracer.start_span("agenteval.case", start_time=end - _ns(result.duration_ms), attributes=attributes)
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
        span.end(end_time=end)

    def close(self) -> str | None:
        """Flush the spans; a one-line warning when some could not be exported."""
        if not self._owned:
            self._provider.force_flush()
            return None
        self._provider.shutdown()  # exports what the batch processor still holds
        return self._exporter.warning() if self._exporter is not None else None


def run_tracer() -> RunTracer:
    """The application's SDK provider when it set one, else one exporting over OTLP as the
    environment says. Raises MissingDependency without the `otel` extra, CollectorUnreachable
    when nothing listens at the collector's address (so a run never waits on retries)."""
    trace = require("opentelemetry.trace", FEATURE)
    sdk_trace = require("opentelemetry.sdk.trace", FEATURE)
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
    provider.add_span_processor(BatchSpanProcessor(counting))
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
    """The OTLP exporter, counting the spans it could not deliver (said in one line at the end)."""

    def __init__(self, inner: Any, address: str) -> None:
        self._inner = inner
        self._address = address
        self.failed = 0

    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        try:
            outcome = self._inner.export(spans)
        except Exception:  # noqa: BLE001 - a collector problem must not stop the run
            outcome = SpanExportResult.FAILURE
        if outcome != SpanExportResult.SUCCESS:
            self.failed += len(spans)
        return outcome

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return bool(self._inner.force_flush(timeout_millis))

    def warning(self) -> str | None:
        return f"warning: --otel: {self.failed} spans could not be exported to {self._address}" if self.failed else None


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

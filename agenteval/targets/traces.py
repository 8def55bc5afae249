"""traces: the answer of each case is a trace that already happened, read from an OTLP/JSON export.

The file is indexed once, on the first case (byte ranges per trace, no spans held); each case then
reads only its own trace and gets the answer a live tool loop gives (agenteval.traces.answer), so
the same evaluators score production traces and live runs alike.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, PrivateAttr, field_validator

from agenteval.config import StrictModel
from agenteval.targets.base import Answer, TargetRun


def checked_match(value: str) -> str:
    """A `match:` (or `--traces-match`) as given; ValueError naming the three forms for anything else."""
    name = value.removeprefix("attribute ").strip()
    if value in ("trace_id", "session_id") or (value.startswith("attribute ") and name and " " not in name):
        return value
    raise ValueError(f"give `trace_id`, `session_id` or `attribute NAME` (e.g. `attribute user.id`), not {value!r}")


class TracesTarget(StrictModel):
    """Each case's answer is its trace in `file` (OTLP/JSON, as the collector's file exporter writes)."""

    type: Literal["traces"]
    file: str = Field(min_length=1, description="The export, inside the suite's folder: one OTLP/JSON document, or JSONL of them.")
    match: str = Field(
        "trace_id",
        description="How a case names its trace: `trace_id`, `session_id` (the `session.id` or `gen_ai.conversation.id` attribute) "
        "or `attribute NAME` (any span attribute). The case's key is its `metadata` of that name (`trace_id`, `session_id`, NAME), else its id.",
    )

    @field_validator("match")
    @classmethod
    def _known_match(cls, value: str) -> str:
        return checked_match(value)

    _index: Any = PrivateAttr(default=None)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)
    _given: Path | None = PrivateAttr(default=None)  # `--traces FILE`: a path the user gave, read where it is

    @classmethod
    def given(cls, path: Path, match: str = "trace_id") -> TracesTarget:
        """The target `--traces FILE` answers every case with (the file may be anywhere: the user named it).
        Raises ValueError for a `match` that is not one of the three forms."""
        target = cls(type="traces", file=str(path), match=match)
        target._given = Path(path).resolve()
        return target

    def answer(self, case: Any, run: TargetRun) -> Answer:
        from agenteval.traces.answer import trace_answer
        from agenteval.traces.otlp import TraceError

        index = self._indexed(run.base_dir, run.limits.trace_document_mb)
        if isinstance(index, str):
            return Answer(error=index)
        key = self.case_key(case)
        try:
            spans = index.spans(key, run.limits.trace_spans)
            prices = getattr(run.endpoints, "prices", None)
            output = trace_answer(spans, prices)
        except TraceError as exc:
            return Answer(error=f"{self._kind()}: {exc}")
        except (OSError, ValueError) as exc:  # the file changed under the run
            return Answer(error=f"{self._kind()}: {self._shown()} could not be read again: {exc}")
        return Answer(output, duration_ms=output["usage"]["latency_ms"], usage=dict(output["usage"]))

    def case_key(self, case: Any) -> str:
        name = self.match.split(None, 1)[1] if self.match.startswith("attribute ") else self.match
        metadata = case.metadata if isinstance(getattr(case, "metadata", None), dict) else {}
        value = metadata.get(name)
        return str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else str(case.id)

    def _kind(self) -> str:
        return "--traces" if self._given is not None else "traces target"

    def _shown(self) -> str:
        return self.file if self._given is not None else f"<suite dir>/{self.file}"

    def _indexed(self, base_dir: Path, document_mb: float) -> Any:
        """The file's index, made by the first case that needs it; a message when it cannot be read."""
        from agenteval.traces.index import index_file

        most = int(document_mb * (1 << 20))
        with self._lock:
            if self._index is None and self._given is not None:
                try:
                    self._index = index_file(self._given, self.match, most)
                except OSError as exc:
                    self._index = f"--traces: cannot read {self.file}: {exc.strerror or exc}"
            if self._index is None:
                folder = base_dir.resolve()
                try:
                    path = (folder / self.file).resolve()
                except (OSError, RuntimeError, ValueError) as exc:
                    self._index = f"traces target: `file` {self.file!r} cannot be resolved: {exc}"
                    return self._index
                if not path.is_relative_to(folder):
                    self._index = f"traces target: `file` {self.file!r} is outside the suite's folder; the export must be inside it"
                else:
                    try:
                        self._index = index_file(path, self.match, most)
                    except OSError as exc:
                        self._index = f"traces target: cannot read `file` <suite dir>/{self.file}: {exc.strerror or exc}"
            return self._index

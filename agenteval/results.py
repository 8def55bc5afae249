"""Result lines: the model, the streaming JSONL writer/reader, and the run summary.

The summary is accumulated as lines stream past, so a run (or `agenteval report` over many
files) keeps a few counters per evaluator and field, never the results themselves.
"""

from __future__ import annotations

import heapq
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import IO, Any, Literal

import orjson

from agenteval.cells import cell_label
from agenteval.evaluators.base import EvaluatorResult
from agenteval.repeats import RepeatStats
from agenteval.usage import UsageStats
from agenteval.metrics import ExactSum, macro_f1, metrics_row, ratio

CaseVerdict = Literal["pass", "fail", "error"]
DUMP_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
_STRING_KEYS = orjson.OPT_SERIALIZE_NUMPY  # DUMP_OPTIONS for the usual line, whose keys are all strings (a tenth faster)
_LINE = _STRING_KEYS | orjson.OPT_APPEND_NEWLINE
SLOWEST_KEPT = 5
MAX_CELLS = 256
"""Cells a summary keeps figures of; the results of further cells (a results file naming thousands
of targets) count in the totals only, and `cells_not_kept` says how many results that was."""
MAX_PAIRED_CELLS = 32
"""Cells the paired comparisons cover: past this many the pairing's memory and time (pairs grow
with the square of the cells) are not spent, and `comparisons_skipped` says why."""
MAX_PAIRED_METRICS = 16
"""Metrics (evaluator scores and criteria, in the order first seen) a comparison of cells covers
metric by metric: two numbers per case, cell and metric are kept for them; the values of further
metrics are counted in `metrics_not_compared`."""


@dataclass(slots=True)
class CaseResult:
    """One line of the results JSONL."""

    run_id: str
    suite: str
    case_id: str
    score: float
    verdict: CaseVerdict
    output: Any = None
    evaluator_results: list[EvaluatorResult] = field(default_factory=list)
    error: str | None = None
    duration_ms: float = 0.0
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    usage: dict[str, Any] | None = None  # latency_ms, tokens, cost_usd of the answer (agenteval.usage)
    repetition: int = 0  # which of `--repeat N` runs of the case this is
    timestamp: str | None = None  # when the case finished (ISO 8601, UTC)
    input: Any = None  # the case input as evaluated: the record stays meaningful when the dataset changes
    agent_id: str | None = None  # from the case's metadata, to group results by agent and session
    session_id: str | None = None
    expected: Any = None  # the case's reference as evaluated (None in results written before it was stored)
    target: str | None = None  # the cell: which of the suite's `targets:` answered (None: the one `target:`)
    prompt: str | None = None  # and with which of its `prompts:` (None: the target's own messages)
    trace_id: str | None = None  # the W3C trace id the case's target was sent: where to find the case in a tracing backend

    def __repr__(self) -> str:
        """What a notebook shows: the case, its cell, verdict and score (and the error, cut)."""
        parts = [f"case_id={self.case_id!r}"]
        if self.target is not None or self.prompt is not None:
            parts.append(f"cell={cell_label(self.target, self.prompt)!r}")
        if self.repetition:
            parts.append(f"repetition={self.repetition}")
        parts += [f"verdict={self.verdict!r}", f"score={self.score!r}"]
        if self.error is not None:
            first = self.error.splitlines()[0] if self.error.strip() else self.error
            parts.append(f"error={first[:80] + ('...' if len(first) > 80 or first != self.error else '')!r}")
        return f"CaseResult({', '.join(parts)})"

    def to_dict(self) -> dict[str, Any]:
        """The result as plain data: its results line's keys, evaluator results as dicts."""
        from dataclasses import asdict

        return asdict(self)


_CASE_KEYS = {f.name for f in fields(CaseResult)}
_EVALUATOR_KEYS = {f.name for f in fields(EvaluatorResult)}


def case_from_dict(data: dict[str, Any]) -> CaseResult:
    check_result_types(data)
    found = {key: value for key, value in data.items() if key in _CASE_KEYS}
    found["evaluator_results"] = [
        EvaluatorResult(**{k: v for k, v in item.items() if k in _EVALUATOR_KEYS})
        for item in data.get("evaluator_results") or []
    ]
    return CaseResult(**found)


def _number(value: Any) -> bool:
    return type(value) in (int, float) and value - value == 0  # NaN and infinities give NaN


def _texts(value: Any) -> bool:
    return type(value) is list and all(type(item) is str for item in value)


_CASE_TYPES: dict[str, tuple[str, Any]] = {
    "run_id": ("a string", lambda v: type(v) is str), "suite": ("a string", lambda v: type(v) is str),
    "case_id": ("a string", lambda v: type(v) is str), "score": ("a finite number", _number),
    "verdict": ("pass, fail or error", lambda v: v in ("pass", "fail", "error")),
    "evaluator_results": ("a list", lambda v: type(v) is list), "error": ("a string or null", lambda v: v is None or type(v) is str),
    "duration_ms": ("a finite number", _number), "tags": ("a list of strings", _texts),
    "metadata": ("an object", lambda v: type(v) is dict),
    "timestamp": ("a string or null", lambda v: v is None or type(v) is str),
    "agent_id": ("a string or null", lambda v: v is None or type(v) is str),
    "session_id": ("a string or null", lambda v: v is None or type(v) is str),
    "target": ("a string or null", lambda v: v is None or type(v) is str),
    "prompt": ("a string or null", lambda v: v is None or type(v) is str),
    "trace_id": ("a string or null", lambda v: v is None or type(v) is str),
}
_EVALUATOR_TYPES: dict[str, tuple[str, Any]] = {
    "name": ("a string", lambda v: type(v) is str), "type": ("a string", lambda v: type(v) is str),
    "score": ("a finite number", _number), "verdict": ("pass, partial, fail or error", lambda v: v in ("pass", "partial", "fail", "error")),
    "hits": ("a list of strings", _texts), "misses": ("a list of strings", _texts),
    "reasoning": ("a string or null", lambda v: v is None or type(v) is str), "details": ("an object or null", lambda v: v is None or type(v) is dict),
    "error": ("a string or null", lambda v: v is None or type(v) is str), "duration_ms": ("a finite number", _number),
}
_CASE_REQUIRED = ("run_id", "suite", "case_id", "score", "verdict")
_EVALUATOR_REQUIRED = ("name", "type", "score", "verdict")


def check_result_types(data: Any) -> None:
    """Well-formed JSON with a wrong type (a score of "high") is not a result: name the key, never crash later."""
    _check_keys(data, _CASE_REQUIRED, _CASE_TYPES, "")
    for index, item in enumerate(data.get("evaluator_results") or []):
        _check_keys(item, _EVALUATOR_REQUIRED, _EVALUATOR_TYPES, f"evaluator_results[{index}].")


def _check_keys(data: Any, required: tuple[str, ...], types: dict[str, tuple[str, Any]], where: str) -> None:
    if type(data) is not dict:
        raise ValueError(f"{where.rstrip('.') or 'a result line'} must be a JSON object")
    for key in required:
        if key not in data:
            raise ValueError(f"{where}{key} is missing")
    for key, value in data.items():
        expected = types.get(key)
        if expected is not None and not expected[1](value):
            raise ValueError(f"{where}{key} must be {expected[0]}, got {orjson.dumps(value).decode()[:60]}")


class ResultsFileError(Exception):
    pass


def read_results(path: Path) -> Iterator[CaseResult]:
    """Stream the result lines of a JSONL file (a torn last line from a killed run is skipped)."""
    from agenteval.process import decode_json

    try:
        handle = path.open("rb")
    except IsADirectoryError:
        newest = max(path.glob("*.jsonl"), key=lambda found: found.stat().st_mtime, default=None)
        raise ResultsFileError(f"{path}: a folder; give results files" + (f" (its newest: {newest})" if newest else "")) from None
    except OSError as exc:
        raise ResultsFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                yield case_from_dict(decode_json(raw))
            except (ValueError, TypeError, AttributeError) as exc:
                if not raw.endswith(b"\n"):
                    return  # the last line was cut off mid-write
                if path.name.endswith(".summary.json"):
                    raise ResultsFileError(f"{path}: a run's summary, not its results: give {path.with_name(path.name.removesuffix('.summary.json') + '.jsonl')}") from None
                raise ResultsFileError(f"{path}:{number}: not a result line: {exc}") from None


def repair_torn_tail(path: Path) -> None:
    """Drop a last line that a killed run left without its newline, so appending stays valid JSONL.

    The torn line can be longer than any buffer, so the search for the last newline walks back
    chunk by chunk; only the torn line itself is ever cut.
    """
    with path.open("rb+") as handle:
        size = handle.seek(0, 2)
        if size == 0:
            return
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return
        end = size
        while end > 0:
            start = max(0, end - (1 << 20))
            handle.seek(start)
            cut = handle.read(end - start).rfind(b"\n")
            if cut >= 0:
                handle.truncate(start + cut + 1)
                return
            end = start
        handle.truncate(0)  # the file holds a single torn line and nothing finished


class ResultsWriteError(Exception):
    """The results could not be written (disk full, file gone read-only...): the run stops.
    `lost`: finished cases counted already whose lines did not reach the file (a batch cut short)."""

    def __init__(self, message: str, lost: int = 0) -> None:
        super().__init__(message)
        self.lost = lost


BATCH_BYTES = 1 << 16
"""Lines a batched results file gathers before they are handed to the kernel in one write."""
BATCH_SECONDS = 0.03
"""The longest a finished line waits in memory before the kernel has it: a timer hands the batch
over this long after its first line, whether or not another case finishes."""


class JsonlWriter:
    """Appends one line per case to a results file or stream.

    Unbatched (a stream a reader follows line by line: `-o -`), each line is handed to the kernel
    as it is written. Batched (a results file: one write per 64 KiB instead of one per line), lines
    are handed over when BATCH_BYTES gather, BATCH_SECONDS after the first of them at the latest (a
    timer thread, so a slow next case holds nothing back), and on `flush` and `close`: a killed run
    loses at most the lines of its last BATCH_SECONDS, Ctrl-C and an exception nothing.

    A write that fails part-way (disk full) is cut back to its last whole line, so the file stays
    valid JSONL for --resume, and raises ResultsWriteError (a reader gone away: BrokenPipeError);
    one the timer meets is raised by the next write, flush or close.
    """

    def __init__(self, stream: IO[bytes], name: str = "results", *, batched: bool = False) -> None:
        self._stream = stream
        self._name = name
        self._end: int | None = None  # where the file ends (known after a write that told it): a failed write is cut back to it
        self._pending: list[bytes] = []  # batched lines not yet handed to the kernel
        self._size = 0
        self._failure: BaseException | None = None  # what the timer's write met, for the next call to raise
        self._lock: Any = None  # batched: the lines and the file are the writer's and the timer's in turn
        self._due: Any = None  # set while lines wait: the timer's cue
        self._timer: Any = None
        self._closed = False
        if batched:
            import threading

            self._lock, self._due = threading.Lock(), threading.Event()

    def write(self, result: CaseResult) -> None:
        line = dump_line(result)
        if self._lock is None:
            self._put(line)
            return
        with self._lock:
            if self._failure is not None:
                self._raise_failure()
            if self._size + len(line) > BATCH_BYTES and self._pending:  # (written first: a failure is not this case's)
                self._drain()
            self._pending.append(line)
            self._size += len(line)
            if not self._due.is_set():
                self._arm()

    def flush(self) -> None:
        """Hand every waiting line to the kernel now (before the file is read, and on close)."""
        if self._lock is None:
            return
        with self._lock:
            if self._failure is not None:
                self._raise_failure()
            if self._pending:
                self._drain()

    def close(self) -> None:
        """Flush, and stop the timer. The stream is the caller's to close."""
        try:
            self.flush()
        finally:
            if self._lock is not None and not self._closed:
                self._closed = True
                self._due.set()  # the timer wakes, sees it is closed and ends
                if self._timer is not None:
                    import atexit

                    atexit.unregister(self._flush_at_exit)

    def _arm(self) -> None:
        """Wake the timer for the batch just begun (starting it with the first one)."""
        if self._timer is None and not self._closed:
            import atexit
            import threading

            self._timer = threading.Thread(target=self._run_timer, name="agenteval-results-writer", daemon=True)
            self._timer.start()
            atexit.register(self._flush_at_exit)  # a program that ends without closing the run loses no line
        self._due.set()

    def _run_timer(self) -> None:
        import time

        while True:
            self._due.wait()
            if self._closed:
                return
            time.sleep(BATCH_SECONDS)
            with self._lock:
                if self._closed:
                    return
                self._due.clear()
                if self._pending and self._failure is None:
                    try:
                        self._drain()
                    except BaseException as exc:  # noqa: BLE001 - raised by the writer's next call, in the run's thread
                        self._failure = exc

    def _flush_at_exit(self) -> None:
        try:
            self.flush()
        except (OSError, ResultsWriteError):
            pass  # the interpreter is ending: nothing is left to tell

    def _raise_failure(self) -> None:
        failure, self._failure = self._failure, None
        assert failure is not None
        raise failure

    def _drain(self) -> None:
        """Write the waiting lines (the lock held). Interrupted (Ctrl-C) mid-write, the file is cut
        back and the lines wait again, so `close` writes each of them once."""
        start = self._start()
        lines = self._pending
        self._pending, self._size = [], 0
        try:
            self._put(lines[0] if len(lines) == 1 else b"".join(lines), start)
        except (OSError, ResultsWriteError):
            raise
        except BaseException:
            if self._cut_back_to(start):
                self._pending, self._size = lines + self._pending, sum(map(len, lines)) + self._size
            raise

    def _start(self) -> int | None:
        """Where the next write begins, when the stream can tell."""
        if self._end is not None:
            return self._end
        try:
            return self._stream.tell() if self._stream.seekable() else None
        except OSError:
            return None

    def _put(self, data: bytes, start: int | None = None) -> None:
        """Write `data` (whole lines) at `start` and flush it; on a failure, keep the whole lines
        that were written and cut off the rest."""
        if start is None:
            start = self._start()
        done = 0
        try:
            done = self._stream.write(data) or 0
            if done < len(data):  # an unbuffered file may take a long write in parts
                rest = memoryview(data)[done:]
                while rest:
                    written = self._stream.write(rest) or 0
                    done += written
                    rest = rest[written:]
            self._stream.flush()
        except BrokenPipeError:
            self._end = None
            raise
        except OSError as exc:
            kept = data.rfind(b"\n", 0, done) + 1 if start is not None else 0
            self._cut_back_to(None if start is None else start + kept)
            lost = data.count(b"\n", kept)
            note = "" if self._lock is None or not lost else (  # (unbatched, the one line cut off is the case that failed)
                f" (the last {lost} finished cases are not in it)" if lost > 1 else " (the last finished case is not in it)"
            )
            raise ResultsWriteError(f"cannot write {self._name}: {exc.strerror or exc}{note}", lost if self._lock is not None else 0) from None
        self._end = None if start is None else start + len(data)

    def _cut_back_to(self, end: int | None) -> bool:
        """Truncate the file to `end` (the end of its last whole line); False when that cannot be done."""
        self._end = None
        if end is None:
            return False
        try:
            self._stream.truncate(end)
            self._stream.seek(end)  # truncating leaves the position where the write ended: `tell` must say `end`
        except OSError:
            return False
        self._end = end
        return True


def dump_line(result: CaseResult) -> bytes:
    """One JSON line, whatever the values hold (never raises). A non-finite number in the answer is
    written as Python's json writes it (NaN, Infinity), not as null, so re-scoring the answer from
    the results gives the same verdict; a score is always a finite number (see `settled`).

    The usual result is written from a plain dict of its fields (what orjson writes for the
    dataclass, in the same order, at a third of the cost); anything unusual takes `_dump_slowly`."""
    result = settled(result)
    if type(result) is not CaseResult:  # a subclass may add fields: orjson writes it as the dataclass it is
        return _dump_slowly(result)
    evaluators: Any = result.evaluator_results
    if type(evaluators) is list:
        evaluators = [
            {
                "name": item.name, "type": item.type, "score": item.score, "verdict": item.verdict, "hits": item.hits,
                "misses": item.misses, "reasoning": item.reasoning, "details": item.details, "error": item.error,
                "duration_ms": item.duration_ms, "criterion": item.criterion,
            } if type(item) is EvaluatorResult else item
            for item in evaluators
        ]
    data = {
        "run_id": result.run_id, "suite": result.suite, "case_id": result.case_id, "score": result.score,
        "verdict": result.verdict, "output": result.output, "evaluator_results": evaluators, "error": result.error,
        "duration_ms": result.duration_ms, "tags": result.tags, "metadata": result.metadata, "usage": result.usage,
        "repetition": result.repetition, "timestamp": result.timestamp, "input": result.input,
        "agent_id": result.agent_id, "session_id": result.session_id, "expected": result.expected,
        "target": result.target, "prompt": result.prompt, "trace_id": result.trace_id,
    }
    try:
        line = orjson.dumps(data, option=_LINE, default=_exact_digits)
    except orjson.JSONEncodeError:
        return _dump_slowly(result)
    if has_non_finite(result.output):
        return _dump_slowly(result)
    return line


def _dump_slowly(result: CaseResult) -> bytes:
    """`dump_line` of a settled result that is not the usual one: keys that are not strings, values
    orjson cannot write, a non-finite number in the answer, a subclass of CaseResult."""
    try:
        line = orjson.dumps(result, option=_STRING_KEYS, default=_exact_digits) + b"\n"
    except orjson.JSONEncodeError:
        try:  # keys that are not strings (a Python pipeline's own dicts): orjson writes them as text when asked, at a cost
            line = orjson.dumps(result, option=DUMP_OPTIONS, default=_exact_digits) + b"\n"
        except orjson.JSONEncodeError:  # nesting past 254 levels, a lone surrogate, an int beyond 64 bits, an odd type
            return _dump_any(result)
    if b"null" in line and has_non_finite(result.output):  # orjson writes NaN and infinities as null
        import json

        placeholder = "\x00output\x00"  # its first occurrence is `output`: only ids precede it
        slim = orjson.dumps(replace(result, output=placeholder), option=DUMP_OPTIONS, default=_exact_digits).decode()
        try:
            answer = json.dumps(result.output, allow_nan=True, ensure_ascii=False)
        except (TypeError, ValueError):  # a value orjson writes and json does not (a date, a UUID...) beside the NaN
            return _dump_any(result)
        line = slim.replace(orjson.dumps(placeholder).decode(), answer, 1).encode() + b"\n"
    return line


def _exact_digits(value: Any) -> Any:
    """A Decimal from a Python pipeline (agenteval.values.ExactNumber) as the digits it was written with."""
    text = getattr(value, "text", None)
    if type(value).__name__ == "ExactNumber" and type(text) is str:
        return orjson.Fragment(text)
    raise TypeError


STORED_DEPTH = 500
"""The deepest nesting a results line holds: a value nested deeper in an answer, an input or an
evaluator's details is stored as a note, so the line is written and read back without recursing too
deep (reading takes about 1,000 levels)."""
TOO_DEEP = f"<value nested deeper than {STORED_DEPTH} levels: not stored>"
_LONGEST_INT_BITS = 14_000  # about 4,200 digits: Python writes no longer integer as text


def settled(result: CaseResult) -> CaseResult:
    """The result with every score a finite number. A NaN, infinite or non-numeric score (an evaluator's
    bug) is never written: it would read back as null, which `report`, `compare` and `--resume` refuse.
    Such an evaluator becomes an `error` with score 0, and so does its case."""
    score = result.score
    if type(score) is float and score - score == 0 or _score(score):  # (a finite float: NaN and infinities give NaN)
        for evaluator in result.evaluator_results:
            score = evaluator.score
            if not (type(score) is float and score - score == 0 or _score(score)):
                break
        else:  # (the usual result, settled without a generator or a call per score)
            return result
    evaluators = [
        evaluator if _score(evaluator.score) else replace(
            evaluator, score=0.0, verdict="error",
            error=f"the evaluator gave a score that is not a finite number ({_shown_score(evaluator.score)})",
        )
        for evaluator in result.evaluator_results
    ]
    error = result.error
    if error is None and all(_score(evaluator.score) for evaluator in result.evaluator_results):
        error = f"the case score is not a finite number ({_shown_score(result.score)})"
    return replace(result, score=0.0, verdict="error", evaluator_results=evaluators, error=error)


def _score(value: Any) -> bool:
    return type(value) in (int, float) and value - value == 0 and -_FLOAT_MAX <= value <= _FLOAT_MAX


def _shown_score(value: Any) -> str:
    return repr(value) if value is None or type(value) is float else type(value).__name__


def _dump_any(result: CaseResult) -> bytes:
    """The line for a result orjson cannot write: every value made storable (see `storable`), written
    by the standard library's json, a lone surrogate as its `\\udXXX` escape (JSON's own spelling)."""
    import json

    data = storable({
        **{f.name: getattr(result, f.name) for f in fields(CaseResult)},
        "evaluator_results": [{f.name: getattr(item, f.name) for f in fields(EvaluatorResult)} for item in result.evaluator_results],
    })
    try:
        text = json.dumps(data, allow_nan=True, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError) as exc:  # not expected: storable() leaves nothing json refuses
        data.update(output=None, input=None, expected=None, metadata={}, evaluator_results=[], score=0.0, verdict="error",
                    error=f"the result could not be stored: {type(exc).__name__}")
        text = json.dumps(data, allow_nan=True, ensure_ascii=False, default=str)
    return text.encode("utf-8", "backslashreplace") + b"\n"


def storable(value: Any, max_depth: int = STORED_DEPTH) -> Any:
    """A copy of `value` that json.dumps writes: containers nested past `max_depth` (and a value that
    contains itself) become notes, dict keys json refuses become text, other objects their text (or
    `tolist()`), and an integer too long to write a note. Iterative: the value may nest past any stack."""
    holder: list[Any] = [None]
    active: set[int] = set()  # containers on the path being copied, to see a value that contains itself
    stack: list[tuple[Any, Any, Any, int]] = [(value, holder, 0, 1)]
    while stack:
        node, parent, key, depth = stack.pop()
        if parent is None:  # the end of a container's children
            active.discard(node)
            continue
        if isinstance(node, (dict, list, tuple)):
            if depth > max_depth:
                parent[key] = TOO_DEEP
                continue
            if id(node) in active:
                parent[key] = "<value that contains itself: not stored>"
                continue
            active.add(id(node))
            stack.append((id(node), None, None, 0))
            if isinstance(node, dict):
                copy: Any = {}
                for item_key, child in node.items():
                    item_key = _storable_key(item_key)
                    copy[item_key] = None
                    stack.append((child, copy, item_key, depth + 1))
            else:
                copy = [None] * len(node)
                stack.extend((child, copy, index, depth + 1) for index, child in enumerate(node))
            parent[key] = copy
        elif node is None or isinstance(node, (str, float)):
            parent[key] = node
        elif isinstance(node, int):
            parent[key] = node if isinstance(node, bool) or node.bit_length() <= _LONGEST_INT_BITS else (
                f"<integer of about {int(node.bit_length() * 0.30103) + 1} digits: not stored>"
            )
        elif callable(getattr(node, "tolist", None)):  # numpy arrays and numbers
            stack.append((node.tolist(), parent, key, depth))
        else:
            parent[key] = _text(node)
    return holder[0]


def _storable_key(key: Any) -> Any:
    if key is None or isinstance(key, (str, float, bool)):
        return key
    if isinstance(key, int) and key.bit_length() <= _LONGEST_INT_BITS:
        return key
    return _text(key)


def _text(value: Any) -> str:
    try:
        return str(value)
    except Exception:  # noqa: BLE001 - any object may be in a python evaluator's details
        return f"<{type(value).__name__}>"


def dump_summary(summary: dict[str, Any]) -> bytes:
    """The summary file's JSON (indented). A case id or tag holding a lone surrogate is written as its
    escape; never raises."""
    try:
        return orjson.dumps(summary, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    except orjson.JSONEncodeError:
        import json

        return json.dumps(storable(summary), indent=2, ensure_ascii=False, default=str).encode("utf-8", "backslashreplace")


def has_non_finite(value: Any) -> bool:
    """Whether a NaN or an infinity is anywhere in `value` (dicts and lists walked without recursing)."""
    kind = type(value)
    if kind is float:
        return value - value != 0
    if kind is not dict and kind is not list:
        return False
    stack = [value]
    while stack:
        node = stack.pop()
        for item in node.values() if type(node) is dict else node:
            kind = type(item)
            if kind is float:
                if item - item != 0:  # NaN and infinities give NaN
                    return True
            elif kind is dict or kind is list:
                stack.append(item)
    return False


_FLOAT_MAX = 1.7976931348623157e308


_CELL_KEYS = ("counts", "pass_rate", "mean_score", "mean_case_duration_ms", "evaluators", "usage", "repeats")


class _InCell:
    """A matrix run's result as the run-wide repeat statistics see it: one case per (case, cell)."""

    __slots__ = ("case_id", "repetition", "verdict", "score")

    def __init__(self, result: CaseResult, case_id: str) -> None:
        self.case_id, self.repetition, self.verdict, self.score = case_id, result.repetition, result.verdict, result.score


def _compared_pairs(names: list[tuple[str | None, str | None]]) -> list[tuple[int, int]]:
    """Index pairs of cells to compare: those with the same prompt (targets compared) or the same
    target (prompts compared); a grid of 3 x 3 cells gives 18 pairs, not 36."""
    return [
        (i, j) for i in range(len(names)) for j in range(i + 1, len(names))
        if names[i][0] == names[j][0] or names[i][1] == names[j][1]
    ]


def cell_gate(counts: dict[str, int], min_pass_rate: float | None) -> dict[str, Any]:
    """Whether a cell passes the run's gate (every case passed, or --min-pass-rate met, and none
    errored), and why not."""
    total, passed, errored = counts["total"], counts["passed"], counts["errored"]
    if errored:
        return {"passed": False, "reason": f"{errored} of {total} cases errored"}
    if passed == total:
        return {"passed": True, "reason": None}
    if min_pass_rate is not None and total and passed / total >= min_pass_rate:
        return {"passed": True, "reason": None}
    if min_pass_rate is not None:
        return {"passed": False, "reason": f"pass rate {passed / total:.1%} is below {min_pass_rate:.1%}" if total else "no cases"}
    return {"passed": False, "reason": f"{total - passed} of {total} cases failed"}


@dataclass
class _EvaluatorStats:
    type: str
    count: int = 0
    score_sum: ExactSum = field(default_factory=ExactSum)  # exact: a mean must not depend on the order cases finish in
    duration_sum: float = 0.0
    verdicts: Counter[str] = field(default_factory=Counter)
    criterion: dict[str, str] | None = None
    criteria: dict[str, _CriterionStats] | None = None  # per llm_judge criterion and composite child
    criteria_dropped: int = 0  # scores of names past CRITERIA_KEPT, not aggregated

    def add_criteria(self, details: dict[str, Any]) -> None:
        """Aggregate `details.criteria` (llm_judge: {name: {score, ...}}) and `details.children`
        (composite: [{name, score, verdict, details}], nested ones as `parent.child`)."""
        found_scores = criterion_scores(details)
        criteria = self.criteria
        if criteria is None:
            criteria = self.criteria = {}
        for name, score, verdict in found_scores:
            stats = criteria.get(name)
            if stats is None:
                if len(criteria) >= CRITERIA_KEPT:  # a judge naming criteria freely must not grow memory
                    self.criteria_dropped += 1
                    continue
                stats = criteria[name] = _CriterionStats()
            stats.count += 1
            stats.score_sum += score
            verdicts = stats.verdicts
            verdicts[verdict] = verdicts.get(verdict, 0) + 1

    def criteria_dict(self) -> dict[str, Any]:
        """The `criteria` (and `criteria_dropped`) keys of the evaluator's summary entry; {} when none."""
        if not self.criteria:
            return {}
        out: dict[str, Any] = {"criteria": {
            name: {"count": stats.count, "mean_score": ratio(stats.score_sum, stats.count), "verdicts": dict(stats.verdicts)}
            for name, stats in self.criteria.items()
        }}
        if self.criteria_dropped:
            out["criteria_dropped"] = self.criteria_dropped
        return out


def criterion_scores(details: dict[str, Any]) -> list[tuple[str, float, str]]:
    """(name, score, verdict) of each criterion in an evaluator's details: `details.criteria`
    (llm_judge: {name: {score, ...}}; retrieval: a metric each) and `details.children` (composite:
    [{name, score, verdict, details}], nested ones as `parent.child`). Runs once per judged case:
    the loops stay inline (a few hundred ns per criterion)."""
    found_scores: list[tuple[str, float, str]] = []
    stack: list[tuple[str, dict[str, Any], int]] = [("", details, 0)]
    while stack:
        prefix, found, depth = stack.pop()
        criteria = found.get("criteria")
        if type(criteria) is dict:
            for name, entry in criteria.items():
                score, verdict = (entry.get("score"), entry.get("verdict")) if type(entry) is dict else (entry, None)
                if _score(score):
                    if verdict not in _VERDICTS:
                        verdict = "pass" if score >= 1.0 else "fail" if score <= 0.0 else "partial"  # graded_verdict
                    found_scores.append((name if not prefix and type(name) is str else f"{prefix}{name}", score, verdict))
        children = found.get("children")
        if type(children) is list:
            for child in children:
                if type(child) is not dict:
                    continue
                name, score, verdict = child.get("name"), child.get("score"), child.get("verdict")
                if type(name) is not str or verdict not in _VERDICTS or not _score(score):
                    continue
                if prefix:
                    name = prefix + name
                found_scores.append((name, score, verdict))
                inner = child.get("details")
                if type(inner) is dict and depth < CRITERIA_DEPTH:
                    stack.append((name + ".", inner, depth + 1))
    return found_scores


def metric_values(result: CaseResult) -> list[tuple[str, float, bool]]:
    """(name, value, is a criterion) of each metric a case measured, as cells are compared metric by
    metric: each evaluator's score (named as the evaluator) and each of its criteria (`NAME: criterion`,
    a retrieval metric or a judge's criterion). An evaluator that errored measured nothing."""
    found: list[tuple[str, float, bool]] = []
    for evaluator in result.evaluator_results:
        if evaluator.verdict == "error":
            continue
        if _score(evaluator.score):
            found.append((evaluator.name, evaluator.score, False))
        details = evaluator.details
        if details and ("criteria" in details or "children" in details):
            found += [(f"{evaluator.name}: {name}", score, True) for name, score, _ in criterion_scores(details)]
    return found


def compared_metric_names(metrics: dict[str, bool]) -> list[str]:
    """The metrics (name -> is a criterion, first seen first) a comparison reports: none when the only
    one is a single evaluator's score, which is the case's score and compared already."""
    if len(metrics) == 1 and not next(iter(metrics.values())):
        return []
    return list(metrics)


CRITERIA_KEPT = 100
"""Distinct criterion (and composite child) names aggregated per evaluator; scores of further names are
counted in `criteria_dropped` only."""
CRITERIA_DEPTH = 8  # composites nested deeper than this are not walked into
_VERDICTS = ("pass", "partial", "fail", "error")


@dataclass(slots=True)
class _CriterionStats:
    count: int = 0
    score_sum: ExactSum = field(default_factory=ExactSum)
    verdicts: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class _FieldStats:
    scored: int = 0
    hits: int = 0
    skipped: int = 0
    score_sum: ExactSum = field(default_factory=ExactSum)


class Summary:
    """Counters that grow with the number of evaluators and fields, never with the number of cases
    (except in a matrix run, whose paired comparisons keep three numbers per case and cell)."""

    def __init__(self, repeat: int = 1, cells: Iterable[tuple[str | None, str | None]] = ()) -> None:
        self._repeat = repeat
        self.min_pass_rate: float | None = None  # the run's --min-pass-rate: each cell's gate
        # A matrix run (results naming a target or a prompt): a summary per cell, in the suite's order
        # (else in the order cells are first seen), and per case and cell [runs, passes, score sum] to
        # pair the cells (three numbers per case and cell: the paired statistics need them).
        self.cells: dict[tuple[str | None, str | None], Summary] = {}
        self._in_cell = False  # this summary is one cell's: it counts, and keeps no cells of its own
        self._pairs: dict[str, array[float]] | None = {}  # None once there are too many cells to pair
        self._not_kept = 0  # results of cells past MAX_CELLS
        # Per metric (evaluator score or criterion), case and cell: [sum, count], at a slot given to
        # each (metric, cell) when first seen, so a row holds only the metrics its cells produced.
        self._metrics: dict[str, bool] = {}  # name -> is a criterion (in the order first seen)
        self._metric_slots: dict[tuple[str, int], int] = {}
        self._metric_rows: dict[str, array[float]] = {}
        self._metrics_not_compared = 0
        for names in cells:  # the suite's cells, under the same caps as cells first seen in results
            self._keep(names)
        self._declared = len(self.cells)  # cells given in order; others are shown sorted by name (`ordered_cells`)
        self.total = 0
        self.verdicts: Counter[str] = Counter()
        self.usage = UsageStats()  # latency percentiles, tokens, cost (agenteval.usage)
        self.repeats = RepeatStats(repeat)  # --repeat statistics (agenteval.repeats)
        self.score_sum = ExactSum()  # exact: the mean must not depend on the order cases finish in
        self.duration_sum = 0.0
        self.evaluators: dict[str, _EvaluatorStats] = {}
        self.fields: dict[str, dict[str, _FieldStats]] = {}
        self.confusion: dict[str, dict[str, Counter[str]]] = {}
        self.tags: dict[str, Counter[str]] = {}
        self._slowest: list[tuple[float, str]] = []

    def add(self, result: CaseResult) -> None:
        result = settled(result)  # as the line is written: a score that is not a number counts as an error
        self.total += 1
        verdict = result.verdict
        self.verdicts[verdict] += 1
        self.score_sum += result.score
        duration = result.duration_ms
        self.duration_sum += duration
        slowest = self._slowest
        if len(slowest) < SLOWEST_KEPT or duration >= slowest[0][0]:  # else it cannot be kept: no entry to build
            entry = (duration, result.case_id if result.target is None and result.prompt is None else (
                f"{result.case_id} [{cell_label(result.target, result.prompt)}]"
            ))
            if len(slowest) < SLOWEST_KEPT:
                heapq.heappush(slowest, entry)
            elif entry > slowest[0]:
                heapq.heapreplace(slowest, entry)
        for tag in result.tags:
            self.tags.setdefault(tag, Counter())[verdict] += 1
        for evaluator in result.evaluator_results:
            self._add_evaluator(evaluator)
        self.usage.add(result)
        names = (result.target, result.prompt)
        if self._in_cell or (names == (None, None) and not self.cells):
            self.repeats.add(result)
            return
        self.repeats.add(_InCell(result, f"{result.case_id} [{cell_label(*names)}]"))  # a case runs once per cell
        cell = self.cells.get(names) or self._keep(names)
        if cell is None:
            self._not_kept += 1
            return
        cell.add(result)
        if self._pairs is not None:
            self._pair(result, list(self.cells).index(names))

    def _keep(self, names: tuple[str | None, str | None]) -> Summary | None:
        """A new cell's summary, or None past MAX_CELLS: the one place the caps are kept, for cells
        a suite declares (a run) and cells first seen in results (`report`) alike."""
        if names in self.cells:
            return self.cells[names]
        if len(self.cells) >= MAX_CELLS:
            return None
        cell = self.cells[names] = self._cell()
        if len(self.cells) > MAX_PAIRED_CELLS:
            self._pairs = None
        return cell

    @property
    def cells_not_kept(self) -> int:
        """Results of cells past MAX_CELLS (counted in the totals only)."""
        return self._not_kept

    def ordered_cells(self) -> list[tuple[str | None, str | None]]:
        """The cells as reports show and compare them: those given in order (the suite's), then any
        other by name, so the order never depends on the order results finished in."""
        names = list(self.cells)
        return names[: self._declared] + sorted(names[self._declared :], key=lambda pair: (pair[0] or "", pair[1] or ""))

    def _cell(self) -> Summary:
        cell = Summary(self._repeat)
        cell._in_cell = True
        return cell

    def _pair(self, result: CaseResult, column: int) -> None:
        assert self._pairs is not None
        row = self._pairs.get(result.case_id)
        if row is None:
            row = self._pairs[result.case_id] = array("d", bytes(8 * 3 * len(self.cells)))
        if len(row) < 3 * len(self.cells):
            row.extend([0.0] * (3 * len(self.cells) - len(row)))
        row[3 * column] += 1
        row[3 * column + 1] += result.verdict == "pass"
        row[3 * column + 2] += result.score
        for name, value, criterion in metric_values(result):
            self._pair_metric(result.case_id, column, name, value, criterion)

    def _pair_metric(self, case_id: str, column: int, name: str, value: float, criterion: bool) -> None:
        if name not in self._metrics:
            if len(self._metrics) >= MAX_PAIRED_METRICS:
                self._metrics_not_compared += 1
                return
            self._metrics[name] = criterion
        slot = self._metric_slots.get((name, column))
        if slot is None:
            slot = self._metric_slots[(name, column)] = len(self._metric_slots)
        row = self._metric_rows.get(case_id)
        if row is None:
            row = self._metric_rows[case_id] = array("d")
        if len(row) <= 2 * slot:
            row.extend([0.0] * (2 * slot + 2 - len(row)))
        row[2 * slot] += value
        row[2 * slot + 1] += 1

    def _add_evaluator(self, evaluator: EvaluatorResult) -> None:
        name = evaluator.name
        stats = self.evaluators.get(name)
        if stats is None:
            stats = self.evaluators[name] = _EvaluatorStats(evaluator.type)
        stats.count += 1
        stats.score_sum += evaluator.score
        stats.duration_sum += evaluator.duration_ms
        stats.verdicts[evaluator.verdict] += 1
        if evaluator.criterion and stats.criterion is None:
            stats.criterion = evaluator.criterion
        details = evaluator.details
        if not details:
            return
        if "criteria" in details or "children" in details:
            stats.add_criteria(details)
        rows = details.get("fields")
        if type(rows) is list or isinstance(rows, list):
            self._add_fields(name, rows)
        if "metrics" in details:
            metrics = details["metrics"]
            if isinstance(metrics, dict):
                self._add_confusion(name, metrics)

    def _add_fields(self, evaluator: str, rows: list[Any]) -> None:
        per_path = self.fields.get(evaluator)
        if per_path is None:
            per_path = self.fields[evaluator] = {}
        for row in rows:
            if type(row) is not dict and not isinstance(row, dict):
                continue
            path = row.get("path")
            if type(path) is not str and not isinstance(path, str) or "status" not in row:  # a judge's or a python evaluator's own rows may hold anything
                continue
            status = row["status"]
            stats = per_path.get(path)
            if stats is None:
                stats = per_path[path] = _FieldStats()
            if status == "skipped":
                stats.skipped += 1
                continue
            stats.scored += 1
            if status == "hit":
                stats.hits += 1
            score = row.get("score")
            if type(score) is float and score - score == 0 or _score(score):  # (a finite float without a call)
                stats.score_sum += score

    def _add_confusion(self, evaluator: str, metrics: dict[str, Any]) -> None:
        """Sum `details.metrics` of the shape {attribute: {tp, fp, fn, tn?}} across cases."""
        per_attribute = self.confusion.setdefault(evaluator, {})
        for attribute, counts in metrics.items():
            if not isinstance(counts, dict) or not all(isinstance(counts.get(k), int) for k in ("tp", "fp", "fn")):
                continue
            totals = per_attribute.setdefault(attribute, Counter())
            for key in ("tp", "fp", "fn", "tn"):
                value = counts.get(key)
                if isinstance(value, int) and not isinstance(value, bool):
                    totals[key] += value

    @property
    def passed(self) -> int:
        return self.verdicts["pass"]

    @property
    def pass_rate(self) -> float | None:
        return ratio(self.passed, self.total)

    def slowest(self) -> list[tuple[float, str]]:
        return sorted(self._slowest, reverse=True)

    def dataset_metrics(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for evaluator, per_attribute in self.confusion.items():
            attributes = {attribute: metrics_row(counts) for attribute, counts in per_attribute.items()}
            out[evaluator] = {"attributes": attributes, "macro_f1": macro_f1(attributes)}
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "counts": {
                "total": self.total,
                "passed": self.passed,
                "failed": self.verdicts["fail"],
                "errored": self.verdicts["error"],
            },
            "pass_rate": self.pass_rate,
            "mean_score": ratio(self.score_sum, self.total),
            "mean_case_duration_ms": ratio(self.duration_sum, self.total),
            "evaluators": {
                name: {
                    "type": stats.type,
                    "count": stats.count,
                    "mean_score": ratio(stats.score_sum, stats.count),
                    "verdicts": dict(stats.verdicts),
                    "mean_duration_ms": ratio(stats.duration_sum, stats.count),
                    "criterion": stats.criterion,
                    **stats.criteria_dict(),
                }
                for name, stats in self.evaluators.items()
            },
            "fields": {
                evaluator: {
                    path: {
                        "scored": stats.scored,
                        "hits": stats.hits,
                        "skipped": stats.skipped,
                        "accuracy": ratio(stats.hits, stats.scored),
                        "mean_score": ratio(stats.score_sum, stats.scored),
                    }
                    for path, stats in per_path.items()
                }
                for evaluator, per_path in self.fields.items()
            },
            "tags": {
                tag: {
                    "total": sum(counts.values()), "passed": counts["pass"], "failed": counts["fail"],
                    "errored": counts["error"], "pass_rate": ratio(counts["pass"], sum(counts.values())),
                }
                for tag, counts in sorted(self.tags.items())
            },
            "dataset_metrics": self.dataset_metrics(),
            "slowest_cases": [{"case_id": case_id, "duration_ms": ms} for ms, case_id in self.slowest()],
            **{key: value for key, value in (("usage", self.usage.to_dict()), ("repeats", self.repeats.to_dict())) if value},
            **self._cells_dict(),
        }

    def _cells_dict(self) -> dict[str, Any]:
        """`cells` (each cell's figures and gate) and `comparisons` (paired statistics between cells)
        for a matrix run; nothing for a run of one unnamed cell."""
        if not self.cells:
            return {}
        cells = []
        for target, prompt in self.ordered_cells():
            figures = self.cells[(target, prompt)].to_dict()
            cells.append({
                "target": target, "prompt": prompt, "label": cell_label(target, prompt),
                **{key: figures[key] for key in _CELL_KEYS if key in figures},
                "gate": cell_gate(figures["counts"], self.min_pass_rate),
            })
        found: dict[str, Any] = {"cells": cells, "comparisons": self.comparisons()}
        if self._pairs is None:
            found["comparisons_skipped"] = f"more than {MAX_PAIRED_CELLS} cells: pairs are not compared"
        if self._not_kept:
            found["cells_not_kept"] = self._not_kept
        return found

    def comparisons(self) -> list[dict[str, Any]]:
        """Paired statistics for each pair of cells that differ in one thing (the target, or the
        prompt), over the cases both finished; the first cell of a pair is the baseline `a`."""
        if self._pairs is None:
            return []
        names = self.ordered_cells()
        pairs = _compared_pairs(names)
        if not pairs:
            return []
        from agenteval.statistics import compare_cells, errored_comparison

        repeated = self._repeat > 1 or any(cell.repeats.repeat > 1 for cell in self.cells.values())
        cases = [self._pairs[case_id] for case_id in sorted(self._pairs)]  # by case id: not the order cases finished in
        summaries = [self.cells[cell] for cell in names]
        columns = {cell: index for index, cell in enumerate(self.cells)}  # where each cell's figures are in a case's row
        out = []
        for i, j in pairs:
            i_column, j_column = columns[names[i]], columns[names[j]]
            passed_a: list[float] = []
            passed_b: list[float] = []
            scores_a: list[float] = []
            scores_b: list[float] = []
            a, b = 3 * i_column, 3 * j_column
            for row in cases:
                if len(row) <= max(a, b) or not row[a] or not row[b]:
                    continue
                passed_a.append(row[a + 1] / row[a])
                passed_b.append(row[b + 1] / row[b])
                scores_a.append(row[a + 2] / row[a])
                scores_b.append(row[b + 2] / row[b])
            errored = [cell_label(*names[k]) for k in (i, j) if summaries[k].total and summaries[k].verdicts["error"] == summaries[k].total]
            if errored:
                out.append(errored_comparison(cell_label(*names[i]), cell_label(*names[j]), len(passed_a), errored))
                continue
            found = compare_cells(
                cell_label(*names[i]), cell_label(*names[j]), passed_a, passed_b, scores_a, scores_b, repeated=repeated,
            )
            metrics = self._compared_metrics(i_column, j_column)
            if metrics:
                found["metrics"] = metrics
                if self._metrics_not_compared:
                    found["metrics_not_compared"] = self._metrics_not_compared
            out.append(found)
        return out

    def _compared_metrics(self, column_a: int, column_b: int) -> list[dict[str, Any]]:
        """Each metric both cells have, compared over the cases where both have it (by case id);
        none when the only metric is one evaluator's score (see compared_metric_names)."""
        from agenteval.statistics import compare_metric

        if not compared_metric_names(self._metrics):
            return []
        out = []
        case_ids = sorted(self._metric_rows)
        for name in self._metrics:
            slot_a, slot_b = self._metric_slots.get((name, column_a)), self._metric_slots.get((name, column_b))
            if slot_a is None or slot_b is None:
                continue
            a_values: list[float] = []
            b_values: list[float] = []
            for case_id in case_ids:
                row = self._metric_rows[case_id]
                if len(row) <= 2 * max(slot_a, slot_b) or not row[2 * slot_a + 1] or not row[2 * slot_b + 1]:
                    continue
                a_values.append(row[2 * slot_a] / row[2 * slot_a + 1])
                b_values.append(row[2 * slot_b] / row[2 * slot_b + 1])
            if a_values:
                out.append(compare_metric(name, a_values, b_values))
        return out


"""What every evaluator shares: the common YAML keys, the context it reads, the result it returns."""

from __future__ import annotations

import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from numbers import Real
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import Field, GetJsonSchemaHandler, PrivateAttr, field_validator
from pydantic_core import core_schema

from agenteval.config import ByType, StrictModel
from agenteval.extras import MissingDependency
from agenteval.limits import DEFAULT_LIMITS, Limits
from agenteval.evaluators.transform import TRANSFORM_DESCRIPTION, Transform, TransformFailed, check_expression
from agenteval.evaluators.transform import apply as apply_transform
from agenteval.paths import MISSING, compile_path, resolve

if TYPE_CHECKING:
    from agenteval.endpoints import Endpoints
    from agenteval.process import Processes
    from agenteval.run_context import RunContext

Verdict = Literal["pass", "partial", "fail", "error"]
Scope = Literal["turn", "last", "conversation"]
NO_EXPECTED = "the case has no `expected`"  # the miss of an evaluator that compares with a reference a case lacks


@dataclass(slots=True)
class EvaluatorResult:
    name: str
    type: str
    score: float
    verdict: Verdict
    hits: list[str] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)
    reasoning: str | None = None
    details: dict[str, Any] | None = None
    error: str | None = None
    duration_ms: float = 0.0
    criterion: dict[str, str] | None = None


@dataclass(slots=True)
class EvalContext:
    """One case as an evaluator sees it."""

    case_id: str
    input: Any
    expected: Any
    output: Any
    metadata: dict[str, Any]
    base_dir: Path
    processes: Processes | None = None
    endpoints: Endpoints | None = None  # the run's HTTP client and response cache (model judges)
    usage: dict[str, Any] | None = None  # latency/tokens/cost of getting the answer (agenteval.usage)
    limits: Limits = DEFAULT_LIMITS  # the suite's `limits:` (agenteval.limits): bounds on the work one answer causes
    transcript: str | None = None  # a conversation as text, for an evaluator with `scope: conversation` (model judges show it)
    run: RunContext | None = None  # which run, suite and cell (agenteval.run_context): judges' payloads carry it


class Criterion(StrictModel):
    """What an evaluator judges, in words: a suite of criteria reads like a rubric."""

    name: str = Field(min_length=1, description="A short name for what is judged, e.g. `tone`.")
    description: str | None = Field(None, description="What a good answer does, for people reading the results.")

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name} if self.description is None else {"name": self.name, "description": self.description}


class EvaluatorConfig(StrictModel):
    """Keys every evaluator accepts; subclasses add their own and implement `evaluate`."""

    type: str
    name: str | None = Field(None, description="Unique in the suite; defaults to the type.")
    weight: float = Field(1.0, ge=0, allow_inf_nan=False, description="Weight of this evaluator in the case score.")
    min_score: float | None = Field(
        None, ge=0, le=1, description="Overrides the default verdict rule: pass iff score >= min_score."
    )
    criterion: Criterion | None = Field(None, description="What this evaluator judges; kept in every result it gives.")
    negate: bool = Field(
        False,
        description="Turn the check around: pass becomes fail (score 0) and fail pass (score 1), a partial stays partial "
        "with score 1 - score; the check's own score is kept in details as `score_before_negate`; hits and misses swap "
        "(each prefixed `not: `). An `error` stays an error.",
    )
    transform: Transform | None = Field(None, description=TRANSFORM_DESCRIPTION)
    scope: Scope | None = Field(
        None,
        description="In a conversation, what is judged: `turn` (each reply; one result, the mean), `last` (the last "
        "reply) or `conversation` (the whole of it). Default: `last`; `conversation` for the conversation, latency, "
        "token_usage and cost types. A single answer is judged whole whatever the scope.",
    )

    @field_validator("transform")
    @classmethod
    def _transform_compiles(cls, value: Transform | None) -> Transform | None:
        return check_expression(value) if isinstance(value, str) else value

    type_name: ClassVar[str]
    runs_programs: ClassVar[bool] = False  # evaluate() starts programs named in its config (a cases file needs trust)
    uses_network: ClassVar[bool] = False  # evaluate() sends requests to a server named in its config (a cases file needs trust)
    model_use: ClassVar[str] = "step"  # what `endpoint: NAME` must offer: step (a model judge) or embed (embeddings); checked at load
    pure: ClassVar[bool] = False  # evaluate() reads only the case's values and `limits`, in time linear in their size at most
    replayable: ClassVar[bool] = False  # evaluate() does nothing but read the case and ask models through the run's endpoints

    @property
    def needs_watchdog(self) -> bool:
        """Whether a case's time limit must watch this evaluator (its work is not bounded by `limits:`, or a transform runs first)."""
        return not self.pure or self.transform is not None

    @property
    def label(self) -> str:
        return self.name or self.type

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        raise NotImplementedError

    def close(self) -> None:
        """Release what evaluate() kept between cases (e.g. long-lived judge processes)."""

    def prepare(self) -> None:
        """Import or build what evaluate() would load on first use (numpy, scipy, a lexicon), once,
        before the first case is timed: otherwise the first case's duration includes it and the
        `slowest` line names it. Called when a run starts, never by `validate`; a missing package
        is left for evaluate() to report."""

    def warnings(self) -> list[tuple[tuple[str | int, ...], str]]:
        """Load-time warnings as (key path inside this evaluator, message)."""
        return []

    def verdict(self, score: float, default: Verdict) -> Verdict:
        if self.min_score is not None:
            return "pass" if score >= self.min_score else "fail"
        return default

    def result(self, score: float, default_verdict: Verdict, **fields: Any) -> EvaluatorResult:
        return EvaluatorResult(self.label, self.type, score, self.verdict(score, default_verdict), **fields)

    def error_result(self, message: str, **fields: Any) -> EvaluatorResult:
        return EvaluatorResult(self.label, self.type, 0.0, "error", error=message, **fields)


class _ByType(ByType):
    """An evaluator, by the config class its `type` names (agenteval.evaluators.evaluator_type)."""

    def member(self, data: Any) -> type[EvaluatorConfig] | None:
        from agenteval.evaluators import evaluator_type

        return evaluator_type(data["type"]) if isinstance(data, dict) and isinstance(data.get("type"), str) else None

    def kept(self, value: Any) -> bool:
        return isinstance(value, EvaluatorConfig)

    def names(self) -> list[str]:
        from agenteval.evaluators import type_names

        return type_names()

    def __get_pydantic_json_schema__(self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler) -> Any:
        from agenteval.evaluators import registry

        types = registry()
        expanding = _expanding.get()  # types being written out already: a composite's children refer to them
        choices = {name: _reference(cls) if cls in expanding else cls.__pydantic_core_schema__ for name, cls in types.items()}
        token = _expanding.set(expanding | set(types.values()))
        try:
            return handler(core_schema.tagged_union_schema(choices, discriminator="type"))  # type: ignore[arg-type]
        finally:
            _expanding.reset(token)


_expanding: ContextVar[frozenset[type]] = ContextVar("_expanding", default=frozenset())


def _reference(cls: type[EvaluatorConfig]) -> core_schema.CoreSchema:
    schema: Any = cls.__pydantic_core_schema__
    inner = schema if "ref" in schema else schema["schema"]  # a model, or its definitions (a reference, or a validated model)
    ref = inner["ref"] if "ref" in inner else inner["schema_ref"]
    return core_schema.definition_reference_schema(ref)


EvaluatorSpec = Annotated[EvaluatorConfig, _ByType()]
"""Any evaluator, by its `type`: what suites, cases and composites hold."""


class PathEvaluator(EvaluatorConfig):
    """An evaluator that reads the value at one `path` of both the candidate and the expected answer."""

    path: str = Field("", description="Where the value is, in both candidate and expected; empty: the whole answer.")

    _keys: Any = PrivateAttr(None)

    def model_post_init(self, context: Any) -> None:
        self._keys = compile_path(self.path) if self.path else ()

    def values(self, ctx: EvalContext) -> tuple[Any, Any]:
        """(expected, candidate) at `path`; MISSING where absent (always, for a malformed path)."""
        if self._keys is None:
            return MISSING, MISSING
        return resolve(ctx.expected, self._keys), resolve(ctx.output, self._keys)

    def prepare(self) -> None:
        try:  # the array code every path evaluator pairs and scores with
            import numpy  # noqa: F401

            if getattr(self, "matching", None) == "optimal":
                import scipy.optimize  # noqa: F401
        except ImportError:
            pass

    def warnings(self) -> list[tuple[tuple[str | int, ...], str]]:
        from agenteval.extras import missing_warning

        found: list[tuple[tuple[str | int, ...], str]] = []
        if self._keys is None:
            found.append((("path",), f"malformed path {self.path!r}: it will resolve to missing"))
        if getattr(self, "matching", None) == "optimal" and (message := missing_warning("scipy", "matching: optimal")):
            found.append((("matching",), message))
        return found


def run_evaluator(evaluator: EvaluatorConfig, ctx: EvalContext) -> EvaluatorResult:
    """Evaluators return failures as data; a bug that raises anyway becomes an `error` verdict too,
    and so does a result the results file could not hold (see `result_problem`). `sys.exit()` and
    other BaseExceptions raised by an evaluator's code are that case's error as well, never the
    run's exit code; only Ctrl-C and agenteval's own control flow (a case's deadline) pass through.
    The result is stamped with the evaluator's criterion and its duration."""
    started = time.perf_counter()
    try:
        if evaluator.transform is not None:
            ctx = transformed(evaluator.transform, ctx)
        result = evaluator.evaluate(ctx)
    except TransformFailed as exc:
        result = evaluator.error_result(str(exc))
    except MissingDependency as exc:
        result = evaluator.error_result(str(exc))
    except Exception as exc:  # noqa: BLE001 - the run must go on; the error is kept in the result
        result = evaluator.error_result(f"evaluator failed: {type(exc).__name__}: {exc}")
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt) or type(exc).__module__.startswith("agenteval."):
            raise
        result = evaluator.error_result(f"evaluator failed: {escaped(exc)}")
    foreign = _FOREIGN.get(type(evaluator))
    if foreign is None:
        foreign = _foreign(type(evaluator))
    if foreign or type(result) is not EvaluatorResult or type(result.score) is not float or not 0.0 <= result.score <= 1.0 \
            or result.verdict not in VERDICTS:
        problem = result_problem(result, foreign)
        if problem is not None:
            result = evaluator.error_result(f"{evaluator.label} ({evaluator.type}) returned {problem}")
    if evaluator.negate and result.verdict != "error":
        negated(result)
    if evaluator.criterion is not None:
        result.criterion = evaluator.criterion.as_dict()
    result.duration_ms = (time.perf_counter() - started) * 1000
    return result


VERDICTS = frozenset(("pass", "partial", "fail", "error"))
_OPPOSITE: dict[str, Verdict] = {"pass": "fail", "fail": "pass", "partial": "partial"}


def negated(result: EvaluatorResult) -> None:
    """`negate: true`, applied once here so every evaluator (plugins and `python` too) has it: the
    verdict turns around (a partial stays partial), and what was a hit (the thing was found) is now
    the miss, said as such. A negated check is a yes/no check: its pass scores 1 and its fail 0, so
    a pass reads as a pass wherever scores are (a case's `threshold`, `case_pass: {min_score}`,
    weights; a mirrored 0.9 that failed a 0.95 threshold would pass as 0.1); a partial's score is
    mirrored. The check's own score stays in details (`score_before_negate`)."""
    before = result.score
    result.verdict = _OPPOSITE[result.verdict]
    result.score = 1.0 if result.verdict == "pass" else 0.0 if result.verdict == "fail" else 1.0 - before
    if result.details is None or isinstance(result.details, dict):
        result.details = {**(result.details or {}), "score_before_negate": before}
    result.hits, result.misses = [f"not: {m}" for m in result.misses], [f"not: {h}" for h in result.hits]
_FOREIGN: dict[type, bool] = {}


def transformed(transform: Transform, ctx: EvalContext) -> EvalContext:
    """The context with the answer `transform:` gives (agenteval.evaluators.transform)."""
    from dataclasses import replace

    output = apply_transform(transform, ctx.output, ctx.expected, ctx.input, ctx.metadata, ctx.case_id, ctx.base_dir)
    return replace(ctx, output=output)


def _foreign(cls: type[EvaluatorConfig]) -> bool:
    """Whether results of this type come from code agenteval does not own (a plugin, a `python`
    function, a judge program), so their details and lists get the full check."""
    known = _FOREIGN.get(cls)
    if known is None:
        known = _FOREIGN[cls] = cls.runs_programs or not cls.__module__.startswith("agenteval.")
    return known


def escaped(exc: BaseException) -> str:
    """A BaseException raised by an evaluator's code, in words (`sys.exit(2)` for a SystemExit)."""
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r})"
    return f"{type(exc).__name__}: {exc}"


def result_problem(result: Any, full: bool = True) -> str | None:
    """What makes `result` unfit for the results file, in words, or None. A score that is a number
    of another type (a numpy float) is converted in place. `full` also checks the lists and texts
    and that `details` serializes (a dict holding itself would abort the writer)."""
    if not isinstance(result, EvaluatorResult):
        return f"{'None' if result is None else type(result).__name__}, not an EvaluatorResult"
    score = result.score
    if type(score) is not float:
        if isinstance(score, bool) or not isinstance(score, Real):
            return f"a score of {_shown(score)}; a score is a number in [0, 1]"
        result.score = score = float(score)
    if not 0.0 <= score <= 1.0:
        return f"a score of {score!r}; a score is a finite number in [0, 1]"
    if result.verdict not in VERDICTS:
        return f"the verdict {_shown(result.verdict)}; a verdict is pass, partial, fail or error"
    if not full:
        return None
    for key in ("hits", "misses"):
        items = getattr(result, key)
        if type(items) is not list or not all(type(item) is str for item in items):
            return f"`{key}` that is not a list of strings: {_shown(items)}"
    for key in ("reasoning", "error"):
        text = getattr(result, key)
        if text is not None and type(text) is not str:
            return f"`{key}` that is not a string: {_shown(text)}"
    details = result.details
    if details is not None:
        if type(details) is not dict:
            return f"`details` that is not a dict: {_shown(details)}"
        import orjson

        try:  # the options agenteval.results writes with (its DUMP_OPTIONS; results sit above evaluators)
            orjson.dumps(details, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)
        except (orjson.JSONEncodeError, RecursionError):
            return _unwritable(details)
    return None


def _unwritable(details: dict[str, Any]) -> str | None:
    """Why the results writer's fallback (the standard library's, with str() for other types)
    cannot write `details` either, or None when it can (deep values are cut by the writer)."""
    import json

    try:
        json.dumps(details, default=str, allow_nan=True)
    except RecursionError:
        return None
    except ValueError as exc:  # "Circular reference detected"
        why = "it contains itself" if "ircular" in str(exc) else str(exc)
        return f"details that cannot be serialized ({why})"
    except Exception as exc:  # noqa: BLE001 - a foreign object whose str() fails
        return f"details that cannot be serialized ({type(exc).__name__}: {exc})"
    return None


def _shown(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a foreign object whose repr fails
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."


def graded_verdict(score: float) -> Verdict:
    """The default rule for a bare score: 1 passes, 0 fails, anything between is partial."""
    return "pass" if score >= 1.0 else "fail" if score <= 0.0 else "partial"

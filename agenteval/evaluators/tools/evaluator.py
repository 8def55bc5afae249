"""tool_calls: did the agent call the right tools, with the right arguments, in the right order?

Calls are graded, rules are gates: the score is the share of required expected calls satisfied
(1:1, so a duplicate expected call needs its own actual call), and 0 when a rule is broken (a
forbidden tool, an unexpected call where none is allowed, a tool called too few or too many times).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path as FilePath
from typing import Any, Literal

from pydantic import Field, PrivateAttr, ValidationError, model_validator

from agenteval import patterns
from agenteval.evaluators.base import NO_EXPECTED, EvalContext, EvaluatorConfig, EvaluatorResult, Verdict
from agenteval.evaluators.tools.alignment import align_any_order, align_in_order
from agenteval.evaluators.tools.bfcl import BFCL_IGNORED_CHARACTERS, bfcl_calls
from agenteval.evaluators.tools.calls import CompiledCall, ExpectedCall, ExpectedCalls
from agenteval.evaluators.tools.checks import CheckError, Defaults, Env
from agenteval.evaluators.tools.trajectory import ToolCall, Trajectory, read_trajectory, shape_of
from agenteval.paths import MISSING, Path, compile_path, resolve

Order = Literal["any", "in_order", "exact"]
ExpectedFormat = Literal["calls", "bfcl"]
_ROOTS = ("input", "metadata")  # `path` roots that read the case, not the answer
# One for every tool_calls evaluator: a lock of each would keep a case's own evaluators from being
# pickled (Ray sends cases to its workers), and the import it guards happens once per module.
_FUNCTIONS_LOCK = threading.Lock()
UNNAMED = "(no name)"


class _RunsCode:
    """`runs_programs` per evaluator: false for the type (tool_calls runs nothing of its own), true
    for one whose `calls` hold a `match: python` check, so a cases file needs trust to use it."""

    def __get__(self, instance: ToolCalls | None, owner: type) -> bool:
        return False if instance is None else instance.runs_code()


class ToolCalls(EvaluatorConfig):
    """Checks an agent's tool calls against expected calls and rules. Default verdict: pass when
    every required call is satisfied and nothing is wrong, fail when a rule is broken or nothing
    is satisfied, else partial."""

    type: Literal["tool_calls"]
    path: str = Field(
        "",
        description=(
            "Where the trajectory is: in the answer (empty: `messages`, or the answer itself when it is a list), "
            "or in the case with input.<path> / metadata.<path>."
        ),
    )
    calls: list[ExpectedCall] | None = Field(
        None, description="The expected calls; when absent they are read from the expected answer at `expected_path`."
    )
    expected_path: str = Field(
        "tool_calls", description="Where the expected calls are in the expected answer (when `calls` is absent); empty: the whole answer."
    )
    order: Order = Field(
        "any", description="any; in_order: the expected calls appear as a subsequence; exact: the same calls, in order, nothing else."
    )
    forbidden: list[str] = Field(default_factory=list, description="Tools that must not be called: calling one scores 0.")
    allow_extra: bool | None = Field(
        None, description="Whether calls beyond the expected ones are allowed (default true; false under order: exact)."
    )
    min_calls: dict[str, int] = Field(default_factory=dict, description="Per tool: the fewest calls allowed.")
    max_calls: dict[str, int] = Field(default_factory=dict, description="Per tool: the most calls allowed.")
    expected_format: ExpectedFormat = Field(
        "calls",
        description=(
            "How the expected calls at `expected_path` are written: calls (like `calls:`, or a recorded trajectory) or "
            "bfcl ({function: {parameter: [accepted values]}}; its defaults become BFCL's strict ones)."
        ),
    )
    extra_arguments: bool | None = Field(
        None, description="Whether a call may have arguments the expected call does not list (default true; false with expected_format: bfcl).",
    )
    strict_types: bool | None = Field(
        None,
        description="An integer expectation needs an integer, a float one takes either, a bool is never a number (default false; true with bfcl).",
    )
    case_sensitive: bool | None = Field(
        None, description="Text arguments compared with case as written (default true; fuzzy: false; false with bfcl).",
    )
    normalize_whitespace: bool | None = Field(None, description="Fold runs of whitespace and trim text arguments before comparing (default false).")
    ignore_characters: str | None = Field(
        None, description=f"Characters removed from text arguments before comparing (default none; {BFCL_IGNORED_CHARACTERS!r} with bfcl).",
    )

    type_name = "tool_calls"

    _source: str = PrivateAttr("output")
    _trajectory_keys: Path | None = PrivateAttr(None)
    _expected_keys: Path | None = PrivateAttr(None)
    _plan: list[CompiledCall] | None = PrivateAttr(None)
    _defaults: Defaults = PrivateAttr(default_factory=Defaults)
    _functions: dict[tuple[str, str], Callable[..., Any] | str] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> ToolCalls:
        if self.calls is not None and "expected_path" in self.model_fields_set:
            raise ValueError("give the expected calls in `calls` or at `expected_path`, not both")
        if self.expected_format == "bfcl" and self.calls is not None:
            raise ValueError("expected_format: bfcl reads the expected answer at `expected_path`; it does not apply to `calls`")
        if self.order == "exact" and self.allow_extra:
            raise ValueError("order: exact allows no extra calls; drop `allow_extra: true` or use order: in_order")
        for tool, count in (*self.min_calls.items(), *self.max_calls.items()):
            if count < 0:
                raise ValueError(f"call counts must be >= 0, got {count} for {tool}")
        for tool, low in self.min_calls.items():
            if tool in self.max_calls and self.max_calls[tool] < low:
                raise ValueError(f"{tool}: min_calls {low} is more than max_calls {self.max_calls[tool]}")
        both = sorted({call.name for call in self.calls or ()} & set(self.forbidden))
        if both:
            raise ValueError(f"{', '.join(both)} is both expected and forbidden")
        return self

    def model_post_init(self, context: Any) -> None:
        path = self.path
        root = path.split(".", 1)[0].split("[", 1)[0]
        if root in _ROOTS:
            self._source, path = root, path[len(root):].lstrip(".")
        self._trajectory_keys = compile_path(path) if path else ()
        self._expected_keys = compile_path(self.expected_path) if self.expected_path else ()
        bfcl = self.expected_format == "bfcl"
        self._defaults = Defaults(
            extra_arguments=(not bfcl) if self.extra_arguments is None else self.extra_arguments,
            strict_types=bfcl if self.strict_types is None else self.strict_types,
            case_sensitive=(False if bfcl else None) if self.case_sensitive is None else self.case_sensitive,
            normalize_whitespace=bool(self.normalize_whitespace),
            ignore_characters=(BFCL_IGNORED_CHARACTERS if bfcl else "") if self.ignore_characters is None else self.ignore_characters,
        )
        self._plan = [call.compile(self._defaults) for call in self.calls] if self.calls is not None else None

    runs_programs = _RunsCode()  # type: ignore[assignment]

    def runs_code(self) -> bool:
        """Whether this evaluator's own `calls` hold a `match: python` check (expected calls read from a
        case's expected answer never run code: such a check there is an error)."""
        return any(call.runs_code() for call in self.calls or ())

    def warnings(self) -> list[tuple[tuple[str | int, ...], str]]:
        found: list[tuple[tuple[str | int, ...], str]] = []
        for key, keys in (("path", self._trajectory_keys), ("expected_path", self._expected_keys)):
            if keys is None:
                found.append(((key,), f"malformed path {getattr(self, key)!r}: it will resolve to missing"))
        return found

    @property
    def extra_allowed(self) -> bool:
        if self.allow_extra is not None:
            return self.allow_extra
        return self.order != "exact" and self.expected_format != "bfcl"

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        items = self._trajectory_items(ctx)
        if type(items) is not list:
            where = f"`{self.path}`" if self.path else "`messages` or the answer itself"
            found = "nothing" if items is MISSING else f"a {type(items).__name__}"
            message = f"no tool-call trajectory: found {found} at {where}"
            return self.result(0.0, "fail", misses=[message], reasoning=message)
        if self._plan is None and ctx.expected is None:  # the expected calls would be read from a reference the case lacks
            return self.result(0.0, "fail", misses=[f"no expected calls: {NO_EXPECTED}"], reasoning="nothing to compare with")
        expected = self._plan if self._plan is not None else self._expected_calls(ctx.expected)
        if isinstance(expected, str):
            return self.error_result(expected)
        env = Env(ctx.limits.pattern_seconds, self._function_loader(ctx.base_dir), ctx.limits)
        try:
            return self.score(expected, read_trajectory(items, any(call.result is not None for call in expected)), env)
        except patterns.PatternTimeout as exc:
            return self.error_result(f"{self.type} {self.label!r}: {exc}")
        except CheckError as exc:
            return self.error_result(str(exc))

    def _trajectory_items(self, ctx: EvalContext) -> Any:
        if self._trajectory_keys is None:
            return MISSING
        source = ctx.input if self._source == "input" else ctx.metadata if self._source == "metadata" else ctx.output
        if self._trajectory_keys:
            return resolve(source, self._trajectory_keys)
        if type(source) is dict and self._source == "output" and not self.path:
            return source.get("messages", MISSING)
        return source

    def _function_loader(self, base_dir: FilePath) -> Callable[[str], Callable[..., Any]]:
        """`module:function` imported once per suite folder (next to the suite first, then installed)."""

        def load(reference: str) -> Callable[..., Any]:
            key = (reference, str(base_dir))
            loaded = self._functions.get(key)
            if loaded is None:
                from agenteval.evaluators.python_function import FunctionImportError, import_function

                with _FUNCTIONS_LOCK:
                    try:
                        loaded = self._functions[key] = import_function(reference, base_dir)
                    except FunctionImportError as exc:
                        loaded = self._functions[key] = f"match: python: {exc}"
            if isinstance(loaded, str):
                raise CheckError(loaded)
            return loaded

        return load

    def _expected_calls(self, answer: Any) -> list[CompiledCall] | str:
        value = MISSING if self._expected_keys is None else resolve(answer, self._expected_keys)
        where = f"`{self.expected_path}`" if self.expected_path else "the expected answer"
        if value is MISSING:
            return f"no expected calls: `calls` is not set and the expected answer has nothing at {where}"
        if self.expected_format == "bfcl":
            value = bfcl_calls(value, where)
            if isinstance(value, str):
                return value
        if type(value) is not list:
            return f"the expected calls at {where} are not a list"
        found = expected_calls_from(value, where)
        if isinstance(found, str):
            return found
        if any(call.runs_code() for call in found):
            return (
                f"the expected calls at {where} hold a `match: python` check: an expected answer is data and does not "
                "run code; put that check in the evaluator's `calls`"
            )
        return [call.compile(self._defaults) for call in found]

    def score(self, expected: list[CompiledCall], trajectory: Trajectory, env: Env) -> EvaluatorResult:
        """Align the expected calls with the trajectory and apply the rules."""
        calls = trajectory.calls
        by_name: dict[str, list[int]] = {}
        for call in calls:
            if call.name is not None:
                by_name.setdefault(call.name, []).append(call.index)
        satisfying = [
            [j for j in by_name.get(want.name, ()) if calls[j].arguments is not None and want.satisfied_by(calls[j], env)]
            for want in expected
        ]
        required = [want.required for want in expected]
        if self.order == "any":
            pairs = align_any_order(satisfying, required)
        else:
            pairs = align_in_order(satisfying, required, len(calls))
        attempts = _attempts(expected, pairs, satisfying, calls, by_name, env)
        labels = _labels(expected)
        rows, hits, misses = [], [], []
        for i, want in enumerate(expected):
            row = _row(want, i, pairs, attempts, satisfying, calls, by_name, env)
            rows.append(row)
            if row["status"] == "hit":
                hits.append(labels[i])
            elif want.required:
                misses.append(f"{labels[i]} ({row['reason']})")
        used = set(pairs.values()) | set(attempts.values())
        extra = [call.index for call in calls if call.index not in used]
        violations = self._violations(calls, extra)
        tolerated = self._tolerated(calls, extra)
        reported = {j for i, j in attempts.items() if expected[i].required}  # already named in that call's miss
        misses += violations
        misses += [f"{call.label}: {call.problem}" for call in calls if call.problem and call.index not in reported]
        misses += trajectory.problems
        required_count = sum(required)
        satisfied = sum(1 for i in pairs if required[i])
        score = 0.0 if violations else satisfied / required_count if required_count else 1.0
        verdict: Verdict = (
            "fail" if violations or (score == 0.0 and required_count)
            else "pass" if score >= 1.0 and not misses
            else "partial"
        )
        reasoning = f"{satisfied}/{required_count} expected calls satisfied"
        if violations:
            reasoning += f"; {len(violations)} rule(s) broken"
        details = {
            "calls": rows,
            "called": [call.name for call in calls],
            "extra": extra,
            "violations": violations,
            "metrics": _metrics(expected, pairs, calls, tolerated),
        }
        return self.result(score, verdict, hits=hits, misses=misses, reasoning=reasoning, details=details)

    def _tolerated(self, calls: list[ToolCall], extra: list[int]) -> set[int]:
        """Extra calls that break no rule: allowed, well-formed, not forbidden, within max_calls."""
        if not self.extra_allowed:
            return set()
        counts = Counter(call.name for call in calls) if self.max_calls else Counter()
        return {
            j for j in extra
            if calls[j].problem is None and calls[j].name not in self.forbidden
            and counts[calls[j].name] <= self.max_calls.get(calls[j].name, counts[calls[j].name])
        }

    def _violations(self, calls: list[ToolCall], extra: list[int]) -> list[str]:
        forbidden = set(self.forbidden)
        found = [f"forbidden tool {call.name} called ({call.label})" for call in calls if call.name in forbidden]
        if not self.extra_allowed:
            found += [f"unexpected {calls[j].label}" for j in extra if calls[j].name not in forbidden]
        if self.min_calls or self.max_calls:
            counts = Counter(call.name for call in calls)
            for tool, low in self.min_calls.items():
                if counts[tool] < low:
                    found.append(f"{tool} called {counts[tool]} time(s) (min {low})")
            for tool, high in self.max_calls.items():
                if counts[tool] > high:
                    found.append(f"{tool} called {counts[tool]} time(s) (max {high})")
        return found


def expected_calls_from(value: list[Any], where: str) -> list[ExpectedCall] | str:
    """Expected calls written like `calls:`, or a recorded reference trajectory of chat messages or
    OpenAI/Anthropic call objects (its calls are expected with exact arguments)."""
    try:
        return ExpectedCalls.model_validate({"calls": value}).calls
    except ValidationError as exc:
        recorded = all(type(item) is dict and shape_of(item) not in (None, "plain") for item in value)
        reference = read_trajectory(value)
        if recorded and not reference.problems and all(call.problem is None for call in reference.calls):
            return [
                ExpectedCall.model_validate({
                    "name": call.name,
                    "arguments": {key: {"match": "exact", "value": item} for key, item in (call.arguments or {}).items()},
                })
                for call in reference.calls
            ]
        error = exc.errors(include_url=False)[0]
        at = ".".join(str(part) for part in error["loc"][1:])
        return f"the expected calls at {where} are invalid: {at + ': ' if at else ''}{error['msg']}"


def _labels(expected: list[CompiledCall]) -> list[str]:
    """A call's name, numbered when the name repeats: `lookup_order#2`."""
    totals = Counter(want.name for want in expected)
    seen: Counter[str] = Counter()
    labels = []
    for want in expected:
        seen[want.name] += 1
        labels.append(want.name if totals[want.name] == 1 else f"{want.name}#{seen[want.name]}")
    return labels


def _attempts(
    expected: list[CompiledCall],
    pairs: dict[int, int],
    satisfying: list[list[int]],
    calls: list[ToolCall],
    by_name: dict[str, list[int]],
    env: Env,
) -> dict[int, int]:
    """For each unsatisfied expected call, the closest unused call to the same tool (to say what
    went wrong, and so that a wrong call is not also counted as an extra one)."""
    used = set(pairs.values())
    attempts: dict[int, int] = {}
    for i, want in enumerate(expected):
        if i in pairs:
            continue
        free = [j for j in by_name.get(want.name, ()) if j not in used]
        if not free:
            continue
        in_reach = set(satisfying[i])
        readable = [j for j in free if calls[j].arguments is not None]
        if in_reach & set(free):
            best = min(in_reach & set(free))
        elif readable:
            best = max(readable, key=lambda j: (want.hits(calls[j], env), -j))
        else:
            best = free[0]
        attempts[i] = best
        used.add(best)
    return attempts


def _row(
    want: CompiledCall,
    i: int,
    pairs: dict[int, int],
    attempts: dict[int, int],
    satisfying: list[list[int]],
    calls: list[ToolCall],
    by_name: dict[str, list[int]],
    env: Env,
) -> dict[str, Any]:
    """One expected call in the details: which call satisfied it, or why none did."""
    row: dict[str, Any] = {"name": want.name, "required": want.required, "status": "miss", "index": None}
    j = pairs.get(i, attempts.get(i))
    if j is not None:
        row["index"] = j
    readable = j is not None and calls[j].arguments is not None
    missed = want.missed(calls[j], env) if readable and j is not None else {}
    if missed:
        row["arguments"] = missed
    if i in pairs:
        row["status"] = "hit"
    elif j is None:
        count = len(by_name.get(want.name, ()))
        row["reason"] = "not called" if not count else f"its {count} call(s) matched other expected calls"
    elif calls[j].problem:
        row["reason"] = f"{calls[j].label}: {calls[j].problem}"
    elif j in satisfying[i]:
        row["reason"] = f"out of order ({calls[j].label})"
    else:
        row["reason"] = "; ".join(f"{name}: {reason}" for name, reason in missed.items()) or "wrong arguments"
    return row


def _metrics(
    expected: list[CompiledCall], pairs: dict[int, int], calls: list[ToolCall], tolerated: set[int]
) -> dict[str, dict[str, int]]:
    """Per tool: TP (expected calls satisfied), FN (required ones not), FP (wrong calls: those that
    satisfied nothing, except extra calls that are allowed and break no rule)."""
    metrics: dict[str, dict[str, int]] = {}

    def counts(tool: str) -> dict[str, int]:
        return metrics.setdefault(tool, {"tp": 0, "fp": 0, "fn": 0})

    for i, want in enumerate(expected):
        if i in pairs:
            counts(want.name)["tp"] += 1
        elif want.required:
            counts(want.name)["fn"] += 1
    used = set(pairs.values()) | tolerated
    for call in calls:
        if call.index not in used:
            counts(call.name or UNNAMED)["fp"] += 1
    return metrics

"""tool_calls: did the agent call the right tools, with the right arguments, in the right order?

Calls are graded, rules are gates: the score is the share of required expected calls satisfied
(1:1, so a duplicate expected call needs its own actual call), and 0 when a rule is broken (a
forbidden tool, an unexpected call where none is allowed, a tool called too few or too many times).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from pydantic import Field, PrivateAttr, ValidationError, model_validator

from agenteval.evaluators.base import EvalContext, EvaluatorConfig, EvaluatorResult, Verdict
from agenteval.evaluators.tools.alignment import align_any_order, align_in_order
from agenteval.evaluators.tools.calls import CompiledCall, ExpectedCall, ExpectedCalls
from agenteval.evaluators.tools.trajectory import ToolCall, Trajectory, read_trajectory
from agenteval.paths import MISSING, Path, compile_path, resolve

Order = Literal["any", "in_order", "exact"]
UNNAMED = "(no name)"


class ToolCalls(EvaluatorConfig):
    """Checks an agent's tool calls against expected calls and rules. Default verdict: pass when
    every required call is satisfied and nothing is wrong, fail when a rule is broken or nothing
    is satisfied, else partial."""

    type: Literal["tool_calls"]
    path: str = Field(
        "", description="Where the trajectory is in the candidate; empty: `messages`, or the answer itself when it is a list."
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

    type_name = "tool_calls"

    _trajectory_keys: Path | None = PrivateAttr(None)
    _expected_keys: Path | None = PrivateAttr(None)
    _plan: list[CompiledCall] | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _consistent(self) -> ToolCalls:
        if self.calls is not None and "expected_path" in self.model_fields_set:
            raise ValueError("give the expected calls in `calls` or at `expected_path`, not both")
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
        self._trajectory_keys = compile_path(self.path) if self.path else ()
        self._expected_keys = compile_path(self.expected_path) if self.expected_path else ()
        self._plan = [call.compile() for call in self.calls] if self.calls is not None else None

    def warnings(self) -> list[tuple[tuple[str | int, ...], str]]:
        found: list[tuple[tuple[str | int, ...], str]] = []
        for key, keys in (("path", self._trajectory_keys), ("expected_path", self._expected_keys)):
            if keys is None:
                found.append(((key,), f"malformed path {getattr(self, key)!r}: it will resolve to missing"))
        return found

    @property
    def extra_allowed(self) -> bool:
        return self.order != "exact" if self.allow_extra is None else self.allow_extra

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        items = self._trajectory_items(ctx.output)
        if type(items) is not list:
            where = f"`{self.path}`" if self.path else "`messages` or the answer itself"
            found = "nothing" if items is MISSING else f"a {type(items).__name__}"
            message = f"no tool-call trajectory: found {found} at {where}"
            return self.result(0.0, "fail", misses=[message], reasoning=message)
        expected = self._plan if self._plan is not None else self._expected_calls(ctx.expected)
        if isinstance(expected, str):
            return self.error_result(expected)
        return self.score(expected, read_trajectory(items))

    def _trajectory_items(self, output: Any) -> Any:
        if self._trajectory_keys is None:
            return MISSING
        if self._trajectory_keys:
            return resolve(output, self._trajectory_keys)
        if type(output) is dict:
            return output.get("messages", MISSING)
        return output

    def _expected_calls(self, answer: Any) -> list[CompiledCall] | str:
        value = MISSING if self._expected_keys is None else resolve(answer, self._expected_keys)
        where = f"`{self.expected_path}`" if self.expected_path else "the expected answer"
        if value is MISSING:
            return f"no expected calls: `calls` is not set and the expected answer has nothing at {where}"
        if type(value) is not list:
            return f"the expected calls at {where} are not a list"
        found = expected_calls_from(value, where)
        return found if isinstance(found, str) else [call.compile() for call in found]

    def score(self, expected: list[CompiledCall], trajectory: Trajectory) -> EvaluatorResult:
        """Align the expected calls with the trajectory and apply the rules."""
        calls = trajectory.calls
        by_name: dict[str, list[int]] = {}
        for call in calls:
            if call.name is not None:
                by_name.setdefault(call.name, []).append(call.index)
        satisfying = [
            [j for j in by_name.get(want.name, ()) if calls[j].arguments is not None and want.satisfied_by(calls[j].arguments)]
            for want in expected
        ]
        required = [want.required for want in expected]
        if self.order == "any":
            pairs = align_any_order(satisfying, required)
        else:
            pairs = align_in_order(satisfying, required, len(calls))
        attempts = _attempts(expected, pairs, satisfying, calls, by_name)
        labels = _labels(expected)
        rows, hits, misses = [], [], []
        for i, want in enumerate(expected):
            row = _row(want, i, pairs, attempts, satisfying, calls, by_name)
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
        recorded = all(type(item) is dict and ("role" in item or "function" in item or item.get("type") == "tool_use") for item in value)
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
            best = max(readable, key=lambda j: (want.hits(calls[j].arguments or {}), -j))
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
) -> dict[str, Any]:
    """One expected call in the details: which call satisfied it, or why none did."""
    row: dict[str, Any] = {"name": want.name, "required": want.required, "status": "miss", "index": None}
    j = pairs.get(i, attempts.get(i))
    if j is not None:
        row["index"] = j
    arguments = calls[j].arguments if j is not None else None
    missed = want.missed(arguments) if arguments is not None else {}
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

"""Argument checks: what one argument (or result, or nested value) of an expected call must be.

A check is written in YAML (`ArgumentCheck`) and compiled once into a `Rule`, a small object whose
`test` says whether an actual value hits, and why not. The comparisons are those of the field
matchers (`agenteval.matching`), plus text normalization (`case_sensitive`, `normalize_whitespace`,
`ignore_characters`: what a function-calling leaderboard folds away), strict numeric types,
time-bounded patterns (`agenteval.patterns`), checks inside objects and arrays, and custom Python
functions. Nothing here raises on data; a pattern past its time bound and a custom function
that fails raise `CheckError`/`PatternTimeout`, which the evaluator turns into an `error`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import BeforeValidator, Field, PrivateAttr, model_validator

from agenteval import matching, patterns
from agenteval.evaluators.fields import ValueMatch
from agenteval.evaluators.tools.alignment import align_any_order
from agenteval.limits import DEFAULT_LIMITS, Limits
from agenteval.paths import MISSING

CheckMatch = Literal["exact", "fuzzy", "numeric_tolerance", "date", "regex", "any_of", "object", "array", "python"]
_SHOWN_CHARS = 40
_FUNCTION_PATTERN = r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$"

# Which options belong to which match types (anything else is a config error).
_OWNERS: dict[str, tuple[str, ...]] = {
    "value": ("exact", "fuzzy", "numeric_tolerance", "date", "python"),
    "pattern": ("regex",),
    "values": ("any_of",),
    "properties": ("object",),
    "items": ("array",),
    "each": ("array",),
    "order": ("array",),
    "function": ("python",),
    "algorithm": ("fuzzy",),
    "threshold": ("fuzzy",),
    "tolerance": ("numeric_tolerance",),
    "relative": ("numeric_tolerance",),
    "day_first": ("date",),
    "case_sensitive": ("exact", "any_of", "regex", "fuzzy", "object", "array"),
    "normalize_whitespace": ("exact", "any_of", "regex", "fuzzy", "object", "array"),
    "ignore_characters": ("exact", "any_of", "regex", "fuzzy", "object", "array"),
    "strict_types": ("exact", "any_of", "numeric_tolerance", "object", "array"),
    "extra_arguments": ("object", "array"),
}
_NEEDS = {"regex": "pattern", "any_of": "values", "object": "properties", "python": "function"}


class CheckError(Exception):
    """A check could not be carried out (a custom function failed): the case is an `error`."""


def show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


def is_check(value: Any) -> bool:
    return type(value) is dict and "match" in value


def _holds_check(value: Any) -> bool:
    """Whether a bare value has a check somewhere inside (then it is checked part by part)."""
    if type(value) is dict:
        return any(is_check(item) or _holds_check(item) for item in value.values())
    if type(value) is list:
        return any(is_check(item) or _holds_check(item) for item in value)
    return False


def as_check(value: Any) -> Any:
    """YAML shorthand: an object with a `match` key is a check; an object or list with checks inside
    is checked key by key / element by element; any other value is compared exactly."""
    if is_check(value):
        return value
    if _holds_check(value):
        if type(value) is dict:
            return {"match": "object", "properties": value}
        return {"match": "array", "items": value, "order": "in_order"}
    return {"match": "exact", "value": value}


class ArgumentCheck(ValueMatch):
    """One argument of an expected call (or a key of an object, an element of an array, a tool result)."""

    match: CheckMatch = "exact"  # type: ignore[assignment]
    value: Any = Field(None, description="The expected value (exact, fuzzy, numeric_tolerance, date; python: passed to the function).")
    pattern: str | None = Field(None, description="regex: the whole value must match this pattern (time-bounded: `limits.pattern_seconds`).")
    values: list[Any] | None = Field(
        None, min_length=1,
        description="any_of: the acceptable values (a value with a `match` key is a check); an empty string allows leaving the argument out.",
    )
    properties: dict[str, Annotated[ArgumentCheck, BeforeValidator(as_check, json_schema_input_type=Any)]] | None = Field(
        None, description="object: per key, a bare value (exact) or a check.",
    )
    items: list[Annotated[ArgumentCheck, BeforeValidator(as_check, json_schema_input_type=Any)]] | None = Field(
        None, description="array: one check per element (the array has exactly these many elements).",
    )
    each: Annotated[ArgumentCheck, BeforeValidator(as_check, json_schema_input_type=Any)] | None = Field(
        None, description="array: a check every element must pass.",
    )
    order: Literal["any", "in_order"] | None = Field(None, description="array with `items`: in_order (default) or any (1:1).")
    function: str | None = Field(
        None, pattern=_FUNCTION_PATTERN,
        description="python: `module:function` called as function(actual, value); returns true, false or a reason for a miss.",
    )
    case_sensitive: bool | None = Field(None, description="Compare text case as written (default true; fuzzy: false).")
    normalize_whitespace: bool | None = Field(None, description="Fold runs of whitespace to one space and trim before comparing text.")
    ignore_characters: str | None = Field(None, description="Characters removed from both texts before comparing (BFCL: ' ,./-_*^').")
    strict_types: bool | None = Field(None, description="An integer expectation needs an integer; a float one takes either; a bool is never a number.")
    extra_arguments: bool | None = Field(None, description="object: whether keys beyond `properties` are allowed (default: the evaluator's).")
    required: bool = Field(
        True, description="false: the argument may be left out (or null); when given, it must match.",
    )

    _alternatives: list[ArgumentCheck | None] = PrivateAttr(default_factory=list)

    @model_validator(mode="after")
    def _check_options(self) -> ArgumentCheck:  # replaces ValueMatch's: more types, more options
        given = self.model_fields_set
        misplaced = [key for key, owners in _OWNERS.items() if key in given and self.match not in owners]
        if misplaced:
            key = misplaced[0]
            owner = _OWNERS[key]
            if len(owner) == 1:
                raise ValueError(f"`{key}` (match: {' | '.join(owner)}) does not apply to match: {self.match}")
            raise ValueError(f"`{key}` does not apply to match: {self.match}")
        needed = _NEEDS.get(self.match)
        if needed and getattr(self, needed) is None:
            raise ValueError(f"match: {self.match} needs `{needed}`")
        if self.match in ("exact", "fuzzy", "numeric_tolerance", "date") and "value" not in given:
            raise ValueError(f"match: {self.match} needs `value`")
        if self.match == "array" and (self.items is None) == (self.each is None):
            raise ValueError("match: array needs `items` (one check per element) or `each` (a check for every element)")
        if self.order is not None and self.items is None:
            raise ValueError("`order` applies to `items`")
        if self.pattern is not None:
            try:
                patterns.compile(self.pattern)
            except patterns.PatternError as exc:
                raise ValueError(f"invalid regex {self.pattern!r}: {exc}") from None
        if self.values is not None:
            self._alternatives = [ArgumentCheck.model_validate(value) if is_check(value) else None for value in self.values]
        return self

    def compile(self, defaults: Defaults) -> Rule:
        """The check as a rule with its comparison and options bound, for the per-pair loop."""
        text = defaults.text(self.case_sensitive, self.normalize_whitespace, self.ignore_characters)
        strict = defaults.strict_types if self.strict_types is None else self.strict_types
        if self.match != "object" and self.extra_arguments is not None:
            defaults = defaults.with_extra(self.extra_arguments)
        if self.match == "exact":
            rule: Rule = ExactRule(self.value, text, strict)
        elif self.match == "any_of":
            assert self.values is not None
            nested = [check.compile(defaults) for check in self._alternatives if check is not None]
            plain = [value for value, check in zip(self.values, self._alternatives) if check is None]
            shown = [value if check is None else check.value if check.match == "exact" else f"<{check.match}>"
                     for value, check in zip(self.values, self._alternatives)]
            rule = AnyOfRule(plain, nested, text, strict, show(shown))
        elif self.match == "regex":  # a pattern sees the value as written, unless its own options say otherwise
            assert self.pattern is not None
            rule = RegexRule(self.pattern, Defaults().text(self.case_sensitive, self.normalize_whitespace, self.ignore_characters))
        elif self.match == "object":
            assert self.properties is not None
            inner = defaults.with_text(self.case_sensitive, self.normalize_whitespace, self.ignore_characters, self.strict_types)
            extra = defaults.extra_arguments if self.extra_arguments is None else self.extra_arguments
            rule = ObjectRule(tuple((key, check.compile(inner)) for key, check in self.properties.items()), extra)
        elif self.match == "array":
            inner = defaults.with_text(self.case_sensitive, self.normalize_whitespace, self.ignore_characters, self.strict_types)
            items = tuple(check.compile(inner) for check in self.items) if self.items is not None else None
            each = self.each.compile(inner) if self.each is not None else None
            rule = ArrayRule(items, each, self.order or "in_order")
        elif self.match == "python":
            assert self.function is not None
            rule = PythonRule(self.function, self.value)
        else:
            case_sensitive = self.case_sensitive if self.case_sensitive is not None else defaults.case_sensitive
            compare = self.model_copy(update={"case_sensitive": case_sensitive}).comparison()
            rule = CompareRule(self.value, compare, text if self.match == "fuzzy" else None, strict)
        rule.match = self.match
        rule.required = self.required
        return rule

    def runs_code(self) -> bool:
        """Whether this check, or one inside it, calls a Python function."""
        if self.match == "python":
            return True
        inner: list[ArgumentCheck] = [check for check in self._alternatives if check is not None]
        inner += list((self.properties or {}).values()) + list(self.items or ()) + ([self.each] if self.each else [])
        return any(check.runs_code() for check in inner)


class Text:
    """How text is compared: folded case, folded whitespace, characters that do not count."""

    __slots__ = ("case_sensitive", "normalize_whitespace", "ignore_characters", "_table")

    def __init__(self, case_sensitive: bool = True, normalize_whitespace: bool = False, ignore_characters: str = "") -> None:
        self.case_sensitive, self.normalize_whitespace, self.ignore_characters = case_sensitive, normalize_whitespace, ignore_characters
        self._table = {ord(char): None for char in ignore_characters}

    @property
    def plain(self) -> bool:
        return self.case_sensitive and not self.normalize_whitespace and not self.ignore_characters

    def apply(self, text: str) -> str:
        if self._table:
            text = text.translate(self._table)
        if self.normalize_whitespace:
            text = " ".join(text.split())
        if not self.case_sensitive:
            text = text.lower()
        return text


@dataclass(frozen=True, slots=True)
class Defaults:
    """The evaluator's defaults for the options a check leaves unset."""

    extra_arguments: bool = True
    strict_types: bool = False
    case_sensitive: bool | None = None
    normalize_whitespace: bool = False
    ignore_characters: str = ""

    def text(self, case_sensitive: bool | None, normalize_whitespace: bool | None, ignore_characters: str | None) -> Text | None:
        folded = Text(
            (self.case_sensitive if self.case_sensitive is not None else True) if case_sensitive is None else case_sensitive,
            self.normalize_whitespace if normalize_whitespace is None else normalize_whitespace,
            self.ignore_characters if ignore_characters is None else ignore_characters,
        )
        return None if folded.plain else folded

    def with_extra(self, extra_arguments: bool) -> Defaults:
        return Defaults(extra_arguments, self.strict_types, self.case_sensitive, self.normalize_whitespace, self.ignore_characters)

    def with_text(self, case_sensitive: bool | None, whitespace: bool | None, ignore: str | None, strict: bool | None) -> Defaults:
        """Options given on an object or array check apply to the checks inside it."""
        return Defaults(
            self.extra_arguments,
            self.strict_types if strict is None else strict,
            self.case_sensitive if case_sensitive is None else case_sensitive,
            self.normalize_whitespace if whitespace is None else whitespace,
            self.ignore_characters if ignore is None else ignore,
        )


class Env(NamedTuple):
    """What a check needs from the case: its limits and the custom-function loader."""

    pattern_seconds: float
    load_function: Callable[[str], Callable[..., Any]]
    limits: Limits = DEFAULT_LIMITS


# A rule's test returns None for a hit, else why it missed ("" when not asked to explain).
Outcome = str | None


class Rule:
    """A compiled check."""

    match: str
    required: bool
    expects_null: bool = False  # an expected null: absent or null hits
    blank_ok: bool = False  # any_of with "": absent hits

    def test(self, got: Any, env: Env, explain: bool) -> Outcome:
        raise NotImplementedError

    def status(self, got: Any, env: Env, explain: bool) -> tuple[str, Outcome]:
        """('hit' | 'miss' | 'skipped', why) for one value that may be absent (MISSING) or null."""
        if got is MISSING or got is None:
            if self.expects_null or (got is MISSING and self.blank_ok):
                return "hit", None
            if not self.required:
                return "skipped", None  # optional: left out (null counts as left out)
            if got is MISSING:
                return "miss", "missing"
        reason = self.test(got, env, explain)
        return ("hit", None) if reason is None else ("miss", reason)


def _type_name(value: Any) -> str:
    if type(value) is bool:
        return "a boolean"
    if type(value) is int:
        return "an integer"
    if type(value) is float:
        return "a float"
    if type(value) is str:
        return "a string"
    if type(value) is list:
        return "an array"
    if type(value) is dict:
        return "an object"
    return "null" if value is None else type(value).__name__


def number_type_problem(got: Any, want: Any) -> str | None:
    """Strict types: an integer expectation needs an integer; a float one takes an integer or a
    float; a boolean is never a number (and no number is a boolean)."""
    if type(want) is int and type(got) is not int:
        return f"expected an integer, got {_type_name(got)}"
    if type(want) is float and type(got) not in (int, float):
        return f"expected a number, got {_type_name(got)}"
    return None


def same(got: Any, want: Any, text: Text | None, strict: bool) -> str | None:
    """None when equal under the text and type options, else the type problem or "" (they differ)."""
    kind = type(want)
    if kind is str:
        if type(got) is not str:
            return "type mismatch"
        if text is None:
            return None if got == want else ""
        return None if text.apply(got) == text.apply(want) else ""
    if kind is dict:
        if type(got) is not dict:
            return "type mismatch"
        if got.keys() != want.keys():
            return ""
        for key, item in want.items():
            problem = same(got[key], item, text, strict)
            if problem is not None:
                return problem
        return None
    if kind is list:
        if type(got) is not list:
            return "type mismatch"
        if len(got) != len(want):
            return ""
        for left, right in zip(got, want):
            problem = same(left, right, text, strict)
            if problem is not None:
                return problem
        return None
    if strict and kind in (int, float):
        problem = number_type_problem(got, want)
        if problem is not None:
            return problem
    outcome = matching.exact(got, want)
    return None if outcome.hit else (outcome.reason or "")


class ExactRule(Rule):

    def __init__(self, value: Any, text: Text | None, strict: bool) -> None:
        self.value, self.text, self.strict = value, text, strict
        self.expects_null = value is None
        self._fast = type(value) in (str, bool, int, float) and (text is None or type(value) is not str)
        self._folded = text.apply(value) if text is not None and type(value) is str else None

    def test(self, got: Any, env: Env, explain: bool) -> Outcome:
        want = self.value
        if type(got) is type(want):  # the common cases, quickly
            if self._fast:
                if got == want:
                    return None
                return f"expected {show(want)}, got {show(got)}" if explain else ""
            if self._folded is not None:
                if self.text.apply(got) == self._folded:  # type: ignore[union-attr]
                    return None
                return f"expected {show(want)}, got {show(got)}" if explain else ""
        if want is None:
            return f"expected null, got {show(got)}" if explain else ""
        if got is None:
            return "null value"
        if self.text is None and not self.strict:
            outcome = matching.exact(got, want)  # strict all the way down (F8)
            problem = None if outcome.hit else (outcome.reason or "")
        else:
            problem = same(got, want, self.text, self.strict)
        if problem is None:
            return None
        if not explain:
            return ""
        why = f"expected {show(want)}, got {show(got)}"
        return f"{problem}: {why}" if problem else why


def _key(value: Any, text: Text | None, strict: bool) -> tuple[Any, ...] | None:
    """A set key under which two scalars are equal exactly when `same` says so; None for others."""
    kind = type(value)
    if kind is str:
        return ("s", text.apply(value) if text is not None else value)
    if kind is bool:
        return ("b", value)
    if kind is int:
        return ("i", value) if strict else ("n", value)
    if kind is float:
        return ("n", value)
    return None


class AnyOfRule(Rule):

    def __init__(self, values: list[Any], nested: list[Rule], text: Text | None, strict: bool, shown: str) -> None:
        self.text, self.strict, self.nested, self.shown = text, strict, tuple(nested), shown
        keys, objects = set(), []
        for value in values:
            key = _key(value, text, strict)
            if key is not None:
                keys.add(key)
            elif value is not None:
                objects.append(ExactRule(value, text, strict))
        self.accepted = frozenset(keys)
        self.objects = tuple(objects)
        self.blank_ok = any(type(value) is str and value == "" for value in values) or any(rule.blank_ok for rule in nested)
        self.expects_null = any(value is None for value in values)

    def test(self, got: Any, env: Env, explain: bool) -> Outcome:
        key = _key(got, self.text, self.strict)
        if key is not None:
            if key in self.accepted or (type(got) is int and self.strict and ("n", got) in self.accepted):
                return None
        elif any(rule.test(got, env, False) is None for rule in self.objects):
            return None
        if any(rule.status(got, env, False)[0] == "hit" for rule in self.nested):
            return None
        if not explain:
            return ""
        if self.nested and not self.accepted and not self.objects:  # alternatives that are checks: why each missed
            reasons = [f"alternative {i + 1}: {rule.status(got, env, True)[1] or 'differs'}" for i, rule in enumerate(self.nested[:3])]
            more = f" (and {len(self.nested) - 3} more)" if len(self.nested) > 3 else ""
            return "no alternative matches: " + " | ".join(reasons) + more
        return f"{show(got)} is not one of {self.shown}"


class RegexRule(Rule):

    def __init__(self, pattern: str, text: Text | None) -> None:
        self.pattern, self.text = pattern, text
        flags = patterns.IGNORECASE if text is not None and not text.case_sensitive else 0
        self.compiled = patterns.compile(pattern, flags)

    def test(self, got: Any, env: Env, explain: bool) -> Outcome:
        written = str(got) if type(got) in (int, float) else got  # numbers match as written
        if type(written) is not str:
            return "type mismatch"
        if self.text is not None:
            written = Text(True, self.text.normalize_whitespace, self.text.ignore_characters).apply(written)
        if patterns.fullmatch(self.compiled, written, env.pattern_seconds):  # PatternTimeout: the case's error
            return None
        return f"{show(got)} does not match {self.pattern!r}" if explain else ""


class CompareRule(Rule):
    """fuzzy, numeric_tolerance and date, through the field matchers."""


    def __init__(self, value: Any, compare: Callable[[Any, Any], matching.Match], text: Text | None, strict: bool) -> None:
        self.value, self.compare, self.text, self.strict = value, compare, text, strict
        self.expects_null = value is None

    def test(self, got: Any, env: Env, explain: bool) -> Outcome:
        want = self.value
        if want is None:
            return f"expected null, got {show(got)}" if explain else ""
        if got is None:
            return "null value"
        if self.strict and type(want) in (int, float) and (problem := number_type_problem(got, want)):
            return f"{problem}: expected {show(want)}, got {show(got)}" if explain else ""
        if self.text is not None and type(got) is str and type(want) is str:
            got, want = self.text.apply(got), self.text.apply(want)
        outcome = self.compare(got, want)
        if outcome.hit:
            return None
        if not explain:
            return ""
        why = f"expected {show(self.value)}, got {show(got)}"
        if outcome.reason:
            return f"{outcome.reason}: {why}"
        if outcome.similarity is not None:
            why += f" (similarity {outcome.similarity:.2f})"
        return why


class ObjectRule(Rule):

    def __init__(self, properties: tuple[tuple[str, Rule], ...], extra_allowed: bool) -> None:
        self.properties, self.extra_allowed = properties, extra_allowed

    def test(self, got: Any, env: Env, explain: bool) -> Outcome:
        if type(got) is not dict:
            return f"expected an object, got {_type_name(got)}" if explain else ""
        reasons = []
        for key, rule in self.properties:
            status, reason = rule.status(got.get(key, MISSING), env, explain)
            if status == "miss":
                if not explain:
                    return ""
                reasons.append(f"{key}: {reason or 'differs'}")
        if not self.extra_allowed:
            known = {key for key, _ in self.properties}
            for key in got:
                if key not in known:
                    if not explain:
                        return ""
                    reasons.append(f"unexpected key {key!r}")
        return "; ".join(reasons) if reasons else None


class ArrayRule(Rule):

    def __init__(self, items: tuple[Rule, ...] | None, each: Rule | None, order: str) -> None:
        self.items, self.each, self.order = items, each, order

    def test(self, got: Any, env: Env, explain: bool) -> Outcome:
        if type(got) is not list:
            return f"expected an array, got {_type_name(got)}" if explain else ""
        if self.each is not None:
            for index, element in enumerate(got):
                status, reason = self.each.status(element, env, explain)
                if status == "miss":
                    return f"[{index}]: {reason or 'differs'}" if explain else ""
            return None
        items = self.items or ()
        if len(got) != len(items):
            return f"{len(got)} element(s), expected {len(items)}" if explain else ""
        if self.order == "in_order":
            for index, (element, rule) in enumerate(zip(got, items)):
                status, reason = rule.status(element, env, explain)
                if status == "miss":
                    return f"[{index}]: {reason or 'differs'}" if explain else ""
            return None
        if len(items) * len(got) > env.limits.pairs:
            raise CheckError(env.limits.message("pairs", f"an array check in any order would weigh {len(items) * len(got):,} element pairs"))
        satisfying = [[j for j, element in enumerate(got) if rule.status(element, env, False)[0] != "miss"] for rule in items]
        pairs = align_any_order(satisfying, [True] * len(items))
        if len(pairs) == len(items):
            return None
        unmatched = [i for i in range(len(items)) if i not in pairs]
        return f"no element matches item(s) {', '.join(str(i) for i in unmatched)} (any order)" if explain else ""


class PythonRule(Rule):

    def __init__(self, function: str, value: Any) -> None:
        self.function, self.value = function, value

    def test(self, got: Any, env: Env, explain: bool) -> Outcome:
        function = env.load_function(self.function)
        try:
            verdict = function(got, self.value)
        except Exception as exc:  # noqa: BLE001 - the user's bug becomes the case's error, the run goes on
            raise CheckError(f"{self.function} raised {type(exc).__name__}: {exc}") from None
        if verdict is True:
            return None
        if verdict is False:
            return f"{show(got)} rejected by {self.function}" if explain else ""
        if type(verdict) is str and verdict:
            return verdict
        raise CheckError(f"{self.function} returned {show(verdict)}; expected true, false or a reason (a non-empty string)")

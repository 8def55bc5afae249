"""`{{ input.question }}` in messages and prompts: jinja2 in a sandbox, strict about missing names.

Templates come from suite files, which may come from anyone: the sandbox keeps them from reaching
Python internals. A variable the case does not have is an error that names it
(`input.question is undefined`), never a silently empty prompt.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Annotated, Any, Literal

import orjson
from pydantic import AfterValidator, ConfigDict
from typing_extensions import Required, TypedDict

from agenteval.endpoints.sandbox import MAX_LENGTH, TooLarge, bounded_sandbox, refuse_huge_constants


class TemplateError(Exception):
    """A template that does not compile, or a variable the case does not have."""


@lru_cache(maxsize=1)
def _environment() -> Any:
    from jinja2 import StrictUndefined, Undefined

    def fail(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise _Missing(self._undefined_obj, self._undefined_name)

    class NamedUndefined(StrictUndefined):
        _fail_with_undefined_error = fail

    # jinja binds its failing dunders (__str__, __iter__, ...) to the base method: rebind them all
    for klass in StrictUndefined.__mro__:
        for name, attr in vars(klass).items():
            if attr is Undefined._fail_with_undefined_error:
                setattr(NamedUndefined, name, fail)

    env = bounded_sandbox(NamedUndefined)
    env.policies["json.dumps_function"] = lambda value, **_: orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    return env


class _Missing(Exception):
    def __init__(self, owner: Any, name: str | None) -> None:
        super().__init__(name)
        self.owner = owner
        self.name = name


@lru_cache(maxsize=256)
def compile_template(source: str) -> Any:
    """A compiled template (kept: a suite renders the same few per case); TemplateError on bad syntax,
    or on constant arithmetic too large to build (refused before jinja2 would fold it while compiling)."""
    from jinja2 import TemplateSyntaxError

    try:
        refuse_huge_constants(source)
        return _environment().from_string(source)
    except TemplateSyntaxError as exc:
        raise TemplateError(f"template syntax error on line {exc.lineno}: {exc.message}") from None
    except TooLarge as exc:
        raise TemplateError(f"template too large to build: {exc}") from None
    except RecursionError:
        raise TemplateError("template nested too deeply") from None


def check_template(source: str) -> str:
    """For validators: the source unchanged, or ValueError saying what is wrong with it. A template of
    text and `{{ a.b }}` lookups compiles (render_text fills it in without jinja2, which a run whose
    templates are all such does not import)."""
    if "{" in source and _lookups(source) is None:
        try:
            compile_template(source)
        except TemplateError as exc:
            raise ValueError(str(exc)) from None
    return source


def render(template: Any, variables: dict[str, Any]) -> str:
    """The rendered text, at most MAX_LENGTH characters; TemplateError naming a variable the case
    does not have, or the operation that would have built too large a value."""
    from jinja2 import TemplateError as JinjaError

    try:
        pieces, length = [], 0
        for piece in template.generate(variables):
            length += len(piece)
            if length > MAX_LENGTH:
                raise TooLarge(f"the rendered text is longer than {MAX_LENGTH:,} characters")
            pieces.append(piece)
        return "".join(pieces)
    except _Missing as missing:
        raise TemplateError(f"template variable {_name_of(missing, variables)} is undefined") from None
    except TooLarge as exc:
        raise TemplateError(f"template too large to build: {exc}") from None
    except JinjaError as exc:
        raise TemplateError(f"template error: {exc}") from None


def render_text(source: str, variables: dict[str, Any]) -> str:
    """`render(compile_template(source), variables)`; a template of plain text and `{{ a.b }}` lookups
    of texts and numbers in dicts (the usual message) is filled in directly, to the same text."""
    parts = _lookups(source)
    if parts is not None:
        text = _filled(parts, variables)
        if text is not None:
            return text
    return render(compile_template(source), variables)


_LOOKUP = re.compile(r"\{\{ *([A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z][A-Za-z0-9_]*)*) *\}\}")
_OPENERS = re.compile(r"(?=\{[{%#])")
_NOT_NAMES = frozenset(("true", "false", "none", "True", "False", "None", "and", "or", "not", "in", "is", "if", "else"))


@lru_cache(maxsize=256)
def _lookups(source: str) -> tuple[str | tuple[str, ...], ...] | None:
    """`source` as its literal texts and the dotted names of its `{{ a.b }}` lookups, when that is all
    jinja would find in it (every `{{`, `{%` or `{#` opens one of them, no carriage return for jinja
    to turn into a newline, no keyword, no name a dict has as an attribute); else None."""
    found = list(_LOOKUP.finditer(source))
    if "\r" in source or [match.start() for match in found] != [opener.start() for opener in _OPENERS.finditer(source)]:
        return None
    parts: list[str | tuple[str, ...]] = []
    position = 0
    for match in found:
        names = tuple(match.group(1).split("."))
        if any(name in _NOT_NAMES or hasattr(dict, name) for name in names):
            return None
        parts.extend((source[position:match.start()], names))
        position = match.end()
    parts.append(source[position:])
    return tuple(part for part in parts if part != "")


def _filled(parts: tuple[str | tuple[str, ...], ...], variables: dict[str, Any]) -> str | None:
    """The text, or None when a lookup is anything but a text, a number or a boolean found in dicts
    (a missing name, a list, None...: jinja renders it, or names what is missing)."""
    pieces = []
    for part in parts:
        if type(part) is str:
            pieces.append(part)
            continue
        value: Any = variables
        for name in part:
            if type(value) is not dict or name not in value:
                return None
            value = value[name]
        kind = type(value)
        if kind is str:
            pieces.append(value)
        elif kind is int or kind is float or kind is bool:
            pieces.append(str(value))
        else:
            return None
    text = "".join(pieces)
    return text if len(text) <= MAX_LENGTH else None


def render_strings(value: Any, variables: dict[str, Any], where: str = "") -> Any:
    """Every string inside `value` (nested lists and mappings) rendered as a template."""
    if isinstance(value, str):
        if "{" not in value:
            return value
        try:
            return render_text(value, variables)
        except TemplateError as exc:
            raise TemplateError(f"{where}: {exc}" if where else str(exc)) from None
    if isinstance(value, list):
        return [render_strings(item, variables, f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, dict):
        return {key: render_strings(item, variables, f"{where}.{key}" if where else str(key)) for key, item in value.items()}
    return value


def _compiles(value: Any) -> Any:
    return check_strings(value)


class ChatMessage(TypedDict, total=False):
    """One chat message: its role, and templates in any string of it (other keys are sent as written)."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]
    role: Required[Literal["system", "developer", "user", "assistant", "tool"]]  # developer: OpenAI's newer name for system
    content: Annotated[Any, AfterValidator(_compiles)]


# A chat message in a suite (`messages:`, `prompts:`; a prompt may also be one user message's text): a wrong role or a template that does not
# compile is reported at its own key (`prompts.r[0].content`), with its line.
TemplatedMessage = Annotated[ChatMessage, AfterValidator(_compiles)]
Prompt = Annotated[str | list[TemplatedMessage], AfterValidator(lambda value: check_template(value) if isinstance(value, str) else value)]


def check_strings(value: Any) -> Any:
    """For validators: every string template inside `value` compiles."""
    for text in _strings(value):
        check_template(text)
    return value


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    return []


def _name_of(missing: _Missing, variables: dict[str, Any]) -> str:
    """The dotted name of the missing variable, found by locating its owner among the variables."""
    if missing.owner is None or missing.owner.__class__.__name__ == "NamedUndefined":
        return str(missing.name)
    owner_path = _find(missing.owner, variables, "", depth=6)
    if owner_path is None:
        return str(missing.name)
    return f"{owner_path}.{missing.name}" if isinstance(missing.name, str) else f"{owner_path}[{missing.name!r}]"


def _find(target: Any, value: Any, path: str, depth: int) -> str | None:
    if value is target and path:
        return path
    if depth == 0:
        return None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        child = f"{path}.{key}" if isinstance(key, str) and path else str(key) if not path else f"{path}[{key}]"
        found = _find(target, item, child, depth - 1)
        if found is not None:
            return found
    return None

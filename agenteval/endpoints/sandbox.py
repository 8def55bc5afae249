"""The jinja2 sandbox every template and `transform:` from a suite or a cases file runs in, with
every value it builds bounded.

jinja2 folds constant expressions while compiling (`{{ 7**300000000 }}` is computed by
`from_string`, before anything renders), and at render time `'a' * 10**9` or
`'x'|center(10**9)` allocate gigabytes in one step. Here the operators that can grow a value
(`*`, `**`, `%`, `+`, `~`) are never folded and are checked before they compute, the methods
and filters that pad, repeat or fill are checked against their arguments first, and
`refuse_huge_constants` refuses at load the constant arithmetic that could never render.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any

MAX_LENGTH = 16 * 1024 * 1024  # characters of a string, items of a list: as large as the largest answer a target may give
MAX_INT_BITS = 65_536  # about 20,000 decimal digits; Python prints at most 4,300


class TooLarge(Exception):
    """An operation in a template would build a value past the bounds."""


_GROWING = frozenset({"*", "**", "%", "+"})
_PADDING = re.compile(r"%[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")
_DIGITS = re.compile(r"\d+")


def _size(value: Any) -> int:
    return len(value) if isinstance(value, (str, list, tuple)) else 0


def _bits(value: Any) -> int:
    return abs(value).bit_length() if isinstance(value, int) and not isinstance(value, bool) else 0


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_binop(operator: str, left: Any, right: Any) -> None:
    """Raise TooLarge when `left operator right` would build a value past the bounds (before computing it)."""
    if operator == "**" and _whole(left) and _whole(right) and right > 0 and abs(left) > 1:
        if right * math.log2(abs(left)) > MAX_INT_BITS:
            raise TooLarge(f"{_short(left)} ** {_short(right)} has more than {MAX_INT_BITS:,} bits")
    elif operator == "*":
        if _whole(left) and _whole(right):
            if _bits(left) + _bits(right) > MAX_INT_BITS:
                raise TooLarge(f"a product of more than {MAX_INT_BITS:,} bits")
        elif _whole(left) or _whole(right):
            count, sequence = (left, right) if _whole(left) else (right, left)
            if _size(sequence) * max(count, 0) > MAX_LENGTH:
                raise TooLarge(f"repeating {_size(sequence):,} items {_short(count)} times makes more than {MAX_LENGTH:,}")
    elif operator == "+" and isinstance(left, (str, list, tuple)):
        if _size(left) + _size(right) > MAX_LENGTH:
            raise TooLarge(f"joining makes more than {MAX_LENGTH:,} characters or items")
    elif operator == "%" and isinstance(left, str):
        check_percent_format(left, right)


def check_percent_format(template: str, values: Any) -> None:
    """`'%09d' % x`: widths and precisions (written, or `*` taken from the values) within MAX_LENGTH."""
    starred = False
    for match in _PADDING.finditer(template):
        for part in match.groups():
            if part == "*":
                starred = True
            elif part and int(part) > MAX_LENGTH:
                raise TooLarge(f"a format width of {_short(int(part))}")
    if starred:
        _no_huge_numbers(values)


def check_str_format(template: str, args: Any, kwargs: Any) -> None:
    """`'{:>9}'.format(x)`: written widths within MAX_LENGTH, and no huge number for a nested `{:{w}}` width."""
    for digits in _DIGITS.findall(template):
        if len(digits) > 9 or int(digits) > MAX_LENGTH:
            raise TooLarge(f"a format width of {_short(int(digits))}")
    if re.search(r":[^{}]*\{", template):
        _no_huge_numbers((args, kwargs))


def _no_huge_numbers(value: Any) -> None:
    if _whole(value) and abs(value) > MAX_LENGTH:
        raise TooLarge(f"a format width of {_short(value)}")
    if isinstance(value, (list, tuple)):
        for item in value:
            _no_huge_numbers(item)
    elif isinstance(value, dict):
        for item in value.values():
            _no_huge_numbers(item)


def check_length(value: Any, what: str = "a value") -> Any:
    """The value unchanged, or TooLarge when it is a string or list longer than MAX_LENGTH."""
    if _size(value) > MAX_LENGTH:
        raise TooLarge(f"{what} of {_size(value):,} characters or items (more than {MAX_LENGTH:,})")
    return value


def _short(number: int) -> str:
    return f"{number:,}" if _bits(number) < 64 else f"a number of {_bits(number):,} bits"


# str methods that pad or repeat: the argument that sets how much
_PADDING_METHODS = {"ljust": 0, "rjust": 0, "center": 0, "zfill": 0, "expandtabs": 0}


def _check_method(method: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    owner, name = getattr(method, "__self__", None), getattr(method, "__name__", "")
    if not isinstance(owner, str):
        return
    if name in _PADDING_METHODS:
        width = args[0] if args else next(iter(kwargs.values()), 0)
        factor = owner.count("\t") + 1 if name == "expandtabs" else 1
        if _whole(width) and width * factor > MAX_LENGTH:
            raise TooLarge(f"str.{name}({_short(width)}) makes more than {MAX_LENGTH:,} characters")
    elif name == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
        hits = len(owner) + 1 if args[0] == "" else owner.count(args[0])
        if len(owner) + hits * len(args[1]) > MAX_LENGTH:
            raise TooLarge(f"str.replace makes more than {MAX_LENGTH:,} characters")
    elif name == "join" and args and isinstance(args[0], (list, tuple)):
        if len(owner) * len(args[0]) + sum(map(_size, args[0])) > MAX_LENGTH:
            raise TooLarge(f"str.join makes more than {MAX_LENGTH:,} characters")


def _bounded_filters(filters: dict[str, Any]) -> dict[str, Any]:
    """The filters that pad, repeat or fill, checked against their arguments before they run."""
    center, indent, fmt, replace, wordwrap, batch, slice_ = (
        filters["center"], filters["indent"], filters["format"], filters["replace"], filters["wordwrap"], filters["batch"], filters["slice"],
    )

    def do_center(value: Any, width: int = 80) -> str:
        if _whole(width) and width > MAX_LENGTH:
            raise TooLarge(f"center({_short(width)}) makes more than {MAX_LENGTH:,} characters")
        return check_length(center(value, width))

    def do_indent(value: Any, width: Any = 4, *args: Any, **kwargs: Any) -> str:
        lines = str(value).count("\n") + 1
        pad = width if isinstance(width, str) else " " * min(width, MAX_LENGTH + 1) if _whole(width) else ""
        if len(str(value)) + lines * len(pad) > MAX_LENGTH:
            raise TooLarge(f"indent makes more than {MAX_LENGTH:,} characters")
        return indent(value, width, *args, **kwargs)

    def do_format(value: Any, *args: Any, **kwargs: Any) -> str:
        check_percent_format(str(value), kwargs or args)
        return check_length(fmt(value, *args, **kwargs))

    def do_replace(eval_ctx: Any, value: Any, old: Any, new: Any, count: Any = None) -> str:
        text, old, new = str(value), str(old), str(new)
        hits = len(text) + 1 if old == "" else text.count(old)
        if _whole(count) and count >= 0:
            hits = min(hits, count)
        if len(text) + hits * len(new) > MAX_LENGTH:
            raise TooLarge(f"replace makes more than {MAX_LENGTH:,} characters")
        return replace(eval_ctx, value, old, new, count)

    def do_wordwrap(environment: Any, value: Any, width: int = 79, break_long_words: bool = True,
                    wrapstring: Any = None, break_on_hyphens: bool = True) -> str:
        pieces = len(str(value)) // max(width, 1) + str(value).count(" ") + 1 if _whole(width) else 1
        if len(str(value)) + pieces * len(str(wrapstring or "\n")) > MAX_LENGTH:
            raise TooLarge(f"wordwrap makes more than {MAX_LENGTH:,} characters")
        return wordwrap(environment, value, width, break_long_words, wrapstring, break_on_hyphens)

    def do_batch(value: Any, linecount: int, fill_with: Any = None) -> Any:
        if fill_with is not None and _whole(linecount) and linecount > MAX_LENGTH:
            raise TooLarge(f"batch({_short(linecount)}) fills more than {MAX_LENGTH:,} items")
        return batch(value, linecount, fill_with)

    def do_slice(value: Any, slices: int, fill_with: Any = None) -> Any:
        if _whole(slices) and slices > MAX_LENGTH:
            raise TooLarge(f"slice({_short(slices)}) makes more than {MAX_LENGTH:,} lists")
        return slice_(value, slices, fill_with)

    from jinja2.utils import pass_environment, pass_eval_context

    return {
        "center": do_center, "indent": do_indent, "format": do_format, "replace": pass_eval_context(do_replace),
        "wordwrap": pass_environment(do_wordwrap), "batch": do_batch, "slice": do_slice,
    }


@lru_cache(maxsize=4)
def bounded_sandbox(undefined: type | None = None) -> Any:
    """An ImmutableSandboxedEnvironment whose growing operations are checked (TooLarge) and never folded
    while compiling; an undefined name is an error (StrictUndefined) unless another `undefined` is given."""
    from jinja2 import StrictUndefined
    from jinja2.compiler import CodeGenerator
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class _Generator(CodeGenerator):
        """`a ~ b` joins through the environment, so the result's length is checked before it is built."""

        def visit_Concat(self, node: Any, frame: Any) -> None:
            self.write("environment.joined((")
            for argument in node.nodes:
                self.visit(argument, frame)
                self.write(", ")
            self.write("))")

    class BoundedSandbox(ImmutableSandboxedEnvironment):
        intercepted_binops = _GROWING
        code_generator_class = _Generator

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            check_binop(operator, left, right)
            return self.binop_table[operator](left, right)

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805 - jinja's signature
            _check_method(__obj, args, kwargs)
            return check_length(super().call(__context, __obj, *args, **kwargs))

        def wrap_str_format(self, value: Any) -> Any:
            wrapped = super().wrap_str_format(value)
            if wrapped is None:
                return None
            template = value.__self__

            def checked(*args: Any, **kwargs: Any) -> str:
                check_str_format(template, args, kwargs)
                return wrapped(*args, **kwargs)

            return checked

        @staticmethod
        def joined(parts: tuple[Any, ...]) -> str:
            texts = [str(part) for part in parts]
            if sum(map(len, texts)) > MAX_LENGTH:
                raise TooLarge(f"joining with `~` makes more than {MAX_LENGTH:,} characters")
            return "".join(texts)

    env = BoundedSandbox(undefined=undefined or StrictUndefined, autoescape=False, keep_trailing_newline=True)
    env.filters.update(_bounded_filters(env.filters))
    env.globals.pop("lipsum", None)  # n paragraphs of lorem ipsum, unbounded
    return env


def refuse_huge_constants(source: str, expression: bool = False) -> None:
    """Raise TooLarge when constant arithmetic in the template (or expression) could never be built
    within the bounds: a load-time refusal, before jinja2 compiles anything."""
    from jinja2 import nodes

    from jinja2.parser import Parser

    env = bounded_sandbox()
    tree = Parser(env, source, state="variable").parse_expression() if expression else env.parse(source)
    values: dict[int, Any] = {}

    def constant(node: Any) -> Any:
        """The value of a constant subtree (computed once, with the bounds), or _Unknown."""
        key = id(node)
        if key in values:
            return values[key]
        value: Any = _UNKNOWN
        if isinstance(node, nodes.Const):
            value = node.value
        elif isinstance(node, nodes.BinExpr) and node.operator in _GROWING:
            left, right = constant(node.left), constant(node.right)
            if left is not _UNKNOWN and right is not _UNKNOWN:
                check_binop(node.operator, left, right)
                try:
                    value = env.binop_table[node.operator](left, right)
                except Exception:  # noqa: BLE001 - a type error or overflow shows when the template renders
                    value = _UNKNOWN
        elif isinstance(node, nodes.UnaryExpr) and node.operator == "-":
            inner = constant(node.node)
            value = -inner if _whole(inner) else _UNKNOWN
        elif isinstance(node, (nodes.List, nodes.Tuple)):
            items = [constant(item) for item in node.items]
            value = _UNKNOWN if any(item is _UNKNOWN for item in items) else (items if isinstance(node, nodes.List) else tuple(items))
        values[key] = value
        return value

    for node in [tree, *tree.find_all(nodes.BinExpr)]:
        constant(node)


class _Unknown:
    """Not a constant: known only when the template renders."""


_UNKNOWN = _Unknown()

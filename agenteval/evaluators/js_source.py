"""promptfoo's inline JavaScript as a function, and one bounded call of it in the embedded engine.

Shared by the `javascript` evaluator and `transform: {javascript: ...}` (and the promptfoo
importer's `transformVars`): QuickJS (the `javascript` extra) has no file, network or process
access, and each engine is bounded in CPU time and memory. Values cross as JSON text.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import orjson

from agenteval.extras import MissingDependency
from agenteval.process import decode_json


def function_body(code: str) -> str:
    """promptfoo's reading of inline code: several lines are a function body as written; one line
    is an expression, or declarations ending in one (`const s = ...; s > 0.5`), returned."""
    code = code.rstrip()
    if "\n" in code:
        return code
    trimmed = re.sub(r";+\s*$", "", code.strip())
    if re.match(r"^(const|let|var)\s", trimmed):
        last = _last_statement_semicolon(trimmed)
        if last != -1 and trimmed[last + 1:].strip():
            return f"{trimmed[: last + 1]} return {trimmed[last + 1:].strip()}"
        return trimmed
    return f"return {trimmed}"


def _last_statement_semicolon(code: str) -> int:
    """The last `;` outside string and template literals (what promptfoo splits declarations at)."""
    quote: str | None = None
    last = -1
    escaped = False
    for index, char in enumerate(code):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif quote is not None:
            if char == quote:
                quote = None
        elif char in "'\"`":
            quote = char
        elif char == ";":
            last = index
    return last


class JavaScriptFailed(Exception):
    """The code threw, did not compile, returned a Promise or no JSON value, or ran past its limits."""


# How a check's or a transform's value leaves either engine as JSON text (javascript_answer.js).
ANSWER_JS = Path(__file__).with_name("javascript_answer.js").read_text(encoding="utf-8")

# Arguments go in as JSON text and the value comes out as JSON text: no engine object leaks out.
_CALLER = ANSWER_JS + r"""
function __agenteval_value_call(payload) {
  const a = JSON.parse(payload);
  let result;
  try { result = __agenteval_value(...a); } catch (e) { return JSON.stringify({thrown: String(e)}); }
  if (result && typeof result.then === 'function') return JSON.stringify({bad: 'a Promise (async code is not supported in the embedded engine)'});
  try { return __agenteval_json({value: result === undefined ? null : result}); } catch (e) { return JSON.stringify({bad: 'a value that is not JSON: ' + e}); }
}
"""

_engines = threading.local()  # per thread: (code, params) -> compiled call (an engine is not shared between threads)


def call_function(code: str, params: tuple[str, ...], args: list[Any], timeout: float = 5.0, memory_mb: int = 64) -> Any:
    """The value of promptfoo-style inline `code` (a function of `params`) on `args`; raises
    JavaScriptFailed (MissingDependency without the `javascript` extra)."""
    try:
        import quickjs
    except ImportError:
        raise MissingDependency("JavaScript runs in QuickJS, which is not installed: pip install 'agenteval[javascript]'") from None
    cache = getattr(_engines, "calls", None)
    if cache is None:
        cache = _engines.calls = {}
    key = (code, params, timeout, memory_mb)
    call = cache.get(key)
    if call is None:
        engine = quickjs.Context()
        engine.set_memory_limit(memory_mb * 1024 * 1024)
        engine.set_time_limit(timeout)
        engine.set_max_stack_size(1024 * 1024)
        try:
            engine.eval(f"function __agenteval_value({', '.join(params)}) {{\n{function_body(code)}\n}}")
            engine.eval(_CALLER)
        except quickjs.JSException as exc:
            raise JavaScriptFailed(f"does not compile: {_first_line(str(exc))}") from None
        call = cache[key] = (engine, engine.get("__agenteval_value_call"))
    try:
        payload = orjson.dumps(args, option=orjson.OPT_NON_STR_KEYS).decode()
    except (orjson.JSONEncodeError, TypeError):
        raise JavaScriptFailed("its arguments have no JSON form") from None
    try:
        answer = decode_json(call[1](payload).encode())
    except quickjs.JSException as exc:
        text = str(exc)
        if "interrupted" in text:
            raise JavaScriptFailed(f"ran longer than {timeout:g} s") from None
        if "out of memory" in text:
            raise JavaScriptFailed(f"used more than {memory_mb} MiB of memory") from None
        raise JavaScriptFailed(_first_line(text)) from None
    if "thrown" in answer:
        if answer["thrown"].startswith("InternalError: out of memory"):  # the engine's own limit, caught by the wrapper
            raise JavaScriptFailed(f"used more than {memory_mb} MiB of memory")
        raise JavaScriptFailed(f"threw {_first_line(answer['thrown'])}")
    if "bad" in answer:
        raise JavaScriptFailed(f"returned {answer['bad']}")
    return answer["value"]


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text

"""javascript: promptfoo's JavaScript assertions, run as they are written.

Inline code and plain files run in an embedded QuickJS engine (the `javascript` extra,
quickjs-ng): no file, network or process access exists there, each call is bounded in CPU time
and memory, and a call costs microseconds, not a process. A file that `require`s modules runs
under `node` instead, as a long-lived judge process (code_judge's `protocol: jsonl`, with its
timeouts, output limits and process group); without `node` such a file is a load error.

The code sees promptfoo's names: `output` (the answer), `context.vars` (the case input, when it
is a mapping), `context.prompt`, `context.test` and `context.config`, plus `context.expected`.
A single line is an expression (or `const ...; expression`), several lines are a function body;
`file://check.js` exports a function, `file://check.js:name` names one. It returns a boolean, a
number (passing when `>= threshold`, or `> 0` without one) or `{pass, score, reason}`.
"""

from __future__ import annotations

import re
import shutil
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import ConfigDict, Field, PrivateAttr, ValidationInfo, model_validator

from agenteval.evaluators.base import EvalContext, EvaluatorConfig, EvaluatorResult
from agenteval.evaluators.js_source import ANSWER_JS, function_body
from agenteval.extras import MissingDependency, installed, missing_warning
from agenteval.paths import MISSING, compile_path, resolve
from agenteval.process import MAX_ANSWER_DEPTH, decode_json

RUNNER = Path(__file__).with_name("javascript_runner.js")  # the node side: a jsonl judge around the user's file
_RESOURCE = re.compile(r"^(RangeError: Maximum call stack size exceeded|InternalError: (out of memory|stack overflow))")
_REQUIRES = re.compile(r"\brequire\s*\(|^\s*import\s", re.M)
_FILE = re.compile(r"^(?:file://)?(?P<path>[^:]+\.(?:js|cjs|mjs))(?::(?P<function>[A-Za-z_$][\w$]*))?$")

# The wrapper every call goes through: arguments go in as JSON text and the answer comes out as JSON text
# written by javascript_answer.js (node's runner writes it too), so no object of the engine leaks out.
_WRAPPER = ANSWER_JS + r"""
function __agenteval_call(payload) {
  const a = JSON.parse(payload);
  let result;
  try {
    result = __agenteval_check(a.output, a.context);
  } catch (e) {
    return __agenteval_thrown(e);
  }
  return __agenteval_answer(result);
}
"""


def verdict_of(kind: str, value: Any, threshold: float | None) -> tuple[bool, float, str | None] | str:
    """(pass, score, reason) from what the check returned, as promptfoo reads it, or why it is unusable.
    Scores outside [0, 1] are clamped into the result (the returned number stays in `details`)."""
    if kind == "boolean":
        return bool(value), 1.0 if value else 0.0, None
    if kind == "number":
        passed = value >= threshold if threshold is not None else value > 0
        return passed, min(1.0, max(0.0, float(value))), None
    if kind == "object":
        if not isinstance(value, dict) or not isinstance(value.get("pass"), bool):
            return "an object without a boolean `pass` (a check returns a boolean, a number or {pass, score, reason})"
        score = value.get("score", 1.0 if value["pass"] else 0.0)
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            return f"an object whose `score` is {type(score).__name__}, not a number"
        reason = value.get("reason")
        return value["pass"], min(1.0, max(0.0, float(score))), reason if isinstance(reason, str) else None
    return f"{value} (a check returns a boolean, a number or {{pass, score, reason}})"


class JavaScript(EvaluatorConfig):
    """promptfoo's `javascript` assertion: inline code or a file, run in an embedded engine (or node). Default verdict: the check's."""

    model_config = ConfigDict(extra="forbid", strict=True)

    type: Literal["javascript"]
    code: str | None = Field(None, min_length=1, description="Inline JavaScript: an expression, or a function body over `output` and `context`.")
    file: str | None = Field(
        None, min_length=1,
        description="`check.js` or `check.js:functionName` (`file://` accepted), inside the suite's folder: a module "
        "exporting a function `(output, context)`.",
    )
    path: str = Field("", description="Where `output` is in the answer (e.g. `content` for a model target's text); empty: the whole answer.")
    threshold: float | None = Field(None, allow_inf_nan=False, description="A number returned passes when at least this (promptfoo's `threshold`); default: above 0.")
    engine: Literal["auto", "quickjs", "node"] = Field(
        "auto", description="auto: the embedded engine, or node for a file that uses require/import."
    )
    timeout: float = Field(5.0, gt=0, le=600, description="Seconds one call may run (CPU time in the embedded engine).")
    memory_mb: int = Field(64, ge=1, le=4096, description="Memory the embedded engine may use, per worker thread.")
    config: dict[str, Any] = Field(default_factory=dict, description="Given to the check as `context.config`.")

    type_name = "javascript"
    runs_programs = True  # code from the config runs: a cases file needs trust_cases

    _local: threading.local = PrivateAttr(default_factory=threading.local)
    _source: str | None = PrivateAttr(None)  # the function definition the engine compiles
    _judge: Any = PrivateAttr(None)  # the node path: a code_judge over the runner
    _keys: Any = PrivateAttr(())

    def model_post_init(self, context: Any) -> None:
        self._keys = compile_path(self.path) if self.path else ()

    @model_validator(mode="after")
    def _one_source(self, info: ValidationInfo) -> JavaScript:
        if (self.code is None) == (self.file is None):
            raise ValueError("give `code` (inline JavaScript) or `file` (a .js module), one of them")
        if self.file is not None and not _FILE.match(self.file):
            raise ValueError(f"`file` {self.file!r} is not `path.js` or `path.js:functionName`")
        if self.code is not None and self.engine == "node":
            raise ValueError("inline `code` runs in the embedded engine; `engine: node` is for a `file`")
        base = info.context.get("base_dir") if isinstance(info.context, dict) else None
        problem = self.bind(Path(base) if base is not None else Path.cwd())
        if problem is None and self._judge is None and installed("quickjs"):
            problem = self._compile_problem()
        if problem is not None:
            raise ValueError(problem)
        return self

    def warnings(self) -> list[tuple[tuple[str | int, ...], str]]:
        if self._judge is None and (message := missing_warning("quickjs", "javascript")):
            return [(("code",) if self.code is not None else ("file",), message)]
        return []

    def _compile_problem(self) -> str | None:
        """The check compiled once at load time (a file's top level runs, within the limits)."""
        compiled = self._function()
        self._local = threading.local()  # the worker threads compile their own
        return compiled if isinstance(compiled, str) else None

    def bind(self, base_dir: Path) -> str | None:
        """Read the file (inside `base_dir`) and choose the engine; the problem, if any, for load time."""
        if self.code is not None:
            self._source = f"function __agenteval_check(output, context) {{\n{function_body(self.code)}\n}}"
            return None
        match = _FILE.match(self.file or "")
        assert match is not None
        path = (base_dir / match["path"]).resolve()
        if not path.is_relative_to(base_dir.resolve()):
            return f"`file` {self.file!r} is outside the suite's folder"
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return f"cannot read `file` {self.file!r}: {getattr(exc, 'strerror', None) or exc}"
        engine = self.engine if self.engine != "auto" else ("node" if _REQUIRES.search(text) or path.suffix == ".mjs" else "quickjs")
        if engine == "node":
            node = shutil.which("node")
            if node is None:
                return f"`file` {self.file!r} uses require/import, so it runs under node, which is not installed (install Node.js, or use a file without require)"
            from agenteval.evaluators.code_judge import CodeJudge

            self._judge = CodeJudge(
                type="code_judge", name=self.label, command=[node, str(RUNNER), str(path), match["function"] or ""],
                protocol="jsonl", timeout=self.timeout, config={"config": self.config},
            )
            return None
        chosen = f"module.exports.{match['function']}" if match["function"] else "(typeof module.exports === 'function' ? module.exports : module.exports.default)"
        self._source = (
            "const module = {exports: {}}; const exports = module.exports;\n"
            "function require(name) { throw new Error('require(' + JSON.stringify(name) + ') is not available in the embedded engine: set engine: node'); }\n"
            f"{text}\n;const __agenteval_check = {chosen};\n"
            "if (typeof __agenteval_check !== 'function') throw new Error('the file exports no function' + "
            f"{orjson.dumps(' named ' + match['function'] if match['function'] else '').decode()});"
        )
        return None

    def prepare(self) -> None:
        try:
            import quickjs  # noqa: F401
        except ImportError:
            pass

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        if self._source is None and self._judge is None and (problem := self.bind(ctx.base_dir)) is not None:
            return self.error_result(problem)
        output = ctx.output if self._keys == () else MISSING if self._keys is None else resolve(ctx.output, self._keys)
        if self._judge is not None:
            judged = self._judge.evaluate(replace(ctx, output=None if output is MISSING else output))
            if judged.verdict != "error" and isinstance(text := (judged.details or {}).get("answer"), str):
                return self._read(text)
            judged.type = self.type  # the judge's own failure (timeout, exit), or a file that cannot load
            return judged
        call = self._function()
        if isinstance(call, str):
            return self.error_result(call)
        payload = _as_json({"output": None if output is MISSING else output, "context": check_context(ctx, self.config)})
        if payload is None:
            return self.error_result("the answer or the case cannot be given to JavaScript as JSON (nested too deep, or a value JSON has no form for)")
        import quickjs

        try:
            text = call(payload)
        except quickjs.JSException as exc:
            text = str(exc)
            if "interrupted" in text:
                return self.error_result(f"the check ran longer than its timeout of {self.timeout:g} s")
            if "out of memory" in text:
                return self.error_result(f"the check used more than its memory_mb of {self.memory_mb}")
            return self.error_result(f"the check failed: {_first_lines(text)}")
        return self._read(text)

    def _read(self, text: str) -> EvaluatorResult:
        """The result for what the check gave, as javascript_answer.js wrote it in either engine."""
        try:
            answer = decode_json(text.encode(), MAX_ANSWER_DEPTH)
        except ValueError as exc:
            return self.error_result(f"the check returned {exc}")
        if "thrown" in answer:
            thrown = _first_lines(answer["thrown"])
            if _RESOURCE.search(thrown):  # the engine's own limits: the check did not judge the answer
                return self.error_result(f"the check threw: {thrown}")
            # As promptfoo reads it: a check that throws (JSON.parse of an answer that is no JSON) fails the answer.
            reason = f"the check threw: {thrown}"
            return EvaluatorResult(self.label, self.type, 0.0, self.verdict(0.0, "fail"), reasoning=reason, misses=[reason])
        if "bad" in answer:
            return self.error_result(f"the check returned {_first_lines(answer['bad'])}")
        kind, value = next(iter(answer.items()))
        read = verdict_of(kind, value, self.threshold)
        if isinstance(read, str):
            return self.error_result(f"the check returned {read}")
        passed, score, reason = read
        details = {"returned": value} if kind != "boolean" else None
        reason = reason or ("passed" if passed else f"returned {orjson.dumps(value).decode()[:200]}")
        return EvaluatorResult(self.label, self.type, score, self.verdict(score, "pass" if passed else "fail"),
                               reasoning=reason, details=details, misses=[] if passed else [reason])

    def _function(self) -> Any:
        """This thread's compiled check (an engine is not shared between threads), or why there is none."""
        compiled = getattr(self._local, "call", None)
        if compiled is not None:
            return compiled
        try:
            import quickjs
        except ImportError:
            raise MissingDependency("javascript checks run in QuickJS, which is not installed: pip install 'agenteval[javascript]'") from None
        engine = quickjs.Context()
        engine.set_memory_limit(self.memory_mb * 1024 * 1024)
        engine.set_time_limit(self.timeout)
        engine.set_max_stack_size(1024 * 1024)
        try:
            engine.eval(self._source or "")
            engine.eval(_WRAPPER)
        except quickjs.JSException as exc:
            return f"the check does not compile: {_first_lines(str(exc))}"
        self._local.engine = engine  # kept alive with the function
        self._local.call = engine.get("__agenteval_call")
        return self._local.call

    def close(self) -> None:
        if self._judge is not None:
            self._judge.close()
        self._local = threading.local()


def _as_json(value: Any) -> str | None:
    """`value` as JSON text for the engine; integers past 64 bits go as JavaScript numbers do (rounded),
    and a value with no JSON form (NaN, a lone surrogate, nesting past the recursion limit) gives None."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY).decode()
    except (orjson.JSONEncodeError, TypeError):
        import json

        try:
            return json.dumps(value, allow_nan=False, default=str)
        except (ValueError, TypeError, RecursionError):
            return None


def check_context(ctx: EvalContext, config: dict[str, Any]) -> dict[str, Any]:
    """promptfoo's `context` for a case: its vars (the case input when it is a mapping), the prompt the
    answer was given (the last user message a model target recorded), the test, and the config."""
    variables = ctx.input if isinstance(ctx.input, dict) else {}
    prompt = None
    messages = ctx.output.get("messages") if isinstance(ctx.output, dict) else None
    if isinstance(messages, list):
        for message in reversed(messages):
            if isinstance(message, dict) and message.get("role") == "user" and isinstance(message.get("content"), str):
                prompt = message["content"]
                break
    if prompt is None and isinstance(ctx.input, str):
        prompt = ctx.input
    return {
        "vars": variables, "prompt": prompt, "config": config, "expected": ctx.expected,
        "test": {"vars": variables, "description": ctx.case_id, "metadata": ctx.metadata},
    }


def _first_lines(text: str, count: int = 3) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[:count])

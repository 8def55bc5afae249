"""Tools a model may call in a tool loop: what the model is told (name, description, JSON-schema
parameters) and what answers a call (`mock`, `command`, `python`, `http` or `mcp`). An entry `{mcp: SERVER}` stands
for the tools an MCP server lists (agenteval.agents.mcp_sessions holds the sessions).

A tool is written flat (`{name, description, parameters, mock: ...}`, `input_schema` as the
Messages API names `parameters` is taken too) or in the OpenAI shape
(`{type: function, function: {...}, mock: ...}`); the model always receives the OpenAI shape.
A case may give a tool of its target another implementation (`CaseTool`, by the tool's name).

Calling a tool never raises: whatever goes wrong (an exception, a non-zero exit, a timeout, an
HTTP error, arguments that are not a JSON object) is a `ToolResult` whose value is
`{"error": "..."}`, which the loop hands to the model as the tool's answer, as a real agent
runtime would, and the run goes on.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Discriminator, Field, Tag, WithJsonSchema, field_validator, model_validator

from agenteval.config import Command, StrictModel
from agenteval.endpoints.settings import Transport, checked_url
from agenteval.process import DEFAULT_MAX_OUTPUT_MB

DEFAULT_TOOL_TIMEOUT = 30.0
IMPLEMENTATIONS = ("mock", "command", "python", "http", "mcp")
NEEDS_TRUST = ("command", "python", "http", "mcp")  # what a cases file may only give with `trust_cases: true`
_FUNCTION_REFERENCE = r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$"
_TOOL_NAME = r"^[A-Za-z0-9_.:-]{1,128}$"


class MockRule(StrictModel):
    """One canned result: returned when every argument named in `when` equals its value."""

    when: dict[str, Any] | None = Field(
        None,
        description="Arguments and the values they must equal (strictly: 1 is not \"1\"); other arguments are free. "
        "Leave it out for the default result, given when no other rule matches.",
    )
    result: Any = Field(None, description="What the tool returns (any JSON); the model sees it as JSON text, or as is for a string.")


class HttpTool(Transport):
    """A tool served over HTTP: the arguments are the JSON body (POST) or the query parameters (GET);
    the reply (JSON, else text) is the result. Retries, timeouts, `${NAME}` secrets and the cache
    (`cache: true`) work as for the http target."""

    url: str = Field(min_length=1, description="Where each call is sent (`${NAME}` is read from the environment).")
    method: Literal["POST", "GET"] = Field("POST", description="POST sends the arguments as a JSON body; GET as query parameters.")

    @field_validator("url")
    @classmethod
    def _a_url(cls, value: str) -> str:
        return checked_url(value, "url") or value


class McpServer(StrictModel):
    """An MCP server: a program spoken to over stdio (`command`, in the suite's folder) or a
    streamable-HTTP `url`. Each worker of a run has its own session with it, started on first use."""

    command: Command | None = Field(None, min_length=1, description="The server's program and arguments (stdio; no shell).")
    env: dict[str, str] | None = Field(
        None, description="Environment variables added for the server's program (stdio; `${NAME}` is read from the environment). "
        "Their values are `***` in every message.",
    )
    url: str | None = Field(None, description="The server's streamable-HTTP endpoint (`${NAME}` is read from the environment).")
    headers: dict[str, str] | None = Field(None, description="HTTP headers sent to a `url` server (`${NAME}` is read from the environment).")
    startup_timeout: float = Field(
        60.0, gt=0, le=3600, allow_inf_nan=False, description="Seconds the server may take to start, initialise and list its tools.",
    )
    max_output_mb: float = Field(
        DEFAULT_MAX_OUTPUT_MB, gt=0, le=1024, allow_inf_nan=False,
        description="Largest message the server may send, in MiB: a larger one ends its session and the call is an error.",
    )

    @field_validator("url")
    @classmethod
    def _a_url(cls, value: str | None) -> str | None:
        return checked_url(value, "url") if value is not None else None

    @model_validator(mode="after")
    def _one_transport(self) -> McpServer:
        import importlib.util

        from agenteval.extras import install_hint

        if importlib.util.find_spec("mcp") is None:  # refused at load, as an evaluator's missing extra is
            raise ValueError(f"MCP servers need the MCP Python SDK, which is not installed: {install_hint('mcp')}")
        if (self.command is None) == (self.url is None):
            raise ValueError("an MCP server is `command: [...]` (stdio) or `url: ...` (streamable HTTP): give one of them")
        if self.command is not None and self.headers is not None:
            raise ValueError("`headers` go with a `url` server, not a `command` one")
        if self.url is not None and self.env is not None:
            raise ValueError("`env` goes with a `command` server, not a `url` one")
        return self

    def key(self) -> str:
        """Which server this is: one session per key and worker."""
        import orjson

        return orjson.dumps(self.model_dump(include=set(McpServer.model_fields), exclude_defaults=True)).decode()

    def resolved_headers(self, environ: Any = None) -> dict[str, str]:
        from agenteval.endpoints.settings import substitute_env

        return {name: substitute_env(value, environ) for name, value in (self.headers or {}).items()}

    def resolved_env(self, environ: Any = None) -> dict[str, str]:
        """The stdio server's `env`, `${NAME}` read from the run's environment (MissingEnvironment when unset)."""
        from agenteval.endpoints.settings import substitute_env

        return {name: substitute_env(value, environ) if "${" in value else value for name, value in (self.env or {}).items()}


class McpTool(McpServer):
    """A tool answered by an MCP server: `tool` names it on the server (default: the tool's own name)."""

    tool: str | None = Field(None, min_length=1, description="The tool's name on the server, when the model knows it by another.")


class Implementation(StrictModel):
    """What answers a tool's calls: one of `mock`, `command`, `python`, `http`, `mcp`."""

    mock: list[MockRule] | None = Field(
        None,
        description="Canned results: the first rule whose `when` matches the arguments wins, else the rule without `when`; "
        "no match is an error result the model sees.",
    )
    command: Command | None = Field(
        None,
        min_length=1,
        description="A program (no shell; cwd = the suite's folder) given the arguments as JSON on stdin; its stdout, "
        "parsed as JSON when it is JSON, is the result. A non-zero exit or a timeout is an error result.",
    )
    python: str | None = Field(
        None,
        pattern=_FUNCTION_REFERENCE,
        description="`module:function` (next to the suite, or installed) called with the arguments as keyword arguments; "
        "its return value is the result, an exception an error result.",
    )
    http: HttpTool | None = Field(None, description="A service called with the arguments (see HttpTool).")
    mcp: McpTool | None = Field(None, description="An MCP server's tool called with the arguments (see McpTool).")
    timeout: float = Field(
        DEFAULT_TOOL_TIMEOUT, gt=0, le=3600, allow_inf_nan=False,
        description="Seconds one `command`, `python` or `mcp` call may take (never past the loop's own timeout); `http` has its own `timeout`.",
    )
    max_output_mb: float = Field(
        DEFAULT_MAX_OUTPUT_MB, gt=0, le=1024, allow_inf_nan=False, description="Largest stdout of a `command` tool, in MiB.",
    )

    @property
    def kind(self) -> str | None:
        """Which implementation is given (None: none, the tool is only described to the model)."""
        return next((key for key in IMPLEMENTATIONS if getattr(self, key) is not None), None)

    @model_validator(mode="after")
    def _at_most_one(self) -> Implementation:
        given = [key for key in IMPLEMENTATIONS if getattr(self, key) is not None]
        if len(given) > 1:
            raise ValueError(f"a tool has one implementation: give one of `{'`, `'.join(given)}`, not {len(given)}")
        mock = self.mock or []
        if sum(rule.when is None for rule in mock) > 1:
            raise ValueError("`mock` has more than one rule without `when` (only one can be the default)")
        return self


class FunctionDefinition(StrictModel):
    """The OpenAI `function` object of a tool."""

    name: str = Field(pattern=_TOOL_NAME, description="The tool's name, as the model calls it.")
    description: str | None = Field(None, description="What the tool does, for the model.")
    parameters: dict[str, Any] | None = Field(None, description="A JSON schema of the arguments (an object).")
    strict: bool | None = Field(None, description="Passed to the API as is.")


class Tool(Implementation):
    """A tool the model may call, flat (`name`, `description`, `parameters`) or in the OpenAI shape
    (`type: function`, `function: {...}`), with at most one implementation. Without one it is only
    described to the model (its calls are read back, not run)."""

    model_config = ConfigDict(
        extra="forbid", strict=True, json_schema_extra={"anyOf": [{"required": ["name"]}, {"required": ["function"]}]},
    )

    type: Literal["function"] | None = Field(None, description="`function`, with the OpenAI shape (`function: {...}`).")
    function: FunctionDefinition | None = Field(None, description="The OpenAI shape: name, description, parameters.")
    name: str | None = Field(None, pattern=_TOOL_NAME, description="The tool's name (flat shape).")
    description: str | None = Field(None, description="What the tool does, for the model (flat shape).")
    parameters: dict[str, Any] | None = Field(None, description="A JSON schema of the arguments (flat shape).")
    input_schema: dict[str, Any] | None = Field(None, description="The Messages API's name for `parameters` (flat shape).")

    @model_validator(mode="after")
    def _one_shape(self) -> Tool:
        if self.parameters is not None and self.input_schema is not None:
            raise ValueError("give `parameters` or `input_schema` (the same schema), not both")
        flat = [key for key in ("name", "description", "parameters", "input_schema") if key in self.model_fields_set]
        if self.function is not None and flat:
            raise ValueError(f"give the tool either flat (`name`, ...) or as `function: {{...}}`, not both (`{flat[0]}` and `function`)")
        if self.function is None and self.name is None:
            raise ValueError("a tool needs a `name` (or `type: function` with `function: {name: ...}`)")
        if self.function is None and self.type is not None:
            raise ValueError("`type: function` goes with `function: {name, description, parameters}`")
        return self

    @property
    def tool_name(self) -> str:
        return self.function.name if self.function is not None else self.name  # type: ignore[return-value]

    def definition(self) -> dict[str, Any]:
        """The tool as the model is told of it (OpenAI shape), without its implementation."""
        if self.function is not None:
            return {"type": "function", "function": self.function.model_dump(exclude_unset=True)}
        function: dict[str, Any] = {"name": self.name}
        if self.description is not None:
            function["description"] = self.description
        parameters = self.parameters if self.parameters is not None else self.input_schema
        if parameters is not None:
            function["parameters"] = parameters
        return {"type": "function", "function": function}


class CaseTool(Implementation):
    """A case's own implementation of one of its target's tools, by name (e.g. other mock results)."""

    @model_validator(mode="after")
    def _exactly_one(self) -> CaseTool:
        if self.kind is None:
            raise ValueError(f"give the tool's implementation for this case: one of `{'`, `'.join(IMPLEMENTATIONS)}`")
        return self


class McpTools(StrictModel):
    """The tools an MCP server lists, offered to the model with the server's names, descriptions
    and schemas (`tools:` keeps some, `rename:` gives the model other names)."""

    mcp: McpServer = Field(description="The server (`command: [...]` or `url: ...`).")
    tools: list[str] | None = Field(None, min_length=1, description="The server's tools to offer (default: all it lists, at most `max_tools`).")
    rename: dict[str, str] | None = Field(None, description="The server's name of a tool -> the name the model calls it by.")
    max_tools: int = Field(128, ge=1, le=10000, description="Most tools taken from the server without a `tools:` list.")
    timeout: float = Field(DEFAULT_TOOL_TIMEOUT, gt=0, le=3600, allow_inf_nan=False, description="Seconds one call may take (never past the loop's timeout).")

    @field_validator("rename")
    @classmethod
    def _tool_names(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        import re

        for name in (value or {}).values():
            if not re.fullmatch(_TOOL_NAME, name):
                raise ValueError(f"{name!r} is not a tool name (letters, digits, `_.:-`, at most 128)")
        return value

    def implementation(self, server_name: str) -> Implementation:
        return Implementation(mcp=McpTool(**self.mcp.model_dump(exclude_unset=True), tool=server_name), timeout=self.timeout,
                              max_output_mb=self.mcp.max_output_mb)


def _tool_kind(value: Any) -> str:
    """A function tool (typed, with an implementation or not), an MCP server's tools, or another
    kind of tool an API offers (e.g. `{type: web_search}`), which is passed through as is."""
    if isinstance(value, McpTools) or (isinstance(value, dict) and "mcp" in value and "name" not in value and "function" not in value):
        return "mcp"
    if isinstance(value, dict) and value.get("type", "function") != "function":
        return "other"
    return "function"


_OTHER_TOOL_SCHEMA = {
    "type": "object", "required": ["type"], "properties": {"type": {"not": {"const": "function"}}},
    "description": "Another kind of tool the API offers (e.g. `{type: web_search}`), passed as is.",
}
ToolSpec = Annotated[
    Annotated[Tool, Tag("function")] | Annotated[McpTools, Tag("mcp")]
    | Annotated[dict[str, Any], Tag("other"), WithJsonSchema(_OTHER_TOOL_SCHEMA)],
    Discriminator(_tool_kind),
]
"""An entry of a model target's `tools:`."""


@dataclass(slots=True)
class ToolResult:
    """What one call returned (any JSON value; `{"error": ...}` when it failed) and how long it took."""

    value: Any
    failed: bool = False
    latency_ms: float = 0.0

    @property
    def text(self) -> str:
        """The tool message's content: a string as is, anything else as JSON."""
        return self.value if isinstance(self.value, str) else _json_text(self.value)


def failure(message: str, started: float | None = None) -> ToolResult:
    return ToolResult({"error": message}, True, _since(started))


@dataclass(slots=True)
class BoundTool:
    """A tool as one loop uses it: its name, what the model is told, and what answers it (None:
    nothing does, and a call is an error result)."""

    name: str
    definition: dict[str, Any]
    implementation: Implementation | None

    def call(self, arguments: dict[str, Any], run: Any, seconds_left: float | None) -> ToolResult:
        if self.implementation is None or self.implementation.kind is None:
            return failure(f"tool {self.name!r} has no implementation in this evaluation (it can only be described to the model)")
        return usable(self.name, call_tool(self.name, self.implementation, arguments, run, seconds_left), run)


def mcp_tools(entry: McpTools, run: Any) -> list[BoundTool] | str:
    """The tools of an MCP server entry as the loop binds them (listed once per session), or why
    they cannot be had: the case's error, since the model cannot be told of them."""
    import re

    from agenteval.agents.mcp_sessions import McpError, sessions

    where = " ".join(entry.mcp.command) if entry.mcp.command is not None else entry.mcp.url
    try:
        listed = sessions(run.processes).tools(entry.mcp, run.base_dir, entry.timeout)
    except (McpError, ImportError) as exc:
        return f"MCP server {where!r}: {exc}"
    except InterruptedError:
        return f"MCP server {where!r}: the run is stopping"
    by_name = {tool.name: tool for tool in listed}
    wanted = entry.tools if entry.tools is not None else list(by_name)
    missing = [name for name in [*wanted, *(entry.rename or {})] if name not in by_name]
    if missing:
        known = ", ".join(sorted(by_name)[:50]) or "none"
        return f"MCP server {where!r} has no tool named {missing[0]!r} (its tools: {known})"
    if entry.tools is None and len(wanted) > entry.max_tools:
        return (f"MCP server {where!r} lists {len(wanted)} tools, more than max_tools ({entry.max_tools}); "
                "choose the ones to offer with `tools: [...]`")
    bound = []
    for name in wanted:
        tool, shown = by_name[name], (entry.rename or {}).get(name, name)
        if not re.fullmatch(_TOOL_NAME, shown):
            return f"MCP server {where!r}: its tool {shown!r} has a name a model cannot call; give it one with `rename:`"
        function: dict[str, Any] = {"name": shown}
        if tool.description:
            function["description"] = tool.description
        function["parameters"] = tool.input_schema
        bound.append(BoundTool(shown, {"type": "function", "function": function}, entry.implementation(name)))
    return bound


def usable(name: str, result: ToolResult, run: Any) -> ToolResult:
    """The result, or an error result when its value cannot go back to the model or into the
    answer (a lone surrogate, an integer beyond the float range, nesting past `limits.answer_depth`):
    a tool's bad value is what the model sees, never the case's end."""
    from agenteval.usable import problem

    found = None if result.failed else problem(result.value, getattr(run, "answer_depth", None))
    if found is None:
        return result
    found = found.replace("answer", "result", 1).replace("`answer", "`result")
    return ToolResult({"error": f"tool {name!r} returned a value that cannot be used: {found}"}, True, result.latency_ms)


def call_tool(name: str, tool: Implementation, arguments: dict[str, Any], run: Any, seconds_left: float | None) -> ToolResult:
    """Run one call; never raises (an unexpected exception is the error result, naming it)."""
    started = time.perf_counter()
    timeout = tool.timeout if seconds_left is None else max(0.001, min(tool.timeout, seconds_left))
    try:
        if tool.mock is not None:
            return _mock(name, tool.mock, arguments, started)
        if tool.command is not None:
            return _command(name, tool, arguments, run, timeout, started)
        if tool.python is not None:
            return _python(tool.python, arguments, run.base_dir, timeout, started)
        if tool.http is not None:
            return _http(name, tool.http, arguments, run, started)
        if tool.mcp is not None:
            return _mcp(name, tool.mcp, arguments, run, timeout, started)
    except Exception as exc:  # noqa: BLE001 - a tool's failure is what the model sees, never the run's end
        return failure(f"tool {name!r} failed: {type(exc).__name__}: {exc}", started)
    return failure(f"tool {name!r} has no implementation", started)


def _mock(name: str, rules: list[MockRule], arguments: dict[str, Any], started: float) -> ToolResult:
    from agenteval.matching import equal

    default = None
    for rule in rules:
        if rule.when is None:
            default = default or rule
        elif all(key in arguments and equal(arguments[key], value) for key, value in rule.when.items()):
            return ToolResult(_copy(rule.result), latency_ms=_since(started))
    if default is not None:
        return ToolResult(_copy(default.result), latency_ms=_since(started))
    return failure(f"no mock result of {name!r} for the arguments {_json_text(arguments)}", started)


def _command(name: str, tool: Implementation, arguments: dict[str, Any], run: Any, timeout: float, started: float) -> ToolResult:
    from agenteval.process import JSONTooDeep, decode_json, max_output_bytes, resolve_command

    argv = resolve_command(tool.command or [])
    done = run.processes.run(argv, _json_text(arguments).encode(), timeout, run.base_dir, None, max_output_bytes(tool.max_output_mb))
    problem = done.failure(f"tool {name!r}", timeout)
    if problem:
        return failure(problem, started)
    try:
        return ToolResult(decode_json(done.stdout, run.answer_depth), latency_ms=_since(started))
    except JSONTooDeep as exc:
        return failure(f"tool {name!r} printed {exc}", started)
    except ValueError:
        return ToolResult(done.stdout.decode("utf-8", "replace").rstrip("\r\n"), latency_ms=_since(started))


_FUNCTIONS: dict[tuple[str, Path], Any] = {}  # (reference, suite folder) -> the function, or why it cannot be imported
_FUNCTIONS_LOCK = threading.Lock()


def _python(reference: str, arguments: dict[str, Any], base_dir: Path, timeout: float, started: float) -> ToolResult:
    """The function is imported once per run folder (importing a suite module runs it) on a helper
    thread, like every call, so neither a slow import nor a slow call holds the loop past `timeout`."""
    from agenteval.functions import HELPERS

    outcome = HELPERS.call(_call_function, (reference, base_dir, arguments), timeout)
    if outcome is None:
        return failure(f"{reference} took longer than its timeout of {timeout:g} s; the call was abandoned", started)
    value, raised = outcome
    if raised is not None:
        if isinstance(raised, SystemExit):
            return failure(f"{reference} called sys.exit({raised.code!r})", started)
        return failure(f"{reference} raised {type(raised).__name__}: {raised}", started)
    if isinstance(value, _ImportProblem):
        return failure(value.message, started)
    try:
        text = _json_text(value)
    except TypeError as exc:  # a Decimal, an integer beyond 64 bits, a dataclass...: read as the Python API reads them
        try:
            if isinstance(value, str):  # (a lone surrogate)
                raise ValueError(str(exc)) from None
            return ToolResult(_as_the_api_reads(value), latency_ms=_since(started))
        except (ValueError, RecursionError) as problem:
            return failure(f"{reference} returned a value with no JSON form: {problem}", started)
    return ToolResult(value if isinstance(value, str) else _loads(text), latency_ms=_since(started))


def _as_the_api_reads(value: Any) -> Any:
    """A tool's value through `agenteval.values.to_plain` (Decimals, numpy, dataclasses, dates), then
    as its JSON text reads back (an integer beyond 64 bits becomes the float JSON readers make of
    it). Raises ValueError (ValueNotPlain: no plain form; a lone surrogate) or RecursionError."""
    import json

    from agenteval.process import decode_json
    from agenteval.values import floats, to_plain

    plain = floats(to_plain(value))
    return plain if isinstance(plain, str) else decode_json(json.dumps(plain, ensure_ascii=False).encode())


@dataclass(frozen=True, slots=True)
class _ImportProblem:
    message: str


def _call_function(reference: str, base_dir: Path, arguments: dict[str, Any]) -> Any:
    """On a helper thread: import (first time), call with keyword arguments, await an awaitable."""
    import inspect

    from agenteval.functions import FunctionImportError, import_function

    key = (reference, base_dir)
    with _FUNCTIONS_LOCK:
        function = _FUNCTIONS.get(key)
        if function is None:
            try:
                function = import_function(reference, base_dir)
            except FunctionImportError as exc:
                function = _ImportProblem(f"python tool: {exc}")
            _FUNCTIONS[key] = function
    if isinstance(function, _ImportProblem):
        return function
    value = function(**arguments)
    if inspect.isawaitable(value):
        import asyncio

        async def awaited() -> Any:
            return await value

        value = asyncio.run(awaited())
    return value


def _http(name: str, http: HttpTool, arguments: dict[str, Any], run: Any, started: float) -> ToolResult:
    from agenteval.endpoints.client import EndpointError

    if run.endpoints is None:
        return failure(f"tool {name!r}: no HTTP client in this run", started)
    body, params = (arguments, None) if http.method == "POST" else (None, _query(arguments))
    try:
        url = run.endpoints.resolve(http.url)
        reply = run.endpoints.send(
            http, http.method, url, body, params=params, cache=bool(http.cache), variant=run.repetition, json_reply=False,
        )
    except EndpointError as exc:
        return failure(f"tool {name!r}: {exc}", started)
    return ToolResult(reply.data, latency_ms=_since(started))  # the tool's own secrets are `***` in it (Endpoints.send)


def _mcp(name: str, tool: McpTool, arguments: dict[str, Any], run: Any, timeout: float, started: float) -> ToolResult:
    from agenteval.agents.mcp_sessions import McpError, sessions

    try:
        result = sessions(run.processes).call(tool, run.base_dir, tool.tool or name, arguments, timeout, run.limits.pattern_seconds)
    except (McpError, ImportError) as exc:
        return failure(f"tool {name!r}: {exc}", started)
    except InterruptedError:
        return failure(f"tool {name!r}: the run is stopping", started)
    value, is_error = mcp_value(result, run.answer_depth)
    if is_error:
        return failure(f"tool {name!r} answered with an error: {value if isinstance(value, str) else _json_text(value)}", started)
    return ToolResult(value, latency_ms=_since(started))


def mcp_value(result: Any, depth: int | None = None) -> tuple[Any, bool]:
    """An MCP CallToolResult as a tool's value: its structured content when it has one, else one
    text block (as JSON when it is JSON), else its content blocks; and whether it is an error."""
    from agenteval.process import decode_json

    if result.structured_content is not None and not result.is_error:
        return result.structured_content, False
    blocks = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]
    if len(blocks) == 1 and blocks[0].get("type") == "text":
        text = blocks[0].get("text", "")
        try:
            return (text if result.is_error else decode_json(text.encode(), depth)), bool(result.is_error)
        except (ValueError, RecursionError):
            return text, bool(result.is_error)
    return blocks, bool(result.is_error)


def _query(arguments: dict[str, Any]) -> dict[str, str]:
    return {str(key): value if isinstance(value, str) else _json_text(value) for key, value in arguments.items()}


def _json_text(value: Any) -> str:
    import orjson

    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def _loads(text: str) -> Any:
    import orjson

    return orjson.loads(text)


def _copy(value: Any) -> Any:
    """A mock's result, not shared between the cases that get it."""
    return value if value is None or isinstance(value, (str, int, float, bool)) else _loads(_json_text(value))


def _since(started: float | None) -> float:
    return 0.0 if started is None else round((time.perf_counter() - started) * 1000, 3)

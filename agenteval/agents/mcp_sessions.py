"""Sessions with MCP servers, through the official MCP Python SDK (the `mcp` extra), for the tool
loop and the `mcp` target.

The SDK is async; a run's sessions live on one event-loop thread of their own, and the worker
threads call into it with timeouts. Each worker has its own session with each server (a stateful
server never mixes two cases' calls), started on first use and closed when the run ends or is
interrupted (`Processes.stop_all`). A stdio server is started by the run's `Processes` (its own
process group, killed with the run, what it started included) and read through a bounded line
reader: a server that floods stdout is stopped at `max_output_mb`, one that writes a line that is
not JSON-RPC is stopped at once, one that crashes or hangs is an error of the call, and the next
call starts it afresh.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agenteval.json_schemas import schema_problem
from agenteval.limits import DEFAULT_LIMITS
from agenteval.process import MIB, Processes, exit_code, kill_group, reap, resolve_command, stderr_tail

RESOURCE = "mcp-sessions"
MAX_PAGES = 100  # tools/list pages read at most: a server that pages forever is an error
_CLOSE_GRACE_S = 1.0


class McpError(Exception):
    """Why a session could not be had or a call did not come back: the message the model sees."""


@dataclass(frozen=True, slots=True)
class ServerTool:
    """One tool as the server lists it."""

    name: str
    description: str | None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None


def sessions(processes: Processes) -> McpSessions:
    """The run's sessions (made on first use, closed by `processes.stop_all()`). Raises
    MissingDependency (an ImportError naming the install) without the `mcp` extra."""
    from agenteval.extras import require

    require("mcp", "an MCP server")
    return processes.shared(RESOURCE, lambda: McpSessions(processes))


class McpSessions:
    """Every session of one run, on one event-loop thread (see the module docstring)."""

    def __init__(self, processes: Processes) -> None:
        self._processes = processes
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="agenteval-mcp", daemon=True)
        self._thread.start()
        self._sessions: dict[tuple[str, int], _Session] = {}
        self._lock = threading.Lock()
        self._closed = False

    def tools(self, server: Any, base_dir: Path, timeout: float) -> list[ServerTool]:
        """The server's tools (listed once per session). Raises McpError."""
        try:
            return self._session(server, base_dir).tools(self._loop, timeout)
        except McpError as exc:
            raise McpError(self._masked(str(exc), server)) from None

    def call(self, server: Any, base_dir: Path, tool: str, arguments: dict[str, Any], timeout: float,
             pattern_seconds: float = DEFAULT_LIMITS.pattern_seconds) -> Any:
        """One tools/call: the SDK's CallToolResult, its structured content checked against the tool's
        output schema (each pattern bounded by `pattern_seconds`), and any secret of the server's
        echoed in it `***`. Raises McpError."""
        try:
            result = self._session(server, base_dir).call(self._loop, tool, arguments, timeout, pattern_seconds)
        except McpError as exc:
            raise McpError(self._masked(str(exc), server)) from None
        return _without(result, _secrets(server, self._processes.environ))

    def _masked(self, message: str, server: Any) -> str:
        """The message with every secret of the server's (`_secrets`) as `***`."""
        for secret in _secrets(server, self._processes.environ):
            message = message.replace(secret, "***")
        return message

    def _session(self, server: Any, base_dir: Path) -> _Session:
        key = (server.key(), threading.get_ident())
        with self._lock:
            if self._closed:
                raise McpError("the run is stopping")
            session = self._sessions.get(key)
            if session is None or session.dead:
                session = self._sessions[key] = _Session(server, base_dir, self._processes)
            return session

    def close(self) -> None:
        """End every session (stdin closed, a moment's grace, then the process group killed) and the loop."""
        with self._lock:
            self._closed, open_sessions = True, list(self._sessions.values())
        for session in open_sessions:
            self._loop.call_soon_threadsafe(session.stop)
        stopped = asyncio.run_coroutine_threadsafe(_gathered([s.finished for s in open_sessions]), self._loop)
        try:
            stopped.result(_CLOSE_GRACE_S * 2)
        except (FutureTimeout, RuntimeError):
            pass
        for session in open_sessions:
            session.kill()
        try:
            asyncio.run_coroutine_threadsafe(_cancel_the_rest(), self._loop).result(_CLOSE_GRACE_S)
        except (FutureTimeout, RuntimeError):
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(_CLOSE_GRACE_S)


async def _gathered(waiters: list[Any]) -> None:
    for waiter in waiters:
        await waiter()


async def _cancel_the_rest() -> None:
    current = asyncio.current_task()
    rest = [task for task in asyncio.all_tasks() if task is not current]
    for task in rest:
        task.cancel()
    await asyncio.gather(*rest, return_exceptions=True)


class _Session:
    """One server for one worker: a task on the loop holds the transport and the SDK's session."""

    def __init__(self, server: Any, base_dir: Path, processes: Processes) -> None:
        self.server = server
        self.base_dir = base_dir
        self.processes = processes
        self.dead = False
        self.proc: Any = None
        self.stderr = bytearray()
        self.why: str | None = None  # why the connection ended, for the call's error
        self.http_said: str | None = None  # what an HTTP server's reply (or its absence) says went wrong: the whole of the error
        self._started: Any = None  # a concurrent future: (session, tools) once initialised
        self._start_lock = threading.Lock()
        self._stop: asyncio.Event | None = None
        self._done: asyncio.Event | None = None

    # -- from the worker threads

    def tools(self, loop: asyncio.AbstractEventLoop, timeout: float) -> list[ServerTool]:
        return self._ready(loop, timeout)[1]

    def call(self, loop: asyncio.AbstractEventLoop, tool: str, arguments: dict[str, Any], timeout: float, pattern_seconds: float) -> Any:
        session, tools = self._ready(loop, timeout)
        result = self._result(loop, session, tool, arguments, timeout)
        listed = next((item for item in tools if item.name == tool), None)
        if listed is not None and listed.output_schema is not None and not result.is_error:
            # checked here, with patterns bounded and no $ref outside the schema read (the SDK's own check is neither)
            if result.structured_content is None:
                raise McpError(f"tool {tool!r} has an output schema, and its result has no structured content")
            problem = schema_problem(result.structured_content, listed.output_schema, pattern_seconds)
            if problem:
                raise McpError(f"the result of {tool!r} does not match its output schema: {problem}")
        return result

    def _result(self, loop: asyncio.AbstractEventLoop, session: Any, tool: str, arguments: dict[str, Any], timeout: float) -> Any:
        future = asyncio.run_coroutine_threadsafe(self._call(session, tool, arguments, timeout), loop)
        try:
            return future.result(timeout + 1.0)
        except (FutureTimeout, TimeoutError):
            future.cancel()
            self.dead = True  # a server that hung is stopped; the next call starts it afresh
            loop.call_soon_threadsafe(self.stop)
            raise McpError(f"the MCP server did not answer within {timeout:g} s; it was stopped{self._tail()}") from None
        except McpError:
            raise
        except Exception as exc:  # noqa: BLE001 - the SDK's errors (a closed connection, a result of the wrong shape)
            message = self._explained(exc)
            if self.why is not None or self.http_said is not None or self.exited() is not None:
                self.dead = True  # the next call starts the server (a URL's: a session) afresh
                loop.call_soon_threadsafe(self.stop)
            raise McpError(message) from None

    def _ready(self, loop: asyncio.AbstractEventLoop, timeout: float) -> tuple[Any, list[ServerTool]]:
        with self._start_lock:
            if self._started is None:
                self._started = asyncio.run_coroutine_threadsafe(self._open(), loop)
        limit = max(timeout, self.server.startup_timeout)
        try:
            return self._started.result(limit)
        except (FutureTimeout, TimeoutError):
            self.dead = True
            loop.call_soon_threadsafe(self.stop)
            raise McpError(f"the MCP server did not start within {limit:g} s (startup_timeout){self._tail()}") from None
        except McpError:
            self.dead = True
            raise
        except Exception as exc:  # noqa: BLE001 - a server that cannot start is the call's error
            self.dead = True
            raise McpError(self._explained(exc, "could not start the MCP server")) from None

    def exited(self) -> int | None:
        """The stdio server's exit code once it has exited, left unreaped until `kill` has killed its group."""
        return exit_code(self.proc) if self.proc is not None else None

    def kill(self) -> None:
        """Kill the stdio server's process group, what it started included, and reap it."""
        if self.proc is not None:
            kill_group(self.proc)
            reap(self.proc)
            self.processes.forget(self.proc)

    # -- on the loop

    def stop(self) -> None:
        if self._stop is not None:
            self._stop.set()

    async def finished(self) -> None:
        if self._done is not None:
            await self._done.wait()

    async def _open(self) -> tuple[Any, list[ServerTool]]:
        """Start the task that holds the session open; answer once it has initialised and listed."""
        ready: asyncio.Future[tuple[Any, list[ServerTool]]] = asyncio.get_running_loop().create_future()
        self._stop, self._done = asyncio.Event(), asyncio.Event()
        asyncio.get_running_loop().create_task(self._hold(ready))
        return await ready

    async def _hold(self, ready: asyncio.Future[Any]) -> None:
        try:
            async with self._transport() as (read, write), _client_session()(read, write) as session:
                await session.initialize()
                ready.set_result((session, await _list_tools(session)))
                await self._stop.wait()  # type: ignore[union-attr]
        except BaseException as exc:  # noqa: BLE001 - a session that ends is reported to its callers
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else McpError("the MCP session was cancelled"))
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self.dead = True
            self.kill()
            self._done.set()  # type: ignore[union-attr]

    async def _call(self, session: Any, tool: str, arguments: dict[str, Any], timeout: float) -> Any:
        import anyio

        with anyio.fail_after(timeout):
            return await session.call_tool(tool, arguments, read_timeout_seconds=timeout)

    def _transport(self) -> Any:
        if self.server.url is not None:
            return _http_transport(self)
        return _stdio_transport(self)

    def _explained(self, exc: BaseException, what: str = "the MCP call failed") -> str:
        inner = _innermost(exc)
        if self.http_said is None and self.server.url is not None:
            self.http_said = _not_connected(inner, self.server, self.processes.environ)
        if self.http_said is not None:  # the SDK's own words add nothing to it (`MCPError: Not Found`, `ConnectError: All connection attempts failed`)
            return f"{what}: {self.http_said}"
        said = " ".join(line.strip() for line in str(inner).splitlines() if "errors.pydantic.dev" not in line)
        said = said if len(said) <= 500 else said[:500] + "..."
        text = f"{type(inner).__name__}: {said}" if said else type(inner).__name__
        code = self.exited()
        reason = self.why or (f"the server exited with code {code}" if code is not None else None)
        return f"{what}: {reason + '; ' if reason else ''}{text}{self._tail()}"

    def _tail(self) -> str:
        return stderr_tail(self.stderr)


def _secrets(server: Any, environ: Any) -> list[str]:
    """What must reach no message or result, longest first: every value `${NAME}` took in the
    server's url and headers, and its `env` values (a program may print them to its stderr)."""
    from agenteval.endpoints.settings import MissingEnvironment, substituted_values

    texts = [server.url or "", *(server.headers or {}).values(), *(server.env or {}).values()]
    found = {value for text in texts for value in substituted_values(text, environ)}
    try:
        found |= set(server.resolved_env(environ).values())
    except MissingEnvironment:
        pass
    return sorted((secret for secret in found if len(secret.strip()) >= 4), key=len, reverse=True)  # (shorter: flags, as redact takes them)


def _without(result: Any, secrets: list[str]) -> Any:
    """A CallToolResult with each secret in its text and structured content as `***` (a server that
    echoes the token it was sent passes it to no answer or report)."""
    if not secrets:
        return result
    from agenteval.endpoints.client import redact, redact_reply

    blocks = [block.model_copy(update={"text": redact(block.text, secrets)}) if isinstance(getattr(block, "text", None), str) else block
              for block in result.content]
    structured = redact_reply(result.structured_content, secrets) if result.structured_content is not None else None
    return result.model_copy(update={"content": blocks, "structured_content": structured})


@functools.cache
def _client_session() -> Any:
    """The SDK's ClientSession, less its check of a tool's result against the tool's output schema:
    with Python's `re` a server's `pattern` can hold the process for good (`_Session.call` checks it, bounded)."""
    from mcp import ClientSession

    class Session(ClientSession):  # type: ignore[misc]
        async def validate_tool_result(self, name: str, result: Any) -> None:
            return None

    return Session


def _innermost(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (anyio's task groups wrap what went wrong)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


async def _list_tools(session: Any) -> list[ServerTool]:
    from mcp_types import PaginatedRequestParams

    found: list[ServerTool] = []
    cursor = None
    for _ in range(MAX_PAGES):
        page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
        found.extend(ServerTool(t.name, t.description, dict(t.input_schema), t.output_schema) for t in page.tools)
        cursor = page.next_cursor
        if not cursor:
            return found
    raise McpError(f"the server's tools/list went on past {MAX_PAGES} pages")


def _http_transport(owner: _Session) -> Any:
    """The SDK's streamable-HTTP transport. A reply to a request that is an HTTP error, or is not
    MCP at all (an HTML page), makes the call's error name the status, the URL as the suite writes
    it and what to check (`_http_problem`; the SDK's says only "Server returned an error response"
    or "Unexpected content type"); the SDK's log of a reply it cannot parse stays off stderr. A reply
    other than an event stream (whose events the SDK bounds) is read to at most `max_output_mb`: the
    SDK reads a JSON reply, or an error's body, whole into memory."""
    import logging

    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    from agenteval.endpoints.settings import substitute_env

    server, environ = owner.server, owner.processes.environ
    limit = int(server.max_output_mb * MIB)

    async def capped(response: Any) -> None:
        if not response.headers.get("content-type", "").lower().startswith("text/event-stream"):
            response.stream = _Capped(response.stream, limit)

    async def told(response: Any) -> None:
        if owner.http_said is None and response.request.method == "POST":
            try:
                owner.http_said = await _http_problem(response, server, environ)
            except _ReplyTooLarge as exc:
                owner.http_said = f"{_status(response, server)}: {exc}"
            except Exception:  # noqa: BLE001 - a reply that cannot be read: the SDK's error says so
                pass

    logging.getLogger("mcp.client.streamable_http").setLevel(logging.CRITICAL)
    client = create_mcp_http_client(headers=server.resolved_headers(environ))
    client.event_hooks["response"] += [capped, told]
    return streamable_http_client(substitute_env(server.url, environ), http_client=client, max_sse_event_size=int(server.max_output_mb * MIB))


class _ReplyTooLarge(Exception):
    """A reply longer than `max_output_mb`: read no further."""


def _Capped(stream: Any, limit: int) -> Any:  # noqa: N802 - builds an instance of the class `_capped_stream` makes
    """`stream` (an HTTP reply's body), raising _ReplyTooLarge once more than `limit` bytes are read."""
    return _capped_stream()(stream, limit)


@functools.cache
def _capped_stream() -> type:
    """The class of `_Capped`'s streams, made once (httpx2 comes with the SDK, imported on first use)."""
    import httpx2

    class Capped(httpx2.AsyncByteStream):
        def __init__(self, stream: Any, limit: int) -> None:
            self.stream, self.limit = stream, limit

        async def __aiter__(self) -> Any:
            seen = 0
            async for chunk in self.stream:
                seen += len(chunk)
                if seen > self.limit:
                    raise _ReplyTooLarge(f"the reply is larger than {self.limit / MIB:g} MiB (max_output_mb); it was not read further")
                yield chunk

        async def aclose(self) -> None:
            await self.stream.aclose()

    return Capped


_REPLY_EXCERPT = 120  # characters of a reply that is not MCP shown in the error
_REPLY_READ = 1 << 16  # bytes of such a reply read for it


async def _http_problem(response: Any, server: Any, environ: Any) -> str | None:
    """What a reply to one POST says went wrong, as the call's error; None for a reply the SDK reads
    (JSON-RPC, an event stream, a 202), for an error status whose body is a JSON-RPC error (the
    server's own words, which the SDK passes on), and for a reply to a notification (the SDK ignores it)."""
    from contextlib import aclosing

    import orjson

    status = response.status_code
    if status in (401, 403):
        return f"{_status(response, server)}: check the credentials in the server's `headers`"
    if status == 202 or 300 <= status < 400 or not _is_request(response.request):  # (a redirect: the SDK's words name the place)
        return None
    kind = response.headers.get("content-type", "")
    if status >= 400:
        if kind.lower().startswith("application/json") and _small(response) and _json_rpc_error(await response.aread()):
            return None
        if status == 404:
            if response.request.headers.get("mcp-session-id"):
                return f"{_status(response, server)}: the server no longer knows this session (it may have restarted); the next call starts another"
            return f"{_status(response, server)}: check the path: MCP servers usually serve at /mcp"
        if status == 405:
            return f"{_status(response, server)}: it takes no POST there: check the path: MCP servers usually serve streamable HTTP at /mcp"
        if status >= 500:
            return f"{_status(response, server)}: the server failed; its own log says why"
        return f"{_status(response, server)}: the server refused the request"
    if kind.lower().startswith("text/event-stream"):
        return None
    if kind.lower().startswith("application/json"):
        body = await response.aread()  # (kept: the SDK reads it again from memory)
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError:
            return f"{_status(response, server)}: the reply is not MCP (content type application/json, but not JSON: {_excerpt(body, server, environ)!r})"
        if isinstance(message, dict) and not (message.get("jsonrpc") == "2.0" and {"result", "error", "method"} & message.keys()):
            return f"{_status(response, server)}: the reply is not MCP (JSON that is no JSON-RPC message: {_excerpt(body, server, environ)!r})"
        return None
    body = bytearray()
    async with aclosing(response.aiter_bytes()) as chunks:  # (the SDK reads none of it)
        async for chunk in chunks:
            body += chunk
            if len(body) >= _REPLY_READ:
                break
    shown = f": {_excerpt(bytes(body), server, environ)!r}" if body.strip() else ", empty"
    return (f"{_status(response, server)}: the reply is not MCP (content type {kind or 'none'}{shown}): "
            "check that the URL is the server's MCP endpoint, usually at /mcp")


def _status(response: Any, server: Any) -> str:
    """`HTTP 404 Not Found from URL`, the URL as the suite writes it (`${NAME}` unread)."""
    from http import HTTPStatus

    try:
        phrase = HTTPStatus(response.status_code).phrase
    except ValueError:
        phrase = response.reason_phrase or ""
    return f"HTTP {response.status_code}{' ' + phrase if phrase else ''} from {server.url}"


def _is_request(request: Any) -> bool:
    """Whether a POST carries a JSON-RPC request (one that has an `id`), not a notification."""
    import orjson

    try:
        message = orjson.loads(request.content)
    except (orjson.JSONDecodeError, RuntimeError):  # (RuntimeError: a streamed body, which the SDK never sends)
        return True
    return not isinstance(message, dict) or message.get("id") is not None


def _small(response: Any) -> bool:
    """Whether an error reply says it is at most `_REPLY_READ` bytes long: only such a body is read
    for the server's own JSON-RPC error (a server's errors are short, and say their length); any
    other is told by its status alone, never read whole into memory."""
    length = response.headers.get("content-length", "")
    return length.isdigit() and int(length) <= _REPLY_READ


def _json_rpc_error(body: bytes) -> bool:
    import orjson

    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    return isinstance(message, dict) and isinstance(message.get("error"), dict)


def _excerpt(body: bytes, server: Any, environ: Any) -> str:
    """The start of a reply, its secrets `***` (before it is cut: a cut one would not match)."""
    from agenteval.endpoints.client import excerpt, redact

    return excerpt(redact(body[:_REPLY_READ].decode("utf-8", "replace"), _secrets(server, environ)), _REPLY_EXCERPT)


def _not_connected(exc: BaseException, server: Any, environ: Any) -> str | None:
    """A server that could not be reached because nothing listens at its port: what to check."""
    from urllib.parse import urlsplit

    from agenteval.endpoints.settings import MissingEnvironment, substitute_env

    seen: BaseException | None = exc
    for _ in range(16):  # (httpx's ConnectError <- httpcore's <- OSError <- ConnectionRefusedError)
        if seen is None or isinstance(seen, ConnectionRefusedError):
            break
        seen = seen.__cause__ or seen.__context__
    if not isinstance(seen, ConnectionRefusedError):
        return None
    try:
        parts = urlsplit(substitute_env(server.url, environ))
        where = f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}"
    except (MissingEnvironment, ValueError):
        return None
    return f"connection refused at {server.url}: nothing is listening at {where}; is the server started?"


class _stdio_transport:  # noqa: N801 - used as an async context manager, like the SDK's own transports
    """The server as a child of the run's `Processes`, JSON-RPC lines both ways, each line at most
    `max_output_mb` (a longer one ends the session), stderr kept as a tail for the errors."""

    def __init__(self, owner: _Session) -> None:
        self.owner = owner
        self.tasks: list[asyncio.Task[Any]] = []

    async def __aenter__(self) -> tuple[Any, Any]:
        import anyio

        from agenteval.endpoints.settings import MissingEnvironment

        owner, server = self.owner, self.owner.server
        argv = resolve_command(list(server.command))
        try:
            owner.proc = owner.processes.start(argv, owner.base_dir, server.resolved_env(owner.processes.environ))
        except MissingEnvironment as exc:
            raise McpError(f"could not start the MCP server {argv[0]}: env: {exc}") from None
        except (OSError, ValueError, InterruptedError) as exc:
            raise McpError(f"could not start the MCP server {argv[0]}: {exc}") from None
        loop = asyncio.get_running_loop()
        limit = int(server.max_output_mb * MIB)
        reader = asyncio.StreamReader(limit=limit, loop=loop)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), owner.proc.stdout)
        errors = asyncio.StreamReader(loop=loop)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(errors, loop=loop), owner.proc.stderr)
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, owner.proc.stdin)
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        self.read_in, self.read_out = anyio.create_memory_object_stream[Any](0)
        self.write_in, self.write_out = anyio.create_memory_object_stream[Any](0)
        self.writer = writer
        self.tasks = [
            loop.create_task(self._read(reader, limit)),
            loop.create_task(self._write(writer)),
            loop.create_task(self._drain_stderr(errors)),
        ]
        return self.read_out, self.write_in

    async def __aexit__(self, *exc: object) -> None:
        try:
            self.writer.close()  # stdin closed: a well-behaved server exits
        except (OSError, RuntimeError):
            pass
        for _ in range(int(_CLOSE_GRACE_S / 0.05)):
            if self.owner.exited() is not None:
                break
            await asyncio.sleep(0.05)
        self.owner.kill()
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    async def _read(self, reader: asyncio.StreamReader, limit: int) -> None:
        from mcp.shared.message import SessionMessage
        from mcp_types import jsonrpc_message_adapter

        owner = self.owner
        async with self.read_in:
            while True:
                try:
                    line = await reader.readuntil(b"\n")
                except asyncio.IncompleteReadError:
                    code = await self._exit_code()
                    owner.why = owner.why or (f"the server closed its stdout (exit code {code})" if code is not None else "the server closed its stdout")
                    return
                except (asyncio.LimitOverrunError, ValueError):
                    owner.why = f"the server wrote a message larger than {limit / MIB:g} MiB (max_output_mb); it was stopped"
                    owner.kill()
                    return
                if not line.strip():
                    continue
                try:
                    message = SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
                except ValueError:  # (the SDK would drop it, and the call it answered would wait out its timeout)
                    owner.why = f"the server's reply could not be read as JSON-RPC: {self._excerpt(line)!r}; it was stopped"
                    owner.kill()
                    return
                await self.read_in.send(message)

    def _excerpt(self, line: bytes) -> str:
        """The start of a line the server wrote, its secrets `***` (before it is cut: a cut one would not match)."""
        from agenteval.endpoints.client import excerpt, redact

        server, environ = self.owner.server, self.owner.processes.environ
        return excerpt(redact(line[: 1 << 16].decode("utf-8", "replace"), _secrets(server, environ)))

    async def _exit_code(self) -> int | None:
        """The server's exit code once its stdout has closed (None if it lives on past a moment),
        after its stderr has been read to the end: the call's error names both."""
        for _ in range(100):
            if self.owner.exited() is not None:
                break
            await asyncio.sleep(0.01)
        await asyncio.wait([self.tasks[2]], timeout=0.5)
        return self.owner.exited()

    async def _write(self, writer: asyncio.StreamWriter) -> None:
        async with self.write_out:
            async for message in self.write_out:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                try:
                    writer.write(data.encode())
                    await writer.drain()
                except (OSError, RuntimeError):
                    self.owner.why = self.owner.why or "the server's stdin is closed"
                    await self.read_in.aclose()
                    return

    async def _drain_stderr(self, errors: asyncio.StreamReader) -> None:
        kept = self.owner.stderr
        while chunk := await errors.read(1 << 16):
            kept.extend(chunk)
            if len(kept) > 64 * 1024:
                del kept[: len(kept) - 16 * 1024]

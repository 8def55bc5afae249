"""An MCP server (stdio, JSON-RPC written by hand) that misbehaves on purpose, for the tests:
each tool is one fault. `crash` exits mid-call, `hang` never answers, `flood` writes a 100 MB
line, `malformed` answers with a result of the wrong shape, `garbage` answers with a line that is not JSON,
`not_jsonrpc` with JSON that is no JSON-RPC message, `orphan` starts two children that outlive it (one holding
its pipes, one not), answers their pids and exits, `echo` answers well, `pid` says its process id. With
`HOSTILE_MANY_TOOLS=N` it lists N tools (echo_0 ... echo_N-1) besides those. With `HOSTILE_SCHEMAS=1` it also
lists tools whose schemas are the fault: `backtrack` (an output `pattern` Python's `re` would backtrack on for
good), `wrong_shape` (a result its output schema refuses) and `far_ref` (an input schema whose `$ref` is a URL,
`HOSTILE_REF_URL`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

FAULTS = ("crash", "hang", "flood", "malformed", "garbage", "not_jsonrpc", "orphan", "echo", "pid")


def tools() -> list[dict]:
    listed = [{"name": name, "description": f"the {name} fault", "inputSchema": {"type": "object"}} for name in FAULTS]
    many = int(os.environ.get("HOSTILE_MANY_TOOLS", "0"))
    listed += [{"name": f"echo_{n}", "inputSchema": {"type": "object"}} for n in range(many)]
    if os.environ.get("HOSTILE_SCHEMAS"):
        listed += [
            {"name": "backtrack", "inputSchema": {"type": "object"},
             "outputSchema": {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}},
            {"name": "wrong_shape", "inputSchema": {"type": "object"},
             "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
            {"name": "far_ref", "inputSchema": {"type": "object", "properties": {
                "q": {"$ref": os.environ.get("HOSTILE_REF_URL", "http://127.0.0.1:9/schema.json")}}}},
        ]
    return listed


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def call(request_id: object, name: str, arguments: dict) -> None:
    if name == "crash":
        sys.stderr.write("hostile server: crashing mid-call\n")
        sys.stderr.flush()
        os._exit(3)
    if name == "hang":
        time.sleep(3600)
    if name == "flood":
        chunk = "x" * (1 << 20)
        sys.stdout.write('{"jsonrpc": "2.0", "id": ' + json.dumps(request_id) + ', "result": {"content": [{"type": "text", "text": "')
        for _ in range(100):
            sys.stdout.write(chunk)
        sys.stdout.write('"}]}}\n')
        sys.stdout.flush()
        return
    if name == "malformed":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"content": "not a list of blocks", "isError": "perhaps"}})
        return
    if name == "garbage":
        sys.stdout.write("debug: " + "x" * 5000 + "\n")  # a print() left in, where its reply should be
        sys.stdout.flush()
        return
    if name == "not_jsonrpc":
        send({"jsonrpc": "2.0", "id": request_id, "answer": 42})
        return
    if name == "orphan":
        linger = [sys.executable, __file__, "linger"]
        children = [subprocess.Popen(linger), subprocess.Popen(linger, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                                stderr=subprocess.DEVNULL)]
        send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [], "structuredContent": {
            "children": [child.pid for child in children]}}})
        os._exit(0)
    if name in ("backtrack", "wrong_shape"):
        structured = {"s": "a" * 40 + "!"} if name == "backtrack" else {"n": "seven"}
        send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [], "structuredContent": structured}})
        return
    said = {"pid": os.getpid()} if name == "pid" else {"echo": arguments}
    send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": json.dumps(said)}]}})


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue  # a notification
        if method == "initialize":
            version = message["params"]["protocolVersion"]
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": {"name": "hostile", "version": "1"}}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": tools()}})
        elif method == "tools/call":
            call(request_id, message["params"]["name"], message["params"].get("arguments") or {})
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"no method {method}"}})


if __name__ == "__main__":
    if sys.argv[1:] == ["linger"]:  # a child of `orphan`'s
        time.sleep(3600)
    else:
        main()

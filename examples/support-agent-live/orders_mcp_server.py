"""The order tools of this example as an MCP server (the MCP Python SDK's low-level server): the
same `get_order` and `refund_order` as the suite's `tools:`, with the same descriptions, schemas
and answers, read from suite.yaml, so the agent is told and answered exactly as with the mocks.

    python orders_mcp_server.py                 # stdio (what `tools: [{mcp: {command: ...}}]` starts)
    python orders_mcp_server.py --http 8765     # streamable HTTP at http://127.0.0.1:8765/mcp
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import yaml
from mcp.server.lowlevel import Server

SUITE = Path(__file__).with_name("suite.yaml")


def _tools() -> dict[str, dict[str, Any]]:
    return {tool["name"]: tool for tool in yaml.safe_load(SUITE.read_text())["target"]["tools"]}


TOOLS = _tools()


def answer(name: str, arguments: dict[str, Any]) -> Any:
    """The first rule whose `when` arguments all equal the call's, else the rule without `when`."""
    rules = TOOLS[name]["mock"]
    for rule in rules:
        if "when" in rule and all(arguments.get(key) == value for key, value in rule["when"].items()):
            return rule["result"]
    return next(rule["result"] for rule in rules if "when" not in rule)


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[
        types.Tool(name=name, description=tool["description"], input_schema=tool["parameters"]) for name, tool in TOOLS.items()
    ])


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    import json

    if params.name not in TOOLS:
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"no tool {params.name}")], is_error=True)
    result = answer(params.name, params.arguments or {})
    return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(result))], structured_content=result)


server = Server("acme-orders", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio() -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:
        import uvicorn

        uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    else:
        import anyio

        anyio.run(serve_stdio)

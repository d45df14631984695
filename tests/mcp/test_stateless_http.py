"""Tool calls on the stateless (2026-07-28) streamable HTTP path, through the real HTTP app in
memory: each call costs its tool, not a listing of every tool."""

from __future__ import annotations

import json
from typing import Any

import httpx2 as httpx
import mcp.types as mt
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext

from lithos.app import LithosApp
from lithos.config import ServerConfig
from lithos.mcp.server import create_server, http_app

PROTOCOL = "2026-07-28"


class CountListings(Middleware):
    def __init__(self) -> None:
        self.listings = 0

    async def on_list_tools(
        self, context: MiddlewareContext[mt.ListToolsRequest], call_next: CallNext[Any, Any]
    ) -> Any:
        self.listings += 1
        return await call_next(context)


def tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    params = {"name": name, "arguments": arguments, "_meta": meta}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


async def test_a_stateless_call_with_arguments_does_not_list_every_tool(app: LithosApp):
    """The MCP SDK checks Mcp-Param-* headers against the called tool's input schema; without
    a schema lookup it ran the whole tools/list (every schema dereferenced) for each call."""
    server = create_server(app)
    counter = CountListings()
    server.add_middleware(counter)
    settings = ServerConfig(port=8765, json_response=True)
    asgi = http_app(server, settings)
    headers = {
        "Accept": "application/json, text/event-stream",
        "Mcp-Protocol-Version": PROTOCOL,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "lithos_write",
    }
    transport = httpx.ASGITransport(app=asgi)
    base = "http://127.0.0.1:8765"
    async with (
        asgi.router.lifespan_context(asgi),
        httpx.AsyncClient(transport=transport, base_url=base) as web,
    ):
        before = counter.listings
        args = {"agent": "a", "title": "Stateless", "content": "written without a session"}
        written = await web.post("/mcp", json=tool_call("lithos_write", args), headers=headers)
        note_id = json.loads(written.text)["result"]["structuredContent"]["id"]
        headers["Mcp-Name"] = "lithos_read"
        for _ in range(3):
            read = await web.post(
                "/mcp", json=tool_call("lithos_read", {"id": note_id}), headers=headers
            )
            assert read.status_code == 200
            assert json.loads(read.text)["result"]["structuredContent"]["title"] == "Stateless"
        assert counter.listings == before

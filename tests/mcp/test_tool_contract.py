"""Every registered tool, including ones added later, is held to the same published contract:
described arguments, behaviour hints and a typed (non-open) output schema."""

from __future__ import annotations

import inspect
import json
from typing import Any

from fastmcp import Client
from fastmcp.tools import Tool
from fastmcp.utilities.json_schema import dereference_refs
from pydantic import BaseModel

from lithos.app import LithosApp
from lithos.mcp.registry import LithosTool
from lithos.mcp.server import create_server
from tests.support import call


def _open_object(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "object" and not schema.get("properties")


async def test_every_tool_argument_has_a_description(client: Client):
    missing = [
        f"{tool.name}.{name}"
        for tool in await client.list_tools()
        for name, prop in tool.input_schema.get("properties", {}).items()
        if not str(prop.get("description", "")).strip()
    ]
    assert missing == []


async def test_every_tool_declares_its_behaviour_hints_and_a_closed_world(client: Client):
    for tool in await client.list_tools():
        hints = tool.annotations
        assert hints is not None, tool.name
        assert hints.read_only_hint is not None, tool.name
        assert hints.destructive_hint is not None, tool.name
        assert hints.idempotent_hint is not None, tool.name
        assert hints.open_world_hint is False, tool.name
        if hints.read_only_hint:
            assert not hints.destructive_hint, tool.name


async def test_every_tool_publishes_a_typed_output_schema(client: Client):
    for tool in await client.list_tools():
        schema = tool.output_schema
        assert schema is not None, tool.name
        assert not _open_object(schema), tool.name
        assert schema.get("required"), tool.name


async def test_read_tools_are_marked_read_only_and_delete_destructive(client: Client):
    tools = {tool.name: tool.annotations for tool in await client.list_tools()}
    assert tools["lithos_search"].read_only_hint is True  # type: ignore[union-attr]
    assert tools["lithos_stats"].read_only_hint is True  # type: ignore[union-attr]
    assert tools["lithos_delete"].destructive_hint is True  # type: ignore[union-attr]
    assert tools["lithos_write"].read_only_hint is False  # type: ignore[union-attr]


async def test_an_error_envelope_is_text_so_no_client_checks_it_against_the_output_schema(
    client: Client,
):
    """structuredContent must match the output schema; TypeScript SDK clients validate it even
    on isError results (and then drop the answer), so the envelope travels as JSON text."""
    result = await client.call_tool("lithos_read", {"id": "not-a-uuid"}, raise_on_error=False)
    assert result.is_error
    assert result.structured_content is None
    envelope = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert envelope["status"] == "error" and envelope["code"] == "invalid_input"


async def test_an_unknown_tool_answers_with_the_error_envelope(client: Client):
    reply = await call(client, "lithos_no_such_tool", x=1)
    assert reply["status"] == "error" and reply["code"] == "unknown_tool"
    assert "lithos_no_such_tool" in reply["message"]


async def test_the_header_check_sees_each_tools_input_schema_as_tools_list_shows_it(
    app: LithosApp,
):
    server = create_server(app)
    lookup = server._mcp_server.get_tool_input_schema
    assert lookup is not None
    async with Client(server) as client:
        listed = {tool.name: tool.input_schema for tool in await client.list_tools()}
        assert {name: lookup(name) for name in listed} == listed
        assert lookup("lithos_no_such_tool") is None


async def test_each_tool_is_described_by_its_handlers_whole_docstring(app: LithosApp):
    """Tools are built without FastMCP's docstring parse (Lithos's docstrings have no
    argument sections): the description is still the whole docstring, which the handler
    keeps."""
    server = create_server(app)
    tools = await server.list_tools(run_middleware=False)
    assert len(tools) > 30
    for tool in tools:
        assert isinstance(tool, LithosTool), tool.name
        doc = inspect.getdoc(tool.fn)
        assert doc, tool.name
        assert tool.description == doc, tool.name


def _refs(schema: dict[str, Any] | None) -> bool:
    text = json.dumps(schema)
    return '"$ref"' in text or '"$defs"' in text


async def test_tools_list_shows_every_schema_with_refs_inlined_the_same_on_every_listing(
    app: LithosApp,
):
    server = create_server(app)
    raw = {tool.name: tool for tool in await server.list_tools(run_middleware=False)}
    assert any(_refs(tool.output_schema) for tool in raw.values())  # so inlining is tested
    async with Client(server) as client:
        first = await client.list_tools()
        again = await client.list_tools()
    assert [tool.model_dump() for tool in first] == [tool.model_dump() for tool in again]
    for tool in first:
        assert not _refs(tool.input_schema) and not _refs(tool.output_schema), tool.name
        assert tool.output_schema == dereference_refs(raw[tool.name].output_schema or {})


class Point(BaseModel):
    x: int
    y: int


async def test_a_tool_added_or_replaced_after_a_listing_is_listed_with_refs_inlined(
    app: LithosApp,
):
    server = create_server(app)

    def lithos_probe(point: Point) -> Point:
        """Echo a point."""
        return point

    async with Client(server) as client:
        await client.list_tools()
        server.add_tool(Tool.from_function(lithos_probe))
        listed = {tool.name: tool for tool in await client.list_tools()}
        assert not _refs(listed["lithos_probe"].input_schema)
        assert listed["lithos_probe"].input_schema["properties"]["point"]["properties"] == {
            "x": {"type": "integer"},
            "y": {"type": "integer"},
        }
        server.add_tool(Tool.from_function(lithos_probe, description="Echo it again."))
        listed = {tool.name: tool for tool in await client.list_tools()}
        assert listed["lithos_probe"].description == "Echo it again."

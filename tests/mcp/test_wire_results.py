"""Lithos's own result conversion sends what FastMCP's generic one would, and the compiled
argument-schema check refuses exactly what jsonschema refuses."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from fastmcp import Client
from fastmcp.server.mixins.mcp_operations import _normalize_call_tool_result
from fastmcp.tools import FunctionTool

from lithos.app import LithosApp
from lithos.errors import InvalidInput
from lithos.mcp.envelope import ArgumentSchema
from lithos.mcp.registry import LithosTool
from lithos.mcp.server import create_server
from tests.support import call

# How the MCP SDK dumps a tool's result before it encodes it.
WIRE = {"by_alias": True, "mode": "json", "exclude_none": True}


async def _raw_results(app: LithosApp, client: Client) -> dict[str, tuple[dict[str, Any], Any]]:
    """Arguments and the handler's own return value of several tools, over real notes."""
    written = await call(
        client,
        "lithos_write",
        agent="a",
        title="Ünïcödé “quotes” \\ and </script>",
        content='Line one.\n\nSee [[Other]]. Tabs\tand emoji 🪨 and "quotes".',
        tags=["x", "y"],
    )
    await call(client, "lithos_write", agent="b", title="Other", content="Plain.")
    server = create_server(app)
    calls: dict[str, dict[str, Any]] = {
        "lithos_read": {"id": written["id"]},
        "lithos_list": {"limit": 10},
        "lithos_stats": {},
        "lithos_tags": {},
        "lithos_search": {"query": "quotes", "mode": "fulltext"},
    }
    results = {}
    for name, arguments in calls.items():
        tool = await server.get_tool(name)
        assert isinstance(tool, LithosTool), name
        results[name] = (arguments, await tool.fn(**arguments))
    return results


async def test_each_result_is_sent_as_fastmcps_generic_conversion_would_send_it(
    app: LithosApp, client: Client
):
    server = create_server(app)
    raws = await _raw_results(app, client)
    tools = {name: await server.get_tool(name) for name in raws}
    # Every result converted before any is compared: a later conversion changes no earlier one.
    converted = {name: tools[name].convert_result(raw) for name, (_, raw) in raws.items()}
    for name, (_, raw) in raws.items():
        tool = tools[name]
        assert isinstance(tool, LithosTool)
        ours = converted[name]
        generic = FunctionTool.convert_result(tool, raw)
        assert (ours.meta, ours.is_error) == (generic.meta, generic.is_error), name
        assert ours.structured_content == generic.structured_content, name
        assert ours.content == generic.content, name
        assert json.loads(ours.content[0].text) == ours.structured_content, name  # type: ignore[union-attr]
        sent = _normalize_call_tool_result(ours.to_mcp_result())
        expected = _normalize_call_tool_result(generic.to_mcp_result())
        assert sent.model_dump(**WIRE) == expected.model_dump(**WIRE), name
        assert sent.model_dump() == expected.model_dump(), name


async def test_a_client_gets_the_structured_result_and_the_same_json_as_text(client: Client):
    written = await call(client, "lithos_write", agent="a", title="T", content="Body 🪨.")
    result = await client.call_tool("lithos_read", {"id": written["id"]})
    assert result.structured_content is not None
    assert result.structured_content["content"].strip() == "Body 🪨."
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]


_PROBES: list[Any] = [None, True, 0, -1, 1.5, 2**40, "", "x", " ", "x" * 5000, [], ["x"], [1], {}]
_PROBES += [{"a": 1}, [""] * 200, "2026-01-01", "not-a-time"]


async def test_the_compiled_check_refuses_exactly_what_jsonschema_refuses(client: Client):
    checked = 0
    for tool in await client.list_tools():
        schema = tool.input_schema
        check = ArgumentSchema(schema)
        reference = jsonschema.Draft202012Validator(schema)
        probes: list[dict[str, Any]] = [{}, {"unknown_argument": 1}]
        probes += [{name: value} for name in schema.get("properties", {}) for value in _PROBES]
        for arguments in probes:
            errors = list(reference.iter_errors(arguments))
            if errors:
                with pytest.raises(InvalidInput):
                    check.check(arguments)
            else:
                check.check(arguments)
            checked += 1
    assert checked > 1000

"""The tools' schemas kept between starts: a server built from them publishes the same
tools/list, byte for byte, as one that built them, and a missing, broken, stale or partial
file is ignored and written again."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from lithos.app import LithosApp
from lithos.mcp.registry import LithosTool
from lithos.mcp.server import create_server
from lithos.mcp.tool_schemas import StoredToolSchemas, ToolSchemas, schema_key, source_digest
from tests.support import call


async def listed(app: LithosApp) -> str:
    """tools/list as a client receives it, as JSON text."""
    async with Client(create_server(app)) as client:
        result = await client.session.list_tools()
    return json.dumps(result.model_dump(mode="json", by_alias=True, exclude_none=True))


def stored(app: LithosApp) -> dict[str, Any]:
    return json.loads(app.tool_schemas_path.read_text(encoding="utf-8"))


def store(app: LithosApp, content: dict[str, Any]) -> None:
    app.tool_schemas_path.write_text(json.dumps(content), encoding="utf-8")


async def test_a_server_built_from_stored_schemas_lists_the_same_tools_byte_for_byte(
    app: LithosApp,
):
    assert not app.tool_schemas_path.exists()
    built = await listed(app)
    kept = stored(app)
    assert kept["key"] == schema_key()
    assert len(kept["tools"]) > 30
    assert await listed(app) == built


async def test_tools_made_from_stored_schemas_equal_the_built_ones(app: LithosApp):
    built = await create_server(app).list_tools(run_middleware=False)
    assert app.tool_schemas_path.exists()
    made = await create_server(app).list_tools(run_middleware=False)
    assert [tool.model_dump(exclude={"fn"}) for tool in made] == [
        tool.model_dump(exclude={"fn"}) for tool in built
    ]
    assert all(isinstance(tool, LithosTool) for tool in [*made, *built])
    handlers = [
        [tool.fn for tool in tools if isinstance(tool, LithosTool)] for tools in (made, built)
    ]
    assert handlers[0] != handlers[1]  # registered anew


async def test_a_tool_made_from_stored_schemas_validates_and_answers_calls(app: LithosApp):
    await listed(app)
    async with Client(create_server(app)) as client:
        written = await call(client, "lithos_write", agent="a", title="Heron", content="A bird.")
        assert written["status"] == "created"
        found = await call(client, "lithos_search", query="heron")
        assert [hit["id"] for hit in found["results"]] == [written["id"]]
        refused = await call(client, "lithos_search", query="heron", limit=0)
        assert refused["status"] == "error" and refused["code"] == "invalid_input"


async def test_schemas_stored_under_another_key_are_ignored_and_written_again(app: LithosApp):
    built = await listed(app)
    kept = stored(app)
    kept["key"]["source"] = "0" * 32
    for schemas in kept["tools"].values():
        schemas["parameters"] = {"type": "object", "properties": {}}
    store(app, kept)
    assert await listed(app) == built
    assert stored(app)["key"] == schema_key()
    assert stored(app)["tools"]["lithos_search"]["parameters"]["properties"]


@pytest.mark.parametrize(
    "content",
    ["not json {", "[]", '{"key": 1}', "", "\x00\x01"],
    ids=["truncated", "a list", "no tools", "empty", "binary"],
)
async def test_a_broken_file_is_ignored_and_written_again(app: LithosApp, content: str):
    built = await listed(app)
    app.tool_schemas_path.write_text(content, encoding="utf-8")
    assert await listed(app) == built
    assert stored(app)["key"] == schema_key()


async def test_a_tool_the_file_does_not_hold_or_holds_malformed_is_built(app: LithosApp):
    built = await listed(app)
    kept = stored(app)
    del kept["tools"]["lithos_search"]
    kept["tools"]["lithos_read"] = {"parameters": "not a schema", "output_schema": None}
    del kept["tools"]["lithos_list"]["output_schema"]
    kept["tools"]["lithos_tags"]["listed"]["output_schema"] = None
    store(app, kept)
    assert await listed(app) == built
    rewritten = stored(app)["tools"]
    assert {"lithos_search", "lithos_read", "lithos_list", "lithos_tags"} <= set(rewritten)
    assert isinstance(rewritten["lithos_read"]["parameters"], dict)


async def test_a_file_that_cannot_be_written_is_logged_and_the_server_serves(
    app: LithosApp, caplog: pytest.LogCaptureFixture
):
    app.tool_schemas_path.mkdir(parents=True)  # a directory where the file would go
    with caplog.at_level(logging.WARNING, logger="lithos.mcp"):
        async with Client(create_server(app)) as client:
            assert (await call(client, "lithos_stats"))["documents"] == 0
    assert "could not keep the tool schemas" in caplog.text
    assert not list(app.tool_schemas_path.parent.glob(".tool-schemas.json.*"))


def test_nothing_is_written_when_every_tool_was_stored(tmp_path: Path):
    path = tmp_path / "tool-schemas.json"
    key = {"source": "a"}
    kept = ToolSchemas.of({"type": "object"}, None)
    path.write_text(json.dumps({"key": key, "tools": {"t": kept.stored()}}))
    before = path.stat().st_mtime_ns
    schemas = StoredToolSchemas(path, key)
    assert schemas.get("t") == kept
    schemas.save()
    assert path.stat().st_mtime_ns == before


async def test_a_server_built_from_stored_schemas_lists_them_without_inlining_refs_again(
    app: LithosApp, monkeypatch: pytest.MonkeyPatch
):
    built = await listed(app)

    def inline(schema: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError("inlined again")

    monkeypatch.setattr("fastmcp.server.middleware.dereference.dereference_refs", inline)
    assert await listed(app) == built


def test_the_source_digest_follows_every_python_file_of_the_package(tmp_path: Path):
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "search.py").write_text("Limit = int\n")
    (tmp_path / "notes.txt").write_text("not source")
    first = source_digest(tmp_path)
    (tmp_path / "notes.txt").write_text("still not source")
    assert source_digest(tmp_path) == first
    (tmp_path / "tools" / "search.py").write_text("Limit = float\n")
    changed = source_digest(tmp_path)
    assert changed != first
    (tmp_path / "tools" / "search.py").rename(tmp_path / "search.py")
    assert source_digest(tmp_path) not in (first, changed)

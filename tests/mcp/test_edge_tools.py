"""lithos_edge_upsert / lithos_edge_list through a real in-memory MCP client."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from fastmcp import Client

from lithos.app import LithosApp
from lithos.domain.edges import EDGE_TYPES
from tests.support import call, note_file


async def note(client: Client, title: str, content: str = "body") -> str:
    result = await call(client, "lithos_write", agent="agent-a", title=title, content=content)
    return str(result["id"])


async def upsert(client: Client, **args: object) -> dict:
    args.setdefault("agent", "agent-a")
    return await call(client, "lithos_edge_upsert", **args)


async def test_upsert_creates_an_edge_and_list_finds_it(client: Client):
    a, b = await note(client, "Retry policy"), await note(client, "Backoff")
    result = await upsert(client, from_id=a, to_id=b, type="supports", evidence=["both on retry"])
    edge = result["edge"]
    assert (edge["from_id"], edge["to_id"], edge["type"]) == (a, b, "supports")
    assert edge["weight"] == 0.5 and edge["provenance"] == "agent"
    assert edge["namespace"] == "default" and edge["actor"] == "agent-a"
    assert edge["evidence"] == ["both on retry"]
    listed = await call(client, "lithos_edge_list", from_id=a)
    assert [e["edge_id"] for e in listed["edges"]] == [edge["edge_id"]]
    assert listed["count"] == 1


async def test_upserting_again_reuses_the_edge_and_strengthens_it(client: Client):
    a, b = await note(client, "A"), await note(client, "B")
    first = (await upsert(client, from_id=a, to_id=b, type="related_to"))["edge"]
    second = (await upsert(client, from_id=a, to_id=b, type="related_to"))["edge"]
    assert second["edge_id"] == first["edge_id"]
    assert second["weight"] > first["weight"]
    assert (await call(client, "lithos_edge_list"))["count"] == 1


async def test_upsert_with_an_unknown_note_is_doc_not_found_and_writes_nothing(
    client: Client, app: LithosApp
):
    a = await note(client, "Only note")
    missing = str(uuid.uuid4())
    result = await upsert(client, from_id=a, to_id=missing, type="supports")
    assert result["status"] == "error" and result["code"] == "doc_not_found"
    assert (await call(client, "lithos_edge_list"))["count"] == 0


async def test_bad_arguments_are_invalid_input(client: Client):
    a, b = await note(client, "A"), await note(client, "B")
    for bad in (
        {"from_id": a, "to_id": b, "type": "likes"},
        {"from_id": a, "to_id": b, "type": "supports", "weight": 1.5},
        {"from_id": a, "to_id": a, "type": "supports"},
        {"from_id": "not-a-uuid", "to_id": b, "type": "supports"},
    ):
        result = await upsert(client, **bad)
        assert result["status"] == "error" and result["code"] == "invalid_input", bad
    assert (await call(client, "lithos_edge_list"))["count"] == 0


async def test_list_filters_by_to_type_and_namespace(client: Client):
    a, b, c = await note(client, "A"), await note(client, "B"), await note(client, "C")
    await upsert(client, from_id=a, to_id=b, type="supports")
    await upsert(client, from_id=a, to_id=c, type="depends_on", namespace="project/x")
    await upsert(client, from_id=b, to_id=c, type="supports", namespace="project/x")
    to_c = await call(client, "lithos_edge_list", to_id=c)
    assert {e["from_id"] for e in to_c["edges"]} == {a, b}
    supports = await call(client, "lithos_edge_list", type="supports", namespace="project/x")
    assert [(e["from_id"], e["to_id"]) for e in supports["edges"]] == [(b, c)]


async def test_edge_tools_publish_annotations_and_an_output_schema(client: Client):
    tools = {t.name: t for t in await client.list_tools()}
    upsert_tool, list_tool = tools["lithos_edge_upsert"], tools["lithos_edge_list"]
    assert list_tool.annotations is not None and list_tool.annotations.read_only_hint is True
    assert upsert_tool.annotations is not None
    assert upsert_tool.annotations.destructive_hint is False
    for tool in (upsert_tool, list_tool):
        assert tool.output_schema is not None and tool.output_schema.get("properties")
        described = tool.input_schema["properties"]
        assert all("description" in spec for spec in described.values()), tool.name


async def test_deleting_a_note_leaves_no_edge_pointing_at_it(client: Client):
    a, b, c = await note(client, "A"), await note(client, "B"), await note(client, "C")
    await upsert(client, from_id=a, to_id=b, type="supports")
    await upsert(client, from_id=c, to_id=a, type="refines")
    await upsert(client, from_id=b, to_id=c, type="related_to")
    await call(client, "lithos_delete", id=a, agent="agent-a")
    listed = await call(client, "lithos_edge_list")
    assert [(e["from_id"], e["to_id"]) for e in listed["edges"]] == [(b, c)]


@pytest.mark.parametrize("edge_type", EDGE_TYPES)
async def test_every_edge_type_is_stored_and_listed_by_its_type(client: Client, edge_type: str):
    a, b = await note(client, "A"), await note(client, "B")
    made = (await upsert(client, from_id=a, to_id=b, type=edge_type))["edge"]
    assert made["type"] == edge_type and made["conflict_state"] == (
        "unreviewed" if edge_type == "contradicts" else None
    )
    listed = await call(client, "lithos_edge_list", type=edge_type)
    assert [e["edge_id"] for e in listed["edges"]] == [made["edge_id"]]
    other = next(t for t in EDGE_TYPES if t != edge_type)
    assert (await call(client, "lithos_edge_list", type=other))["count"] == 0


async def test_a_person_s_declared_edge_follows_their_edits(client: Client, app: LithosApp):
    a, b = await note(client, "Alpha note"), await note(client, "Beta note")
    front: dict[str, object] = {"id": str(uuid.uuid4()), "title": "Claim"}

    async def declare(**edges: object) -> list[tuple[str, str, str]]:
        text = note_file({**front, **edges}, "a person's claim")
        (app.files.root / "Claim.md").write_text(text, encoding="utf-8")
        await asyncio.to_thread(app.indexer.index_path, "Claim.md")  # as the watcher does
        listed = await call(client, "lithos_edge_list", from_id=front["id"])
        return sorted((e["to_id"], e["type"], e["provenance"]) for e in listed["edges"])

    assert await declare(supports=["[[Alpha note]]"]) == [(a, "supports", "human")]
    moved = await declare(supports=["[[Beta note]]"], is_example_of="[[Alpha note]]")
    assert moved == sorted([(b, "supports", "human"), (a, "is_example_of", "human")])
    assert await declare() == []

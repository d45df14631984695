"""lithos_conflicts / lithos_conflict_resolve through a real in-memory MCP client."""

from __future__ import annotations

import pytest
from fastmcp import Client

from lithos.app import LithosApp
from lithos.domain.notes import split_frontmatter
from tests.support import call


async def note(client: Client, title: str, content: str = "body") -> str:
    result = await call(client, "lithos_write", agent="agent-a", title=title, content=content)
    return str(result["id"])


async def contradiction(client: Client) -> tuple[str, str, str]:
    old = await note(client, "Timeout is 30 seconds")
    new = await note(client, "Timeout is 60 seconds")
    made = await call(
        client, "lithos_edge_upsert", from_id=new, to_id=old, type="contradicts", agent="agent-a"
    )
    return old, new, made["edge"]["edge_id"]


async def test_a_contradiction_is_listed_as_an_unreviewed_conflict(client: Client):
    old, new, edge_id = await contradiction(client)
    listed = await call(client, "lithos_conflicts", state="unreviewed")
    [conflict] = listed["conflicts"]
    assert (conflict["edge_id"], conflict["from_id"], conflict["to_id"]) == (edge_id, new, old)
    assert [h["state"] for h in conflict["history"]] == ["unreviewed"]
    assert (await call(client, "lithos_conflicts", note_id=old))["count"] == 1
    assert (await call(client, "lithos_conflicts", namespace="elsewhere"))["count"] == 0


async def test_superseded_writes_supersedes_into_the_winner_and_keeps_history(
    client: Client, app: LithosApp
):
    old, new, edge_id = await contradiction(client)
    result = await call(
        client,
        "lithos_conflict_resolve",
        edge_id=edge_id,
        resolution="superseded",
        resolver="reviewer",
        winner_id=new,
        note="measured again",
    )
    conflict = result["conflict"]
    assert result["status"] == "resolved" and conflict["state"] == "superseded"
    assert [(h["state"], h["actor"]) for h in conflict["history"]] == [
        ("unreviewed", "agent-a"),
        ("superseded", "reviewer"),
    ]
    assert conflict["history"][1]["winner_id"] == new
    path = (await call(client, "lithos_read", id=new))["path"]
    meta, _ = split_frontmatter((app.files.root / path).read_text())
    assert meta["supersedes"] == old
    assert (await call(client, "lithos_conflicts", state="unreviewed"))["count"] == 0
    assert (await call(client, "lithos_conflicts", state="superseded"))["count"] == 1


@pytest.mark.parametrize("resolution", ["accepted_dual", "refuted", "merged"])
async def test_other_resolutions_leave_the_notes_alone(
    client: Client, app: LithosApp, resolution: str
):
    old, new, edge_id = await contradiction(client)
    before = {n: (await call(client, "lithos_read", id=n))["version"] for n in (old, new)}
    result = await call(
        client,
        "lithos_conflict_resolve",
        edge_id=edge_id,
        resolution=resolution,
        resolver="reviewer",
    )
    assert result["conflict"]["state"] == resolution
    after = {n: (await call(client, "lithos_read", id=n))["version"] for n in (old, new)}
    assert after == before


async def test_bad_resolutions_fail_and_change_nothing(client: Client):
    old, new, edge_id = await contradiction(client)
    other = await note(client, "Unrelated")
    supports = await call(
        client, "lithos_edge_upsert", from_id=old, to_id=other, type="supports", agent="a"
    )
    cases = [
        ({"edge_id": "edge-nope", "resolution": "refuted"}, "edge_not_found"),
        ({"edge_id": edge_id, "resolution": "superseded"}, "invalid_input"),
        ({"edge_id": edge_id, "resolution": "superseded", "winner_id": other}, "invalid_input"),
        ({"edge_id": supports["edge"]["edge_id"], "resolution": "refuted"}, "invalid_input"),
        ({"edge_id": edge_id, "resolution": "ignored"}, "invalid_input"),
    ]
    for args, code in cases:
        result = await call(client, "lithos_conflict_resolve", resolver="reviewer", **args)
        assert result["status"] == "error" and result["code"] == code, args
    [conflict] = (await call(client, "lithos_conflicts"))["conflicts"]
    assert conflict["state"] == "unreviewed" and len(conflict["history"]) == 1
    assert (await call(client, "lithos_read", id=new))["metadata"]["supersedes"] is None


async def test_merged_names_the_note_both_became_and_that_note_must_exist(client: Client):
    *_, edge_id = await contradiction(client)
    merged_into = await note(client, "Timeout settings", "the timeout is 45 seconds")
    missing = "00000000-0000-4000-8000-000000000099"
    failed = await call(
        client,
        "lithos_conflict_resolve",
        edge_id=edge_id,
        resolution="merged",
        resolver="reviewer",
        winner_id=missing,
    )
    assert failed["status"] == "error" and failed["code"] == "doc_not_found"
    [conflict] = (await call(client, "lithos_conflicts"))["conflicts"]
    assert conflict["state"] == "unreviewed" and len(conflict["history"]) == 1
    result = await call(
        client,
        "lithos_conflict_resolve",
        edge_id=edge_id,
        resolution="merged",
        resolver="reviewer",
        winner_id=merged_into,
    )
    assert result["conflict"]["state"] == "merged"
    assert result["conflict"]["history"][-1]["winner_id"] == merged_into
    assert (await call(client, "lithos_conflicts", state="merged"))["count"] == 1

"""The visibility rule holds for the learned graph: edges, conflicts and lithos_related never
show a note the caller may not see."""

from __future__ import annotations

from fastmcp import Client

from tests.support import call


async def note(client: Client, title: str, **extra: object) -> str:
    result = await call(client, "lithos_write", agent="owner", title=title, content="body", **extra)
    return str(result["id"])


async def test_private_notes_stay_out_of_edges_conflicts_and_related(client: Client):
    public = await note(client, "Public")
    private = await note(client, "Private", access_scope="agent_private")
    other = await note(client, "Other")
    await call(
        client, "lithos_edge_upsert", from_id=public, to_id=private, type="supports", agent="owner"
    )
    await call(
        client, "lithos_edge_upsert", from_id=public, to_id=other, type="contradicts", agent="owner"
    )
    await call(
        client,
        "lithos_edge_upsert",
        from_id=private,
        to_id=other,
        type="contradicts",
        agent="owner",
    )

    anonymous = await call(client, "lithos_edge_list", from_id=public)
    assert [e["to_id"] for e in anonymous["edges"]] == [other]
    owned = await call(client, "lithos_edge_list", from_id=public, agent_id="owner")
    assert {e["to_id"] for e in owned["edges"]} == {private, other}

    assert (await call(client, "lithos_conflicts"))["count"] == 1
    assert (await call(client, "lithos_conflicts", agent_id="owner"))["count"] == 2

    seen = await call(client, "lithos_related", id=public, include=["edges"], depth=2)
    assert [s["id"] for s in seen["edges"]] == [other]
    mine = await call(
        client, "lithos_related", id=public, include=["edges"], depth=2, agent_id="owner"
    )
    assert {s["id"] for s in mine["edges"]} == {private, other}

"""lithos_related: links, provenance and typed edges around a note in one call."""

from __future__ import annotations

import uuid

from fastmcp import Client

from tests.support import call


async def note(client: Client, title: str, content: str = "body", **extra: object) -> str:
    result = await call(
        client, "lithos_write", agent="agent-a", title=title, content=content, **extra
    )
    return str(result["id"])


async def test_related_walks_links_provenance_and_edges_to_the_given_depth(client: Client):
    c = await note(client, "C")
    b = await note(client, "B", "see [[C]]")
    a = await note(client, "A", "see [[B]]")
    child = await note(client, "Child", derived_from_ids=[a])
    grandchild = await note(client, "Grandchild", derived_from_ids=[child])
    e, f = await note(client, "E"), await note(client, "F")
    await call(client, "lithos_edge_upsert", from_id=a, to_id=e, type="supports", agent="x")
    await call(client, "lithos_edge_upsert", from_id=f, to_id=e, type="refines", agent="x")

    one = await call(client, "lithos_related", id=a)
    assert [n["id"] for n in one["links"]["outgoing"]] == [b]
    assert one["links"]["incoming"] == []
    assert [n["id"] for n in one["provenance"]["derivatives"]] == [child]
    assert [(s["id"], s["direction"], s["edge"]["type"]) for s in one["edges"]] == [
        (e, "outgoing", "supports")
    ]

    two = await call(client, "lithos_related", id=a, depth=2)
    assert [(n["id"], n["depth"]) for n in two["links"]["outgoing"]] == [(b, 1), (c, 2)]
    assert [(n["id"], n["depth"]) for n in two["provenance"]["derivatives"]] == [
        (child, 1),
        (grandchild, 2),
    ]
    assert [(s["id"], s["depth"], s["direction"]) for s in two["edges"]] == [
        (e, 1, "outgoing"),
        (f, 2, "incoming"),
    ]

    up = await call(client, "lithos_related", id=grandchild, include=["provenance"], depth=3)
    assert [n["id"] for n in up["provenance"]["derived_from"]] == [child, a]


async def test_related_returns_only_the_kinds_asked_for(client: Client):
    a = await note(client, "A")
    result = await call(client, "lithos_related", id=a, include=["edges"])
    assert result["edges"] == []
    assert result.get("links") is None and result.get("provenance") is None


async def test_related_of_an_unknown_note_is_doc_not_found(client: Client):
    result = await call(client, "lithos_related", id=str(uuid.uuid4()))
    assert result["status"] == "error" and result["code"] == "doc_not_found"
    bad = await call(client, "lithos_related", id=str(uuid.uuid4()), depth=4)
    assert bad["code"] == "invalid_input"

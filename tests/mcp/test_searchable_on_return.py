"""A note is found by full-text, hybrid and lexical retrieval the moment its write returns,
before the background committer has committed Tantivy: the writes here stay uncommitted (the
committer waits a minute), so every search below is answered from the overlay beside the
on-disk index."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fastmcp import Client

from lithos.app import LithosApp
from lithos.mcp.server import create_server
from tests.support import call, make_app


@pytest.fixture
async def held(data_dir: Path) -> AsyncIterator[tuple[LithosApp, Client]]:
    """A started app whose committer commits only when stopped, and a client over it."""
    app = make_app(data_dir, **{"index.commit_interval_ms": 60_000})
    app.start(watch=False)
    try:
        async with Client(create_server(app)) as client:
            yield app, client
    finally:
        app.close()


async def write(client: Client, **fields: object) -> dict:
    result = await call(client, "lithos_write", agent=fields.pop("agent", "writer"), **fields)
    assert result["status"] in ("created", "updated") and result["indexing"] == "done", result
    return result


async def found(client: Client, query: str, mode: str = "fulltext", **args: object) -> list:
    result = await call(client, "lithos_search", query=query, mode=mode, **args)
    assert "results" in result, result
    return [hit["id"] for hit in result["results"]]


async def test_a_created_note_is_found_by_full_text_and_hybrid_before_any_commit(held):
    app, client = held
    commits = app.fulltext.commits
    note = await write(client, title="Quokka habits", content="the quokka naps at noon")
    assert await found(client, "quokka") == [note["id"]]
    assert await found(client, "quokka naps", mode="hybrid") == [note["id"]]
    assert app.fulltext.commits == commits and app.fulltext.uncommitted() == 1


async def test_an_update_replaces_the_committed_copy_in_search_at_once(held):
    app, client = held
    note = await write(client, title="Heron", content="grey heron wading")
    app.indexer.commit_staged()
    await write(client, id=note["id"], content="blue heron fishing")
    assert app.fulltext.uncommitted() == 1
    assert await found(client, "grey") == []
    assert await found(client, "fishing") == [note["id"]]
    assert await found(client, "heron") == [note["id"]]  # once: the newer copy only
    hybrid = await found(client, "heron fishing", mode="hybrid")
    assert hybrid.count(note["id"]) == 1


async def test_a_deleted_note_disappears_from_search_at_once(held):
    app, client = held
    kept = await write(client, title="Otter one", content="otter river")
    gone = await write(client, title="Otter two", content="otter sea")
    app.indexer.commit_staged()
    deleted = await call(client, "lithos_delete", id=gone["id"], agent="writer")
    assert deleted["indexing"] == "done" and app.fulltext.uncommitted() == 1
    assert await found(client, "otter") == [kept["id"]]
    assert await found(client, "otter sea", mode="hybrid") == [kept["id"]]
    assert app.fulltext.count() == 1


async def test_filters_and_scopes_apply_to_uncommitted_notes(held):
    app, client = held
    tagged = await write(client, title="Lynx a", content="lynx tracks", tags=["Cats"])
    other = await write(client, title="Lynx b", content="lynx fur", path="zoo", agent="keeper")
    private = await write(
        client, title="Lynx c", content="lynx den", agent="alice", access_scope="agent_private"
    )
    assert app.fulltext.uncommitted() == 3
    assert await found(client, "lynx", tags=["cats"]) == [tagged["id"]]
    assert await found(client, "lynx", author="keeper") == [other["id"]]
    assert await found(client, "lynx", path_prefix="zoo") == [other["id"]]
    assert set(await found(client, "lynx")) == {tagged["id"], other["id"]}
    mine = await found(client, "lynx", agent_id="alice")
    assert set(mine) == {tagged["id"], other["id"], private["id"]}
    assert private["id"] not in await found(client, "lynx den", mode="hybrid", agent_id="bob")


async def test_lexical_retrieval_finds_an_uncommitted_note(held):
    app, client = held
    note = await write(client, title="Axolotl", content="axolotl regrows limbs")
    result = await call(client, "lithos_retrieve", query="axolotl limbs", agent_id="writer")
    assert note["id"] in [hit["id"] for hit in result["results"]]
    assert app.fulltext.uncommitted() == 1


async def test_stopping_commits_what_writes_left_staged(data_dir: Path):
    app = make_app(data_dir, **{"index.commit_interval_ms": 60_000})
    app.start(watch=False, embed=False)
    async with Client(create_server(app)) as client:
        note = await write(client, title="Ibis", content="ibis wading")
    app.close()
    again = make_app(data_dir)
    try:
        assert [hit.id for hit in again.fulltext.search("ibis")] == [note["id"]]
        assert again.catalog.deferred() == {}  # the write's mark ended with the commit
    finally:
        again.close()

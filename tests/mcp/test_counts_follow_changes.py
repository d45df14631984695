"""lithos_tags, lithos_stats and lithos_list totals are kept between calls while no note
changes, and never answer from before a change that returned: writes, deletes, hand edits,
other scopes and other processes writing the same catalog."""

from __future__ import annotations

import asyncio
from pathlib import Path

from fastmcp import Client

from lithos.app import LithosApp
from lithos.mcp.server import create_server
from lithos.store.catalog import Catalog
from tests.support import call, make_app, note_file


async def counts(client: Client) -> tuple[dict[str, int], int, int, int]:
    """(tags, stats documents, stats tags, list total), each asked twice so the second
    answer comes from whatever the first one kept; the vector store's note count agrees."""
    for _ in range(2):
        tags = (await call(client, "lithos_tags"))["tags"]
        stats = await call(client, "lithos_stats")
        total = (await call(client, "lithos_list", limit=1))["total"]
    assert stats["indexes"]["vector_documents"] == stats["documents"]
    return tags, stats["documents"], stats["tags"], total


async def test_counts_follow_writes_updates_and_deletes_at_once(client: Client):
    a = await call(client, "lithos_write", agent="w", title="A", content="x", tags=["red"])
    assert await counts(client) == ({"red": 1}, 1, 1, 1)
    b = await call(client, "lithos_write", agent="w", title="B", content="x", tags=["red", "b"])
    assert await counts(client) == ({"b": 1, "red": 2}, 2, 2, 2)
    await call(client, "lithos_write", agent="w", id=a["id"], tags=["green"])
    assert await counts(client) == ({"b": 1, "green": 1, "red": 1}, 2, 3, 2)
    await call(client, "lithos_delete", id=b["id"])
    assert await counts(client) == ({"green": 1}, 1, 1, 1)


async def test_counts_follow_a_hand_edit_once_it_is_indexed(client: Client, app: LithosApp):
    await call(client, "lithos_write", agent="w", title="A", content="x", tags=["red"])
    assert await counts(client) == ({"red": 1}, 1, 1, 1)
    (app.files.root / "hand.md").write_text(note_file({"title": "Hand", "tags": ["blue"]}, "b"))
    app.indexer.sync_paths(["hand.md"])
    assert await counts(client) == ({"blue": 1, "red": 1}, 2, 2, 2)
    (app.files.root / "hand.md").write_text(note_file({"title": "Hand", "tags": ["red"]}, "b"))
    app.indexer.sync_paths(["hand.md"])
    assert await counts(client) == ({"red": 2}, 2, 1, 2)
    (app.files.root / "hand.md").unlink()
    app.indexer.sync_paths(["hand.md"])
    assert await counts(client) == ({"red": 1}, 1, 1, 1)


async def test_kept_counts_are_per_caller_scope(client: Client):
    await call(client, "lithos_write", agent="w", title="A", content="x", tags=["red"])
    await call(
        client,
        "lithos_write",
        agent="owner",
        title="Mine",
        content="x",
        tags=["secret"],
        access_scope="agent_private",
    )
    for _ in range(2):
        assert (await call(client, "lithos_tags"))["tags"] == {"red": 1}
        mine = await call(client, "lithos_tags", agent_id="owner")
        assert mine["tags"] == {"red": 1, "secret": 1}
        assert (await call(client, "lithos_list"))["total"] == 1
        assert (await call(client, "lithos_list", agent_id="owner"))["total"] == 2


def test_a_change_by_another_connection_is_seen_by_kept_counts(app: LithosApp):
    """Another process (here another connection to the same file) bumps the generation
    through the catalog's triggers, so this process's kept counts are dropped too."""
    (app.files.root / "a.md").write_text(note_file({"title": "A", "tags": ["red"]}, "a"))
    app.indexer.sync_paths(["a.md"])
    assert (app.catalog.count(), app.catalog.tag_counts()) == (1, {"red": 1})
    other = Catalog(app.catalog.path)
    try:
        other.remove(app.catalog.entries()[0].id)
    finally:
        other.close()
    assert (app.catalog.count(), app.catalog.tag_counts()) == (0, {})


async def test_list_items_follow_an_update_and_a_delete_at_once(client: Client):
    a = await call(client, "lithos_write", agent="w", title="A", content="x", tags=["red"])
    await call(client, "lithos_write", agent="w", title="B", content="x")
    assert [i["title"] for i in (await call(client, "lithos_list"))["items"]] == ["B", "A"]
    await call(client, "lithos_write", agent="w", id=a["id"], title="A2", tags=["blue"])
    (first, second) = (await call(client, "lithos_list"))["items"]
    assert (first["title"], first["tags"], second["title"]) == ("A2", ["blue"], "B")
    await call(client, "lithos_delete", id=a["id"])
    assert [i["title"] for i in (await call(client, "lithos_list"))["items"]] == ["B"]


async def test_stats_problems_and_agents_follow_changes_at_once(client: Client, app: LithosApp):
    before = await call(client, "lithos_stats")
    assert (before["problems"], before["agents"]) == (0, 0)
    (app.files.root / "broken.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    app.indexer.sync_paths(["broken.md"])
    task = await call(client, "lithos_task_create", title="T", agent="planner")
    await call(client, "lithos_task_claim", task_id=task["task_id"], aspect="a", agent="worker")
    after = await call(client, "lithos_stats")
    assert (after["problems"], after["agents"], after["open_claims"]) == (1, 2, 1)
    (app.files.root / "broken.md").unlink()
    app.indexer.sync_paths(["broken.md"])
    assert (await call(client, "lithos_stats"))["problems"] == 0


async def test_list_pages_are_kept_per_query_and_follow_a_hand_edit(client: Client, app: LithosApp):
    for title in ("A", "B", "C"):
        await call(client, "lithos_write", agent="w", title=title, content="x", tags=["red"])
    for _ in range(2):  # the second round answers from the kept pages
        assert [i["title"] for i in (await call(client, "lithos_list", limit=2))["items"]] == [
            "C",
            "B",
        ]
        page = await call(client, "lithos_list", limit=2, offset=2)
        assert ([i["title"] for i in page["items"]], page["total"]) == (["A"], 3)
        tagged = await call(client, "lithos_list", tags=["blue"])
        assert tagged == {"items": [], "total": 0}
    (app.files.root / "hand.md").write_text(note_file({"title": "Hand", "tags": ["blue"]}, "b"))
    app.indexer.sync_paths(["hand.md"])
    assert [i["title"] for i in (await call(client, "lithos_list", tags=["blue"]))["items"]] == [
        "Hand"
    ]
    assert (await call(client, "lithos_list", limit=2, offset=2))["total"] == 4


async def test_stats_chunk_counts_follow_the_embedding_worker(data_dir: Path):
    app = make_app(data_dir)
    app.start(watch=False, embed=False)  # chunks stay pending until the worker starts
    try:
        async with Client(create_server(app)) as client:
            await call(client, "lithos_write", agent="w", title="A", content="Text to embed.")
            for _ in range(2):
                waiting = (await call(client, "lithos_stats"))["indexes"]
                assert waiting["pending_chunks"] >= 1 and waiting["embedded_chunks"] == 0
            app.embedding.start()
            assert await asyncio.to_thread(app.embedding.wait_idle, 30)
            done = (await call(client, "lithos_stats"))["indexes"]
            assert (done["pending_chunks"], done["embedded_chunks"]) == (
                0,
                waiting["pending_chunks"],
            )
    finally:
        app.close()

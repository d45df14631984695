"""A full-text or vector store found broken at start-up is rebuilt while Lithos serves.

The rebuild is held half-way (a gate in its progress report) so the test can look at a
server whose store is still being refilled: everything but that store answers, search modes
that need it say so, and writes made meanwhile are in every index once the rebuild ends.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastmcp import Client

from lithos.app import LithosApp
from lithos.mcp.server import create_server
from tests.fault.test_derived_stores import NOTES, damage, seeded
from tests.support import call, get_health, make_app

pytestmark = pytest.mark.fault

OTHER_MODE = {"fulltext": "semantic", "vectors": "fulltext"}
OWN_MODE = {"fulltext": "fulltext", "vectors": "semantic"}


class HeldRebuild:
    """Holds the background rebuild after its first batch until :meth:`release`."""

    def __init__(self, app: LithosApp) -> None:
        self.reached = threading.Event()
        self._gate = threading.Event()
        report = app.stores.progress

        def held(names: object, done: int, total: int) -> None:
            report(names, done, total)  # type: ignore[arg-type]
            if done < total:
                self.reached.set()
                self._gate.wait(30)

        app.stores.progress = held  # type: ignore[method-assign]

    def release(self) -> None:
        self._gate.set()


@pytest.fixture
def rebuilding(data_dir: Path, request: pytest.FixtureRequest, monkeypatch) -> Iterator[tuple]:
    """An app serving while the stores named in the parameter (separated by +) are rebuilt
    from six notes: (app, the first store, title -> id, the held rebuild)."""
    stores = request.param.split("+")
    ids = seeded(data_dir)
    for store in stores:
        damage(data_dir, store, "garbage")
    monkeypatch.setattr("lithos.services.indexing.BATCH", 2)  # six notes: three batches
    app = make_app(data_dir)
    held = HeldRebuild(app)
    try:
        app.start(watch=False)
        assert held.reached.wait(30), "the rebuild never started"
        yield app, stores[0], ids, held
    finally:
        held.release()
        app.close()


def topic(title: str) -> str:
    return NOTES[title].split()[5]


async def search(client: Client, query: str, mode: str, limit: int = 10) -> dict:
    # The fake embedder gives a one-word query a low similarity to a whole note.
    threshold = {"threshold": 0.05} if mode == "semantic" else {}
    return await call(client, "lithos_search", query=query, mode=mode, limit=limit, **threshold)


@pytest.mark.parametrize("rebuilding", ["fulltext", "vectors"], indirect=True)
async def test_lithos_serves_while_a_store_broken_at_start_is_rebuilt(rebuilding):
    app, store, ids, held = rebuilding
    async with Client(create_server(app)) as client:
        # Still rebuilding: start-up did not wait for it.
        assert app.store_states()[store]["state"] == "rebuilding"
        code, health = await get_health(app)
        assert (code, health["status"]) == (200, "degraded")  # serving: no restart wanted
        assert health["stores"][store]["progress"] == {"done": 2, "total": len(NOTES)}
        stats = await call(client, "lithos_stats")
        assert stats["stores"][store]["state"] == "rebuilding"
        assert stats["documents"] == len(NOTES)

        for title, note_id in ids.items():
            read = await call(client, "lithos_read", id=note_id)
            assert read["title"] == title
        listed = await call(client, "lithos_list")
        assert listed["total"] == len(NOTES)
        task = await call(client, "lithos_task_create", agent="a", title="Go on")
        claim = await call(
            client, "lithos_task_claim", task_id=task["task_id"], agent="a", aspect="all"
        )
        assert claim["success"] is True

        own = await call(client, "lithos_search", query=topic("Note 1"), mode=OWN_MODE[store])
        assert own["status"] == "error" and own["code"] == "index_unavailable"
        assert own["details"]["state"] == "rebuilding"
        assert own["details"]["progress"] == {"done": 2, "total": len(NOTES)}
        other = await search(client, topic("Note 1"), OTHER_MODE[store])
        assert ids["Note 1"] in [hit["id"] for hit in other["results"]]
        assert "degraded" not in other
        hybrid = await call(client, "lithos_search", query=topic("Note 1"), mode="hybrid")
        assert hybrid["degraded"] is True and "rebuilding" in hybrid["warnings"][0]
        assert hybrid["results"][0]["id"] == ids["Note 1"]
        retrieved = await call(client, "lithos_retrieve", query=topic("Note 1"))
        scout = {"fulltext": "scout_lexical", "vectors": "scout_vector"}[store]
        assert retrieved["degraded"] is True and scout in retrieved["failed_scouts"]
        assert ids["Note 1"] in [hit["id"] for hit in retrieved["results"]]

        # Writes during the rebuild: a new note, an update and a delete, each acknowledged.
        new = await call(client, "lithos_write", agent="a", title="During", content="quokka")
        assert new["indexing"] == "done"
        changed = await call(
            client, "lithos_write", agent="a", id=ids["Note 5"], content="zeppelin topic5"
        )
        assert changed["indexing"] == "done"
        deleted = await call(client, "lithos_delete", id=ids["Note 4"], agent="a")
        assert deleted["success"] is True

        held.release()
        assert app.stores.wait_rebuilt(timeout=30)
        assert app.embedding.wait_idle(timeout=30)

        assert app.health()["status"] == "ok"
        on_disk = {e.id: e.content_hash for e in app.catalog.entries()}
        assert len(on_disk) == len(NOTES)  # six, one deleted, one added
        assert app.fulltext.count() == len(on_disk)  # no document lost or indexed twice
        assert app.fulltext.hashes() == on_disk
        assert app.vectors.note_hashes() == on_disk
        expected = {**{topic(t): i for t, i in ids.items() if t != "Note 4"}}
        expected["zeppelin"] = ids["Note 5"]
        expected["quokka"] = new["id"]
        for word, note_id in expected.items():
            for mode in ("fulltext", "semantic"):
                found = await search(client, word, mode, limit=1)
                assert [hit["id"] for hit in found["results"]] == [note_id], (word, mode)
        gone = await call(client, "lithos_search", query=topic("Note 4"))
        assert gone["results"] == []
        assert app.indexer.deferred() == {}


@pytest.mark.parametrize("rebuilding", ["fulltext+vectors"], indirect=True)
async def test_search_is_refused_when_no_index_it_needs_can_answer(rebuilding):
    app, _, ids, _ = rebuilding
    async with Client(create_server(app)) as client:
        for mode in ("fulltext", "semantic", "hybrid"):
            refused = await call(client, "lithos_search", query=topic("Note 2"), mode=mode)
            assert refused["code"] == "index_unavailable", mode
        read = await call(client, "lithos_read", id=ids["Note 2"])
        assert read["title"] == "Note 2"
        assert {app.store_states()[s]["state"] for s in ("fulltext", "vectors")} == {"rebuilding"}

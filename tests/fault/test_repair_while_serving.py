"""Stores that break while Lithos serves are rebuilt in the background, and a write whose
index update fails is saved, reported as pending and retried until every index has it."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fastmcp import Client

from lithos.app import LithosApp
from lithos.errors import StoreCorrupt
from tests.damage import block_next_deletes
from tests.support import call, get_health

pytestmark = pytest.mark.fault


def eventually(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    """Wait for ``condition`` to hold (background repair), failing after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


def in_step(app: LithosApp) -> bool:
    catalog = {e.id: e.content_hash for e in app.catalog.entries()}
    return app.fulltext.hashes() == catalog and app.vectors.note_hashes() == catalog


async def test_fulltext_breaking_while_serving_is_rebuilt_and_the_write_kept(
    app: LithosApp, client: Client, data_dir: Path
):
    first = await call(client, "lithos_write", agent="a", title="First", content="alpha words")
    app.indexer.commit_staged()  # what the committer does within commit_interval_ms
    block_next_deletes(data_dir / ".tantivy")
    update = await call(client, "lithos_write", agent="a", id=first["id"], content="zeppelin")
    # Searchable at once from the overlay; its background commit then fails on the index.
    assert update["status"] == "updated" and update["indexing"] == "done"
    assert "zeppelin" in (data_dir / "knowledge" / first["path"]).read_text()
    eventually(lambda: bool(app.store_states()["fulltext"].get("moved_to")))

    def found() -> bool:
        hits = app.fulltext.search("zeppelin")
        return [h.id for h in hits] == [first["id"]] and not app.indexer.deferred()

    eventually(found)
    eventually(lambda: app.store_states()["fulltext"]["state"] == "ok")
    status = app.store_states()["fulltext"]
    assert status["moved_to"].startswith(".tantivy.broken-")
    assert (data_dir / status["moved_to"]).is_dir()
    assert in_step(app)
    again = await call(client, "lithos_write", agent="a", title="Second", content="bravo")
    assert again["indexing"] == "done"


async def test_a_failed_index_update_is_recorded_retried_and_not_skipped(
    app: LithosApp, client: Client, monkeypatch
):
    assert app.repair is not None
    app.repair.stop()  # hold the retry back to look at what was recorded
    real = app.vectors.start_set_notes

    def failing(*args: object, **kwargs: object) -> Callable[[], list[int]]:
        def wait() -> list[int]:  # the write fails on the database thread
            raise OSError("disk hiccup")

        return wait

    monkeypatch.setattr(app.vectors, "start_set_notes", failing)
    written = await call(client, "lithos_write", agent="a", title="Kept", content="charlie")
    assert written["status"] == "created" and written["indexing"] == "pending"
    assert list(app.catalog.deferred()) == [written["path"]]  # durable, in the catalog
    stats = await call(client, "lithos_stats")
    assert stats["indexes"]["pending_index_updates"] == 1
    monkeypatch.setattr(app.vectors, "start_set_notes", real)
    # The catalog already has the note's hash; the watcher must index it anyway.
    assert app.indexer.index_path(written["path"]) is not None
    assert app.catalog.deferred() == {} and app.indexer.deferred() == {}
    assert in_step(app)


async def test_the_repair_worker_retries_a_deferred_update_until_it_succeeds(
    app: LithosApp, client: Client, monkeypatch
):
    real = app.vectors.start_set_notes
    failures = [OSError("disk hiccup")] * 2

    def flaky(*args: object, **kwargs: object) -> Callable[[], list[int]]:
        if failures:
            raise failures.pop()
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(app.vectors, "start_set_notes", flaky)
    written = await call(client, "lithos_write", agent="a", title="Retried", content="delta")
    assert written["indexing"] == "pending"
    eventually(lambda: not app.indexer.deferred() and in_step(app))
    assert app.catalog.deferred() == {}


async def test_health_and_stats_report_a_failed_store_with_its_reason(
    app: LithosApp, client: Client, data_dir: Path
):
    assert app.repair is not None
    app.repair.stop()
    note = await call(client, "lithos_write", agent="a", title="Note", content="echo")
    app.indexer.commit_staged()  # what the committer does within commit_interval_ms
    block_next_deletes(data_dir / ".tantivy")
    await call(client, "lithos_write", agent="a", id=note["id"], content="foxtrot")
    app.indexer.commit_staged()  # this commit meets the damage
    code, health = await get_health(app)
    assert code == 503 and health["status"] == "failed"  # a person should look
    fulltext = health["stores"]["fulltext"]
    assert fulltext["state"] == "failed" and "FileAlreadyExists" in fulltext["reason"]
    assert str(data_dir) not in str(health["stores"])
    assert health["stores"]["catalog"] == {"state": "ok"}
    stats = await call(client, "lithos_stats")
    assert stats["stores"]["fulltext"]["state"] == "failed"
    app.repair.start()
    eventually(lambda: app.health()["stores"]["fulltext"]["state"] == "ok")
    eventually(lambda: in_step(app) and not app.indexer.deferred())
    assert await get_health(app) == (200, app.health())
    assert app.health()["status"] == "ok"


async def test_health_is_degraded_but_200_while_an_index_update_waits_for_its_retry(
    app: LithosApp, client: Client, monkeypatch
):
    assert await get_health(app) == (200, app.health())
    assert app.health()["status"] == "ok"
    assert app.repair is not None
    app.repair.stop()  # hold the retry back
    real = app.vectors.start_set_notes
    monkeypatch.setattr(
        app.vectors, "start_set_notes", lambda *a, **k: (_ for _ in ()).throw(OSError())
    )
    written = await call(client, "lithos_write", agent="a", title="Kept", content="golf")
    assert written["indexing"] == "pending"
    code, health = await get_health(app)
    assert (code, health["status"]) == (200, "degraded")
    assert {s["state"] for s in health["stores"].values()} == {"ok"}
    monkeypatch.setattr(app.vectors, "start_set_notes", real)
    app.repair.start()
    eventually(lambda: app.health()["status"] == "ok")


async def test_reads_and_searches_answer_unavailable_while_the_catalog_is_rebuilt(
    app: LithosApp, client: Client, data_dir: Path
):
    note = await call(client, "lithos_write", agent="a", title="Kept", content="hotel words")
    assert app.repair is not None
    app.repair.stop()  # hold the repair back: the catalog stays broken
    app.stores.report(StoreCorrupt("catalog.db is damaged", data_dir / ".index" / "catalog.db"))
    for tool, arguments in [
        ("lithos_read", {"id": note["id"]}),
        ("lithos_list", {}),
        ("lithos_search", {"query": "hotel"}),
        ("lithos_search", {"query": "hotel", "mode": "hybrid"}),
    ]:
        refused = await call(client, tool, **arguments)
        assert refused["code"] == "index_unavailable", tool  # not doc_not_found, not a leak
        assert refused["details"]["index"] == "catalog"
    retrieved = await call(client, "lithos_retrieve", query="hotel")
    assert {"scout_lexical", "scout_vector"} <= set(retrieved["failed_scouts"])
    app.repair.start()
    assert app.stores.wait_rebuilt(timeout=30)
    read = await call(client, "lithos_read", id=note["id"])
    assert read["title"] == "Kept"
    found = await call(client, "lithos_search", query="hotel")
    assert [hit["id"] for hit in found["results"]] == [note["id"]]

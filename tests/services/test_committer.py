"""The background full-text committer: concurrent writers see their notes at once, the
committer commits them in groups, and every write mark ends once its commit is done."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

from lithos.app import LithosApp
from lithos.services.knowledge import WriteRequest
from tests.support import make_app


def marks(data_dir: Path) -> set[str]:
    with sqlite3.connect(data_dir / ".index" / "catalog.db") as conn:
        return {row[0] for row in conn.execute("SELECT path FROM deferred")}


def wait_until(condition: Callable[[], bool], timeout: float = 20.0) -> bool:
    """Poll a real condition until it holds or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def write(app: LithosApp, **fields: object) -> dict:
    return asyncio.run(app.knowledge.write(WriteRequest(agent="w", **fields)))  # type: ignore[arg-type]


def test_concurrent_writers_find_their_notes_at_once_and_share_commits(data_dir: Path):
    app = make_app(data_dir, **{"index.commit_interval_ms": 20})
    app.start(watch=False, embed=False)
    try:
        misses: list[str] = []
        written: list[str] = []
        lock = threading.Lock()

        def writer(number: int) -> None:
            for i in range(6):
                word = f"gecko{number}x{i}"
                note = write(app, title=f"Gecko {number} {i}", content=f"{word} climbs")
                if [hit.id for hit in app.fulltext.search(word)] != [note["id"]]:
                    misses.append(word)
                updated = write(app, id=note["id"], content=f"{word}b walls")
                if [hit.id for hit in app.fulltext.search(f"{word}b")] != [updated["id"]]:
                    misses.append(f"{word}b")
                with lock:
                    written.append(note["id"])

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert misses == []
        assert wait_until(lambda: app.indexer.awaiting_commit() == 0)
        assert 1 <= app.fulltext.commits < 72  # 72 writes, grouped into fewer commits
        assert app.fulltext.count() == len(written) == 36
        catalog = {e.id: e.content_hash for e in app.catalog.entries()}
        assert app.fulltext.hashes() == catalog
        # Every mark ended with its commit; the next write forgets the finished ones.
        write(app, title="Last", content="last")
        assert wait_until(lambda: app.indexer.awaiting_commit() == 0)
        assert app.indexer.deferred() == {}
        assert len(marks(data_dir)) <= 1
    finally:
        app.close()
    assert marks(data_dir) == set()


def test_the_committer_commits_at_once_when_enough_writes_wait(data_dir: Path):
    app = make_app(data_dir, **{"index.commit_interval_ms": 60_000, "index.commit_max_pending": 3})
    app.start(watch=False, embed=False)
    try:
        for i in range(2):
            write(app, title=f"Wait {i}", content="waiting")
        assert app.fulltext.uncommitted() == 2 and app.fulltext.commits == 0
        write(app, title="Wait 2", content="waiting")
        assert wait_until(lambda: app.fulltext.uncommitted() == 0)
        assert app.fulltext.commits == 1
    finally:
        app.close()


def test_a_batch_of_more_notes_than_may_wait_is_committed_at_once(data_dir: Path):
    app = make_app(data_dir, **{"index.commit_interval_ms": 60_000, "index.commit_max_pending": 3})
    app.start(watch=False, embed=False)
    try:
        requests = [WriteRequest(agent="w", title=f"Bulk {i}", content="bulk") for i in range(5)]
        asyncio.run(app.knowledge.write_batch("w", requests))
        assert wait_until(lambda: app.fulltext.uncommitted() == 0)
        assert app.fulltext.commits == 1 and len(app.fulltext.search("bulk")) == 5
    finally:
        app.close()


def test_a_failed_background_commit_defers_the_notes_for_repair(data_dir: Path, monkeypatch):
    app = make_app(data_dir, **{"index.commit_interval_ms": 60_000})
    app.start(watch=False, embed=False)
    try:
        assert app.repair is not None
        app.repair.stop()  # hold the retry back to look at what was recorded
        note = write(app, title="Fragile", content="fragile words")
        writer = app.fulltext._require_writer()

        class Failing:
            def __getattr__(self, name: str) -> object:
                if name == "commit":
                    raise ValueError("disk full")
                return getattr(writer, name)

        monkeypatch.setattr(app.fulltext, "_writer", Failing())
        app.indexer.commit_staged()
        monkeypatch.undo()
        assert note["path"] in app.indexer.deferred()
        assert note["path"] in marks(data_dir)
        assert app.fulltext.search("fragile") == []  # the overlay shows the disk again
        app.indexer.retry_deferred()
        assert [hit.id for hit in app.fulltext.search("fragile")] == [note["id"]]
        assert app.indexer.deferred() == {}
    finally:
        app.close()


def test_a_commit_settled_by_two_threads_at_once_ends_its_write_once(
    data_dir: Path, monkeypatch
) -> None:
    """The committer and a writer both look at the awaiting writes, outside the lock, and
    both see one a commit covered: the first takes it off and ends its mark, the second leaves
    it (it raised "list.remove(x): x not in list" into a write, which failed after its file
    was written)."""
    app = make_app(data_dir, **{"index.commit_interval_ms": 60_000})
    app.start(watch=False, embed=False)
    try:
        note = write(app, title="Heron", content="grey heron")
        monkeypatch.setattr(app.fulltext, "on_commit", None)  # settled by the two below
        app.fulltext.commit_pending()  # committed; the write still awaits its settling
        assert app.indexer.awaiting_commit() == 1
        looked, release = threading.Event(), threading.Event()
        real = app.fulltext.ticket_state
        errors: list[BaseException | None] = []

        def ticket_state(ticket: int) -> str:
            state = real(ticket)
            if threading.current_thread() is slow:
                looked.set()
                assert release.wait(10)
            return state

        monkeypatch.setattr(app.fulltext, "ticket_state", ticket_state)
        monkeypatch.setattr(threading, "excepthook", lambda args: errors.append(args.exc_value))
        slow = threading.Thread(target=app.indexer._settle_commits)
        slow.start()
        assert looked.wait(10)  # it saw the write as committed and waits
        app.indexer._settle_commits()  # this thread settles it first
        release.set()
        slow.join(10)
        assert errors == [] and app.indexer.awaiting_commit() == 0
        write(app, title="Wren", content="a wren")  # the next write forgets the settled mark
        assert note["path"] not in marks(data_dir)
    finally:
        release.set()
        app.close()

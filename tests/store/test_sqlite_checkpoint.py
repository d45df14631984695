"""Checkpoints aside: with ``checkpoint_aside`` no write transaction copies the write-ahead log
into the file (SQLite's automatic checkpoint, in whichever commit fills 1,000 pages); a timer
thread does it soon after the writes, and the catalog and the statistics work this way."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from lithos.store.sqlite import ASIDE_AUTOCHECKPOINT_PAGES, Database
from tests.support import make_app

PAGES_A_WRITE = 100


def fill(db: Database, writes: int) -> None:
    db.call(lambda conn: conn.execute("CREATE TABLE IF NOT EXISTS t (b BLOB)"))
    for _ in range(writes):
        db.call(
            lambda conn: conn.executemany(
                "INSERT INTO t VALUES (randomblob(4000))", [()] * PAGES_A_WRITE
            ),
            durable=False,
        )


def wal_pages(path: Path) -> float:
    return path.with_name(path.name + "-wal").stat().st_size / 4096


@pytest.mark.parametrize("aside", [False, True])
def test_writes_leave_the_checkpoint_to_the_timer_when_aside(tmp_path: Path, aside: bool):
    path = tmp_path / "x.db"
    db = Database(path, durable=False, checkpoint_aside=aside, checkpoint_delay=3600)
    try:
        fill(db, 30)  # ~3,000 pages
        if not aside:  # checkpointed by the writes at 1,000 pages: the log restarted
            assert wal_pages(path) < 1_500
            return
        assert wal_pages(path) > 2_900  # no write checkpointed
        names = [t.name for t in threading.enumerate()]
        assert names.count("sqlite-checkpoint-x.db") == 1  # one timer for every write
        assert db.checkpoint() > 2_900
        fill(db, 1)  # the log, all copied, starts over
        assert db.checkpoint() <= 2 * PAGES_A_WRITE
        assert db.call(lambda c: c.execute("SELECT count(*) FROM t").fetchone()[0]) == 3_100
    finally:
        db.close()


def test_the_timer_checkpoints_soon_after_a_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    copied: list[int] = []
    done = threading.Event()
    real = Database.checkpoint

    def spy(self: Database) -> int:
        copied.append(real(self))
        done.set()
        return copied[-1]

    monkeypatch.setattr(Database, "checkpoint", spy)
    db = Database(tmp_path / "x.db", durable=False, checkpoint_aside=True, checkpoint_delay=0.05)
    try:
        fill(db, 3)
        assert done.wait(10), "the log was never checkpointed"
        assert copied[0] > 0
    finally:
        db.close()


def test_close_cancels_a_checkpoint_due_and_a_file_moved_aside_is_not_made_again(
    tmp_path: Path,
):
    path = tmp_path / "x.db"
    db = Database(path, durable=False, checkpoint_aside=True, checkpoint_delay=3600)
    fill(db, 1)
    db.close()
    assert "sqlite-checkpoint-x.db" not in [t.name for t in threading.enumerate()]
    path.rename(tmp_path / "aside.db")
    with pytest.raises(sqlite3.OperationalError):
        db.checkpoint()
    assert not path.exists()


@pytest.mark.parametrize("store", ["catalog", "stats_store"])
def test_the_catalog_and_the_statistics_leave_checkpoints_to_the_timer(data_dir: Path, store: str):
    """The catalog (writes) and the statistics (a receipt every retrieve, ~29 pages of log)."""
    app = make_app(data_dir)
    try:
        db = getattr(app, store).db
        read = db.call(lambda c: c.execute("PRAGMA wal_autocheckpoint").fetchone())
        assert read[0] == ASIDE_AUTOCHECKPOINT_PAGES
    finally:
        app.close()


def test_close_waits_for_a_checkpoint_already_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    running, closing, returned = threading.Event(), threading.Event(), threading.Event()
    returned_meanwhile: list[bool] = []
    real = Database.checkpoint

    def slow(self: Database) -> int:
        running.set()
        assert closing.wait(10)
        returned_meanwhile.append(returned.wait(0.5))  # close() must not return before this
        return real(self)

    monkeypatch.setattr(Database, "checkpoint", slow)
    db = Database(tmp_path / "x.db", durable=False, checkpoint_aside=True, checkpoint_delay=0.01)
    fill(db, 1)
    assert running.wait(10), "the timer never checkpointed"

    def close() -> None:
        closing.set()
        db.close()
        returned.set()

    closer = threading.Thread(target=close)
    closer.start()
    closer.join(10)
    assert not closer.is_alive()
    assert returned_meanwhile == [False]

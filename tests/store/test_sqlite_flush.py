"""Group commit: a transaction committed without waiting for the disk (durable=False) is made
durable by a background fsync of the write-ahead log soon after, or at close."""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

import pytest

from lithos.store.sqlite import Database


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], threading.Event]:
    """Every file Python's os.fsync is called on (the real fsync still runs)."""
    seen: list[str] = []
    done = threading.Event()
    real = os.fsync

    def spy(fd: int) -> None:
        real(fd)
        seen.append(os.readlink(f"/proc/self/fd/{fd}"))
        done.set()

    monkeypatch.setattr(os, "fsync", spy)
    return seen, done


def insert(conn: sqlite3.Connection) -> None:
    conn.execute("INSERT INTO t VALUES (1)")


def test_a_relaxed_commit_is_fsynced_by_the_background_flush(
    tmp_path: Path, fsyncs: tuple[list[str], threading.Event]
) -> None:
    seen, done = fsyncs
    db = Database(tmp_path / "x.db", flush_delay=0.05)
    try:
        db.call(lambda conn: conn.execute("CREATE TABLE t (v)"))
        assert seen == []  # a durable commit is synced by SQLite itself, not by the flush
        db.call(insert, durable=False)
        assert done.wait(10), "the write-ahead log was never fsynced"
        assert seen == [str(tmp_path / "x.db-wal")]
    finally:
        db.close()


def test_close_flushes_a_relaxed_commit_at_once(
    tmp_path: Path, fsyncs: tuple[list[str], threading.Event]
) -> None:
    seen, _ = fsyncs
    db = Database(tmp_path / "x.db", flush_delay=3600)
    db.call(lambda conn: conn.execute("CREATE TABLE t (v)"))
    db.call(insert, durable=False)
    db.call(insert, durable=False)  # the flush already due covers it: still one timer
    assert seen == []
    assert [t.name for t in threading.enumerate()].count("sqlite-flush-x.db") == 1
    db.close()
    assert seen == [str(tmp_path / "x.db-wal")]
    assert "sqlite-flush-x.db" not in [t.name for t in threading.enumerate()]

"""Database.call_soon: a transaction queued on the database thread without waiting for it;
every later call runs after it, and its failure is not lost."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from lithos.errors import StoreCorrupt
from lithos.store.sqlite import Database, Migration

TABLE = (Migration("0001_t", "CREATE TABLE t (x INTEGER)"),)


def test_a_queued_transaction_runs_before_every_later_call(tmp_path: Path) -> None:
    db = Database(tmp_path / "x.db", TABLE)
    release = threading.Event()

    def slow_insert(conn: sqlite3.Connection) -> None:
        assert release.wait(10)
        conn.execute("INSERT INTO t VALUES (1)")

    try:
        db.call_soon(slow_insert)  # returns while the insert waits
        release.set()
        assert db.call(lambda conn: conn.execute("SELECT COUNT(*) FROM t").fetchone()[0]) == 1
    finally:
        release.set()
        db.close()


def test_a_queued_transaction_on_a_damaged_file_is_reported_and_rolled_back(
    tmp_path: Path,
) -> None:
    reported: list[StoreCorrupt] = []
    seen = threading.Event()

    def on_corrupt(error: StoreCorrupt) -> None:
        reported.append(error)
        seen.set()

    db = Database(tmp_path / "x.db", TABLE, on_corrupt=on_corrupt)

    def damaged(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO t VALUES (1)")
        error = sqlite3.DatabaseError("database disk image is malformed")
        error.sqlite_errorcode = sqlite3.SQLITE_CORRUPT  # as SQLite raises it
        raise error

    try:
        db.call_soon(damaged)
        assert seen.wait(10)
        assert isinstance(reported[0], StoreCorrupt) and "x.db" in reported[0].message
        assert db.call(lambda conn: conn.execute("SELECT COUNT(*) FROM t").fetchone()[0]) == 0
    finally:
        db.close()

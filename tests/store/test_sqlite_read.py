"""Database.read and run_read: a short read on the calling thread's own query-only connection,
which sees every committed write and goes to the database thread only when it must."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from lithos.errors import IndexUnavailable
from lithos.store.sqlite import READER_CACHE_KIB, Database

CountRows = Callable[[list[int]], Callable[[sqlite3.Connection], int]]


def test_a_read_runs_on_the_calling_thread_and_sees_each_committed_write(
    table_db: Database, count_rows: CountRows
) -> None:
    threads: list[int] = []
    assert table_db.read(count_rows(threads)) == 0
    table_db.call(lambda conn: conn.execute("INSERT INTO t VALUES (1)"))
    assert table_db.read(count_rows(threads)) == 1
    table_db.call(lambda conn: conn.execute("INSERT INTO t VALUES (2)"))
    assert table_db.read(count_rows(threads)) == 2  # no snapshot is kept between reads
    assert threads == [threading.get_ident()] * 3


def test_a_read_sees_another_connections_commit(
    table_db: Database, tmp_path: Path, count_rows: CountRows
) -> None:
    assert table_db.read(count_rows([])) == 0
    other = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    try:
        other.execute("INSERT INTO t VALUES (7)")
    finally:
        other.close()
    assert table_db.read(lambda conn: conn.execute("SELECT x FROM t").fetchall()[0][0]) == 7


def test_a_reader_cannot_write(table_db: Database, count_rows: CountRows) -> None:
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        table_db.read(lambda conn: conn.execute("INSERT INTO t VALUES (1)"))
    assert table_db.call(count_rows([])) == 0


def test_a_read_inside_a_transaction_joins_it_on_the_database_thread(
    table_db: Database, count_rows: CountRows
) -> None:
    def write_then_read(conn: sqlite3.Connection) -> int:
        conn.execute("INSERT INTO t VALUES (1)")
        return table_db.read(count_rows([]))  # sees the uncommitted row of its own transaction

    assert table_db.call(write_then_read) == 1


class LockedFile(sqlite3.Connection):
    """A connection that finds the file locked by another process (SQLITE_BUSY), as a reader
    would while another connection holds an exclusive lock."""

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        if sql.startswith("SELECT"):
            busy = sqlite3.OperationalError("database is locked")
            busy.sqlite_errorcode = sqlite3.SQLITE_BUSY  # type: ignore[attr-defined]
            raise busy
        return super().execute(sql, *args)


@pytest.fixture
def locked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Readers opened from now on meet a locked file."""
    connect = sqlite3.connect
    monkeypatch.setattr(
        sqlite3, "connect", lambda *args, **kwargs: connect(*args, factory=LockedFile, **kwargs)
    )


def test_a_read_that_meets_a_locked_file_waits_its_turn_on_the_database_thread(
    table_db: Database, locked: None, count_rows: CountRows
) -> None:
    threads: list[int] = []
    table_db.call(lambda conn: conn.execute("INSERT INTO t VALUES (1)"))
    assert table_db.read(count_rows(threads)) == 1
    assert asyncio.run(table_db.run_read(count_rows(threads))) == 1
    # Each read tried here first, met the lock, and was answered by the database thread.
    here = threading.get_ident()
    assert threads[0::2] == [here, here] and here not in threads[1::2] and len(threads) == 4


def test_a_read_after_close_is_index_unavailable(table_db: Database, count_rows: CountRows) -> None:
    assert table_db.read(count_rows([])) == 0
    table_db.close()
    with pytest.raises(IndexUnavailable):
        table_db.read(count_rows([]))
    with pytest.raises(IndexUnavailable):
        asyncio.run(table_db.run_read(count_rows([])))


def test_a_read_that_must_not_wait_answers_none_while_the_file_is_locked(
    table_db: Database, locked: None, count_rows: CountRows
) -> None:
    threads: list[int] = []
    assert table_db.read_now(count_rows(threads)) is None
    assert threads == [threading.get_ident()]  # tried here only, never handed over


def test_a_readers_page_cache_is_small(table_db: Database) -> None:
    size = table_db.read(lambda conn: conn.execute("PRAGMA cache_size").fetchone()[0])
    assert size == -READER_CACHE_KIB

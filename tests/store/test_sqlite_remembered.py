"""Database.remembered: a value read once and then answered on the calling thread, without
going to the database thread, until a transaction of this connection changes a row."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from lithos.store.sqlite import Database, Migration

TABLE = (Migration("0001_t", "CREATE TABLE t (x INTEGER)"),)


@pytest.fixture
def db(tmp_path: Path):
    database = Database(tmp_path / "x.db", TABLE)
    yield database
    database.close()


def count_rows(threads: list[int]):
    def compute(conn: sqlite3.Connection) -> int:
        threads.append(threading.get_ident())
        return int(conn.execute("SELECT COUNT(*) FROM t").fetchone()[0])

    return compute


def test_a_remembered_value_is_read_again_only_after_a_write(db: Database) -> None:
    computed: list[int] = []
    assert db.remembered("rows", count_rows(computed)) == 0
    assert db.remembered("rows", count_rows(computed)) == 0
    assert len(computed) == 1  # the second answer did not reach the database thread
    db.call(
        lambda conn: conn.execute("SELECT COUNT(*) FROM t").fetchone()
    )  # a read changes nothing
    assert db.remembered("rows", count_rows(computed)) == 0 and len(computed) == 1
    db.call(lambda conn: conn.execute("INSERT INTO t VALUES (1)"))
    # The write returned: the next answer is never the one from before it.
    assert db.remembered("rows", count_rows(computed)) == 1
    assert len(computed) == 2 and computed[0] != threading.get_ident()


def test_a_write_that_rolled_back_only_costs_one_more_read(db: Database) -> None:
    computed: list[int] = []
    assert db.remembered("rows", count_rows(computed)) == 0

    def failing(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO t VALUES (1)")
        raise RuntimeError("abandoned")

    with pytest.raises(RuntimeError):
        db.call(failing)
    assert db.remembered("rows", count_rows(computed)) == 0
    assert len(computed) == 2


def test_values_are_remembered_per_key(db: Database) -> None:
    computed: list[int] = []
    db.call(lambda conn: conn.execute("INSERT INTO t VALUES (1)"))
    assert db.remembered(("rows", "a"), count_rows(computed)) == 1
    assert db.remembered(("rows", "b"), count_rows(computed)) == 1
    assert db.remembered(("rows", "a"), count_rows(computed)) == 1
    assert len(computed) == 2


def test_held_answers_only_what_remembered_would_without_the_database_thread(
    db: Database,
) -> None:
    computed: list[int] = []
    assert db.held("rows") is None  # never read
    assert db.remembered("rows", count_rows(computed)) == 0
    assert db.held("rows") == 0
    assert db.held("other") is None
    db.call(lambda conn: conn.execute("INSERT INTO t VALUES (1)"))
    assert db.held("rows") is None  # a write returned since: only the database thread knows
    assert db.remembered("rows", count_rows(computed)) == 1
    assert db.held("rows") == 1


async def test_run_remembered_answers_a_held_value_without_the_database_thread(
    db: Database,
) -> None:
    computed: list[int] = []
    assert await db.run_remembered("rows", count_rows(computed)) == 0
    assert await db.run_remembered("rows", count_rows(computed)) == 0
    assert len(computed) == 1 and computed[0] != threading.get_ident()
    await db.run(lambda conn: conn.execute("INSERT INTO t VALUES (1)"))
    assert await db.run_remembered("rows", count_rows(computed)) == 1
    assert len(computed) == 2

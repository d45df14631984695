"""Database.remembered: a value read once and then answered on the calling thread, without
going to the database thread, until a transaction of this connection changes a row."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable

import pytest

from lithos.store.sqlite import Database

CountRows = Callable[[list[int]], Callable[[sqlite3.Connection], int]]


def test_a_remembered_value_is_read_again_only_after_a_write(
    table_db: Database, count_rows: CountRows
) -> None:
    computed: list[int] = []
    assert table_db.remembered("rows", count_rows(computed)) == 0
    assert table_db.remembered("rows", count_rows(computed)) == 0
    assert len(computed) == 1  # the second answer did not reach the database thread
    table_db.call(
        lambda conn: conn.execute("SELECT COUNT(*) FROM t").fetchone()
    )  # a read changes nothing
    assert table_db.remembered("rows", count_rows(computed)) == 0 and len(computed) == 1
    table_db.call(lambda conn: conn.execute("INSERT INTO t VALUES (1)"))
    # The write returned: the next answer is never the one from before it.
    assert table_db.remembered("rows", count_rows(computed)) == 1
    assert len(computed) == 2 and computed[0] != threading.get_ident()


def test_a_write_that_rolled_back_only_costs_one_more_read(
    table_db: Database, count_rows: CountRows
) -> None:
    computed: list[int] = []
    assert table_db.remembered("rows", count_rows(computed)) == 0

    def failing(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO t VALUES (1)")
        raise RuntimeError("abandoned")

    with pytest.raises(RuntimeError):
        table_db.call(failing)
    assert table_db.remembered("rows", count_rows(computed)) == 0
    assert len(computed) == 2


def test_values_are_remembered_per_key(table_db: Database, count_rows: CountRows) -> None:
    computed: list[int] = []
    table_db.call(lambda conn: conn.execute("INSERT INTO t VALUES (1)"))
    assert table_db.remembered(("rows", "a"), count_rows(computed)) == 1
    assert table_db.remembered(("rows", "b"), count_rows(computed)) == 1
    assert table_db.remembered(("rows", "a"), count_rows(computed)) == 1
    assert len(computed) == 2


def test_held_answers_only_what_remembered_would_without_the_database_thread(
    table_db: Database, count_rows: CountRows
) -> None:
    computed: list[int] = []
    assert table_db.held("rows") is None  # never read
    assert table_db.remembered("rows", count_rows(computed)) == 0
    assert table_db.held("rows") == 0
    assert table_db.held("other") is None
    table_db.call(lambda conn: conn.execute("INSERT INTO t VALUES (1)"))
    assert table_db.held("rows") is None  # a write returned since: only the database thread knows
    assert table_db.remembered("rows", count_rows(computed)) == 1
    assert table_db.held("rows") == 1


async def test_run_remembered_answers_a_held_value_without_the_database_thread(
    table_db: Database, count_rows: CountRows
) -> None:
    computed: list[int] = []
    assert await table_db.run_remembered("rows", count_rows(computed)) == 0
    assert await table_db.run_remembered("rows", count_rows(computed)) == 0
    assert len(computed) == 1 and computed[0] != threading.get_ident()
    await table_db.run(lambda conn: conn.execute("INSERT INTO t VALUES (1)"))
    assert await table_db.run_remembered("rows", count_rows(computed)) == 1
    assert len(computed) == 2

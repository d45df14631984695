"""Fixtures of the store tests."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lithos.store.sqlite import Database, Migration

ONE_TABLE = (Migration("0001_t", "CREATE TABLE t (x INTEGER)"),)


@pytest.fixture
def table_db(tmp_path: Path) -> Iterator[Database]:
    """A database of one empty table, ``t (x INTEGER)``, at ``tmp_path / "x.db"``."""
    database = Database(tmp_path / "x.db", ONE_TABLE)
    yield database
    database.close()


@pytest.fixture
def count_rows() -> Callable[[list[int]], Callable[[sqlite3.Connection], int]]:
    """A query counting the rows of ``t`` that notes each thread it ran on in ``threads``."""

    def query(threads: list[int]) -> Callable[[sqlite3.Connection], int]:
        def compute(conn: sqlite3.Connection) -> int:
            threads.append(threading.get_ident())
            return int(conn.execute("SELECT COUNT(*) FROM t").fetchone()[0])

        return compute

    return query

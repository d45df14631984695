"""Named migrations: SQL ones and Python ones that backfill data, each applied once."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from lithos.store.sqlite import Database, Migration


def test_python_migrations_run_once_after_sql_ones(tmp_path: Path):
    calls: list[str] = []

    def backfill(conn: sqlite3.Connection) -> None:
        calls.append("backfill")
        conn.execute("INSERT INTO items(name) VALUES ('seeded')")

    migrations = [
        Migration("0001_items", "CREATE TABLE items (name TEXT); CREATE INDEX i ON items(name)"),
        Migration("0002_seed", backfill),
    ]
    for _ in range(2):
        db = Database(tmp_path / "x.db", migrations)
        rows = db.call(lambda c: c.execute("SELECT name FROM items").fetchall())
        db.close()
    assert calls == ["backfill"] and [r[0] for r in rows] == ["seeded"]

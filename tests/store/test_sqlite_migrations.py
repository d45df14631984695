"""Named migrations: SQL ones and Python ones that backfill data, each applied once."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from lithos.store.sqlite import Database, Migration, generation_migration


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


def test_kept_values_last_until_a_row_changes_here_or_in_another_connection(tmp_path: Path):
    migrations = [
        Migration("0001_items", "CREATE TABLE items (id INTEGER PRIMARY KEY, v TEXT)"),
        Migration("0002_generation", generation_migration("items")),
    ]
    db = Database(tmp_path / "k.db", migrations)
    computed: list[int] = []

    def count(conn: sqlite3.Connection) -> int:
        computed.append(1)
        return int(conn.execute("SELECT count(*) FROM items").fetchone()[0])

    def kept() -> int:
        return db.call(lambda conn: db.kept(conn, "count", count))

    try:
        assert (kept(), kept(), len(computed)) == (0, 0, 1)
        db.call(lambda conn: conn.execute("INSERT INTO items VALUES (1, 'a')"))
        assert (kept(), kept(), len(computed)) == (1, 1, 2)
        db.call(lambda conn: conn.execute("UPDATE items SET v = 'b'"))
        assert (kept(), len(computed)) == (1, 3)
        other = sqlite3.connect(tmp_path / "k.db")
        with other:
            other.execute("INSERT INTO items VALUES (2, 'c')")
        other.close()
        assert (kept(), len(computed)) == (2, 4)
        db.call(lambda conn: conn.execute("DELETE FROM items"))
        assert (kept(), kept(), len(computed)) == (0, 0, 5)
    finally:
        db.close()

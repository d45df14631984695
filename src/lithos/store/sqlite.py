"""The one SQLite connection strategy of Lithos.

Each database file gets one :class:`Database`: a single connection owned by a single worker
thread. Every statement runs on that thread, so calls from the event loop never block it
(``await db.run(fn)``) and calls from other threads (the embedding worker, the CLI) simply wait
their turn (``db.call(fn)``). Serialising on one connection makes each ``fn`` a transaction that
no other caller can interleave with, which is what makes claims atomic.

The schema is created by named migrations, each recorded in ``schema_migrations`` once applied.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Migration:
    """One named, ordered schema change. ``sql`` may hold several statements."""

    name: str
    sql: str


class Database:
    """A SQLite file in WAL mode behind one connection on one thread."""

    def __init__(
        self, path: Path, migrations: Sequence[Migration] = (), durable: bool = True
    ) -> None:
        """``durable=False`` suits rebuildable indexes: a commit survives a process crash but
        not a power cut, and costs no fsync."""
        self.path = path
        self._synchronous = "FULL" if durable else "NORMAL"
        path.parent.mkdir(parents=True, exist_ok=True)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"sqlite-{path.name}")
        self._thread_id: int | None = None
        self._closed = False
        self._conn: sqlite3.Connection = self._executor.submit(self._open).result()
        self.call(lambda conn: _migrate(conn, migrations))

    def _open(self) -> sqlite3.Connection:
        self._thread_id = threading.get_ident()
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={self._synchronous}")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=30000")
        return conn

    def call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` as one transaction on the database thread and return its result."""
        if threading.get_ident() == self._thread_id:
            return _in_transaction(self._conn, fn)
        return self._executor.submit(_in_transaction, self._conn, fn).result()

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Like :meth:`call`, awaited without blocking the event loop."""
        future = self._executor.submit(_in_transaction, self._conn, fn)
        return await asyncio.wrap_future(future)

    def close(self) -> None:
        """Close the connection; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            self._executor.submit(self._conn.close).result()
        finally:
            self._executor.shutdown(wait=True)


def _in_transaction(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    if conn.in_transaction:  # nested call from inside fn: join the outer transaction
        return fn(conn)
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = fn(conn)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return result


def _migrate(conn: sqlite3.Connection, migrations: Sequence[Migration]) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " name TEXT PRIMARY KEY, applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)"
    )
    applied = {row[0] for row in conn.execute("SELECT name FROM schema_migrations")}
    for migration in migrations:
        if migration.name in applied:
            continue
        for statement in _statements(migration.sql):
            conn.execute(statement)
        conn.execute("INSERT INTO schema_migrations(name) VALUES (?)", (migration.name,))


def _statements(sql: str) -> list[str]:
    return [part.strip() for part in sql.split(";") if part.strip()]

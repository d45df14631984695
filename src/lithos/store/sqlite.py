"""The one SQLite connection strategy of Lithos.

Each database file gets one :class:`Database`: a single connection owned by a single worker
thread. Every write runs on that thread, so calls from the event loop never block it
(``await db.run(fn)``) and calls from other threads (the embedding worker, the CLI) simply wait
their turn (``db.call(fn)``). Serialising on one connection makes each ``fn`` a transaction that
no other caller can interleave with, which is what makes claims atomic. A short read may instead
run on the calling thread's own query-only connection (``db.read(fn)``, ``await
db.run_read(fn)``), without the two thread hand-offs of a trip to that thread.

The schema is created by named migrations, each recorded in ``schema_migrations`` once applied.

A damaged file (SQLite reports it as corrupt or as not a database) surfaces as
:class:`~lithos.errors.StoreCorrupt`, never as a raw ``sqlite3`` error, and is also passed to the
``on_corrupt`` callback so the store's owner can repair it (store/lifecycle.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar, cast

from lithos.errors import IndexUnavailable, StoreCorrupt

T = TypeVar("T")
log = logging.getLogger(__name__)
# A transaction committed with durable=False is on disk (fsynced) at most this long after.
FLUSH_DELAY_S = 1.0
# With checkpoint_aside, the write-ahead log is copied into the file at most this long after a
# write transaction, by a timer thread instead of the writing one; a commit still checkpoints
# once the log holds this many pages (what the timer has not copied yet: little), which bounds
# the log under sustained writes (`lithos import`), where a passive checkpoint beside them never
# lets it start over.
CHECKPOINT_DELAY_S = 1.0
ASIDE_AUTOCHECKPOINT_PAGES = 10_000
# SQLite's primary result codes for a damaged file; anything else (busy, constraint, full
# disk) says nothing about the file itself.
_DAMAGED = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}
# ... and for a file another connection holds locked (a reader then goes to the database thread).
_BUSY = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}
# Values :meth:`Database.kept` holds (one per distinct query); the oldest is dropped past this.
KEPT_VALUES = 256
# Page cache of each thread's query-only connection (Database.read), in KiB.
READER_CACHE_KIB = 256
# What Database._fresh answers when nothing current is remembered (None may be a value).
_NOT_HELD = object()
# What Database._read_here answers when the file is locked and the read must wait its turn.
_BUSY_NOW = object()


@dataclass(frozen=True)
class Migration:
    """One named, ordered schema change: SQL (several statements allowed) or a Python
    function of the connection, for a change that must read or backfill data."""

    name: str
    sql: str | Callable[[sqlite3.Connection], None]


class Database:
    """A SQLite file in WAL mode behind one connection on one thread."""

    def __init__(
        self,
        path: Path,
        migrations: Sequence[Migration] = (),
        durable: bool = True,
        on_corrupt: Callable[[StoreCorrupt], None] | None = None,
        flush_delay: float = FLUSH_DELAY_S,
        checkpoint_aside: bool = False,
        checkpoint_delay: float = CHECKPOINT_DELAY_S,
    ) -> None:
        """``durable=False`` suits rebuildable indexes: a commit survives a process crash but
        not a power cut, and costs no fsync. Raises :class:`StoreCorrupt` if the file is
        damaged (then ``on_corrupt`` is not called: the caller already has the error).
        ``flush_delay``: see :meth:`call`. With ``checkpoint_aside`` a timer thread copies the
        write-ahead log into the file ``checkpoint_delay`` seconds after a write
        (:meth:`checkpoint`), instead of the commit that fills 1,000 pages of log (SQLite's
        automatic checkpoint, with an fsync of the file); a commit still does it at
        ``ASIDE_AUTOCHECKPOINT_PAGES``."""
        self.path = path
        self._synchronous = "FULL" if durable else "NORMAL"
        self._flush_delay = flush_delay
        self._flush_lock = threading.Lock()
        self._flush_timer: threading.Timer | None = None
        self._checkpoint_aside = checkpoint_aside
        self._checkpoint_delay = checkpoint_delay
        self._checkpoint_timer: threading.Timer | None = None  # guarded by _flush_lock
        # Held by a timer's checkpoint while it runs, so that close() waits for it.
        self._checkpoint_lock = threading.Lock()
        self._on_corrupt: Callable[[StoreCorrupt], None] | None = None
        path.parent.mkdir(parents=True, exist_ok=True)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"sqlite-{path.name}")
        self._thread_id: int | None = None
        self._closed = False
        # query key -> (generation, value): read and written only on the database thread.
        self._kept: dict[Hashable, tuple[int, object]] = {}
        # Rows this connection's transactions have changed so far (sqlite3's total_changes),
        # set on the database thread after each transaction, before its caller is answered.
        self.changes = 0
        # query key -> (changes, value): written on the database thread, read on any.
        self._remembered: dict[Hashable, tuple[int, object]] = {}
        # Each calling thread's query-only connection (Database.read), opened on its first
        # read; every one opened is listed under _readers_lock so that close() closes them.
        self._reader = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        try:
            self._conn: sqlite3.Connection = self._executor.submit(self._open).result()
        except BaseException as exc:
            self._executor.shutdown(wait=True)
            raise self._translate(exc) from exc
        try:
            self.call(lambda conn: _migrate(conn, migrations))
        except BaseException:
            self.close()
            raise
        self._on_corrupt = on_corrupt

    def _open(self) -> sqlite3.Connection:
        self._thread_id = threading.get_ident()
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={self._synchronous}")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=30000")
        # Statement journals (every write statement in a transaction keeps one: triggers and
        # constraints may abort it) and TEMP tables in memory: on disk, a journal that once
        # outgrew 64 KB stayed a file for the connection, and every later statement wrote its
        # pages to it (~130 MB of writes while importing 2,000 notes). Both stay small here.
        conn.execute("PRAGMA temp_store=MEMORY")
        if self._checkpoint_aside:
            conn.execute(f"PRAGMA wal_autocheckpoint={ASIDE_AUTOCHECKPOINT_PAGES}")
        return conn

    def call(self, fn: Callable[[sqlite3.Connection], T], durable: bool = True) -> T:
        """Run ``fn(conn)`` as one transaction on the database thread and return its result.

        ``durable=False`` commits this one transaction without waiting for the disk (WAL,
        ``synchronous=NORMAL``): it survives a kill of the process at once, and a power cut
        once a background timer has fsynced the log, at most ``flush_delay`` seconds later
        (group commit: one fsync for every such transaction of that moment). For a
        transaction whose loss in a power cut is tolerable or can be redone (receipts,
        learning, see TaskCompletion.replay); no effect on a database opened with
        ``durable=False``."""
        try:
            if threading.get_ident() == self._thread_id:
                return self._transaction(fn, durable)
            return self._submit(fn, durable).result()
        except sqlite3.DatabaseError as exc:
            raise self._translate(exc, report=True) from exc

    def start(self, fn: Callable[[sqlite3.Connection], T]) -> Callable[[], T]:
        """Queue ``fn(conn)`` as :meth:`call` would and return at once a function that waits
        for it and returns its result (or raises what :meth:`call` would): the caller's work
        meanwhile runs beside the transaction. Later calls run after it."""
        if threading.get_ident() == self._thread_id:
            result = self.call(fn)
            return lambda: result
        future = self._submit(fn)

        def wait() -> T:
            try:
                return future.result()
            except sqlite3.DatabaseError as exc:
                raise self._translate(exc, report=True) from exc

        return wait

    def call_soon(self, fn: Callable[[sqlite3.Connection], object]) -> None:
        """Queue ``fn(conn)`` as one transaction on the database thread and return at once:
        every call made after this one runs after it (one thread, first come first served).
        A failure is logged; a damaged file is also reported to ``on_corrupt``, from a thread
        of its own (the callback may close this database, which its own thread cannot)."""
        self._submit(fn).add_done_callback(self._report_failure)

    def _report_failure(self, done: Future[object]) -> None:
        error = None if done.cancelled() else done.exception()
        if error is None:
            return

        def report() -> None:
            failure = self._translate(error, report=True)
            log.error("a queued transaction on %s failed: %s", self.path.name, failure)

        threading.Thread(target=report, name=f"sqlite-report-{self.path.name}").start()

    def kept(
        self, conn: sqlite3.Connection, key: Hashable, compute: Callable[[sqlite3.Connection], T]
    ) -> T:
        """``compute(conn)``, or what it returned before while the file's generation (see
        :func:`generation_migration`) is unchanged. The generation is read in the same
        transaction as ``compute`` would read, so a kept value is never older than the last
        committed change, by this process or another. Call inside :meth:`call` (on the
        database thread); ``compute`` must return a value nobody mutates."""
        generation = conn.execute("SELECT value FROM generation").fetchone()[0]
        held = self._kept.get(key)
        if held is not None and held[0] == generation:
            return cast(T, held[1])
        value = compute(conn)
        self._kept.pop(key, None)
        if len(self._kept) >= KEPT_VALUES:
            del self._kept[next(iter(self._kept))]
        self._kept[key] = (generation, value)
        return value

    def remembered(self, key: Hashable, compute: Callable[[sqlite3.Connection], T]) -> T:
        """``compute(conn)`` on the database thread, or, read on the calling thread without
        going to the database thread, what it returned before while no transaction of this
        connection has changed a row since. Only for a database no other process (or
        connection) writes: their changes are not seen. A write's transaction counts before
        the write returns, so a value is never older than the last write that returned.
        ``compute`` must return a value nobody mutates."""
        value = self._fresh(key)
        if value is not _NOT_HELD:
            return cast(T, value)
        return self.call(self._remembering(key, compute))

    async def run_remembered(self, key: Hashable, compute: Callable[[sqlite3.Connection], T]) -> T:
        """:meth:`remembered` awaited: a value held is answered at once, without a hop to
        the database thread; otherwise like :meth:`run`."""
        value = self._fresh(key)
        if value is not _NOT_HELD:
            return cast(T, value)
        return await self.run(self._remembering(key, compute))

    def _remembering(
        self, key: Hashable, compute: Callable[[sqlite3.Connection], T]
    ) -> Callable[[sqlite3.Connection], T]:
        """``compute``, recording what it returns for :meth:`remembered` (database thread)."""

        def run(conn: sqlite3.Connection) -> T:
            value = compute(conn)
            self._remembered.pop(key, None)
            if len(self._remembered) >= KEPT_VALUES:
                self._remembered.pop(next(iter(self._remembered)), None)
            self._remembered[key] = (conn.total_changes, value)
            return value

        return run

    def held(self, key: Hashable) -> object | None:
        """What :meth:`remembered` would answer for ``key`` without going to the database
        thread, or None when it would have to go there."""
        value = self._fresh(key)
        return None if value is _NOT_HELD else value

    def _fresh(self, key: Hashable) -> object:
        """The value remembered for ``key`` while no transaction of this connection has
        changed a row since it was read, else ``_NOT_HELD``."""
        held = self._remembered.get(key)
        return held[1] if held is not None and held[0] == self.changes else _NOT_HELD

    async def run(self, fn: Callable[[sqlite3.Connection], T], durable: bool = True) -> T:
        """Like :meth:`call`, awaited without blocking the event loop."""
        try:
            return await asyncio.wrap_future(self._submit(fn, durable))
        except sqlite3.DatabaseError as exc:
            raise self._translate(exc, report=True) from exc

    def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(conn)`` as one read transaction on the calling thread's own query-only
        connection, without going to the database thread (two thread hand-offs that cost more
        CPU than a short query). It sees every transaction committed before it starts, by this
        process or another, as :meth:`call` would. ``fn`` must only read, and not use
        :meth:`kept`. Falls back to :meth:`call` on the database thread itself and when the
        file is busy (the reader never waits for a lock). Raises :class:`IndexUnavailable`
        once closed."""
        if threading.get_ident() == self._thread_id:
            return self.call(fn)
        value = self._read_here(fn)
        return self.call(fn) if value is _BUSY_NOW else cast(T, value)

    async def run_read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """:meth:`read` on the event loop: answered there, without a hop, unless the file is
        busy (then awaited on the database thread, as :meth:`run`). For reads of a few rows
        only: the loop waits for them."""
        value = self._read_here(fn)
        return await self.run(fn) if value is _BUSY_NOW else cast(T, value)

    def read_now(self, fn: Callable[[sqlite3.Connection], T]) -> T | None:
        """:meth:`read` for a caller that must not wait (the event loop): None when the file
        is locked, instead of a trip to the database thread. ``fn`` must not return None."""
        value = self._read_here(fn)
        return None if value is _BUSY_NOW else cast(T, value)

    def _read_here(self, fn: Callable[[sqlite3.Connection], T]) -> T | object:
        """``fn`` on the calling thread's reader, or ``_BUSY_NOW`` if the file is locked."""
        try:
            return _in_read_transaction(self._reader_connection(), fn)
        except sqlite3.ProgrammingError as exc:  # its connection closed by close() meanwhile
            raise IndexUnavailable(f"{self.path.name} is closed") from exc
        except sqlite3.DatabaseError as exc:
            if getattr(exc, "sqlite_errorcode", 0) & 0xFF in _BUSY:
                return _BUSY_NOW
            raise self._translate(exc, report=True) from exc

    def _reader_connection(self) -> sqlite3.Connection:
        """The calling thread's query-only connection, opened on its first use."""
        conn: sqlite3.Connection | None = getattr(self._reader, "conn", None)
        if conn is not None and not self._closed:
            return conn
        with self._readers_lock:
            if self._closed:
                raise IndexUnavailable(f"{self.path.name} is closed")
            # timeout=0: a locked file answers SQLITE_BUSY at once (read() then goes to the
            # database thread) instead of blocking the caller, which may be the event loop.
            conn = sqlite3.connect(
                self.path, isolation_level=None, timeout=0, check_same_thread=False
            )
            self._readers.append(conn)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA query_only=ON")
        # A reader looks up a few rows; SQLite's default page cache (up to 2 MB) per thread
        # would only copy pages the OS already caches.
        conn.execute(f"PRAGMA cache_size=-{READER_CACHE_KIB}")
        self._reader.conn = conn
        return conn

    def quick_check(self) -> None:
        """Read every page once (``PRAGMA quick_check``); raises :class:`StoreCorrupt` if the
        file is damaged. Linear in the file size: meant for small, precious databases."""
        rows = self.call(lambda conn: conn.execute("PRAGMA quick_check").fetchall())
        findings = [str(row[0]) for row in rows]
        if findings != ["ok"]:
            raise StoreCorrupt(
                f"{self.path.name} is damaged ({'; '.join(findings[:3])})", location=self.path
            )

    def derivation(self) -> dict[str, object] | None:
        """What the data in this (derived) database was made with, as last recorded."""

        def read(conn: sqlite3.Connection) -> list[sqlite3.Row]:
            _derivation_table(conn)
            return conn.execute("SELECT key, value FROM derivation").fetchall()

        return {row[0]: json.loads(row[1]) for row in self.call(read)} or None

    def record_derivation(self, derivation: dict[str, object]) -> None:
        def write(conn: sqlite3.Connection) -> None:
            _derivation_table(conn)
            conn.execute("DELETE FROM derivation")
            conn.executemany(
                "INSERT INTO derivation(key, value) VALUES (?, ?)",
                [(key, json.dumps(value)) for key, value in derivation.items()],
            )

        self.call(write)

    def _submit(self, fn: Callable[[sqlite3.Connection], T], durable: bool = True) -> Future[T]:
        try:
            return self._executor.submit(self._transaction, fn, durable)
        except RuntimeError:  # the executor is shut down: closed, possibly for a rebuild
            raise IndexUnavailable(f"{self.path.name} is closed") from None

    def _transaction(self, fn: Callable[[sqlite3.Connection], T], durable: bool) -> T:
        """On the database thread: ``fn`` in a transaction, committed without an fsync when
        not ``durable`` (the connection's setting is restored at once afterwards)."""
        conn = self._conn
        try:
            if durable or self._synchronous == "NORMAL" or conn.in_transaction:
                return _in_transaction(conn, fn)
            conn.execute("PRAGMA synchronous=NORMAL")
            try:
                result = _in_transaction(conn, fn)
            finally:
                conn.execute(f"PRAGMA synchronous={self._synchronous}")
            self._flush_soon()
            return result
        finally:
            wrote, self.changes = conn.total_changes != self.changes, conn.total_changes
            if wrote and self._checkpoint_aside:
                self._checkpoint_soon()

    def _checkpoint_soon(self) -> None:
        """Have the write-ahead log checkpointed ``checkpoint_delay`` seconds from now, unless
        a checkpoint is already due (it will cover this write too)."""
        self._soon("checkpoint", self._checkpoint_delay, self._checkpoint_due)

    def _checkpoint_due(self) -> None:
        with self._checkpoint_lock:
            with self._flush_lock:
                self._checkpoint_timer = None
                if self._closed:
                    return
            try:
                self.checkpoint()
            except sqlite3.Error:
                log.warning("could not checkpoint %s; the next write retries", self.path.name)

    def checkpoint(self) -> int:
        """Copy the committed pages of the write-ahead log into the file now, on a connection
        of this thread's own (a passive checkpoint: it waits for no writer nor reader and
        copies the pages no reader still needs); returns how many pages of the log are in the
        file now."""
        # mode=rw: a file moved aside meanwhile (a rebuild) is not made again, empty, here.
        uri = f"{self.path.resolve().as_uri()}?mode=rw"
        conn = sqlite3.connect(uri, uri=True, timeout=0, isolation_level=None)
        try:
            _, _, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        finally:
            conn.close()
        return int(copied)

    def _flush_soon(self) -> None:
        """Have the write-ahead log fsynced ``flush_delay`` seconds from now, unless a flush
        is already due (it will cover this commit too)."""
        self._soon("flush", self._flush_delay, self._flush)

    def _soon(self, kind: str, delay: float, due: Callable[[], None]) -> None:
        """Start the ``kind`` timer (``_flush_timer``, ``_checkpoint_timer``) to call ``due``
        in ``delay`` seconds, unless it is already started or the database is closed."""
        attribute = f"_{kind}_timer"
        with self._flush_lock:
            if getattr(self, attribute) is not None or self._closed:
                return
            timer = threading.Timer(delay, due)
            timer.name, timer.daemon = f"sqlite-{kind}-{self.path.name}", True
            setattr(self, attribute, timer)
        timer.start()

    def _flush(self) -> None:
        """fsync the write-ahead log: every commit written to it so far is then durable. A
        commit landing during the fsync schedules the next flush (the timer is cleared
        first)."""
        with self._flush_lock:
            self._flush_timer = None
        wal = self.path.with_name(self.path.name + "-wal")
        try:
            fd = os.open(wal, os.O_RDONLY)
        except FileNotFoundError:  # checkpointed and removed: the commits are in the file
            return
        try:
            os.fsync(fd)
        except OSError:
            log.warning("could not fsync %s; retrying", wal.name, exc_info=True)
            self._flush_soon()
        finally:
            os.close(fd)

    def _translate(self, exc: BaseException, report: bool = False) -> BaseException:
        """``exc`` as :class:`StoreCorrupt` if it says the file is damaged, else unchanged."""
        if not isinstance(exc, sqlite3.DatabaseError):
            return exc
        code = getattr(exc, "sqlite_errorcode", None)
        if code is None or code & 0xFF not in _DAMAGED:
            return exc
        error = StoreCorrupt(f"{self.path.name} is damaged ({exc})", location=self.path)
        if report and self._on_corrupt is not None:
            self._on_corrupt(error)
        return error

    def close(self) -> None:
        """Close the connection; safe to call twice."""
        if self._closed:
            return
        with self._flush_lock:
            self._closed = True
            timer, self._flush_timer = self._flush_timer, None
            checkpoint, self._checkpoint_timer = self._checkpoint_timer, None
        if checkpoint is not None:  # closing the connection checkpoints the log anyway
            checkpoint.cancel()
            checkpoint.join()
        with self._checkpoint_lock:  # a timer's checkpoint already running ends first
            pass
        if timer is not None:
            timer.cancel()
            timer.join()
            self._flush()
        with self._readers_lock:
            readers, self._readers = self._readers, []
        for reader in readers:
            reader.close()
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


def _in_read_transaction(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    """``fn`` in a deferred (read) transaction: one snapshot for all its statements."""
    conn.execute("BEGIN")
    try:
        return fn(conn)
    finally:
        conn.execute("ROLLBACK")


def generation_migration(*tables: str) -> Callable[[sqlite3.Connection], None]:
    """A migration adding a ``generation`` number that triggers bump in every transaction
    inserting, updating or deleting a row of ``tables`` (from any process), for
    :meth:`Database.kept`. (A function: trigger bodies hold semicolons, which the statement
    splitter of SQL migrations would cut.)"""

    def migrate(conn: sqlite3.Connection) -> None:
        conn.execute(
            "CREATE TABLE generation (id INTEGER PRIMARY KEY CHECK (id = 1),"
            " value INTEGER NOT NULL)"
        )
        conn.execute("INSERT INTO generation VALUES (1, 0)")
        for table in tables:
            for event in ("INSERT", "UPDATE", "DELETE"):
                conn.execute(
                    f"CREATE TRIGGER {table}_{event.lower()}_generation AFTER {event} ON {table}"
                    " BEGIN UPDATE generation SET value = value + 1; END"
                )

    return migrate


def _derivation_table(conn: sqlite3.Connection) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS derivation (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
    )


def _migrate(conn: sqlite3.Connection, migrations: Sequence[Migration]) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " name TEXT PRIMARY KEY, applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)"
    )
    applied = {row[0] for row in conn.execute("SELECT name FROM schema_migrations")}
    for migration in migrations:
        if migration.name in applied:
            continue
        if callable(migration.sql):
            migration.sql(conn)
        else:
            for statement in _statements(migration.sql):
                conn.execute(statement)
        conn.execute("INSERT INTO schema_migrations(name) VALUES (?)", (migration.name,))


def _statements(sql: str) -> list[str]:
    return [part.strip() for part in sql.split(";") if part.strip()]

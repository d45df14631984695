"""The note catalog: a derived SQLite index of every note's metadata, tags and raw links.

It answers list, tag-count, path/id look-ups and the link graph without reading files, and it
records the content hash and stat of the file version it holds so startup can verify it. Like
every index it is rebuildable from ``knowledge/`` alone.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, cast

from lithos.domain.filters import SearchFilter
from lithos.domain.metadata import AccessScope, NoteStatus, NoteType
from lithos.domain.notes import Note
from lithos.domain.scope import Scope
from lithos.domain.tags import display_spelling, tag_key
from lithos.errors import StoreCorrupt
from lithos.store.sqlite import Database, Migration, generation_migration

CATALOG_MIGRATIONS = [
    Migration(
        "0001_notes",
        """
        CREATE TABLE notes (
            id TEXT PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            title TEXT NOT NULL,
            author TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            confidence REAL NOT NULL,
            tags TEXT NOT NULL,
            aliases TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            mtime_ns INTEGER NOT NULL,
            size INTEGER NOT NULL
        );
        CREATE INDEX notes_updated ON notes(updated_at DESC, id);
        CREATE TABLE note_tags (
            note_id TEXT NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
            tag TEXT NOT NULL,
            PRIMARY KEY (note_id, tag)
        );
        CREATE INDEX note_tags_tag ON note_tags(tag);
        CREATE TABLE note_links (
            note_id TEXT NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            target TEXT NOT NULL,
            PRIMARY KEY (note_id, position)
        );
        CREATE TABLE former_paths (
            path TEXT PRIMARY KEY,
            note_id TEXT NOT NULL
        );
        CREATE TABLE problems (
            path TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            message TEXT NOT NULL,
            mtime_ns INTEGER NOT NULL
        )
        """,
    ),
    Migration(
        "0002_note_metadata",
        # Existing rows get the defaults; blanking their hash makes the next reconcile read each
        # file's metadata again (the catalog only: the other indexes' hashes still match).
        """
        ALTER TABLE notes ADD COLUMN note_type TEXT NOT NULL DEFAULT 'observation';
        ALTER TABLE notes ADD COLUMN namespace TEXT NOT NULL DEFAULT 'default';
        ALTER TABLE notes ADD COLUMN access_scope TEXT NOT NULL DEFAULT 'shared';
        ALTER TABLE notes ADD COLUMN task_id TEXT;
        ALTER TABLE notes ADD COLUMN status TEXT NOT NULL DEFAULT 'active';
        ALTER TABLE notes ADD COLUMN source_url TEXT;
        ALTER TABLE notes ADD COLUMN expires_at TEXT;
        CREATE INDEX notes_namespace ON notes(namespace);
        CREATE INDEX notes_hidden ON notes(access_scope, status);
        CREATE INDEX notes_source_url ON notes(source_url) WHERE source_url IS NOT NULL;
        CREATE TABLE note_derived_from (
            note_id TEXT NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
            source_id TEXT NOT NULL,
            PRIMARY KEY (note_id, source_id)
        );
        CREATE INDEX note_derived_from_source ON note_derived_from(source_id);
        UPDATE notes SET content_hash = ''
        """,
    ),
    Migration(
        "0003_deferred",
        """
        CREATE TABLE deferred (
            path TEXT PRIMARY KEY,
            reason TEXT NOT NULL,
            since TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
        )
        """,
    ),
    Migration(
        "0004_lookup_indexes",
        # Tags are matched case-insensitively; the few notes a scope can hide are found
        # without reading every row.
        """
        CREATE INDEX IF NOT EXISTS note_tags_lower ON note_tags(lower(tag));
        CREATE INDEX IF NOT EXISTS notes_restricted ON notes(id)
            WHERE status = 'quarantined' OR access_scope IN ('agent_private', 'task')
        """,
    ),
    Migration(
        "0005_tag_keys",
        # Tags compare case-insensitively, by tag_key (domain.tags.tag_key), which replaces
        # 0004's index on lower(tag). SQLite's lower() knows only ASCII; CATALOG_FORMAT 3
        # re-derives every row with the real key.
        """
        ALTER TABLE note_tags ADD COLUMN tag_key TEXT NOT NULL DEFAULT '';
        UPDATE note_tags SET tag_key = lower(tag);
        DROP INDEX IF EXISTS note_tags_lower;
        CREATE INDEX note_tags_key ON note_tags(tag_key)
        """,
    ),
    # A number bumped with every change of a note row: tag counts, the note count and list
    # totals are kept between calls while it stays (Database.kept).
    Migration("0006_generation", generation_migration("notes")),
]


# Bump when notes are turned into catalog rows differently: the catalog is then re-derived.
CATALOG_FORMAT = 3  # 2: tags include the inline #tags of the body; 3: tag keys
# The reason of a mark written before a file changed, still there: the process stopped (or was
# killed) before the note's index update finished. Start-up re-indexes such a path.
INTERRUPTED = "interrupted: the file changed and its index update did not finish"


class Fingerprint(NamedTuple):
    """What a catalog row says of a file, read without the rest of the row: enough to tell
    whether the file changed since it was indexed."""

    id: str
    path: str
    content_hash: str
    mtime_ns: int
    size: int


@dataclass(frozen=True)
class CatalogEntry:
    id: str
    path: str
    title: str
    author: str
    created_at: str
    updated_at: str
    tags: tuple[str, ...]
    aliases: tuple[str, ...]
    content_hash: str
    mtime_ns: int
    size: int
    note_type: NoteType = "observation"
    namespace: str = "default"
    access_scope: AccessScope = "shared"
    task_id: str | None = None
    status: NoteStatus = "active"
    source_url: str | None = None
    expires_at: str | None = None


@dataclass(frozen=True)
class Lineage:
    """Provenance both ways for some notes: ``sources`` the ``derived_from_ids`` of each
    that has any, ``derivatives`` the notes whose ``derived_from_ids`` name each."""

    sources: dict[str, list[str]]
    derivatives: dict[str, list[str]]


class NoteSummary(NamedTuple):
    """The columns of a note that lithos_list shows (``tags`` decoded)."""

    id: str
    title: str
    path: str
    updated_at: str
    tags: tuple[str, ...]
    author: str
    note_type: NoteType
    namespace: str
    access_scope: AccessScope
    status: NoteStatus

    def as_dict(self) -> dict[str, object]:
        """The wire shape: ``updated_at`` as ``updated``, tags as a list."""
        return {
            "id": self.id,
            "title": self.title,
            "path": self.path,
            "updated": self.updated_at,
            "tags": list(self.tags),
            "author": self.author,
            "note_type": self.note_type,
            "namespace": self.namespace,
            "access_scope": self.access_scope,
            "status": self.status,
        }


class CatalogRecord(NamedTuple):
    note: Note
    content_hash: str
    mtime_ns: int
    size: int
    links: Sequence[str]


class CatalogSizes(NamedTuple):
    notes: int
    tags: int
    problems: int


@dataclass(frozen=True)
class ListQuery:
    filter: SearchFilter = field(default_factory=SearchFilter)
    limit: int = 50
    offset: int = 0


class Catalog:
    """Metadata of every indexed note, keyed by id and by path."""

    def __init__(
        self,
        path: Path,
        on_corrupt: Callable[[StoreCorrupt], None] | None = None,
        sole_writer: bool = False,
    ) -> None:
        """``sole_writer``: no other process writes the file while this catalog is open (a
        serving Lithos, which holds the full-text writer lock too), so what it read may be
        kept in memory until this catalog writes (see :meth:`hidden_ids`)."""
        self.path = path
        self._on_corrupt = on_corrupt
        self._sole_writer = sole_writer
        self.db = self._open()

    def _open(self) -> Database:
        # The checkpoint of a write-ahead log filled by writes took 37-47 ms at 100,000 notes,
        # in the write that happened to fill it: a timer thread does it instead.
        return Database(
            self.path,
            CATALOG_MIGRATIONS,
            durable=False,
            on_corrupt=self._on_corrupt,
            checkpoint_aside=True,
        )

    def close(self) -> None:
        self.db.close()

    def reopen(self) -> None:
        """Open the file again, after it was closed and moved aside (an empty catalog)."""
        self.db.close()
        self.db = self._open()

    def derivation(self) -> dict[str, object] | None:
        return self.db.derivation()

    def record_derivation(self, derivation: dict[str, object]) -> None:
        self.db.record_derivation(derivation)

    def defer(self, path: str, reason: str) -> None:
        """Record that a note's derived indexes could not be updated, to retry it."""
        self.db.call(
            lambda c: c.execute(
                "INSERT OR REPLACE INTO deferred(path, reason) VALUES (?, ?)", (path, reason[:500])
            )
        )

    def mark_pending(self, paths: Sequence[str], settled: Sequence[str] = ()) -> None:
        """Record that these paths' files are about to change and their indexes to follow,
        before the files change; forget the marks of ``settled`` paths (updates finished
        since) in the same transaction. A mark already there (a failure) keeps its reason."""

        def write(conn: sqlite3.Connection) -> None:
            conn.executemany("DELETE FROM deferred WHERE path = ?", [(p,) for p in settled])
            conn.executemany(
                "INSERT OR IGNORE INTO deferred(path, reason) VALUES (?, ?)",
                [(p, INTERRUPTED) for p in paths],
            )

        self.db.call(write)

    def deferred(self) -> dict[str, str]:
        """Paths whose index update failed and is not yet retried successfully: path -> reason."""
        rows = self.db.call(lambda c: c.execute("SELECT path, reason FROM deferred").fetchall())
        return {r[0]: r[1] for r in rows}

    def settle(self, paths: Sequence[str]) -> None:
        """Forget the deferred marks of ``paths`` (their indexes are now in step)."""
        self.db.call(
            lambda c: c.executemany("DELETE FROM deferred WHERE path = ?", [(p,) for p in paths])
        )

    def upsert(self, records: Sequence[CatalogRecord]) -> None:
        """Insert or replace notes (by id, and by path) in one transaction."""

        def write(conn: sqlite3.Connection) -> None:
            for record in records:
                _upsert_one(conn, record)

        self.db.call(write)

    def remove(self, note_id: str) -> None:
        self.db.call(lambda c: c.execute("DELETE FROM notes WHERE id = ?", (note_id,)))

    def clear(self) -> None:
        def wipe(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM notes")
            conn.execute("DELETE FROM problems")

        self.db.call(wipe)

    def get(self, note_id: str) -> CatalogEntry | None:
        """The note with this id, read on the calling thread (:meth:`Database.read`)."""
        rows = self.db.read(lambda c: c.execute(_BY_ID, (note_id,)).fetchall())
        return _entry(rows[0]) if rows else None

    def get_now(self, note_id: str) -> CatalogEntry | None:
        """:meth:`get` for a caller that must not wait (the event loop): also None when the
        file is locked (:meth:`Database.read_now`)."""
        rows = self.db.read_now(lambda c: c.execute(_BY_ID, (note_id,)).fetchall())
        return _entry(rows[0]) if rows else None

    def get_many(self, note_ids: Sequence[str]) -> dict[str, CatalogEntry]:
        """Entries for the ids that exist, in one query."""
        unique = list(dict.fromkeys(note_ids))
        if not unique:
            return {}
        marks = ",".join("?" * len(unique))
        sql = f"SELECT * FROM notes WHERE id IN ({marks})"
        rows = self.db.call(lambda c: c.execute(sql, unique).fetchall())
        return {row["id"]: _entry(row) for row in rows}

    def by_path(self, path: str) -> CatalogEntry | None:
        """The note at this path, read on the calling thread (:meth:`Database.read`)."""
        rows = self.db.read(
            lambda c: c.execute("SELECT * FROM notes WHERE path = ?", (path,)).fetchall()
        )
        return _entry(rows[0]) if rows else None

    def by_paths(self, paths: Sequence[str]) -> dict[str, CatalogEntry]:
        """Entries of the notes at these paths that exist, by path, in one query."""
        unique = list(dict.fromkeys(paths))
        if not unique:
            return {}

        def read(conn: sqlite3.Connection) -> list[sqlite3.Row]:
            rows: list[sqlite3.Row] = []
            for start in range(0, len(unique), 500):  # within SQLite's variable limit
                part = unique[start : start + 500]
                sql = f"SELECT * FROM notes WHERE path IN ({','.join('?' * len(part))})"
                rows += conn.execute(sql, part).fetchall()
            return rows

        return {entry.path: entry for entry in map(_entry, self.db.call(read))}

    def fingerprints(self) -> list[Fingerprint]:
        """Id, path, content hash, mtime and size of every note: what start-up checks, read
        without decoding the rest of each row (a third of the time of :meth:`entries`)."""
        sql = "SELECT id, path, content_hash, mtime_ns, size FROM notes"
        return [Fingerprint(*row) for row in self.db.call(lambda c: c.execute(sql).fetchall())]

    def entries(self) -> list[CatalogEntry]:
        rows = self.db.call(lambda c: c.execute("SELECT * FROM notes").fetchall())
        return [_entry(r) for r in rows]

    def link_rows(self) -> list[tuple[str, str, str, tuple[str, ...], str]]:
        """(id, path, title, aliases, note_type) of every note: what the link graph needs,
        read lightly."""
        sql = "SELECT id, path, title, aliases, note_type FROM notes"
        rows = self.db.call(lambda c: c.execute(sql).fetchall())
        return [(r[0], r[1], r[2], _strings(r[3]), r[4]) for r in rows]

    def tagged(self, tags: Sequence[str], limit: int) -> list[tuple[str, str, tuple[str, ...]]]:
        """``(id, updated_at, matched tags)`` of notes carrying any of ``tags`` (compared
        case-insensitively), most matched tags then newest first."""
        wanted = sorted({tag_key(t) for t in tags})
        if not wanted or limit < 1:
            return []
        marks = ",".join("?" * len(wanted))
        sql = (
            "SELECT n.id, n.updated_at, group_concat(t.tag, char(31)) AS matched"
            " FROM note_tags t JOIN notes n ON n.id = t.note_id"
            f" WHERE t.tag_key IN ({marks}) GROUP BY n.id"
            " ORDER BY count(*) DESC, n.updated_at DESC, n.id LIMIT ?"
        )
        rows = self.db.call(lambda c: c.execute(sql, [*wanted, limit]).fetchall())
        return [(r[0], r[1], tuple(r[2].split("\x1f"))) for r in rows]

    def sharing_source(self, note_ids: Sequence[str]) -> dict[str, list[str]]:
        """For each given note with a ``source_url``, the other notes with the same one."""
        ids = list(dict.fromkeys(note_ids))
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        sql = (
            "SELECT a.id, b.id FROM notes a JOIN notes b"
            " ON b.source_url = a.source_url AND b.id != a.id"
            f" WHERE a.id IN ({marks}) AND a.source_url IS NOT NULL ORDER BY b.updated_at DESC"
        )
        out: dict[str, list[str]] = {}
        for note, other in self.db.call(lambda c: c.execute(sql, ids).fetchall()):
            out.setdefault(note, []).append(other)
        return out

    def count(self) -> int:
        return self.db.call(lambda c: self.db.kept(c, "count", _count_all))

    async def sizes(self) -> CatalogSizes:
        """Notes, tags (as :meth:`tag_counts` counts them) and files with a recorded problem,
        read in one transaction; the first two are kept while nothing changes. A sole writer
        answers from memory, without the hop to the database thread, until it next writes."""

        def read(conn: sqlite3.Connection) -> CatalogSizes:
            notes = self.db.kept(conn, "count", _count_all)
            tags = len(self._tag_counts(conn, None))
            problems = int(conn.execute("SELECT count(*) FROM problems").fetchone()[0])
            return CatalogSizes(notes, tags, problems)

        if self._sole_writer:
            return await self.db.run_remembered(_SIZES_KEY, read)
        return await self.db.run(read)

    def tag_counts(self, scope: Scope | None = None) -> dict[str, int]:
        """Notes per tag, spellings of one tag counted together (``#Python`` and ``#python``
        are one tag) under the most used spelling; with ``scope``, only the notes that scope
        may see are counted."""
        return dict(self.db.call(lambda c: self._tag_counts(c, scope)))

    def _tag_counts(
        self, conn: sqlite3.Connection, scope: Scope | None
    ) -> tuple[tuple[str, int], ...]:
        where, params = ("", []) if scope is None else _visible(scope)
        sql = (
            "SELECT tag_key, tag, count(*) FROM note_tags JOIN notes ON notes.id = note_id"
            f" {'WHERE ' + where if where else ''} GROUP BY tag_key, tag"
        )
        notes_sql = (
            "SELECT tag_key, count(DISTINCT note_id) FROM note_tags JOIN notes"
            f" ON notes.id = note_id {'WHERE ' + where if where else ''} GROUP BY tag_key"
        )

        def compute(conn: sqlite3.Connection) -> tuple[tuple[str, int], ...]:
            spellings: dict[str, dict[str, int]] = {}
            for key, tag, count in conn.execute(sql, params).fetchall():
                spellings.setdefault(key, {})[tag] = count
            notes = dict(conn.execute(notes_sql, params).fetchall())
            shown = {display_spelling(spelled): notes[key] for key, spelled in spellings.items()}
            return tuple(sorted(shown.items(), key=lambda item: tag_key(item[0])))

        key = ("tags", None if scope is None else (scope.agent_id, scope.task_id))
        return self.db.kept(conn, key, compute)

    def hidden_ids(self, scope: Scope) -> frozenset[str]:
        """Ids of the notes ``scope`` may not see (usually few): what a store that cannot read
        the catalog's columns excludes inside its own query. A sole writer keeps them per
        scope until its next write, so a search asks the database thread only after a change
        (the hop costs more than the query)."""
        where, params = _hidden(scope)
        # The first term is the partial index notes_restricted's: only restricted rows are read.
        sql = f"SELECT id FROM notes WHERE ({_RESTRICTED}) AND {where}"

        def read(conn: sqlite3.Connection) -> frozenset[str]:
            return frozenset(r[0] for r in conn.execute(sql, params).fetchall())

        if self._sole_writer:
            return self.db.remembered(_hidden_key(scope), read)
        return self.db.call(read)

    def hidden_ids_held(self, scope: Scope) -> frozenset[str] | None:
        """:meth:`hidden_ids` when a sole writer can answer it without going to the database
        thread (it read them since its last write), else None: for a caller that must not
        wait on that thread."""
        if not self._sole_writer:
            return None
        return cast("frozenset[str] | None", self.db.held(_hidden_key(scope)))

    def derived_from(self, note_ids: Sequence[str]) -> dict[str, list[str]]:
        """The ``derived_from_ids`` of each given note that has any."""
        return self._provenance("note_id", "source_id", note_ids)

    def derivatives(self, note_ids: Sequence[str]) -> dict[str, list[str]]:
        """For each given note, the notes whose ``derived_from_ids`` name it."""
        return self._provenance("source_id", "note_id", note_ids)

    def lineage(self, note_ids: Sequence[str]) -> Lineage:
        """:meth:`derived_from` and :meth:`derivatives` of ``note_ids`` in one round trip."""
        unique = list(dict.fromkeys(note_ids))
        if not unique:
            return Lineage({}, {})
        sources = _provenance_sql("note_id", "source_id", unique)
        derivatives = _provenance_sql("source_id", "note_id", unique)

        def read(c: sqlite3.Connection) -> tuple[list[sqlite3.Row], list[sqlite3.Row]]:
            return c.execute(sources, unique).fetchall(), c.execute(derivatives, unique).fetchall()

        rows = self.db.call(read)
        return Lineage(_grouped(rows[0]), _grouped(rows[1]))

    def _provenance(self, key: str, value: str, note_ids: Sequence[str]) -> dict[str, list[str]]:
        unique = list(dict.fromkeys(note_ids))
        if not unique:
            return {}
        sql = _provenance_sql(key, value, unique)
        return _grouped(self.db.call(lambda c: c.execute(sql, unique).fetchall()))

    def links(self) -> dict[str, list[str]]:
        """Raw link targets per note id, in document order."""
        sql = "SELECT note_id, target FROM note_links ORDER BY note_id, position"
        out: dict[str, list[str]] = {}
        for note_id, target in self.db.call(lambda c: c.execute(sql).fetchall()):
            out.setdefault(note_id, []).append(target)
        return out

    def query(self, query: ListQuery) -> tuple[list[CatalogEntry], int]:
        """Entries matching every filter, newest ``updated_at`` first (ties by id), and total."""
        where, params = _filters(query.filter)
        count_sql = f"SELECT count(*) FROM notes {where}"
        page_sql = f"SELECT * FROM notes {where} ORDER BY updated_at DESC, id LIMIT ? OFFSET ?"

        def count_matching(conn: sqlite3.Connection) -> int:
            return int(conn.execute(count_sql, params).fetchone()[0])

        def run(conn: sqlite3.Connection) -> tuple[list[sqlite3.Row], int]:
            counted = self.db.kept(conn, ("total", where, tuple(params)), count_matching)
            rows = conn.execute(page_sql, [*params, query.limit, query.offset]).fetchall()
            return rows, counted

        rows, total = self.db.call(run)
        return [_entry(r) for r in rows], int(total)

    async def summaries(self, query: ListQuery) -> tuple[Sequence[NoteSummary], int]:
        """What :meth:`query` finds, as summaries (only their columns are read), and the
        total; awaited on the database thread itself. A sole writer keeps each page until it
        next writes, and answers it again without the hop to that thread."""
        where, params = _filters(query.filter)
        count_sql = f"SELECT count(*) FROM notes {where}"
        columns = ", ".join(NoteSummary._fields)
        page_sql = (
            f"SELECT {columns} FROM notes {where} ORDER BY updated_at DESC, id LIMIT ? OFFSET ?"
        )

        def count_matching(conn: sqlite3.Connection) -> int:
            return int(conn.execute(count_sql, params).fetchone()[0])

        def run(conn: sqlite3.Connection) -> tuple[Sequence[NoteSummary], int]:
            counted = self.db.kept(conn, ("total", where, tuple(params)), count_matching)
            cursor = conn.execute(page_sql, [*params, query.limit, query.offset])
            cursor.row_factory = _summary
            return tuple(cursor.fetchall()), counted

        if self._sole_writer:
            key = ("page", where, tuple(params), query.limit, query.offset)
            return await self.db.run_remembered(key, run)
        return await self.db.run(run)

    def former_paths(self) -> dict[str, str]:
        """Paths notes had before they were moved or renamed: old path -> note id."""
        rows = self.db.call(
            lambda c: c.execute("SELECT path, note_id FROM former_paths").fetchall()
        )
        return {r[0]: r[1] for r in rows}

    def ids(self, search_filter: SearchFilter) -> set[str]:
        """Ids of every note matching the filter, without loading rows."""
        where, params = _filters(search_filter)
        rows = self.db.call(lambda c: c.execute(f"SELECT id FROM notes {where}", params).fetchall())
        return {row[0] for row in rows}

    def record_problem(self, path: str, kind: str, message: str, mtime_ns: int) -> None:
        self.db.call(
            lambda c: c.execute(
                "INSERT OR REPLACE INTO problems VALUES (?, ?, ?, ?)",
                (path, kind, message, mtime_ns),
            )
        )

    def clear_problems(self, paths: Sequence[str]) -> None:
        """Forget the problems recorded for these files, in one transaction."""
        rows = [(path,) for path in paths]
        if rows:
            self.db.call(lambda c: c.executemany("DELETE FROM problems WHERE path = ?", rows))

    def problem(self, path: str) -> tuple[str, str] | None:
        """The (kind, message) recorded for the file at ``path``, if any."""
        row = self.db.call(
            lambda c: c.execute(
                "SELECT kind, message FROM problems WHERE path = ?", (path,)
            ).fetchone()
        )
        return None if row is None else (row[0], row[1])

    def problems(self) -> list[dict[str, str]]:
        rows = self.db.call(
            lambda c: c.execute("SELECT path, kind, message FROM problems ORDER BY path").fetchall()
        )
        return [{"path": r[0], "kind": r[1], "message": r[2]} for r in rows]


def _count_all(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM notes").fetchone()[0])


def _upsert_one(conn: sqlite3.Connection, record: CatalogRecord) -> None:
    note, content_hash, mtime_ns, size, links = record
    old = conn.execute("SELECT path FROM notes WHERE id = ?", (note.id,)).fetchone()
    if old is not None and old[0] != note.path:
        conn.execute("INSERT OR REPLACE INTO former_paths VALUES (?, ?)", (old[0], note.id))
    conn.execute("DELETE FROM former_paths WHERE path = ?", (note.path,))
    conn.execute("DELETE FROM notes WHERE id = ? OR path = ?", (note.id, note.path))
    conn.execute(
        f"INSERT INTO notes ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})",
        (
            note.id,
            note.path,
            note.title,
            note.author,
            note.created_at,
            note.updated_at,
            note.confidence,
            json.dumps(list(note.tags)),
            json.dumps(list(note.aliases)),
            content_hash,
            mtime_ns,
            size,
            note.note_type,
            note.namespace,
            note.access_scope,
            note.task_id,
            note.status,
            note.metadata.source_url,
            note.metadata.expires_at,
        ),
    )
    conn.executemany(
        "INSERT INTO note_tags(note_id, tag, tag_key) VALUES (?, ?, ?)",
        [(note.id, t, tag_key(t)) for t in note.tags],
    )
    conn.executemany(
        "INSERT INTO note_derived_from VALUES (?, ?)",
        [(note.id, source) for source in note.metadata.derived_from_ids],
    )
    conn.executemany(
        "INSERT INTO note_links VALUES (?, ?, ?)",
        [(note.id, i, target) for i, target in enumerate(links)],
    )
    conn.execute("DELETE FROM problems WHERE path = ?", (note.path,))


_COLUMNS = (
    "id",
    "path",
    "title",
    "author",
    "created_at",
    "updated_at",
    "confidence",
    "tags",
    "aliases",
    "content_hash",
    "mtime_ns",
    "size",
    "note_type",
    "namespace",
    "access_scope",
    "task_id",
    "status",
    "source_url",
    "expires_at",
)


_RESTRICTED = "status = 'quarantined' OR access_scope IN ('agent_private', 'task')"


def _hidden(scope: Scope) -> tuple[str, list[object]]:
    """The SQL of :func:`lithos.domain.scope.is_visible`, negated; never NULL."""
    sql = (
        "(notes.status = 'quarantined'"
        " OR (notes.access_scope = 'agent_private' AND notes.author IS NOT ?)"
        " OR (notes.access_scope = 'task' AND (notes.task_id IS NULL OR notes.task_id IS NOT ?)))"
    )
    return sql, [scope.agent_id, scope.task_id]


def _visible(scope: Scope) -> tuple[str, list[object]]:
    where, params = _hidden(scope)
    return f"NOT {where}", params


def _filters(query: SearchFilter) -> tuple[str, list[object]]:
    clauses: list[str] = []
    params: list[object] = []
    if query.scope is not None:
        where, scope_params = _visible(query.scope)
        clauses.append(where)
        params.extend(scope_params)
    if query.note_types:
        clauses.append(f"note_type IN ({','.join('?' * len(query.note_types))})")
        params.extend(query.note_types)
    if query.namespaces:
        clauses.append(f"namespace IN ({','.join('?' * len(query.namespaces))})")
        params.extend(query.namespaces)
    if query.path_prefix:
        prefix = query.path_prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        clauses.append("path LIKE ? ESCAPE '\\'")
        params.append(prefix + "%")
    for tag in query.tags:
        clauses.append(
            "EXISTS (SELECT 1 FROM note_tags t WHERE t.note_id = notes.id AND t.tag_key = ?)"
        )
        params.append(tag_key(tag))
    if query.author:
        clauses.append("author = ?")
        params.append(query.author)
    if query.since:
        clauses.append("updated_at >= ?")
        params.append(query.since)
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", params


def _strings(stored: str) -> tuple[str, ...]:
    """A column stored as a JSON list of strings (most notes' tags and aliases: none)."""
    return () if stored == "[]" else tuple(json.loads(stored))


def _summary(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> NoteSummary:
    id_, title, path, updated_at, tags, author, note_type, namespace, scope, status = row
    tags = _strings(tags)
    return NoteSummary(
        id_, title, path, updated_at, tags, author, note_type, namespace, scope, status
    )


def _entry(row: sqlite3.Row) -> CatalogEntry:
    return CatalogEntry(
        id=row["id"],
        path=row["path"],
        title=row["title"],
        author=row["author"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        tags=_strings(row["tags"]),
        aliases=_strings(row["aliases"]),
        content_hash=row["content_hash"],
        mtime_ns=row["mtime_ns"],
        size=row["size"],
        note_type=row["note_type"],
        namespace=row["namespace"],
        access_scope=row["access_scope"],
        task_id=row["task_id"],
        status=row["status"],
        source_url=row["source_url"],
        expires_at=row["expires_at"],
    )


_BY_ID = "SELECT * FROM notes WHERE id = ?"
# The key of the remembered sizes; the hidden ids' keys are three-tuples.
_SIZES_KEY = ("sizes",)


def _hidden_key(scope: Scope) -> tuple[str, str | None, str | None]:
    return ("hidden", scope.agent_id, scope.task_id)


def _provenance_sql(key: str, value: str, note_ids: Sequence[str]) -> str:
    marks = ",".join("?" * len(note_ids))
    return f"SELECT {key}, {value} FROM note_derived_from WHERE {key} IN ({marks})"


def _grouped(rows: Sequence[Sequence[str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for row in rows:
        out.setdefault(row[0], []).append(row[1])
    return out

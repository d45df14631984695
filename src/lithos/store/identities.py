"""Identities of notes whose files carry no ``id``: people's hand-written files.

Lithos never writes into a person's file just to remember it. Instead this map, kept in
``.lithos/identities.db``, records which note id each such file has, by path, together with the
hash of the content last seen there. It is authoritative state, not a derived index: losing it
gives those files new ids, so it lives beside the coordination database and is never rebuilt.

A rename is recognised by content: when a path the map does not know appears and a file the map
does know has disappeared with exactly that content, the new path takes over the old identity.
Rows of files that disappeared stay, so a rename seen as two separate events (or made while
Lithos was stopped) still finds its identity, and a file restored to its old path gets its id
back.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import NamedTuple

from lithos.domain.notes import new_id
from lithos.store.sqlite import Database, Migration

IDENTITY_MIGRATIONS = [
    Migration(
        "0001_file_ids",
        """
        CREATE TABLE file_ids (
            path TEXT PRIMARY KEY,
            note_id TEXT NOT NULL UNIQUE,
            content_hash TEXT NOT NULL
        );
        CREATE INDEX file_ids_hash ON file_ids(content_hash)
        """,
    )
]


class Identity(NamedTuple):
    note_id: str
    new: bool  # True when the file got an id it never had before


class IdentityMap:
    """path -> note id for files without an ``id`` in their frontmatter. Thread-safe."""

    def __init__(self, db: Database) -> None:
        """``db`` is ``.lithos/identities.db``, opened with :data:`IDENTITY_MIGRATIONS`."""
        self.db = db

    def close(self) -> None:
        self.db.close()

    def identify(self, path: str, content_hash: str, exists: Callable[[str], bool]) -> Identity:
        """The id of the file at ``path`` holding content with ``content_hash``.

        A known path keeps its id. An unknown path takes over the id of a known file that no
        longer ``exists`` and last held the same content (a rename); otherwise it gets a new id.
        The answer is on disk when this returns.
        """
        return self.identify_many([(path, content_hash)], exists)[0]

    def identify_many(
        self, files: Sequence[tuple[str, str]], exists: Callable[[str], bool]
    ) -> list[Identity]:
        """:meth:`identify` for each ``(path, content_hash)``, in order, with one durable
        transaction for all of them."""
        if not files:
            return []
        return self.db.call(
            lambda conn: [_identify(conn, path, digest, exists) for path, digest in files]
        )

    def lookup(self, path: str) -> str | None:
        rows = self.db.call(
            lambda c: c.execute("SELECT note_id FROM file_ids WHERE path = ?", (path,)).fetchall()
        )
        return str(rows[0][0]) if rows else None

    def count(self) -> int:
        return int(self.db.call(lambda c: c.execute("SELECT count(*) FROM file_ids").fetchone()[0]))


def _identify(
    conn: sqlite3.Connection, path: str, content_hash: str, exists: Callable[[str], bool]
) -> Identity:
    row = conn.execute("SELECT note_id FROM file_ids WHERE path = ?", (path,)).fetchone()
    if row is not None:
        conn.execute("UPDATE file_ids SET content_hash = ? WHERE path = ?", (content_hash, path))
        return Identity(str(row[0]), new=False)
    same = conn.execute(
        "SELECT path, note_id FROM file_ids WHERE content_hash = ? ORDER BY path",
        (content_hash,),
    ).fetchall()
    for old_path, note_id in same:
        if not exists(old_path):
            conn.execute("UPDATE file_ids SET path = ? WHERE path = ?", (path, old_path))
            return Identity(str(note_id), new=False)
    note_id = new_id()
    conn.execute("INSERT INTO file_ids VALUES (?, ?, ?)", (path, note_id, content_hash))
    return Identity(note_id, new=True)

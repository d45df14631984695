"""The embedding spaces a vector store holds vectors of, and which of them it searches.

One row per space ever used by the store, in the ``spaces`` table of the vector database:

- ``active``: the configured space. New chunk text is embedded into it.
- ``retiring``: the space that was active before a model change. Chunks without a vector in
  the active space yet are still searched here, until every chunk has one; then it is
  ``retired``.
- ``retired``: no longer searched. Its vectors stay in the cache (``embeddings``), so switching
  back to that model does not embed the same text again.

All functions run inside a vector-store transaction (they take its connection).
"""

from __future__ import annotations

import logging
import sqlite3
from datetime import UTC, datetime
from typing import Literal

from lithos.domain.embedding import EmbeddingSpace

log = logging.getLogger("lithos.vectors")

SpaceState = Literal["active", "retiring", "retired"]

SPACES_SQL = """
CREATE TABLE spaces (
    space_id TEXT PRIMARY KEY,
    model_id TEXT NOT NULL,
    revision TEXT NOT NULL,
    dimension INTEGER NOT NULL,
    normalisation TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('active', 'retiring', 'retired')),
    since TEXT NOT NULL
);
ALTER TABLE embeddings RENAME COLUMN model_id TO space_id;
"""


def activate(conn: sqlite3.Connection, space: EmbeddingSpace) -> list[EmbeddingSpace]:
    """Make ``space`` the active one and return the spaces still searched besides it, newest
    first. The previously active space (if different) becomes ``retiring``.

    A store made before spaces were recorded keyed its vectors by model id alone: the vectors
    of ``space``'s model are adopted into ``space``.
    """
    rows = conn.execute("SELECT space_id, state FROM spaces").fetchall()
    states = {row["space_id"]: row["state"] for row in rows}
    if not states:
        conn.execute(
            "UPDATE embeddings SET space_id = ? WHERE space_id = ?", (space.id, space.model_id)
        )
    if states.get(space.id) != "active":
        now = _now()
        for space_id, state in states.items():
            if state == "active":
                log.warning(
                    "embedding model changed: %s replaces %s, which is searched until every"
                    " chunk is embedded again",
                    space.id,
                    space_id,
                )
                conn.execute(
                    "UPDATE spaces SET state = 'retiring', since = ? WHERE space_id = ?",
                    (now, space_id),
                )
        conn.execute(
            "INSERT INTO spaces(space_id, model_id, revision, dimension, normalisation, state,"
            " since) VALUES (?, ?, ?, ?, ?, 'active', ?) ON CONFLICT(space_id) DO UPDATE SET"
            " state = 'active', since = excluded.since",
            (space.id, space.model_id, space.revision, space.dimension, space.normalisation, now),
        )
    return retiring(conn)


def retiring(conn: sqlite3.Connection) -> list[EmbeddingSpace]:
    """The spaces being retired, newest first."""
    rows = conn.execute(
        "SELECT model_id, revision, dimension, normalisation FROM spaces"
        " WHERE state = 'retiring' ORDER BY since DESC, rowid DESC"
    ).fetchall()
    return [EmbeddingSpace(r[0], r[1], int(r[2]), r[3]) for r in rows]


def retire_all(conn: sqlite3.Connection) -> list[str]:
    """Mark every retiring space retired; returns their ids."""
    ids = [row[0] for row in conn.execute("SELECT space_id FROM spaces WHERE state = 'retiring'")]
    if ids:
        conn.execute(
            "UPDATE spaces SET state = 'retired', since = ? WHERE state = 'retiring'", (_now(),)
        )
        log.info("embedding space(s) %s retired: every chunk has a vector in the new one", ids)
    return ids


def states(conn: sqlite3.Connection) -> dict[str, SpaceState]:
    """Every recorded space id and its state."""
    rows = conn.execute("SELECT space_id, state FROM spaces ORDER BY rowid")
    return {row[0]: row[1] for row in rows}


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

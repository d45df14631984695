"""The vector index: note chunks, their embeddings and brute-force cosine search.

Everything persists in one SQLite file (through :class:`~lithos.store.sqlite.Database`):

- ``chunks``: the current chunk list of every indexed note;
- ``notes``: the content hash of the note version the chunks came from, so startup can tell
  which notes changed while Lithos was down;
- ``embeddings``: a content-addressed cache ``(model_id, chunk_hash) -> vector``. A chunk whose
  text was embedded once is never embedded again by the same model: not after an edit elsewhere
  in the note, a re-chunk, a delete and re-create, or a restart.

Search is exact: one matrix product over an in-memory float32 matrix of every embedded chunk.
The matrix is read from SQLite on the first search and then kept in step by each write, inside
the write's transaction, so it never lags the database and is never reloaded in full.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np

from lithos.domain.chunks import ChunkHit, RankedChunk, chunk_hash
from lithos.errors import ConfigError, StoreCorrupt
from lithos.store.sqlite import Database, Migration
from lithos.store.vector_matrix import ChunkMatrix

T = TypeVar("T")

MIGRATIONS = (
    Migration(
        "0001_vectors",
        """
        CREATE TABLE notes (
            note_id TEXT PRIMARY KEY,
            content_hash TEXT NOT NULL
        );
        CREATE TABLE chunks (
            note_id TEXT NOT NULL REFERENCES notes(note_id) ON DELETE CASCADE,
            chunk_index INTEGER NOT NULL,
            chunk_hash TEXT NOT NULL,
            text TEXT NOT NULL,
            PRIMARY KEY (note_id, chunk_index)
        );
        CREATE INDEX chunks_by_hash ON chunks(chunk_hash);
        CREATE TABLE embeddings (
            model_id TEXT NOT NULL,
            chunk_hash TEXT NOT NULL,
            vector BLOB NOT NULL,
            PRIMARY KEY (model_id, chunk_hash)
        )
        """,
    ),
)

_SQL_VARIABLES = 500


@dataclass(frozen=True)
class VectorCounts:
    """Sizes of the index, counted in chunk rows (a text shared by two notes counts twice)."""

    notes: int
    chunks: int
    embedded_chunks: int
    pending_chunks: int


class VectorStore:
    """Chunks and vectors of one embedding space (``model_id``, ``dimension``).

    Every method is one transaction and is safe to call from any thread. Vectors are L2
    normalised on the way in; similarity is ``max(0, cosine)``, so it lies in ``[0, 1]`` and
    unrelated texts score near 0.
    """

    def __init__(
        self,
        path: Path,
        model_id: str,
        dimension: int,
        on_corrupt: Callable[[StoreCorrupt], None] | None = None,
    ) -> None:
        self.path = path
        self.model_id = model_id
        self.dimension = dimension
        self._on_corrupt = on_corrupt
        self._lock = threading.Lock()
        # None until the first search. Replaced or changed only under _lock, and changed only on
        # the database thread inside the write it mirrors, so it follows the commit order.
        self._matrix: ChunkMatrix | None = None
        self._closed = False
        self._db = self._open()

    def _open(self) -> Database:
        database = Database(self.path, MIGRATIONS, on_corrupt=self._on_corrupt)
        try:
            database.call(self._fill_queue)
        except BaseException:
            database.close()
            raise
        return database

    def close(self) -> None:
        """Close the database. Idempotent; the store is unusable until :meth:`reopen`."""
        if not self._closed:
            self._closed = True
            self._db.close()

    def reopen(self) -> None:
        """Open the file again, after it was closed and moved aside (an empty store)."""
        self.close()
        with self._lock:
            self._matrix = None
        self._db = self._open()
        self._closed = False

    def derivation(self) -> dict[str, object] | None:
        """What the chunks were made with (model, chunking), as last recorded."""
        return self._db.derivation()

    def record_derivation(self, derivation: dict[str, object]) -> None:
        self._db.record_derivation(derivation)

    def set_note(self, note_id: str, content_hash: str, chunks: list[str]) -> int:
        """Make ``chunks`` the note's chunk list and record ``content_hash`` as its version.

        Returns how many of the chunks have no vector yet for this model (they are then
        returned by :meth:`pending`). Chunks whose text was embedded before are searchable
        immediately.
        """
        rows = [(note_id, index, chunk_hash(text), text) for index, text in enumerate(chunks)]
        hashes = {h for _, _, h, _ in rows}

        def write(conn: sqlite3.Connection) -> int:
            old = self._chunk_hashes(conn, note_id)
            conn.execute(
                "INSERT INTO notes(note_id, content_hash) VALUES (?, ?)"
                " ON CONFLICT(note_id) DO UPDATE SET content_hash = excluded.content_hash",
                (note_id, content_hash),
            )
            conn.execute("DELETE FROM chunks WHERE note_id = ?", (note_id,))
            conn.executemany(
                "INSERT INTO chunks(note_id, chunk_index, chunk_hash, text) VALUES (?, ?, ?, ?)",
                rows,
            )
            vectors = self._vectors(conn, hashes)
            conn.executemany(
                "INSERT OR IGNORE INTO temp.queue(chunk_hash, text) VALUES (?, ?)",
                [(h, text) for _, _, h, text in rows if h not in vectors],
            )
            _unqueue_unused(conn, old - hashes)
            with self._lock:
                if self._matrix is not None:
                    self._matrix.remove_note(note_id)
                    for _, index, h, _ in rows:
                        if h in vectors:
                            self._matrix.add(note_id, index, h, vectors[h])
            return sum(1 for _, _, h, _ in rows if h not in vectors)

        return self._write(write)

    def remove_note(self, note_id: str) -> None:
        """Forget the note and its chunks; their vectors stay cached. No-op if unknown."""

        def write(conn: sqlite3.Connection) -> None:
            old = self._chunk_hashes(conn, note_id)
            conn.execute("DELETE FROM notes WHERE note_id = ?", (note_id,))  # cascades to chunks
            _unqueue_unused(conn, old)
            with self._lock:
                if self._matrix is not None:
                    self._matrix.remove_note(note_id)

        self._write(write)

    def clear(self, cache: bool = False) -> None:
        """Forget every note and chunk; with ``cache=True`` drop the vectors of every model too."""

        def write(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM chunks")
            conn.execute("DELETE FROM notes")
            conn.execute("DELETE FROM temp.queue")
            if cache:
                conn.execute("DELETE FROM embeddings")
            with self._lock:
                if self._matrix is not None:
                    self._matrix = ChunkMatrix(self.dimension)

        self._write(write)

    def note_hashes(self) -> dict[str, str]:
        """``note_id -> content_hash`` of every note the index holds."""
        rows = self._db.call(
            lambda conn: conn.execute("SELECT note_id, content_hash FROM notes").fetchall()
        )
        return {row["note_id"]: row["content_hash"] for row in rows}

    def chunks(self, note_id: str) -> list[str]:
        """The note's chunk texts, in order."""
        rows = self._db.call(
            lambda conn: conn.execute(
                "SELECT text FROM chunks WHERE note_id = ? ORDER BY chunk_index", (note_id,)
            ).fetchall()
        )
        return [row[0] for row in rows]

    def pending(self, limit: int) -> list[tuple[str, str]]:
        """Up to ``limit`` distinct ``(chunk_hash, text)`` that some note uses and that have no
        vector for this model yet, in the order they were first needed."""
        rows = self._db.call(
            lambda conn: conn.execute(
                "SELECT chunk_hash, text FROM temp.queue ORDER BY rowid LIMIT ?", (limit,)
            ).fetchall()
        )
        return [(row["chunk_hash"], row["text"]) for row in rows]

    def store_embeddings(self, items: Sequence[tuple[str, np.ndarray]]) -> None:
        """Store one vector per chunk hash (replacing any held one) and make every chunk with
        that hash searchable. Raises ``ValueError`` for a vector of the wrong shape."""
        vectors = {h: _unit(vector, self.dimension) for h, vector in items}

        def write(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT OR REPLACE INTO embeddings(model_id, chunk_hash, vector) VALUES (?, ?, ?)",
                [(self.model_id, h, vector.tobytes()) for h, vector in vectors.items()],
            )
            conn.executemany("DELETE FROM temp.queue WHERE chunk_hash = ?", [(h,) for h in vectors])
            with self._lock:
                if self._matrix is None:
                    return
                sql = "SELECT note_id, chunk_index, chunk_hash FROM chunks WHERE chunk_hash"
                for note_id, index, h in _select_in(conn, sql, vectors):
                    self._matrix.add(note_id, index, h, vectors[h])

        self._write(write)

    def search(
        self,
        query: np.ndarray,
        limit: int,
        note_filter: Callable[[str], bool] | None = None,
    ) -> list[ChunkHit]:
        """The ``limit`` chunks most similar to ``query``, best first.

        ``note_filter`` is applied before ranking, so a filtered search still returns ``limit``
        hits when that many chunks pass it. Several hits may come from one note; see
        :func:`lithos.domain.chunks.best_per_note`. Chunks not embedded yet are not found.
        Raises ``ValueError`` for a query of the wrong shape.
        """
        return self.texts(self.rank(query, limit, note_filter))

    def rank(
        self,
        query: np.ndarray,
        limit: int,
        note_filter: Callable[[str], bool] | None = None,
    ) -> list[RankedChunk]:
        """Like :meth:`search` without reading any chunk text: for callers that show only a
        few of the chunks they rank (read those with :meth:`texts`)."""
        unit = _unit(query, self.dimension)
        return self._ranked(limit, note_filter, lambda m, allowed: m.top(unit, limit, allowed))

    def search_notes(
        self,
        query: np.ndarray,
        limit: int,
        note_filter: Callable[[str], bool] | None = None,
        min_similarity: float = 0.0,
    ) -> list[ChunkHit]:
        """The best chunk of each of the ``limit`` notes most similar to ``query``, best first,
        leaving out notes whose best chunk is below ``min_similarity``.

        Returns ``limit`` notes whenever that many pass the filter and the threshold, however
        many chunks each note has. Raises ``ValueError`` for a query of the wrong shape.
        """
        return self.texts(self.rank_notes(query, limit, note_filter, min_similarity))

    def rank_notes(
        self,
        query: np.ndarray,
        limit: int,
        note_filter: Callable[[str], bool] | None = None,
        min_similarity: float = 0.0,
    ) -> list[RankedChunk]:
        """Like :meth:`search_notes` without reading any chunk text."""
        unit = _unit(query, self.dimension)
        return self._ranked(
            limit,
            note_filter,
            lambda m, allowed: m.top_notes(unit, limit, allowed, min_similarity),
        )

    def texts(self, ranked: Sequence[RankedChunk]) -> list[ChunkHit]:
        """The hits of ``ranked`` with their text, in the same order; a chunk whose note
        changed since it was ranked is dropped as stale."""
        if not ranked:
            return []
        return self._db.call(lambda conn: _hits(conn, ranked))

    def _ranked(
        self,
        limit: int,
        note_filter: Callable[[str], bool] | None,
        rank: Callable[[ChunkMatrix, set[str] | None], list[tuple[str, int, str, float]]],
    ) -> list[RankedChunk]:
        if limit <= 0:
            return []
        allowed = self._allowed(note_filter)
        ranked: list[tuple[str, int, str, float]] | None = None
        while ranked is None:
            self.warm()
            with self._lock:
                if self._matrix is not None:  # else a failed write just dropped it: reload
                    ranked = rank(self._matrix, allowed)
        return [RankedChunk(*row) for row in ranked]

    def note_vectors(self, note_ids: Iterable[str]) -> dict[str, np.ndarray]:
        """One unit vector per note (the mean of its embedded chunks), for the notes that have
        any embedded chunk: what retrieval compares notes by."""
        wanted = list(note_ids)
        self.warm()
        with self._lock:
            matrix = self._matrix
            if matrix is None:
                return {}
            found = {note: matrix.note_vector(note) for note in wanted}
        return {note: vector for note, vector in found.items() if vector is not None}

    def lead_texts(self, note_ids: Iterable[str]) -> dict[str, str]:
        """The first chunk's text of each given note the index holds."""
        wanted = list(dict.fromkeys(note_ids))
        sql = "SELECT note_id, text FROM chunks WHERE chunk_index = 0 AND note_id"
        rows = self._db.call(lambda conn: _select_in(conn, sql, wanted))
        return {note: text for note, text in rows}

    def warm(self) -> None:
        """Read the search matrix now rather than on the first search. Idempotent."""
        self._db.call(self._ensure_loaded)

    def counts(self) -> VectorCounts:
        """Current sizes (counting every chunk: a few milliseconds at 100k chunks)."""

        def read(conn: sqlite3.Connection) -> VectorCounts:
            notes = conn.execute("SELECT COUNT(*) FROM notes").fetchone()[0]
            chunks = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
            pending = _pending(conn)
            return VectorCounts(notes, chunks, chunks - pending, pending)

        return self._db.call(read)

    def pending_count(self) -> int:
        """Chunks still waiting to be embedded; cheap enough to call on every search."""
        return self._db.call(_pending)

    def _write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        try:
            return self._db.call(fn)
        except BaseException:
            # The matrix may hold the rolled-back change: rebuild it from SQLite on next search.
            with self._lock:
                self._matrix = None
            raise

    def _fill_queue(self, conn: sqlite3.Connection) -> None:
        # The queue of chunks to embed is derived state, rebuilt per connection: a TEMP table
        # costs no disk writes and always matches this store's model_id.
        conn.execute(
            "CREATE TEMP TABLE IF NOT EXISTS queue ("
            " chunk_hash TEXT NOT NULL UNIQUE, text TEXT NOT NULL)"
        )
        conn.execute("DELETE FROM temp.queue")
        conn.execute(
            "INSERT OR IGNORE INTO temp.queue(chunk_hash, text)"
            " SELECT c.chunk_hash, c.text FROM chunks c WHERE NOT EXISTS ("
            "  SELECT 1 FROM embeddings e WHERE e.model_id = ? AND e.chunk_hash = c.chunk_hash)"
            " ORDER BY c.rowid",
            (self.model_id,),
        )

    def _ensure_loaded(self, conn: sqlite3.Connection) -> None:
        if self._matrix is not None:
            return
        # Every chunk row bounds the number of embedded ones; spare rows become free capacity.
        capacity = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        vectors = np.zeros((capacity, self.dimension), dtype=np.float32)
        keys: list[tuple[str, int, str]] = []
        rows = conn.execute(
            "SELECT c.note_id, c.chunk_index, c.chunk_hash, e.vector FROM chunks c"
            " JOIN embeddings e ON e.model_id = ? AND e.chunk_hash = c.chunk_hash"
            " ORDER BY c.rowid",
            (self.model_id,),
        )
        for row, (note_id, index, h, blob) in enumerate(rows):  # one blob at a time: low peak RSS
            vectors[row] = self._decode(blob)
            keys.append((note_id, index, h))
        matrix = ChunkMatrix(self.dimension, keys, vectors)
        with self._lock:
            self._matrix = matrix

    def _allowed(self, note_filter: Callable[[str], bool] | None) -> set[str] | None:
        if note_filter is None:
            return None
        # The filter is caller code: run it outside the lock, which a write may be waiting on.
        return {note for note in self._note_ids() if note_filter(note)}

    def _note_ids(self) -> list[str]:
        self.warm()
        with self._lock:
            return self._matrix.note_ids() if self._matrix is not None else []

    def _chunk_hashes(self, conn: sqlite3.Connection, note_id: str) -> set[str]:
        rows = conn.execute("SELECT chunk_hash FROM chunks WHERE note_id = ?", (note_id,))
        return {row[0] for row in rows}

    def _vectors(self, conn: sqlite3.Connection, hashes: set[str]) -> dict[str, np.ndarray]:
        sql = "SELECT chunk_hash, vector FROM embeddings WHERE model_id = ? AND chunk_hash"
        rows = _select_in(conn, sql, hashes, (self.model_id,))
        return {h: self._decode(blob) for h, blob in rows}

    def _decode(self, blob: bytes) -> np.ndarray:
        vector = np.frombuffer(blob, dtype=np.float32)
        if vector.shape != (self.dimension,):
            raise ConfigError(
                f"vector index holds {vector.size}-dimensional vectors for model"
                f" {self.model_id!r}, expected {self.dimension}; rebuild it with --clear"
            )
        return vector


def _pending(conn: sqlite3.Connection) -> int:
    # CROSS JOIN keeps the (usually empty) queue as the outer loop; a plain JOIN let SQLite scan
    # every chunk instead (5.4 ms against 0.13 ms at 86k chunks).
    row = conn.execute(
        "SELECT COUNT(*) FROM temp.queue q CROSS JOIN chunks c ON c.chunk_hash = q.chunk_hash"
    ).fetchone()
    return int(row[0])


def _unqueue_unused(conn: sqlite3.Connection, hashes: set[str]) -> None:
    """Drop from the queue the ``hashes`` that no chunk uses any more."""
    conn.executemany(
        "DELETE FROM temp.queue WHERE chunk_hash = ?"
        " AND NOT EXISTS (SELECT 1 FROM chunks WHERE chunk_hash = ?)",
        [(h, h) for h in hashes],
    )


def _unit(vector: np.ndarray, dimension: int) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float32).reshape(-1)
    if array.shape != (dimension,):
        raise ValueError(f"expected a vector of {dimension} dimensions, got shape {vector.shape}")
    norm = float(np.linalg.norm(array))
    return array / norm if norm > 0 else array


def _select_in(
    conn: sqlite3.Connection, sql: str, values: Iterable[str], params: tuple[str, ...] = ()
) -> list[sqlite3.Row]:
    """Run ``sql + " IN (...)"`` over ``values`` in slices that fit SQLite's variable limit."""
    values = list(values)
    rows: list[sqlite3.Row] = []
    for start in range(0, len(values), _SQL_VARIABLES):
        part = values[start : start + _SQL_VARIABLES]
        marks = ", ".join("?" * len(part))
        rows.extend(conn.execute(f"{sql} IN ({marks})", (*params, *part)))
    return rows


def _hits(conn: sqlite3.Connection, ranked: Sequence[RankedChunk]) -> list[ChunkHit]:
    """The texts of ranked chunks, read in few queries; a chunk whose note changed since it
    was ranked (its hash no longer matches) is dropped as stale."""
    texts: dict[tuple[str, int], tuple[str, str]] = {}
    wanted = {(chunk.note_id, chunk.chunk_index) for chunk in ranked}
    notes = list(dict.fromkeys(chunk.note_id for chunk in ranked))
    for start in range(0, len(notes), _SQL_VARIABLES):
        part = notes[start : start + _SQL_VARIABLES]
        rows = conn.execute(
            "SELECT note_id, chunk_index, chunk_hash, text FROM chunks"
            f" WHERE note_id IN ({','.join('?' * len(part))})",
            part,
        )
        for row in rows:
            key = (row["note_id"], row["chunk_index"])
            if key in wanted:
                texts[key] = (row["chunk_hash"], row["text"])
    hits = []
    for chunk in ranked:
        found = texts.get((chunk.note_id, chunk.chunk_index))
        if found is not None and found[0] == chunk.chunk_hash:
            hits.append(ChunkHit(chunk.note_id, chunk.chunk_index, found[1], chunk.similarity))
    return hits

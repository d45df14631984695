"""The vector index: note chunks, their embeddings and brute-force cosine search.

Everything persists in one SQLite file (through :class:`~lithos.store.sqlite.Database`):

- ``chunks``: the current chunk list of every indexed note;
- ``notes``: the content hash of the note version the chunks came from, so startup can tell
  which notes changed while Lithos was down;
- ``embeddings``: a content-addressed cache ``(space_id, chunk_hash) -> vector``. A chunk whose
  text was embedded once is never embedded again in the same embedding space: not after an
  edit elsewhere in the note, a re-chunk, a delete and re-create, or a restart;
- ``spaces``: the embedding spaces the cache holds and which are searched
  (:mod:`lithos.store.vector_spaces`).

Search is one matrix product per searched space over an in-memory matrix of the chunks embedded
in it (float32, or int8 re-scored exactly at the top; a large int8 matrix may first shortlist
its rows by sign bits, ``shortlist``). Each chunk is searched in exactly one space: the active
one when it has a vector there, else the newest retiring space that has one. The matrices are
read from SQLite on the first search and then kept in step by each write, inside the write's
transaction, so they never lag the database and are never reloaded in full.
"""

from __future__ import annotations

import functools
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias, TypeVar

from lithos.domain.chunks import ChunkHit, RankedChunk, chunk_hash
from lithos.domain.embedding import (
    IDENTITY,
    Calibration,
    Embedder,
    EmbeddingSpace,
    QueryVectors,
    calibration,
)
from lithos.errors import ConfigError, StoreCorrupt
from lithos.lazy_numpy import np
from lithos.store import vector_snapshot, vector_spaces
from lithos.store.sqlite import Database, Migration, generation_migration
from lithos.store.vector_codes import row_vectors
from lithos.store.vector_matrix import HASH_BYTES, ChunkMatrix, MatrixRows, spare_rows
from lithos.store.vector_rows import decode, hits, queued, select_in, unit, unqueue_unused
from lithos.store.vector_snapshot import SnapshotDamaged, SpaceShape, Stamp

log = logging.getLogger("lithos.vectors")

T = TypeVar("T")
Query: TypeAlias = "np.ndarray | QueryVectors"
EmbedderFor = Callable[[EmbeddingSpace], Embedder | None]
Rows = list[tuple[str, int, str, float]]

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
    Migration("0002_embedding_spaces", vector_spaces.SPACES_SQL),
    # Bumped with every change of a note or chunk row: their counts are kept between calls.
    Migration("0003_generation", generation_migration("notes", "chunks")),
    # The stamp a matrix snapshot must carry to be trusted (store/vector_snapshot.py).
    Migration("0004_matrix_stamp", lambda conn: _matrix_stamp(conn)),
)


@dataclass(frozen=True)
class NoteChunks:
    """A note's version and its chunk texts, in order, as the vector store keeps them."""

    note_id: str
    content_hash: str
    chunks: Sequence[str]


@dataclass(frozen=True)
class VectorCounts:
    """Sizes of the index, counted in chunk rows (a text shared by two notes counts twice)."""

    notes: int
    chunks: int
    embedded_chunks: int  # with a vector in the active space
    pending_chunks: int  # with no vector in any searched space: not found by search yet
    migrating_chunks: int = 0  # searched in a retiring space until embedded again


@dataclass(frozen=True)
class SpaceReport:
    """One embedding space the store has used: its state and whether queries reach it."""

    space_id: str
    state: vector_spaces.SpaceState
    searched: bool


class VectorStore:
    """Chunks and vectors, searched in the active embedding space and in any space still
    being retired after a model change.

    Every method is one transaction and is safe to call from any thread. Vectors are L2
    normalised on the way in; similarity is ``max(0, cosine)``, so it lies in ``[0, 1]`` and
    unrelated texts score near 0. ``embedders`` gives the embedder of a space (``None`` when
    it is not available), for :meth:`embed_query`.
    """

    def __init__(
        self,
        path: Path,
        model_id: str,
        dimension: int,
        on_corrupt: Callable[[StoreCorrupt], None] | None = None,
        revision: str = "",
        embedders: EmbedderFor | None = None,
        compact: bool = False,
        shortlist: int = 0,
        sole_writer: bool = False,
    ) -> None:
        """``compact`` holds the search matrix as int8 rows (re-scored from SQLite);
        ``shortlist`` > 0 lets a search of compact rows score only the rows nearest the query
        by sign bits: at least ``shortlist`` of them (see :func:`shortlist_size`).
        ``sole_writer``: no other process writes the file while this store is open (a
        serving Lithos, which holds the full-text writer lock too), so :meth:`sizes` may be
        kept in memory until this store writes."""
        self.path = path
        self._sole_writer = sole_writer
        self._compact = compact
        self._shortlist = shortlist
        self.space = EmbeddingSpace(model_id, revision, dimension)
        self.model_id = model_id
        self.dimension = dimension
        self._embedders = embedders
        self._on_corrupt = on_corrupt
        self._lock = threading.Lock()
        # Spaces searched besides the active one, newest first. Changed under _lock.
        self._retiring: list[EmbeddingSpace] = []
        # Space id -> matrix, None until the first search. Replaced or changed only under
        # _lock, and changed only on the database thread inside the write it mirrors, so it
        # follows the commit order.
        self._matrices: dict[str, ChunkMatrix] | None = None
        # One reader of the matrices at a time (a search waits on it while they are read);
        # one snapshot writer at a time. Neither is held on the database thread.
        self._loading = threading.Lock()
        self._saving = threading.Lock()
        self.snapshot_path = path.with_suffix(".matrix")
        self._saved: Stamp | None = None  # what the snapshot on disk holds, when known
        self._saved_at = time.monotonic()
        self._closed = False
        self._queue_filled = False  # database thread only (_queue)
        self._db = self._open()

    def _open(self) -> Database:
        # Derived and verified against the files at start-up: a commit must survive a crash of
        # the process, not a power cut, so it costs no fsync (one per note write otherwise).
        database = Database(self.path, MIGRATIONS, durable=False, on_corrupt=self._on_corrupt)
        try:
            database.call(self._prepare)
        except BaseException:
            database.close()
            raise
        if self._retiring:
            # Spaces still searched after a model change are retired as soon as no chunk
            # needs them: queued on the database thread, not waited for.
            database.call_soon(self._retire_if_done)
        return database

    def close(self) -> None:
        """Save the matrix snapshot if it is behind the matrices, then close the database.
        Idempotent; the store is unusable until :meth:`reopen`."""
        if not self._closed:
            try:
                self.save_snapshot()
            except Exception:  # a damaged store is being closed to be moved aside
                log.warning("could not save the vector matrix snapshot", exc_info=True)
            self._closed = True
            self._db.close()

    def reopen(self) -> None:
        """Open the file again, after it was closed and moved aside (an empty store)."""
        self.close()
        with self._lock:
            self._matrices = None
        self._db = self._open()
        self._closed = False

    def derivation(self) -> dict[str, object] | None:
        """What the chunks were made with (chunking), as last recorded."""
        return self._db.derivation()

    def record_derivation(self, derivation: dict[str, object]) -> None:
        self._db.record_derivation(derivation)

    # -- embedding spaces ----------------------------------------------------------------

    def searched_spaces(self) -> list[EmbeddingSpace]:
        """The active space, then the spaces being retired, newest first."""
        with self._lock:
            return [self.space, *self._retiring]

    def spaces(self) -> list[SpaceReport]:
        """Every space the store has used, with its state."""
        states = self._db.call(vector_spaces.states)
        queryable = {space.id for space in self.searched_spaces() if self._embedder(space)}
        return [SpaceReport(i, state, i in queryable) for i, state in states.items()]

    def embed_query(self, text: str) -> QueryVectors:
        """``text`` embedded in every searched space whose embedder is available (always the
        active one). Raises ``ConfigError`` when the active space has no embedder."""
        vectors = {}
        for space in self.searched_spaces():
            embedder = self._embedder(space)
            if embedder is not None:
                vectors[space.id] = embedder.embed([text])[0]
        if self.space.id not in vectors:
            raise ConfigError(f"no embedder for the embedding space {self.space.id}")
        return QueryVectors(self.space.id, vectors)

    def retire_if_done(self) -> list[str]:
        """Retire the spaces being retired once every chunk has a vector in the active space;
        returns the ids retired (none while some chunk still needs one)."""
        return self._write(self._retire_if_done)

    def _embedder(self, space: EmbeddingSpace) -> Embedder | None:
        return self._embedders(space) if self._embedders is not None else None

    # -- writes --------------------------------------------------------------------------

    def set_note(self, note_id: str, content_hash: str, chunks: list[str]) -> int:
        """:meth:`set_notes` for one note; returns its count of chunks with no vector."""
        return self.set_notes([NoteChunks(note_id, content_hash, chunks)])[0]

    def set_notes(self, notes: Sequence[NoteChunks]) -> list[int]:
        """Make each note's ``chunks`` its chunk list and record its ``content_hash`` as its
        version, all in one transaction (a note given twice ends as given last).

        Returns, per note, how many of its chunks have no vector in any searched space (they
        are then returned by :meth:`pending`, first). Chunks whose text was embedded before
        are searchable immediately; those embedded only in a retiring space are searched
        there and also queued, behind new text, to be embedded in the active space.
        """
        return self.start_set_notes(notes)()

    def start_set_notes(self, notes: Sequence[NoteChunks]) -> Callable[[], list[int]]:
        """:meth:`set_notes` begun on the database thread: returns at once the function that
        waits for it and returns (or raises) what :meth:`set_notes` would."""
        rows = [
            [
                (note.note_id, index, chunk_hash(text), text)
                for index, text in enumerate(note.chunks)
            ]
            for note in notes
        ]

        def write(conn: sqlite3.Connection) -> list[int]:
            found = self._found(conn, {h for note in rows for _, _, h, _ in note})
            self._set_chunks(conn, notes, rows, found)
            return [sum(1 for _, _, h, _ in note if h not in found) for note in rows]

        wait = self._db.start(write)

        def finish() -> list[int]:
            try:
                return wait()
            except BaseException:
                self._forget_matrices()
                raise

        return finish

    def _set_chunks(
        self,
        conn: sqlite3.Connection,
        notes: Sequence[NoteChunks],
        rows: list[list[tuple[str, int, str, str]]],
        found: dict[str, tuple[str, np.ndarray]],
    ) -> None:
        """Write every note's version and chunk rows with one statement of each kind, rows
        in the order given (a note given twice: as given last)."""
        last = {note.note_id: index for index, note in enumerate(notes)}
        kept = [index for index, note in enumerate(notes) if last[note.note_id] == index]
        old = self._chunk_hashes_of(conn, [notes[index].note_id for index in kept])
        conn.executemany(
            "INSERT INTO notes(note_id, content_hash) VALUES (?, ?)"
            " ON CONFLICT(note_id) DO UPDATE SET content_hash = excluded.content_hash",
            [(notes[index].note_id, notes[index].content_hash) for index in kept],
        )
        conn.executemany("DELETE FROM chunks WHERE note_id = ?", [(n,) for n in old])
        new = [row for index in kept for row in rows[index]]
        conn.executemany(
            "INSERT INTO chunks(note_id, chunk_index, chunk_hash, text) VALUES (?, ?, ?, ?)", new
        )
        conn.executemany(
            "INSERT OR IGNORE INTO temp.queue(chunk_hash, priority) VALUES (?, ?)",
            [
                (h, NEW_TEXT if h not in found else MIGRATION)
                for _, _, h, _ in new
                if h not in found or found[h][0] != self.space.id
            ],
        )
        unqueue_unused(conn, set().union(*old.values()) - {h for _, _, h, _ in new})
        with self._lock:
            if self._matrices is not None:
                for index in kept:
                    note_id = notes[index].note_id
                    for matrix in self._matrices.values():
                        matrix.remove_note(note_id)
                    for _, chunk_index, h, _ in rows[index]:
                        if h in found:
                            space_id, vector = found[h]
                            self._matrices[space_id].add(note_id, chunk_index, h, vector)

    def remove_note(self, note_id: str) -> None:
        """Forget the note and its chunks; their vectors stay cached. No-op if unknown."""

        def write(conn: sqlite3.Connection) -> None:
            old = self._chunk_hashes_of(conn, [note_id]).get(note_id, set())
            conn.execute("DELETE FROM notes WHERE note_id = ?", (note_id,))  # cascades to chunks
            unqueue_unused(conn, old)
            with self._lock:
                if self._matrices is not None:
                    for matrix in self._matrices.values():
                        matrix.remove_note(note_id)
            self._retire_if_done(conn)

        self._write(write)

    def clear(self, cache: bool = False) -> None:
        """Forget every note and chunk; with ``cache=True`` drop the vectors of every space
        too. Spaces being retired stay searched for the chunks that are added back."""

        def write(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM chunks")
            conn.execute("DELETE FROM notes")
            conn.execute("DELETE FROM temp.queue")
            if cache:
                conn.execute("DELETE FROM embeddings")
            with self._lock:
                if self._matrices is not None:
                    self._matrices = self._empty_matrices()

        self._write(write)

    def pending(self, limit: int, migrate: bool = True) -> list[tuple[str, str]]:
        """Up to ``limit`` distinct ``(chunk_hash, text)`` that some note uses and that have no
        vector in the active space yet: first the text no searched space has (in the order it
        was first needed), then, with ``migrate``, the text only a retiring space has."""
        where = "" if migrate else f" WHERE q.priority = {NEW_TEXT}"

        def read(conn: sqlite3.Connection) -> list[sqlite3.Row]:
            self._queue(conn)
            return conn.execute(
                "SELECT q.chunk_hash, (SELECT c.text FROM chunks c"
                "  WHERE c.chunk_hash = q.chunk_hash LIMIT 1) AS text"
                f" FROM temp.queue q{where} ORDER BY q.priority, q.rowid LIMIT ?",
                (limit,),
            ).fetchall()

        rows = self._db.call(read)
        # A queued hash is always some chunk's (the queue drops it with its last chunk).
        return [(row["chunk_hash"], row["text"]) for row in rows if row["text"] is not None]

    def store_embeddings(self, items: Sequence[tuple[str, np.ndarray]]) -> None:
        """Store one vector in the active space per chunk hash (replacing any held one) and
        make every chunk with that hash searchable in it. When that was the last chunk a
        retiring space was searched for, the space is retired. Raises ``ValueError`` for a
        vector of the wrong shape."""
        vectors = {h: unit(vector, self.dimension) for h, vector in items}

        def write(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT OR REPLACE INTO embeddings(space_id, chunk_hash, vector) VALUES (?, ?, ?)",
                [(self.space.id, h, vector.tobytes()) for h, vector in vectors.items()],
            )
            conn.executemany("DELETE FROM temp.queue WHERE chunk_hash = ?", [(h,) for h in vectors])
            with self._lock:
                if self._matrices is not None:
                    sql = "SELECT note_id, chunk_index, chunk_hash FROM chunks WHERE chunk_hash"
                    for note_id, index, h in select_in(conn, sql, vectors):
                        for space in self._retiring:
                            self._matrices[space.id].remove_chunk(note_id, index)
                        self._matrices[self.space.id].add(note_id, index, h, vectors[h])
            self._retire_if_done(conn)

        self._write(write)

    # -- search --------------------------------------------------------------------------

    def search(
        self,
        query: Query,
        limit: int,
        note_filter: Callable[[str], bool] | None = None,
    ) -> list[ChunkHit]:
        """The ``limit`` chunks most similar to ``query``, best first.

        ``query`` is a vector in the active space or a :class:`QueryVectors` (see
        :meth:`embed_query`); every space it has a vector for is searched, and the scores of
        a retiring space are calibrated to the active one's scale. ``note_filter`` is applied
        before ranking, so a filtered search still returns ``limit`` hits when that many chunks
        pass it. Several hits may come from one note; see
        :func:`lithos.domain.chunks.best_per_note`. Chunks not embedded yet are not found.
        Raises ``ValueError`` for a query of the wrong shape.
        """
        return self.texts(self.rank(query, limit, note_filter))

    def rank(
        self,
        query: Query,
        limit: int,
        note_filter: Callable[[str], bool] | None = None,
    ) -> list[RankedChunk]:
        """Like :meth:`search` without reading any chunk text: for callers that show only a
        few of the chunks they rank (read those with :meth:`texts`)."""

        def select(m: ChunkMatrix, scores: np.ndarray, candidates: np.ndarray) -> Rows:
            return m.top(scores, limit, candidates)

        rows = self._ranked(query, limit, note_filter, select)
        return [RankedChunk(*row) for row in sorted(rows, key=_by_score)[:limit]]

    def search_notes(
        self,
        query: Query,
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
        query: Query,
        limit: int,
        note_filter: Callable[[str], bool] | None = None,
        min_similarity: float = 0.0,
        exact: int | None = None,
    ) -> list[RankedChunk]:
        """Like :meth:`search_notes` without reading any chunk text. ``exact``: re-score
        from the float32 vectors only the rows a ranking ``exact`` deep would (default
        ``limit``); the notes past them keep their approximate (int8) similarity, for a
        caller that needs the tail's order but not its precision."""

        def select(m: ChunkMatrix, scores: np.ndarray, candidates: np.ndarray) -> Rows:
            return m.top_notes(scores, limit, candidates, min_similarity)

        rescored = limit if exact is None else min(exact, limit)
        best: dict[str, tuple[str, int, str, float]] = {}
        ranked = self._ranked(query, limit, note_filter, select, rescored)
        for row in sorted(ranked, key=_by_score):
            best.setdefault(row[0], row)
        return [RankedChunk(*row) for row in list(best.values())[:limit]]

    def texts(self, ranked: Sequence[RankedChunk]) -> list[ChunkHit]:
        """The hits of ``ranked`` with their text, in the same order; a chunk whose note
        changed since it was ranked is dropped as stale."""
        if not ranked:
            return []
        return self._db.call(lambda conn: hits(conn, ranked))

    def _ranked(
        self,
        query: Query,
        limit: int,
        note_filter: Callable[[str], bool] | None,
        select: Callable[[ChunkMatrix, np.ndarray, np.ndarray], Rows],
        rescored: int | None = None,
    ) -> Rows:
        """The rows ``select`` picks in each searched space the query has a vector for, each
        space's scores calibrated to the active space's scale; compact scores of the best
        ``rescored`` (default ``limit``) rows plus a margin are made exact first."""
        if limit <= 0:
            return []
        vectors = self._query_units(query)
        allowed = self._allowed(note_filter)
        exact_rows = (limit if rescored is None else rescored) + RESCORE_MARGIN

        def rank(conn: sqlite3.Connection | None) -> Rows | None:
            with self._lock:
                if self._matrices is None:  # a failed write just dropped them: reload
                    return None
                spaces = [s for s in [self.space, *self._retiring] if s.id in vectors]
                scored = [(s, self._matrices[s.id]) for s in spaces]
                scores, candidates = self._scores(scored, vectors, allowed, limit)
                if conn is not None:
                    for (space, matrix), raw, rows in zip(scored, scores, candidates, strict=True):
                        exact = functools.partial(self._exact, conn, space)
                        matrix.rescore(raw, vectors[space.id], rows, exact_rows, exact)
                adjust = self._calibrations(scored, scores)
                found: Rows = []
                for (_, matrix), raw, rows, mapping in zip(
                    scored, scores, candidates, adjust, strict=True
                ):
                    found.extend(select(matrix, mapping.apply(raw), rows))
                return found

        while True:
            self.warm()
            # Compact (int8) scores are re-scored from the float32 vectors in SQLite: on the
            # database thread, so no write holding it can wait on the lock held here.
            ranked = self._db.call(rank) if self._compact else rank(None)
            if ranked is not None:
                return ranked

    def _scores(
        self,
        scored: list[tuple[EmbeddingSpace, ChunkMatrix]],
        vectors: dict[str, np.ndarray],
        allowed: set[str] | None,
        limit: int,
    ) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Each space's scores and the rows to rank by them. One space searched (no model
        change under way) with the shortlist on: only its rows nearest the query by sign bits
        are scored and ranked; several need every score, to calibrate one space's to the
        other's."""
        if self._shortlist and len(scored) == 1:
            space, matrix = scored[0]
            count = shortlist_size(self._shortlist, len(matrix), limit)
            short = (
                matrix.shortlist_scores(vectors[space.id], allowed, count)
                if len(matrix) > count
                else None
            )
            if short is not None:
                return [short[0]], [short[1]]
        scores = [matrix.scores(vectors[space.id]) for space, matrix in scored]
        return scores, [matrix.candidates(allowed) for _, matrix in scored]

    def _exact(
        self, conn: sqlite3.Connection, space: EmbeddingSpace, hashes: set[str]
    ) -> dict[str, np.ndarray]:
        sql = "SELECT chunk_hash, vector FROM embeddings WHERE space_id = ? AND chunk_hash"
        return {h: decode(blob, space) for h, blob in select_in(conn, sql, hashes, (space.id,))}

    def _calibrations(
        self, scored: list[tuple[EmbeddingSpace, ChunkMatrix]], scores: list[np.ndarray]
    ) -> list[Calibration]:
        if len(scored) < 2 or scored[0][0] != self.space:
            return [IDENTITY] * len(scored)
        primary = scored[0][1].stats(scores[0])
        return [IDENTITY] + [
            calibration(primary, matrix.stats(raw))
            for (_, matrix), raw in zip(scored[1:], scores[1:], strict=True)
        ]

    def _query_units(self, query: Query) -> dict[str, np.ndarray]:
        if not isinstance(query, QueryVectors):
            return {self.space.id: unit(query, self.dimension)}
        dimensions = {space.id: space.dimension for space in self.searched_spaces()}
        return {
            space_id: unit(vector, dimensions[space_id])
            for space_id, vector in query.vectors.items()
            if space_id in dimensions
        }

    def note_vectors(self, note_ids: Iterable[str]) -> dict[str, np.ndarray]:
        """One unit vector per note (the mean of its embedded chunks), for the notes that have
        any embedded chunk: what retrieval compares notes by. All come from one space (the
        one holding most of these notes), so any two of them can be compared."""
        wanted = list(note_ids)
        self.warm()
        with self._lock:
            if self._matrices is None:
                return {}
            best: dict[str, np.ndarray] = {}
            for matrix in self._matrices.values():
                found = {note: matrix.note_vector(note) for note in wanted}
                present = {note: v for note, v in found.items() if v is not None}
                if len(present) > len(best):
                    best = present
        return best

    def note_similarities(self, query: Query, note_ids: Iterable[str]) -> dict[str, float]:
        """The cosine between ``query`` and each note's unit mean vector, in the active space
        only (a note not embedded there yet is left out; during a space migration its best
        chunk speaks for it)."""
        vector = self._query_units(query).get(self.space.id)
        if vector is None:
            return {}
        wanted = list(note_ids)
        self.warm()
        with self._lock:
            if self._matrices is None:
                return {}
            matrix = self._matrices[self.space.id]
            found = {note: matrix.note_vector(note) for note in wanted}
        return {note: float(v @ vector) for note, v in found.items() if v is not None}

    def lead_texts(self, note_ids: Iterable[str]) -> dict[str, str]:
        """The first chunk's text of each given note the index holds."""
        wanted = list(dict.fromkeys(note_ids))
        if not wanted:
            return {}
        sql = "SELECT note_id, text FROM chunks WHERE chunk_index = 0 AND note_id"
        rows = self._db.call(lambda conn: select_in(conn, sql, wanted))
        return {note: text for note, text in rows}

    def matrix_bytes(self) -> int:
        """Memory the search matrices hold for vectors (0 before they are read)."""
        with self._lock:
            return sum(m.nbytes for m in (self._matrices or {}).values())

    def warm(self) -> None:
        """Read the search matrices now rather than on the first search: from the snapshot
        when it holds the store's current content, else from SQLite. Idempotent. The database
        thread is not held meanwhile, so other calls on the store (writes, counts, reads of
        chunks) do not wait for it; a search does (it needs the matrices)."""
        if self._matrices is not None:
            return
        with self._loading:
            for _ in range(LOAD_ATTEMPTS):
                if self._matrices is not None:
                    return
                stamp, spaces = self._db.call(self._stamp_and_spaces)
                matrices, stamp = self._read_matrices(stamp, spaces)
                if self._db.call(functools.partial(self._install, stamp, matrices)):
                    return
            # Writes kept changing the store while it was read: read it on the database
            # thread, where no write can come between the read and the install.
            self._db.call(self._ensure_loaded)

    def snapshot_stale(self) -> bool:
        """Whether the matrices are in memory and the snapshot on disk does not hold them."""
        if self._matrices is None or self._closed:
            return False
        return self._saved != self._db.call(_stamp)

    def snapshot_age(self) -> float:
        """Seconds since the snapshot was last written or found current."""
        return time.monotonic() - self._saved_at

    def save_snapshot(self) -> bool:
        """Write the matrix snapshot if the matrices are in memory and the one on disk does
        not hold them; returns whether one was written. The matrices' rows are written as
        they are, outside the database thread; the file replaces the old one only if no
        change reached the matrices meanwhile (else it is dropped: the next save writes it)."""
        with self._saving:
            if self._closed:
                return False
            exported = self._db.call(self._export)
            if exported is None:
                return False
            stamp, matrices, spaces = exported
            temporary = vector_snapshot.write(self.snapshot_path, stamp, self._compact, spaces)
            try:
                unchanged = self._db.call(
                    lambda conn: _stamp(conn) == stamp and self._matrices is matrices
                )
                if unchanged:
                    temporary.replace(self.snapshot_path)
                    self._saved, self._saved_at = stamp, time.monotonic()
                return unchanged
            finally:
                temporary.unlink(missing_ok=True)

    # -- reading -------------------------------------------------------------------------

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

    def counts(self) -> VectorCounts:
        """Current sizes: the note and chunk counts are counted again only after a change of
        either (a few milliseconds at 100k chunks), the queued chunks each time."""
        return self._db.call(self._read_counts)

    async def sizes(self) -> VectorCounts:
        """:meth:`counts`, awaited without blocking the event loop; a sole writer answers
        from memory, without the hop to the database thread, until it next writes."""
        if self._sole_writer:
            return await self._db.run_remembered("sizes", self._read_counts)
        return await self._db.run(self._read_counts)

    def _read_counts(self, conn: sqlite3.Connection) -> VectorCounts:
        notes, chunks = self._db.kept(conn, "sizes", _sizes)
        self._queue(conn)
        pending = queued(conn, NEW_TEXT)
        migrating = queued(conn, MIGRATION)
        return VectorCounts(notes, chunks, chunks - pending - migrating, pending, migrating)

    def pending_count(self, migrate: bool = False) -> int:
        """Chunks no search finds yet (with ``migrate``, also those found only in a retiring
        space); cheap enough to call on every search."""

        def read(conn: sqlite3.Connection) -> int:
            self._queue(conn)
            waiting = queued(conn, NEW_TEXT)
            return waiting + queued(conn, MIGRATION) if migrate else waiting

        return self._db.call(read)

    # -- internals -----------------------------------------------------------------------

    def _write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        try:
            return self._db.call(fn)
        except BaseException:
            self._forget_matrices()
            raise

    def _forget_matrices(self) -> None:
        """After a failed write: the matrices may hold the rolled-back change, so they are
        rebuilt on the next search."""
        with self._lock:
            self._matrices = None

    def _prepare(self, conn: sqlite3.Connection) -> None:
        retiring = vector_spaces.activate(conn, self.space)
        with self._lock:
            self._retiring = retiring
        # The queue of chunks to embed is derived state, rebuilt per connection: a TEMP table
        # costs no disk writes and always matches this store's active space. It holds hashes
        # only (the text is read from the chunks when embedded), so that keeping it in memory
        # (temp_store=MEMORY) costs ~100 bytes a queued chunk. Filled by the first call that
        # reads it (_queue).
        conn.execute(
            "CREATE TEMP TABLE IF NOT EXISTS queue ("
            " chunk_hash TEXT NOT NULL UNIQUE, priority INTEGER NOT NULL)"
        )
        conn.execute("CREATE INDEX IF NOT EXISTS temp.queue_order ON queue(priority)")
        self._queue_filled = False

    def _queue(self, conn: sqlite3.Connection) -> None:
        """Fill the queue of chunks to embed unless it is filled: every chunk with no vector
        in the active space (new text first). Filling reads every chunk (~0.2 s of CPU at
        39,000 chunks, ~1 s at 347,000), so it waits for the first call that reads the
        queue (in a server, the embedding worker's, once the first call is answered)
        instead of sharing the cores with the start-up. Writes before it may add to the
        queue or take from it: the fill starts it over. Database thread only."""
        if self._queue_filled:
            return
        conn.execute("DELETE FROM temp.queue")
        retiring = [space.id for space in self._retiring]
        marks = ", ".join("?" * len(retiring))
        conn.execute(
            "INSERT OR IGNORE INTO temp.queue(chunk_hash, priority)"
            f" SELECT c.chunk_hash, CASE WHEN EXISTS ("
            f"  SELECT 1 FROM embeddings r WHERE r.space_id IN ({marks})"
            f"  AND r.chunk_hash = c.chunk_hash) THEN {MIGRATION} ELSE {NEW_TEXT} END"
            " FROM chunks c WHERE NOT EXISTS ("
            "  SELECT 1 FROM embeddings e WHERE e.space_id = ? AND e.chunk_hash = c.chunk_hash)"
            " ORDER BY c.rowid",
            (*retiring, self.space.id),
        )
        self._queue_filled = True

    def _retire_if_done(self, conn: sqlite3.Connection) -> list[str]:
        if not self._retiring:
            return []
        self._queue(conn)
        waiting = conn.execute(f"SELECT 1 FROM temp.queue WHERE priority = {MIGRATION} LIMIT 1")
        if waiting.fetchone() is not None:
            return []
        retired = vector_spaces.retire_all(conn)
        with self._lock:
            if self._matrices is not None:
                for space in self._retiring:
                    self._matrices.pop(space.id, None)
            self._retiring = []
        return retired

    def _stamp_and_spaces(self, conn: sqlite3.Connection) -> tuple[Stamp, list[EmbeddingSpace]]:
        with self._lock:
            return _stamp(conn), [self.space, *self._retiring]

    def _read_matrices(
        self, stamp: Stamp, spaces: list[EmbeddingSpace]
    ) -> tuple[dict[str, ChunkMatrix], Stamp]:
        """The matrices of ``spaces`` and the stamp of the content they hold: from the
        snapshot if it holds ``stamp``, else from SQLite through a connection of their own
        (in one read transaction, so the rows and their stamp agree)."""
        shapes = [SpaceShape(space.id, space.dimension) for space in spaces]
        try:
            held = vector_snapshot.read(self.snapshot_path, stamp, self._compact, shapes)
        except (SnapshotDamaged, OSError) as exc:
            log.warning("vector matrix snapshot set aside, reading SQLite instead: %s", exc)
            self._set_aside()
            held = None
        if held is not None:
            self._saved, self._saved_at = stamp, time.monotonic()
            dimensions = {space.id: space.dimension for space in spaces}
            return {i: ChunkMatrix(dimensions[i], rows) for i, rows in held.items()}, stamp
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        try:
            conn.execute("BEGIN")
            return self._load_all(conn, spaces), _stamp(conn)
        finally:
            conn.close()

    def _set_aside(self) -> None:
        try:
            self.snapshot_path.replace(self.snapshot_path.with_suffix(".matrix-damaged"))
        except OSError:
            self.snapshot_path.unlink(missing_ok=True)

    def _install(
        self, stamp: Stamp, matrices: dict[str, ChunkMatrix], conn: sqlite3.Connection
    ) -> bool:
        """Adopt ``matrices`` if the store still holds what they were read from; ``False``
        when it changed meanwhile (read them again)."""
        current = _stamp(conn)
        with self._lock:
            if self._matrices is not None:  # read on the database thread meanwhile
                return True
            spaces = [space.id for space in [self.space, *self._retiring]]
            if current != stamp or list(matrices) != spaces:
                return False
            self._matrices = matrices
            return True

    def _export(
        self, conn: sqlite3.Connection
    ) -> tuple[Stamp, dict[str, ChunkMatrix], list[tuple[SpaceShape, MatrixRows]]] | None:
        """What a snapshot of the matrices holds, unless they are not in memory or the one on
        disk holds them already."""
        stamp = _stamp(conn)
        with self._lock:
            matrices = self._matrices
            if matrices is None or stamp == self._saved:
                return None
            dimensions = {space.id: space.dimension for space in [self.space, *self._retiring]}
            spaces = [
                (SpaceShape(i, dimensions[i]), matrix.export()) for i, matrix in matrices.items()
            ]
        return stamp, matrices, spaces

    def _ensure_loaded(self, conn: sqlite3.Connection) -> None:
        if self._matrices is not None:
            return
        matrices = self._load_all(conn, [self.space, *self._retiring])
        with self._lock:
            self._matrices = matrices

    def _load_all(
        self, conn: sqlite3.Connection, spaces: list[EmbeddingSpace]
    ) -> dict[str, ChunkMatrix]:
        # Every chunk row bounds the number of embedded ones; the rows not filled, and the
        # spare ones beyond, become free capacity for the writes after the read.
        chunks = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        capacity = chunks + spare_rows(chunks)
        matrices: dict[str, ChunkMatrix] = {}
        earlier: list[str] = []
        for space in spaces:
            matrices[space.id] = self._load(conn, space, earlier, capacity)
            earlier.append(space.id)
        return matrices

    def _load(
        self, conn: sqlite3.Connection, space: EmbeddingSpace, earlier: list[str], capacity: int
    ) -> ChunkMatrix:
        """The matrix of ``space``: the chunks it has a vector for and no ``earlier`` space
        has, read in blocks (a block of vectors is decoded and quantised at once)."""
        vectors = row_vectors(capacity, space.dimension, self._compact)
        codes = np.full(capacity, -1, dtype=np.int32)
        indexes = np.zeros(capacity, dtype=np.int32)
        hashes = np.zeros((capacity, HASH_BYTES), dtype=np.uint8)
        code_of: dict[str, int] = {}
        marks = ", ".join("?" * len(earlier))
        unless = (
            f" WHERE NOT EXISTS (SELECT 1 FROM embeddings p WHERE p.space_id IN ({marks})"
            " AND p.chunk_hash = c.chunk_hash)"
            if earlier
            else ""
        )
        rows = conn.execute(
            "SELECT c.note_id, c.chunk_index, c.chunk_hash, e.vector FROM chunks c"
            " JOIN embeddings e ON e.space_id = ? AND e.chunk_hash = c.chunk_hash"
            f"{unless} ORDER BY c.rowid",
            (space.id, *earlier),
        )
        size = 0
        while block := rows.fetchmany(LOAD_BLOCK_ROWS):
            end = size + len(block)
            note_ids, chunk_indexes, chunk_hashes, blobs = zip(*block, strict=True)
            if any(len(blob) != 4 * space.dimension for blob in blobs):
                decode(next(b for b in blobs if len(b) != 4 * space.dimension), space)  # raises
            vectors.set_block(
                size, np.frombuffer(b"".join(blobs), np.float32).reshape(-1, space.dimension)
            )
            codes[size:end] = [code_of.setdefault(note, len(code_of)) for note in note_ids]
            indexes[size:end] = chunk_indexes
            hashes[size:end] = np.frombuffer(
                bytes.fromhex("".join(chunk_hashes)), np.uint8
            ).reshape(-1, HASH_BYTES)
            size = end
        notes: list[str | None] = list(code_of)
        rows_held = MatrixRows(vectors, size, codes[:size], indexes[:size], hashes[:size], notes)
        return ChunkMatrix(space.dimension, rows_held)

    def _empty_matrices(self) -> dict[str, ChunkMatrix]:
        return {
            space.id: ChunkMatrix(space.dimension, compact=self._compact)
            for space in [self.space, *self._retiring]
        }

    def _found(
        self, conn: sqlite3.Connection, hashes: set[str]
    ) -> dict[str, tuple[str, np.ndarray]]:
        """``chunk_hash -> (space_id, vector)`` in the first searched space that has it."""
        found: dict[str, tuple[str, np.ndarray]] = {}
        sql = "SELECT chunk_hash, vector FROM embeddings WHERE space_id = ? AND chunk_hash"
        for space in [self.space, *self._retiring]:
            missing = hashes - found.keys()
            if not missing:
                break
            for h, blob in select_in(conn, sql, missing, (space.id,)):
                found[h] = (space.id, decode(blob, space))
        return found

    def _allowed(self, note_filter: Callable[[str], bool] | None) -> set[str] | None:
        if note_filter is None:
            return None
        # The filter is caller code: run it outside the lock, which a write may be waiting on.
        return {note for note in self._note_ids() if note_filter(note)}

    def _note_ids(self) -> list[str]:
        self.warm()
        with self._lock:
            if self._matrices is None:
                return []
            notes: dict[str, None] = {}
            for matrix in self._matrices.values():
                notes.update(dict.fromkeys(matrix.note_ids()))
            return list(notes)

    def _chunk_hashes_of(
        self, conn: sqlite3.Connection, note_ids: list[str]
    ) -> dict[str, set[str]]:
        """The chunk hashes of each of these notes that has chunks."""
        hashes: dict[str, set[str]] = {}
        sql = "SELECT note_id, chunk_hash FROM chunks WHERE note_id"
        for note_id, h in select_in(conn, sql, note_ids):
            hashes.setdefault(note_id, set()).add(h)
        return hashes


# Compact scores are re-scored exactly for the best `limit + RESCORE_MARGIN` rows of each space.
RESCORE_MARGIN = 40
# A shortlisted search scores at least one row in SHORTLIST_SHARE of the matrix.
SHORTLIST_SHARE = 64


def shortlist_size(minimum: int, rows: int, limit: int) -> int:
    """How many rows a shortlisted search scores: ``minimum``, one in ``SHORTLIST_SHARE`` of
    the ``rows``, or four times what the ranking re-scores, whichever is most (a sixty-fourth
    of 81,000 real chunk vectors held the whole exact top 10 of every query,
    bench/vector_scale.py)."""
    return max(minimum, rows // SHORTLIST_SHARE, 4 * (limit + RESCORE_MARGIN))


# Times the matrices are read beside the database thread before reading them on it (writes
# kept changing the store meanwhile); rows read from SQLite at a time when no snapshot serves.
LOAD_ATTEMPTS = 3
LOAD_BLOCK_ROWS = 4096

NEW_TEXT = 0  # queue priority: text no searched space has a vector for
MIGRATION = 1  # queue priority: text only a retiring space has a vector for


def _by_score(row: tuple[str, int, str, float]) -> float:
    return -row[3]


def _matrix_stamp(conn: sqlite3.Connection) -> None:
    """A random id for this store file and a generation that every change of what the search
    matrices hold bumps (chunks, vectors, spaces; from any process)."""
    conn.execute(
        "CREATE TABLE matrix_stamp (id INTEGER PRIMARY KEY CHECK (id = 1),"
        " store TEXT NOT NULL, generation INTEGER NOT NULL)"
    )
    conn.execute("INSERT INTO matrix_stamp VALUES (1, lower(hex(randomblob(16))), 0)")
    for table in ("chunks", "embeddings", "spaces"):
        for event in ("INSERT", "UPDATE", "DELETE"):
            conn.execute(
                f"CREATE TRIGGER {table}_{event.lower()}_matrix_stamp AFTER {event} ON {table}"
                " BEGIN UPDATE matrix_stamp SET generation = generation + 1; END"
            )


def _stamp(conn: sqlite3.Connection) -> Stamp:
    store, generation = conn.execute("SELECT store, generation FROM matrix_stamp").fetchone()
    return Stamp(store, int(generation))


def _sizes(conn: sqlite3.Connection) -> tuple[int, int]:
    notes = conn.execute("SELECT COUNT(*) FROM notes").fetchone()[0]
    return int(notes), int(conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])

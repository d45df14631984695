"""The in-memory matrix of embedded chunk vectors that semantic search scores."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from lithos.domain.embedding import ScoreStats
from lithos.lazy_numpy import np
from lithos.store.vector_codes import RowVectors, row_vectors

HASH_BYTES = 32  # a chunk hash is the sha256 of its text (64 hex digits)


def spare_rows(size: int) -> int:
    """Free rows a matrix read with ``size`` rows gets beyond them (from a snapshot or from
    SQLite). They are never resident until written, and the first writes after the read fill
    them instead of copying the whole matrix to grow it (0.35 s at 347,000 int8 rows)."""
    return max(1024, size // 8)


@dataclass
class MatrixRows:
    """What a :class:`ChunkMatrix` holds, as arrays: the rows' vectors (``len(vectors)`` is the
    capacity) and, for the first ``size`` rows, each row's note (a code into ``notes``; -1
    for a free row), chunk index and chunk hash (raw sha256 bytes). ``notes[code]`` is the
    note id of a code (``None`` for a code no row uses)."""

    vectors: RowVectors
    size: int
    note_codes: np.ndarray  # int32, size
    indexes: np.ndarray  # int32, size
    hashes: np.ndarray  # uint8, size x HASH_BYTES
    notes: list[str | None]


class ChunkMatrix:
    """Unit vectors of embedded chunks, one row per ``(note_id, chunk_index)``.

    Not thread-safe: :class:`VectorStore` guards it. A removed row is marked free and reused by
    the next add, so writes never copy the matrix except to grow it (doubling). The keys of the
    rows are numpy arrays, not Python objects per row (at 347,000 chunks, tuples of strings
    took more memory than the int8 vectors): a note's rows are found through an index sorted
    by note, built once, and a list per note changed since.
    """

    def __init__(
        self, dimension: int, rows: MatrixRows | None = None, compact: bool = False
    ) -> None:
        """A matrix adopting ``rows`` (not copied); without them, an empty matrix of float32
        rows, or int8 ones with ``compact``."""
        if rows is None:
            rows = MatrixRows(
                row_vectors(0, dimension, compact),
                0,
                np.zeros(0, dtype=np.int32),
                np.zeros(0, dtype=np.int32),
                np.zeros((0, HASH_BYTES), dtype=np.uint8),
                [],
            )
        self._vectors: RowVectors = rows.vectors
        self._size = rows.size
        capacity = len(rows.vectors)
        self._note_codes = np.full(capacity, -1, dtype=np.int32)
        self._note_codes[: rows.size] = rows.note_codes
        self._indexes = np.zeros(capacity, dtype=np.int32)
        self._indexes[: rows.size] = rows.indexes
        self._hashes = np.zeros((capacity, HASH_BYTES), dtype=np.uint8)
        self._hashes[: rows.size] = rows.hashes
        self._notes: list[str | None] = list(rows.notes)
        self._code_of = {note: code for code, note in enumerate(self._notes) if note is not None}
        self._free_codes = [code for code, note in enumerate(self._notes) if note is None]
        occupied = self._note_codes[: rows.size] >= 0
        self._free_rows: list[int] = np.flatnonzero(~occupied).tolist()
        self._count = int(occupied.sum())
        # The rows of each note: `_order` sorted by note code, note `c`'s rows at
        # `_order[_starts[c]:_starts[c + 1]]`, as at construction; a note changed since has
        # its own list in `_changed` (an empty one once it has no rows).
        order = np.argsort(self._note_codes[: rows.size], kind="stable").astype(np.int32)
        self._order = order
        self._starts = np.searchsorted(
            self._note_codes[: rows.size][order], np.arange(len(self._notes) + 1)
        )
        self._changed: dict[int, list[int]] = {}
        # Unit mean vectors of notes, computed when first asked and dropped when the note's
        # chunks change (retrieval asks for the same notes' means on every call).
        self._means: dict[str, np.ndarray] = {}

    def export(self) -> MatrixRows:
        """The rows as arrays, for a snapshot: the vectors shared (not copied), the keys
        copied (a few bytes a row)."""
        size = self._size
        return MatrixRows(
            self._vectors,
            size,
            self._note_codes[:size].copy(),
            self._indexes[:size].copy(),
            self._hashes[:size].copy(),
            list(self._notes),
        )

    def note_ids(self) -> list[str]:
        return list(self._code_of)

    def note_vector(self, note_id: str) -> np.ndarray | None:
        """The unit mean of the note's embedded chunk vectors (``None`` when it has none)."""
        cached = self._means.get(note_id)
        if cached is not None:
            return cached
        code = self._code_of.get(note_id)
        rows = self._rows(code) if code is not None else []
        if not rows:
            return None
        mean = self._vectors.get(sorted(rows)).mean(axis=0)
        norm = float(np.linalg.norm(mean))
        if norm == 0:
            return None
        vector = (mean / norm).astype(np.float32)
        vector.flags.writeable = False  # shared by every caller
        self._means[note_id] = vector
        return vector

    def add(self, note_id: str, chunk_index: int, chunk_hash: str, vector: np.ndarray) -> None:
        """Set the vector of the chunk, adding its row if it is new."""
        self._means.pop(note_id, None)
        code = self._code(note_id)
        rows = self._own_rows(code)
        row = self._row_of(rows, chunk_index)
        if row is None:
            row = self._new_row()
            rows.append(row)
            self._note_codes[row] = code
            self._indexes[row] = chunk_index
            self._count += 1
        self._vectors.set(row, vector)
        self._hashes[row] = np.frombuffer(bytes.fromhex(chunk_hash), dtype=np.uint8)

    def remove_note(self, note_id: str) -> None:
        code = self._code_of.get(note_id)
        if code is not None:
            for row in list(self._rows(code)):
                self._free(row)

    def remove_chunk(self, note_id: str, chunk_index: int) -> None:
        """Drop the chunk's row, if it has one."""
        code = self._code_of.get(note_id)
        row = self._row_of(self._rows(code), chunk_index) if code is not None else None
        if row is not None:
            self._free(row)

    def __len__(self) -> int:
        return self._count

    def scores(self, query: np.ndarray) -> np.ndarray:
        """The cosine of ``query`` with every row (free rows hold meaningless values): pass
        them, possibly calibrated, to :meth:`top` or :meth:`top_notes`."""
        return self._scores(query)

    def shortlist_scores(
        self, query: np.ndarray, allowed: set[str] | None, count: int
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """Like :meth:`scores`, computed only for at least ``count`` rows whose note is in
        ``allowed``: those whose sign bits are nearest the query's; returns the scores and
        those rows, the candidates to pass on to :meth:`rescore`, :meth:`top` and
        :meth:`top_notes` (so they look at these rows only). Every other row scores
        :data:`UNSCORED`, below any cosine; not for :meth:`stats`. ``None`` when the rows
        keep no sign bits (float32): then use :meth:`scores` and :meth:`candidates`."""
        rows = None if allowed is None else self.candidates(allowed)
        picked = self._vectors.nearest_signs(query, self._size, count, rows)
        if picked is None:
            return None
        if rows is None:  # every row was compared, free ones too
            picked = picked[self._note_codes[picked] >= 0]
        out = np.full(self._size, UNSCORED, dtype=np.float32)
        out[picked] = self._vectors.scores_of(query, picked)
        return out, picked

    def stats(self, scores: np.ndarray) -> ScoreStats:
        """The distribution of :meth:`scores` over the occupied rows."""
        return ScoreStats.of(scores[: self._size][self._note_codes[: self._size] >= 0])

    @property
    def exact(self) -> bool:
        """Whether :meth:`scores` are exact (float32 rows) or approximate (int8 rows)."""
        return self._vectors.exact

    def rescore(
        self,
        scores: np.ndarray,
        query: np.ndarray,
        candidates: np.ndarray,
        count: int,
        vectors_of: Callable[[set[str]], Mapping[str, np.ndarray]],
    ) -> None:
        """Replace, in place, the approximate scores of the ``count`` best of the
        ``candidates`` rows with exact ones, from the float32 vectors ``vectors_of`` gives for
        their chunk hashes. Nothing to do for exact rows."""
        if self._vectors.exact:
            return
        if candidates.size == 0:
            return
        best = candidates[_best(scores[candidates], count)]
        hashes = [self._hash(row) for row in best]
        exact = vectors_of(set(hashes))
        for row, h in zip(best, hashes, strict=True):
            vector = exact.get(h)
            if vector is not None:
                scores[row] = float(vector @ query)

    @property
    def nbytes(self) -> int:
        """Memory held by the vectors (allocated capacity, resident or not)."""
        return self._vectors.nbytes

    def top(
        self, scores: np.ndarray, limit: int, candidates: np.ndarray
    ) -> list[tuple[str, int, str, float]]:
        """``(note_id, chunk_index, chunk_hash, similarity)`` of the best ``limit`` of the
        ``candidates`` rows (from :meth:`candidates` or :meth:`shortlist_scores`), best first,
        by ``scores`` (from :meth:`scores`)."""
        if candidates.size == 0:
            return []
        scores = scores[candidates]
        best = _best(scores, limit)
        return [self._ranked(candidates[p], scores[p]) for p in best]

    def top_notes(
        self, scores: np.ndarray, limit: int, candidates: np.ndarray, min_similarity: float
    ) -> list[tuple[str, int, str, float]]:
        """The best row of each of the ``limit`` notes whose best row is most similar, best
        first, leaving out notes below ``min_similarity``.

        Rows are taken in score order, more of them each round, until ``limit`` distinct notes
        are found, the rows fall below ``min_similarity`` or none are left: a note with many
        similar chunks cannot crowd the others out of the result.
        """
        if candidates.size == 0 or limit <= 0:
            return []
        scores = scores[candidates]
        codes = self._note_codes[candidates]
        k = min(limit * 4, candidates.size)
        while True:
            best = _best(scores, k)
            _, first = np.unique(codes[best], return_index=True)
            exhausted = k == candidates.size or scores[best[-1]] < min_similarity
            if first.size >= limit or exhausted:
                break
            k = min(k * 4, candidates.size)
        positions = best[np.sort(first)][:limit]
        return [
            self._ranked(candidates[p], scores[p]) for p in positions if scores[p] >= min_similarity
        ]

    def candidates(self, allowed: set[str] | None) -> np.ndarray:
        """The occupied rows whose note is in ``allowed`` (every note when ``None``)."""
        codes = self._note_codes[: self._size]
        if allowed is None:
            return np.flatnonzero(codes >= 0)
        # One flag per note code plus a last, False one that the -1 of free rows indexes.
        flags = np.zeros(len(self._code_of) + len(self._free_codes) + 1, dtype=bool)
        flags[[self._code_of[note] for note in allowed if note in self._code_of]] = True
        return np.flatnonzero(flags[codes])

    def _ranked(self, row: int, score: float) -> tuple[str, int, str, float]:
        note_id = self._notes[self._note_codes[row]]
        assert note_id is not None
        return note_id, int(self._indexes[row]), self._hash(row), min(1.0, max(0.0, float(score)))

    def _hash(self, row: int) -> str:
        return bytes(self._hashes[row]).hex()

    def _scores(self, query: np.ndarray) -> np.ndarray:
        return self._vectors.scores(query, self._size)

    def _rows(self, code: int) -> list[int]:
        """The rows of the note with ``code`` (do not change the list: see _own_rows)."""
        changed = self._changed.get(code)
        if changed is not None:
            return changed
        if code + 1 >= len(self._starts):
            return []
        rows: list[int] = self._order[self._starts[code] : self._starts[code + 1]].tolist()
        return rows

    def _own_rows(self, code: int) -> list[int]:
        """The rows of the note with ``code``, as a list of its own that may be changed."""
        rows = self._changed.get(code)
        if rows is None:
            rows = self._changed[code] = self._rows(code)
        return rows

    def _row_of(self, rows: list[int], chunk_index: int) -> int | None:
        return next((row for row in rows if self._indexes[row] == chunk_index), None)

    def _free(self, row: int) -> None:
        code = int(self._note_codes[row])
        note_id = self._notes[code]
        assert note_id is not None
        self._means.pop(note_id, None)
        self._note_codes[row] = -1
        self._free_rows.append(row)
        self._count -= 1
        rows = self._own_rows(code)
        rows.remove(row)
        if not rows:
            del self._code_of[note_id]
            self._notes[code] = None
            self._free_codes.append(code)

    def _new_row(self) -> int:
        if self._free_rows:
            return self._free_rows.pop()
        if self._size == len(self._vectors):
            capacity = max(64, 2 * len(self._vectors))
            self._vectors = self._vectors.grown(capacity)
            self._note_codes = _grown(self._note_codes, capacity, -1)
            self._indexes = _grown(self._indexes, capacity, 0)
            self._hashes = _grown(self._hashes, capacity, 0)
        self._size += 1
        return self._size - 1

    def _code(self, note_id: str) -> int:
        code = self._code_of.get(note_id)
        if code is None:
            if self._free_codes:
                code = self._free_codes.pop()
                self._notes[code] = note_id
            else:
                code = len(self._notes)
                self._notes.append(note_id)
            self._code_of[note_id] = code
        return code


def _grown(array: np.ndarray, capacity: int, fill: int) -> np.ndarray:
    bigger = np.full((capacity, *array.shape[1:]), fill, dtype=array.dtype)
    bigger[: len(array)] = array
    return bigger


# The score of a row a shortlisted search did not score: below every cosine (>= -1).
UNSCORED = -2.0


def _best(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` highest scores, highest first (ties in position order)."""
    k = min(k, scores.size)
    best = np.sort(np.argpartition(-scores, k - 1)[:k]) if k < scores.size else np.arange(k)
    return best[np.argsort(-scores[best], kind="stable")]

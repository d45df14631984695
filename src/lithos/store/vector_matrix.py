"""The in-memory matrix of embedded chunk vectors that semantic search scores."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from lithos.domain.embedding import ScoreStats
from lithos.store.vector_codes import RowVectors, row_vectors


class ChunkMatrix:
    """Unit vectors of embedded chunks, one row per ``(note_id, chunk_index)``.

    Not thread-safe: :class:`VectorStore` guards it. A removed row is marked free and reused by
    the next add, so writes never copy the matrix except to grow it (doubling).
    """

    def __init__(
        self,
        dimension: int,
        keys: Sequence[tuple[str, int, str]] = (),
        vectors: RowVectors | None = None,
        compact: bool = False,
    ) -> None:
        """A matrix holding row ``i`` of ``vectors`` (adopted, not copied) for chunk
        ``keys[i]``; rows beyond ``len(keys)`` are spare capacity. Without ``vectors``, an
        empty matrix of float32 rows, or int8 ones with ``compact``."""
        if vectors is None:
            vectors = row_vectors(len(keys), dimension, compact)
        self._vectors: RowVectors = vectors
        self._keys: list[tuple[str, int, str] | None] = list(keys)
        self._row_of = {(key[0], key[1]): row for row, key in enumerate(keys)}
        self._rows_of_note: dict[str, set[int]] = {}
        self._free_rows: list[int] = []
        self._code_of: dict[str, int] = {}
        self._free_codes: list[int] = []
        # Unit mean vectors of notes, computed when first asked and dropped when the note's
        # chunks change (retrieval asks for the same notes' means on every call).
        self._means: dict[str, np.ndarray] = {}
        self._size = len(keys)
        for row, key in enumerate(keys):
            self._rows_of_note.setdefault(key[0], set()).add(row)
        self._note_codes = np.full(len(vectors), -1, dtype=np.int64)  # -1 marks a free row
        self._note_codes[: len(keys)] = [self._code(key[0]) for key in keys]

    def note_ids(self) -> list[str]:
        return list(self._rows_of_note)

    def note_vector(self, note_id: str) -> np.ndarray | None:
        """The unit mean of the note's embedded chunk vectors (``None`` when it has none)."""
        cached = self._means.get(note_id)
        if cached is not None:
            return cached
        rows = self._rows_of_note.get(note_id)
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
        row = self._row_of.get((note_id, chunk_index))
        if row is None:
            row = self._new_row()
            self._row_of[(note_id, chunk_index)] = row
            self._rows_of_note.setdefault(note_id, set()).add(row)
            self._note_codes[row] = self._code(note_id)
        self._vectors.set(row, vector)
        self._keys[row] = (note_id, chunk_index, chunk_hash)

    def remove_note(self, note_id: str) -> None:
        for row in list(self._rows_of_note.get(note_id, ())):
            self._free(row)

    def remove_chunk(self, note_id: str, chunk_index: int) -> None:
        """Drop the chunk's row, if it has one."""
        row = self._row_of.get((note_id, chunk_index))
        if row is not None:
            self._free(row)

    def __len__(self) -> int:
        return len(self._row_of)

    def scores(self, query: np.ndarray) -> np.ndarray:
        """The cosine of ``query`` with every row (free rows hold meaningless values): pass
        them, possibly calibrated, to :meth:`top` or :meth:`top_notes`."""
        return self._scores(query)

    def shortlist_scores(
        self, query: np.ndarray, allowed: set[str] | None, count: int
    ) -> np.ndarray | None:
        """Like :meth:`scores`, computed only for at least ``count`` rows whose note is in
        ``allowed``: those whose sign bits are nearest the query's. Every other row scores
        :data:`UNSCORED`, below any cosine, so :meth:`top` and :meth:`top_notes` never pick it
        over a scored row and drop it at any ``min_similarity``; not for :meth:`stats`.
        ``None`` when the rows keep no sign bits (float32): then use :meth:`scores`."""
        rows = None if allowed is None else self._candidates(allowed)
        picked = self._vectors.nearest_signs(query, self._size, count, rows)
        if picked is None:
            return None
        out = np.full(self._size, UNSCORED, dtype=np.float32)
        out[picked] = self._vectors.scores_of(query, picked)
        return out

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
        allowed: set[str] | None,
        count: int,
        vectors_of: Callable[[set[str]], Mapping[str, np.ndarray]],
    ) -> None:
        """Replace, in place, the approximate scores of the ``count`` best rows whose note is
        in ``allowed`` with exact ones, from the float32 vectors ``vectors_of`` gives for their
        chunk hashes. Nothing to do for exact rows."""
        if self._vectors.exact:
            return
        candidates = self._candidates(allowed)
        if candidates.size == 0:
            return
        best = candidates[_best(scores[candidates], count)]
        keys = [self._keys[row] for row in best]
        exact = vectors_of({key[2] for key in keys if key is not None})
        for row, key in zip(best, keys, strict=True):
            vector = exact.get(key[2]) if key is not None else None
            if vector is not None:
                scores[row] = float(vector @ query)

    @property
    def nbytes(self) -> int:
        """Memory held by the vectors (allocated capacity, resident or not)."""
        return self._vectors.nbytes

    def top(
        self, scores: np.ndarray, limit: int, allowed: set[str] | None
    ) -> list[tuple[str, int, str, float]]:
        """``(note_id, chunk_index, chunk_hash, similarity)`` of the best ``limit`` rows whose
        note is in ``allowed`` (every note when ``None``), best first, by ``scores`` (from
        :meth:`scores`)."""
        candidates = self._candidates(allowed)
        if candidates.size == 0:
            return []
        scores = scores[candidates]
        best = _best(scores, limit)
        return [self._ranked(candidates[p], scores[p]) for p in best]

    def top_notes(
        self, scores: np.ndarray, limit: int, allowed: set[str] | None, min_similarity: float
    ) -> list[tuple[str, int, str, float]]:
        """The best row of each of the ``limit`` notes whose best row is most similar, best
        first, leaving out notes below ``min_similarity``.

        Rows are taken in score order, more of them each round, until ``limit`` distinct notes
        are found, the rows fall below ``min_similarity`` or none are left: a note with many
        similar chunks cannot crowd the others out of the result.
        """
        candidates = self._candidates(allowed)
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

    def _candidates(self, allowed: set[str] | None) -> np.ndarray:
        codes = self._note_codes[: self._size]
        if allowed is None:
            return np.flatnonzero(codes >= 0)
        # One flag per note code plus a last, False one that the -1 of free rows indexes.
        flags = np.zeros(len(self._code_of) + len(self._free_codes) + 1, dtype=bool)
        flags[[self._code_of[note] for note in allowed if note in self._code_of]] = True
        return np.flatnonzero(flags[codes])

    def _ranked(self, row: int, score: float) -> tuple[str, int, str, float]:
        key = self._keys[row]
        assert key is not None
        return (*key, min(1.0, max(0.0, float(score))))

    def _scores(self, query: np.ndarray) -> np.ndarray:
        return self._vectors.scores(query, self._size)

    def _free(self, row: int) -> None:
        key = self._keys[row]
        assert key is not None
        note_id = key[0]
        self._means.pop(note_id, None)
        del self._row_of[(note_id, key[1])]
        self._keys[row] = None
        self._note_codes[row] = -1
        self._free_rows.append(row)
        rows = self._rows_of_note[note_id]
        rows.discard(row)
        if not rows:
            del self._rows_of_note[note_id]
            self._free_codes.append(self._code_of.pop(note_id))

    def _new_row(self) -> int:
        if self._free_rows:
            return self._free_rows.pop()
        if self._size == len(self._vectors):
            capacity = max(64, 2 * len(self._vectors))
            codes = np.full(capacity, -1, dtype=np.int64)
            codes[: self._size] = self._note_codes[: self._size]
            self._vectors, self._note_codes = self._vectors.grown(capacity), codes
        self._keys.append(None)
        self._size += 1
        return self._size - 1

    def _code(self, note_id: str) -> int:
        code = self._code_of.get(note_id)
        if code is None:
            code = self._free_codes.pop() if self._free_codes else len(self._code_of)
            self._code_of[note_id] = code
        return code


# The score of a row a shortlisted search did not score: below every cosine (>= -1).
UNSCORED = -2.0


def _best(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` highest scores, highest first (ties in position order)."""
    k = min(k, scores.size)
    best = np.argpartition(-scores, k - 1)[:k] if k < scores.size else np.arange(k)
    return best[np.argsort(-scores[best], kind="stable")]

"""How the search matrix holds its vectors in memory: float32, or int8 codes with one scale per
row (a quarter of the memory; scores within about 0.002 of float32, which the vector store
corrects for the top candidates by re-scoring them from the float32 vectors in SQLite).

Int8 rows also keep each vector's sign bits (48 bytes at 384 dimensions), so a search over many
rows can first shortlist the rows whose signs differ least from the query's (Hamming distance,
a few machine words a row) and score only those: :meth:`Int8Rows.nearest_signs`."""

from __future__ import annotations

from typing import Protocol

from lithos.lazy_numpy import np

# Scored block by block: OpenBLAS runs a matrix-vector product on several threads from about
# 460,000 elements, and waking them for each sporadic search costs more than the product itself
# on a busy machine (bench/embedding_micro.py measured 10x the median at 10k).
SCORE_BLOCK_ELEMENTS = 400_000


class RowVectors(Protocol):
    """A fixed number of rows of ``dimension`` floats, as stored for scoring."""

    exact: bool  # whether scores are exact (float32) or approximate (int8)

    def __len__(self) -> int: ...

    @property
    def nbytes(self) -> int:
        """Memory the rows take (allocated capacity, resident or not)."""
        ...

    def set(self, row: int, vector: np.ndarray) -> None: ...

    def set_block(self, start: int, vectors: np.ndarray) -> None:
        """Rows ``start`` to ``start + len(vectors)`` set at once (no Python work per row)."""
        ...

    def get(self, rows: list[int]) -> np.ndarray:
        """The float32 vectors of ``rows`` (decoded: approximate for int8)."""
        ...

    def sections(self, size: int) -> dict[str, np.ndarray]:
        """The arrays holding the first ``size`` rows, by name (views, not copies): what a
        snapshot of the rows saves and :func:`rows_from` reads back."""
        ...

    def scores(self, query: np.ndarray, size: int) -> np.ndarray:
        """``query`` times each of the first ``size`` rows."""
        ...

    def grown(self, capacity: int) -> RowVectors:
        """A copy with ``capacity`` rows (the new ones zero)."""
        ...

    def nearest_signs(
        self, query: np.ndarray, size: int, count: int, rows: np.ndarray | None
    ) -> np.ndarray | None:
        """At least ``count`` of the first ``size`` rows (of ``rows`` only, when given) whose
        sign bits differ least from ``query``'s, ties at the cut included, in row order; every
        one of them when there are no more than ``count``. ``None`` when the rows keep no sign
        bits (then score them all)."""
        ...

    def scores_of(self, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``query`` times each of ``rows``, in that order."""
        ...


class Float32Rows:
    exact = True

    def __init__(self, capacity: int, dimension: int) -> None:
        # np.zeros maps pages lazily: spare rows cost no resident memory until written.
        self.array = np.zeros((capacity, dimension), dtype=np.float32)

    def __len__(self) -> int:
        return len(self.array)

    @property
    def nbytes(self) -> int:
        return int(self.array.nbytes)

    def set(self, row: int, vector: np.ndarray) -> None:
        self.array[row] = vector

    def set_block(self, start: int, vectors: np.ndarray) -> None:
        self.array[start : start + len(vectors)] = vectors

    def get(self, rows: list[int]) -> np.ndarray:
        return self.array[rows]

    def sections(self, size: int) -> dict[str, np.ndarray]:
        return {"array": self.array[:size]}

    def scores(self, query: np.ndarray, size: int) -> np.ndarray:
        out = np.empty(size, dtype=np.float32)
        step = max(1, SCORE_BLOCK_ELEMENTS // self.array.shape[1])
        for start in range(0, size, step):
            end = min(start + step, size)
            np.matmul(self.array[start:end], query, out=out[start:end])
        return out

    def grown(self, capacity: int) -> Float32Rows:
        bigger = Float32Rows(capacity, self.array.shape[1])
        bigger.array[: len(self)] = self.array
        return bigger

    def nearest_signs(
        self, query: np.ndarray, size: int, count: int, rows: np.ndarray | None
    ) -> np.ndarray | None:
        return None

    def scores_of(self, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return _blocked_scores(self.array, rows, query)


class Int8Rows:
    """Symmetric per-row quantisation: ``vector ~= codes * scale`` with
    ``scale = max(|vector|) / 127``; 388 bytes a row at 384 dimensions instead of 1,536."""

    exact = False

    def __init__(self, capacity: int, dimension: int) -> None:
        self.codes = np.zeros((capacity, dimension), dtype=np.int8)
        self.scales = np.zeros(capacity, dtype=np.float32)
        # Word-major: word w of every row is one contiguous array, so the Hamming distances are
        # a few passes over contiguous memory (2.5x faster than row-major at 347,000 rows).
        self.signs = np.zeros((_words(dimension), capacity), dtype=np.uint64)

    def __len__(self) -> int:
        return len(self.codes)

    @property
    def nbytes(self) -> int:
        return int(self.codes.nbytes + self.scales.nbytes + self.signs.nbytes)

    def set(self, row: int, vector: np.ndarray) -> None:
        self.set_block(row, vector.reshape(1, -1))

    def set_block(self, start: int, vectors: np.ndarray) -> None:
        end = start + len(vectors)
        peaks = np.abs(vectors).max(axis=1) if vectors.size else np.zeros(len(vectors))
        scales = np.where(peaks > 0, peaks / 127, 1.0).astype(np.float32)
        self.codes[start:end] = np.rint(vectors / scales[:, None])
        self.scales[start:end] = scales
        self.signs[:, start:end] = sign_bits(vectors).T

    def get(self, rows: list[int]) -> np.ndarray:
        decoded: np.ndarray = self.codes[rows].astype(np.float32) * self.scales[rows, None]
        return decoded

    def sections(self, size: int) -> dict[str, np.ndarray]:
        return {
            "codes": self.codes[:size],
            "scales": self.scales[:size],
            **{f"signs{word}": self.signs[word, :size] for word in range(len(self.signs))},
        }

    def scores(self, query: np.ndarray, size: int) -> np.ndarray:
        out = np.empty(size, dtype=np.float32)
        step = max(1, SCORE_BLOCK_ELEMENTS // self.codes.shape[1])
        block = np.empty((min(step, size), self.codes.shape[1]), dtype=np.float32)
        for start in range(0, size, step):
            end = min(start + step, size)
            decoded = block[: end - start]
            np.copyto(decoded, self.codes[start:end], casting="unsafe")
            np.matmul(decoded, query, out=out[start:end])
        out *= self.scales[:size]
        return out

    def grown(self, capacity: int) -> Int8Rows:
        bigger = Int8Rows(capacity, self.codes.shape[1])
        bigger.codes[: len(self)] = self.codes
        bigger.scales[: len(self)] = self.scales
        bigger.signs[:, : len(self)] = self.signs
        return bigger

    def nearest_signs(
        self, query: np.ndarray, size: int, count: int, rows: np.ndarray | None
    ) -> np.ndarray | None:
        total = size if rows is None else len(rows)
        if total <= count:
            return np.arange(size) if rows is None else rows
        distances = np.empty(total, dtype=np.uint16)
        bits = sign_bits(query)
        for start in range(0, total, SIGN_BLOCK_ROWS):
            end = min(start + SIGN_BLOCK_ROWS, total)
            block = distances[start:end]
            for word, signs in enumerate(self.signs):
                held = signs[start:end] if rows is None else signs[rows[start:end]]
                differing = np.bitwise_count(held ^ bits[word])  # uint8, per row
                if word == 0:
                    np.copyto(block, differing)
                else:
                    block += differing
        # The smallest distance that at least `count` rows reach: a histogram, not a sort.
        reached = np.cumsum(np.bincount(distances))
        cut = int(np.searchsorted(reached, count))
        picked = np.flatnonzero(distances <= cut)
        return picked if rows is None else rows[picked]

    def scores_of(self, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
        out = _blocked_scores(self.codes, rows, query)
        out *= self.scales[rows]
        return out


# Rows whose sign bits are compared at a time (bounds the temporary arrays to a few MB).
SIGN_BLOCK_ROWS = 65_536


def _words(dimension: int) -> int:
    return (dimension + 63) // 64


def sign_bits(vectors: np.ndarray) -> np.ndarray:
    """The signs of ``vectors`` (1 for a positive component) packed into 64-bit words, per
    vector (the last axis)."""
    bits = np.packbits(vectors > 0, axis=-1)
    packed = np.zeros((*vectors.shape[:-1], 8 * _words(vectors.shape[-1])), dtype=np.uint8)
    packed[..., : bits.shape[-1]] = bits
    return packed.view(np.uint64)


def _blocked_scores(matrix: np.ndarray, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``query`` times each of ``matrix[rows]`` as float32, in blocks small enough that
    OpenBLAS stays on the calling thread (see SCORE_BLOCK_ELEMENTS)."""
    out = np.empty(len(rows), dtype=np.float32)
    step = max(1, SCORE_BLOCK_ELEMENTS // matrix.shape[1])
    for start in range(0, len(rows), step):
        end = min(start + step, len(rows))
        block = matrix[rows[start:end]].astype(np.float32, copy=False)
        np.matmul(block, query, out=out[start:end])
    return out


def row_vectors(capacity: int, dimension: int, compact: bool) -> Float32Rows | Int8Rows:
    return Int8Rows(capacity, dimension) if compact else Float32Rows(capacity, dimension)

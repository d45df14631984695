"""How the search matrix holds its vectors in memory: float32, or int8 codes with one scale per
row (a quarter of the memory; scores within about 0.002 of float32, which the vector store
corrects for the top candidates by re-scoring them from the float32 vectors in SQLite)."""

from __future__ import annotations

from typing import Protocol

import numpy as np

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

    def get(self, rows: list[int]) -> np.ndarray:
        """The float32 vectors of ``rows`` (decoded: approximate for int8)."""
        ...

    def scores(self, query: np.ndarray, size: int) -> np.ndarray:
        """``query`` times each of the first ``size`` rows."""
        ...

    def grown(self, capacity: int) -> RowVectors:
        """A copy with ``capacity`` rows (the new ones zero)."""
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

    def get(self, rows: list[int]) -> np.ndarray:
        return self.array[rows]

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


class Int8Rows:
    """Symmetric per-row quantisation: ``vector ~= codes * scale`` with
    ``scale = max(|vector|) / 127``; 388 bytes a row at 384 dimensions instead of 1,536."""

    exact = False

    def __init__(self, capacity: int, dimension: int) -> None:
        self.codes = np.zeros((capacity, dimension), dtype=np.int8)
        self.scales = np.zeros(capacity, dtype=np.float32)

    def __len__(self) -> int:
        return len(self.codes)

    @property
    def nbytes(self) -> int:
        return int(self.codes.nbytes + self.scales.nbytes)

    def set(self, row: int, vector: np.ndarray) -> None:
        peak = float(np.abs(vector).max()) if vector.size else 0.0
        scale = peak / 127 if peak > 0 else 1.0
        self.codes[row] = np.rint(vector / scale)
        self.scales[row] = scale

    def get(self, rows: list[int]) -> np.ndarray:
        decoded: np.ndarray = self.codes[rows].astype(np.float32) * self.scales[rows, None]
        return decoded

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
        return bigger


def row_vectors(capacity: int, dimension: int, compact: bool) -> Float32Rows | Int8Rows:
    return Int8Rows(capacity, dimension) if compact else Float32Rows(capacity, dimension)

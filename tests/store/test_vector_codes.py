"""Compact vectors: int8 rows with one scale each, and the float32 re-score that makes the
results of a compact vector store the exact ones."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from lithos.domain.chunks import chunk_hash
from lithos.store.vector_codes import Float32Rows, Int8Rows
from lithos.store.vectors import VectorStore
from tests.fakes import HashingEmbedder


def unit_rows(count: int, dimension: int = 384, seed: int = 3) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((count, dimension)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_int8_rows_score_within_a_few_thousandths_of_float32() -> None:
    vectors = unit_rows(500)
    exact, compact = Float32Rows(500, 384), Int8Rows(500, 384)
    for row, vector in enumerate(vectors):
        exact.set(row, vector)
        compact.set(row, vector)
    query = vectors[7]
    assert np.abs(compact.scores(query, 500) - exact.scores(query, 500)).max() < 0.005
    assert np.abs(compact.get([1, 2]) - vectors[[1, 2]]).max() < 0.01
    assert compact.nbytes * 3.9 < exact.nbytes  # 384 + 4 bytes a row against 1,536


def test_growing_int8_rows_keeps_what_they_hold() -> None:
    rows = Int8Rows(2, 384)
    vectors = unit_rows(2)
    rows.set(0, vectors[0])
    bigger = rows.grown(8)
    assert len(bigger) == 8
    assert np.abs(bigger.get([0]) - vectors[0]).max() < 0.01


def filled(path: Path, compact: bool, count: int = 300) -> VectorStore:
    """``count`` notes of two chunks each with random unit vectors (no ties)."""
    store = VectorStore(path, "random", 384, compact=compact)
    vectors = unit_rows(2 * count, seed=9)
    for i in range(count):
        store.set_note(f"n{i}", "h", [f"chunk {2 * i}", f"chunk {2 * i + 1}"])
    store.store_embeddings([(chunk_hash(f"chunk {i}"), v) for i, v in enumerate(vectors)])
    return store


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_compact_store_returns_the_exact_ranking_and_similarities(
    tmp_path: Path, seed: int
) -> None:
    exact = filled(tmp_path / "f32.db", False)
    compact = filled(tmp_path / "i8.db", True)
    try:
        # A query near a stored vector, so the top scores are close together.
        query = unit_rows(600, seed=9)[seed * 50] + 0.3 * unit_rows(1, seed=seed)[0]
        expected = [(c.note_id, c.chunk_index, c.similarity) for c in exact.rank(query, 10)]
        found = [(c.note_id, c.chunk_index, c.similarity) for c in compact.rank(query, 10)]
        assert [row[:2] for row in found] == [row[:2] for row in expected]
        assert [row[2] for row in found] == pytest.approx([row[2] for row in expected], abs=1e-6)
        best = exact.rank_notes(query, 10)
        found_notes = compact.rank_notes(query, 10)
        assert [c.note_id for c in found_notes] == [c.note_id for c in best]
        assert [c.similarity for c in found_notes] == pytest.approx(
            [c.similarity for c in best], abs=1e-6
        )
        assert compact.matrix_bytes() * 3.9 < exact.matrix_bytes()
    finally:
        exact.close()
        compact.close()


def test_compact_searches_and_writes_from_many_threads_never_deadlock(tmp_path: Path) -> None:
    store = filled(tmp_path / "i8.db", True, 50)
    embedder = HashingEmbedder(model_id="random")
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for i in range(60):
                text = f"fresh kettle note {i}"
                store.set_note(f"fresh{i}", "h", [text])
                store.store_embeddings([(chunk_hash(text), embedder.vector(text))])
        except BaseException as error:
            errors.append(error)

    def reader() -> None:
        try:
            for _ in range(60):
                assert store.search_notes(embedder.vector("kettle"), 5)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=f) for f in (writer, reader, reader)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    try:
        assert not any(thread.is_alive() for thread in threads)
        assert errors == []
        assert (
            store.search_notes(embedder.vector("fresh kettle note 59"), 1)[0].note_id == "fresh59"
        )
    finally:
        store.close()

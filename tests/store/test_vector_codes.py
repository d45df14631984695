"""Compact vectors: int8 rows with one scale each, and the float32 re-score that makes the
results of a compact vector store the exact ones."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from lithos.domain.chunks import chunk_hash
from lithos.store.vector_codes import Float32Rows, Int8Rows
from lithos.store.vector_matrix import ChunkMatrix
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
    assert compact.nbytes * 3.5 < exact.nbytes  # 384 + 4 + 48 (signs) bytes a row: 1,536


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
        assert compact.matrix_bytes() * 3.5 < exact.matrix_bytes()
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


def test_sign_shortlist_keeps_the_rows_nearest_the_query_and_every_tie() -> None:
    vectors = unit_rows(2000)
    rows = Int8Rows(2000, 384)
    for row, vector in enumerate(vectors):
        rows.set(row, vector)
    query = vectors[123] + 0.01 * unit_rows(1, seed=5)[0]
    picked = rows.nearest_signs(query, 2000, 50, None)
    assert picked is not None and 123 in picked and len(picked) >= 50
    assert list(picked) == sorted(picked)
    distance = ((vectors > 0) != (query > 0)).sum(axis=1)
    left_out = np.setdiff1d(np.arange(2000), picked)
    assert distance[picked].max() < distance[left_out].min()  # ties at the cut all kept
    # Restricted to some rows: only those, the nearest of them.
    among = np.arange(0, 2000, 2)
    kept = rows.nearest_signs(query, 2000, 50, among)
    assert kept is not None and set(kept) <= set(among) and len(kept) >= 50
    assert distance[kept].max() < distance[np.setdiff1d(among, kept)].min()
    # No more rows than asked for: all of them.
    assert list(rows.nearest_signs(query, 30, 50, None)) == list(range(30))
    assert Float32Rows(4, 384).nearest_signs(query, 4, 2, None) is None


def test_shortlisted_scores_are_the_int8_scores_of_the_rows_kept() -> None:
    vectors = unit_rows(300)
    rows = Int8Rows(300, 384)
    for row, vector in enumerate(vectors):
        rows.set(row, vector)
    picked = np.array([3, 40, 299])
    assert rows.scores_of(vectors[40], picked) == pytest.approx(
        rows.scores(vectors[40], 300)[picked], abs=1e-6
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_shortlisted_store_finds_the_exact_best_notes(tmp_path: Path, seed: int) -> None:
    exact = filled(tmp_path / "f32.db", False, 1500)
    # Minimum 10 rows: the share of the matrix (3,000 // 64 = 46) or four times what the
    # ranking re-scores (200) decides, a fifteenth of the rows.
    short = VectorStore(tmp_path / "f32.db", "random", 384, compact=True, shortlist=10)
    try:
        query = unit_rows(3000, seed=9)[seed * 700] + 0.3 * unit_rows(1, seed=seed)[0]
        best = exact.rank_notes(query, 10)
        found = short.rank_notes(query, 10)
        assert found[0].note_id == best[0].note_id
        assert found[0].similarity == pytest.approx(best[0].similarity, abs=1e-6)
        assert len({c.note_id for c in found} & {c.note_id for c in best}) >= 8
        # A filter that leaves out the best note: the best allowed one is still found.
        allowed = {f"n{i}" for i in range(1500)} - {best[0].note_id}
        filtered = short.rank_notes(query, 3, allowed.__contains__)
        assert filtered[0].note_id == exact.rank_notes(query, 3, allowed.__contains__)[0].note_id
        assert best[0].note_id not in {c.note_id for c in filtered}
    finally:
        exact.close()
        short.close()


def test_a_shortlisted_search_never_returns_the_rows_of_a_removed_note(tmp_path: Path) -> None:
    """Removed rows keep their old sign bits until reused: the shortlist must skip them."""
    store = filled(tmp_path / "i8.db", True, 1500)
    short = VectorStore(tmp_path / "i8.db", "random", 384, compact=True, shortlist=10)
    try:
        target = unit_rows(3000, seed=9)[42]  # chunk 42 is note n21's
        assert short.rank_notes(target, 1)[0].note_id == "n21"
        short.remove_note("n21")
        found = short.rank_notes(target, 10)
        assert len(found) == 10 and "n21" not in {c.note_id for c in found}
        assert all(c.note_id != "n21" for c in short.rank(target, 50))
    finally:
        store.close()
        short.close()


def test_a_ranking_deeper_than_its_exact_part_keeps_the_tail_approximate(tmp_path: Path) -> None:
    exact = filled(tmp_path / "f32.db", False)
    compact = filled(tmp_path / "i8.db", True)
    try:
        query = unit_rows(600, seed=9)[100] + 0.3 * unit_rows(1, seed=4)[0]
        truth = {c.note_id: c.similarity for c in exact.rank_notes(query, 300)}
        full = compact.rank_notes(query, 100)
        shallow = compact.rank_notes(query, 100, exact=5)
        assert [c.note_id for c in shallow[:5]] == [c.note_id for c in full[:5]]
        assert [c.similarity for c in shallow[:5]] == pytest.approx(
            [truth[c.note_id] for c in shallow[:5]], abs=1e-6
        )
        # Past the rows re-scored for those five (plus the margin): int8 similarities.
        tail = [(c.similarity, truth[c.note_id]) for c in shallow[60:]]
        assert all(abs(found - true) < 0.005 for found, true in tail)
        assert any(abs(found - true) > 1e-6 for found, true in tail)
        assert all(abs(c.similarity - truth[c.note_id]) < 1e-6 for c in full)
    finally:
        exact.close()
        compact.close()


def test_rows_of_equal_score_come_in_row_order() -> None:
    matrix = ChunkMatrix(384, compact=True)
    for row, vector in enumerate(unit_rows(400, seed=6)):
        matrix.add(f"n{row}", 0, f"{row:064x}", vector)
    scores = np.linspace(0.0, 0.5, 400, dtype=np.float32)
    scores[[350, 20, 200, 7]] = 0.9  # four equal best scores
    assert [row[0] for row in matrix.top(scores, 5, matrix.candidates(None))] == [
        "n7",
        "n20",
        "n200",
        "n350",
        "n399",
    ]
    notes = matrix.top_notes(scores, 3, matrix.candidates({"n350", "n200", "n7", "n9"}), 0.0)
    assert [row[0] for row in notes] == ["n7", "n200", "n350"]

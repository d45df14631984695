"""Embedding spaces in the vector store: every vector records its space, a model change keeps
the old space searchable until every chunk is embedded again, and no text is embedded twice.

Two real embedders make two spaces here: feature-hashing embedders with different model ids and
dimensions (tests/fakes.py), which really embed. The shipped model takes part in
tests/services/test_space_migration.py.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from lithos.domain.chunks import chunk_hash
from lithos.domain.embedding import (
    MIN_CALIBRATION_ROWS,
    Calibration,
    EmbeddingSpace,
    QueryVectors,
    ScoreStats,
    calibration,
    space_of,
)
from lithos.store.sqlite import Database
from lithos.store.vectors import MIGRATIONS, VectorCounts, VectorStore
from tests.fakes import HashingEmbedder

OLD = HashingEmbedder(dimension=256, model_id="old-model", revision="r1")
NEW = HashingEmbedder(dimension=384, model_id="new-model", revision="r2")
EMBEDDERS = {space_of(OLD): OLD, space_of(NEW): NEW}


def open_store(path: Path, embedder: HashingEmbedder) -> VectorStore:
    space = space_of(embedder)
    return VectorStore(
        path, space.model_id, space.dimension, revision=space.revision, embedders=EMBEDDERS.get
    )


def embed_all(store: VectorStore, embedder: HashingEmbedder, migrate: bool = True) -> int:
    done = 0
    while batch := store.pending(8, migrate=migrate):
        found = embedder.embed([text for _, text in batch])
        store.store_embeddings([(h, v) for (h, _), v in zip(batch, found, strict=True)])
        done += len(batch)
    return done


def stored_spaces(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT space_id, COUNT(*) FROM embeddings GROUP BY space_id")
        return dict(rows.fetchall())


def notes(count: int) -> dict[str, str]:
    topics = ["tea brewing", "sqlite checkpoints", "rust lifetimes", "garden compost", "jazz"]
    return {f"n{i}": f"{topics[i % 5]} note {i} word{i} extra{i * 7}" for i in range(count)}


def in_old_space(path: Path, texts: dict[str, str]) -> None:
    """A store of one-chunk notes, all embedded in ``OLD``'s space."""
    store = open_store(path, OLD)
    for note_id, text in texts.items():
        store.set_note(note_id, "h", [text])
    embed_all(store, OLD)
    store.close()


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "vectors.db"


def test_the_space_id_names_model_revision_dimension_and_normalisation() -> None:
    assert EmbeddingSpace("m", "abc", 384).id == "m@abc/384/l2"
    assert EmbeddingSpace("m", "", 8).id == "m/8/l2"


def test_every_vector_records_the_space_it_was_embedded_in(path: Path) -> None:
    store = open_store(path, OLD)
    for note_id, text in notes(4).items():
        store.set_note(note_id, "h", [text])
    embed_all(store, OLD)
    store.close()
    assert stored_spaces(path) == {"old-model@r1/256/l2": 4}


def test_vectors_of_a_store_made_before_spaces_are_adopted_into_the_models_space(
    path: Path,
) -> None:
    legacy = Database(path, MIGRATIONS[:1])
    vector = NEW.vector("kept from before").tobytes()
    legacy.call(
        lambda conn: (
            conn.execute("INSERT INTO notes VALUES ('n', 'h')"),
            conn.execute(
                "INSERT INTO chunks VALUES ('n', 0, ?, 'kept from before')",
                (chunk_hash("kept from before"),),
            ),
            conn.execute(
                "INSERT INTO embeddings(model_id, chunk_hash, vector) VALUES (?, ?, ?)",
                ("new-model", chunk_hash("kept from before"), vector),
            ),
        )
    )
    legacy.close()
    store = open_store(path, NEW)
    try:
        assert store.pending(10) == []
        assert [h.note_id for h in store.search(NEW.vector("kept from before"), 3)] == ["n"]
    finally:
        store.close()
    assert stored_spaces(path) == {"new-model@r2/384/l2": 1}


def test_after_a_model_change_both_spaces_are_searched_until_every_chunk_is_embedded_again(
    path: Path,
) -> None:
    texts = notes(120)
    in_old_space(path, texts)

    store = open_store(path, NEW)
    try:
        assert [s.id for s in store.searched_spaces()] == [NEW_ID, OLD_ID]
        assert store.counts() == VectorCounts(120, 120, 0, 0, 120)
        # Half migrated: each note is found, whichever space holds it.
        half = store.pending(60)
        found = NEW.embed([text for _, text in half])
        store.store_embeddings([(h, v) for (h, _), v in zip(half, found, strict=True)])
        migrated = {note for note, text in texts.items() if (chunk_hash(text), text) in half}
        assert len(migrated) == 60
        for note_id in ("n3", "n4", "n77", "n118"):
            query = store.embed_query(texts[note_id])
            assert set(query.vectors) == {NEW_ID, OLD_ID}
            assert store.search_notes(query, 1)[0].note_id == note_id
        assert store.counts().migrating_chunks == 60
        assert [(s.space_id, s.state) for s in store.spaces()] == [
            (OLD_ID, "retiring"),
            (NEW_ID, "active"),
        ]
        embed_all(store, NEW)
        assert [s.id for s in store.searched_spaces()] == [NEW_ID]
        assert [(s.space_id, s.state) for s in store.spaces()] == [
            (OLD_ID, "retired"),
            (NEW_ID, "active"),
        ]
        assert set(store.embed_query("tea").vectors) == {NEW_ID}
        assert store.counts() == VectorCounts(120, 120, 120, 0, 0)
    finally:
        store.close()
    assert stored_spaces(path) == {OLD_ID: 120, NEW_ID: 120}  # the old vectors stay cached


def test_new_text_is_embedded_before_old_chunks_are_migrated(path: Path) -> None:
    store = open_store(path, OLD)
    store.set_note("a", "h", ["an old note about tea"])
    embed_all(store, OLD)
    store.close()
    store = open_store(path, NEW)
    try:
        assert store.set_note("b", "h", ["a new note about coffee"]) == 1
        assert store.pending(1) == [
            (chunk_hash("a new note about coffee"), "a new note about coffee")
        ]
        assert store.pending(5, migrate=False) == [
            (chunk_hash("a new note about coffee"), "a new note about coffee")
        ]
        assert store.pending_count() == 1  # not found by search yet
        assert store.pending_count(migrate=True) == 2
        assert embed_all(store, NEW, migrate=False) == 1
        assert [s.id for s in store.searched_spaces()] == [NEW_ID, OLD_ID]  # still migrating
    finally:
        store.close()


def test_switching_back_to_a_retired_model_embeds_nothing_again(path: Path) -> None:
    texts = notes(10)
    store = open_store(path, OLD)
    for note_id, text in texts.items():
        store.set_note(note_id, "h", [text])
    assert embed_all(store, OLD) == 10
    store.close()
    store = open_store(path, NEW)
    assert embed_all(store, NEW) == 10
    store.close()
    store = open_store(path, OLD)
    try:
        assert store.pending(100) == []
        assert store.searched_spaces() == [space_of(OLD)]  # NEW's vectors cover nothing extra
        assert store.search_notes(OLD.vector(texts["n2"]), 1)[0].note_id == "n2"
    finally:
        store.close()


def test_a_space_whose_model_is_gone_is_not_queried_but_still_migrated(path: Path) -> None:
    store = open_store(path, OLD)
    store.set_note("a", "h", ["orphaned vectors"])
    embed_all(store, OLD)
    store.close()
    space = space_of(NEW)
    store = VectorStore(
        path, space.model_id, space.dimension, revision=space.revision, embedders={space: NEW}.get
    )
    try:
        assert set(store.embed_query("orphaned").vectors) == {NEW_ID}
        assert [(s.space_id, s.searched) for s in store.spaces()] == [
            (OLD_ID, False),
            (NEW_ID, True),
        ]
        assert store.search(store.embed_query("orphaned vectors"), 3) == []
        embed_all(store, NEW)
        assert store.search(store.embed_query("orphaned vectors"), 3)[0].note_id == "a"
    finally:
        store.close()


def test_note_vectors_come_from_one_space_so_they_can_be_compared(path: Path) -> None:
    texts = notes(6)
    in_old_space(path, texts)
    store = open_store(path, NEW)
    try:
        batch = store.pending(2)
        store.store_embeddings([(h, NEW.vector(text)) for h, text in batch])
        vectors = store.note_vectors(texts)
        assert len(vectors) == 4  # the four notes still in the old space, not a mix
        assert {v.shape for v in vectors.values()} == {(256,)}
    finally:
        store.close()


def test_calibration_matches_the_mean_and_spread_of_the_active_space() -> None:
    rng = np.random.default_rng(7)
    active = rng.normal(0.3, 0.1, 500).astype(np.float32)
    other = rng.normal(0.6, 0.05, 500).astype(np.float32)
    mapping = calibration(ScoreStats.of(active), ScoreStats.of(other))
    mapped = mapping.apply(other)
    assert mapped.mean() == pytest.approx(active.mean(), abs=1e-4)
    assert mapped.std() == pytest.approx(active.std(), abs=1e-4)
    # The order within a space never changes.
    assert (np.argsort(mapped) == np.argsort(other)).all()


def test_calibration_is_the_identity_when_a_space_holds_too_few_vectors() -> None:
    few = ScoreStats(MIN_CALIBRATION_ROWS - 1, 0.5, 0.1)
    many = ScoreStats(1000, 0.2, 0.05)
    assert calibration(many, few) == Calibration()
    assert calibration(few, many) == Calibration()


def test_a_query_vector_alone_searches_only_the_active_space(path: Path) -> None:
    store = open_store(path, OLD)
    store.set_note("a", "h", ["only in the old space"])
    embed_all(store, OLD)
    store.close()
    store = open_store(path, NEW)
    try:
        assert store.search(NEW.vector("only in the old space"), 3) == []
        both = QueryVectors(
            NEW_ID, {NEW_ID: NEW.vector("only in"), OLD_ID: OLD.vector("only in the old space")}
        )
        assert [h.note_id for h in store.search(both, 3)] == ["a"]
    finally:
        store.close()


OLD_ID = space_of(OLD).id
NEW_ID = space_of(NEW).id

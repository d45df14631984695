from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from lithos.domain.chunks import chunk_hash
from lithos.domain.embedding import QueryVectors
from lithos.store.vectors import NoteChunks, VectorCounts, VectorStore
from tests.fakes import HashingEmbedder


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder()


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "vectors.db"


@pytest.fixture(params=[False, True], ids=["float32", "int8"])
def store(
    path: Path, embedder: HashingEmbedder, request: pytest.FixtureRequest
) -> Iterator[VectorStore]:
    """Every behaviour holds with float32 rows and with compact int8 rows (re-scored)."""
    vectors = VectorStore(path, embedder.model_id, embedder.dimension, compact=request.param)
    yield vectors
    vectors.close()


def embed_pending(store: VectorStore, embedder: HashingEmbedder) -> int:
    """What the embedding worker does, synchronously; returns how many texts it embedded."""
    done = 0
    while batch := store.pending(8):
        vectors = embedder.embed([text for _, text in batch])
        store.store_embeddings([(h, v) for (h, _), v in zip(batch, vectors, strict=True)])
        done += len(batch)
    return done


def search(store: VectorStore, embedder: HashingEmbedder, query: str, limit: int = 10):
    return store.search(embedder.vector(query), limit)


def test_set_note_reports_how_many_chunks_need_embedding(store: VectorStore) -> None:
    assert store.set_note("n1", "h1", ["alpha beta", "gamma delta", "alpha beta"]) == 3
    assert sorted(text for _, text in store.pending(10)) == ["alpha beta", "gamma delta"]
    assert store.counts() == VectorCounts(notes=1, chunks=3, embedded_chunks=0, pending_chunks=3)


def test_set_notes_stores_a_batch_with_a_count_per_note_and_the_last_version_of_each(
    store: VectorStore, embedder: HashingEmbedder
) -> None:
    store.set_note("old", "h0", ["known text"])
    embed_pending(store, embedder)
    search(store, embedder, "known")  # the matrices are loaded: the batch must update them
    counts = store.set_notes(
        [
            NoteChunks("a", "ha1", ["known text", "fresh apples"]),
            NoteChunks("b", "hb", ["fresh bananas"]),
            NoteChunks("a", "ha2", ["known text"]),
        ]
    )
    assert counts == [1, 1, 0]
    assert store.note_hashes() == {"old": "h0", "a": "ha2", "b": "hb"}
    assert store.chunks("a") == ["known text"]
    assert [text for _, text in store.pending(10)] == ["fresh bananas"]
    assert {hit.note_id for hit in search(store, embedder, "known text")} == {"old", "a"}


def test_pending_respects_the_limit_and_first_needed_order(store: VectorStore) -> None:
    store.set_note("n1", "h1", ["one", "two", "three"])
    assert store.pending(2) == [(chunk_hash("one"), "one"), (chunk_hash("two"), "two")]


def test_embedded_chunks_become_searchable(store: VectorStore, embedder: HashingEmbedder) -> None:
    store.set_note("tea", "h1", ["brewing green tea at low temperature"])
    store.set_note("db", "h2", ["sqlite write ahead log checkpoints"])
    assert search(store, embedder, "green tea") == []  # nothing embedded yet
    embed_pending(store, embedder)
    hits = search(store, embedder, "green tea")
    assert [hit.note_id for hit in hits] == ["tea", "db"]
    assert hits[0].text == "brewing green tea at low temperature"
    assert 0 < hits[0].similarity <= 1
    assert hits[1].similarity == 0.0  # no shared word; thresholds are the caller's business
    assert store.counts().pending_chunks == 0


def test_similarity_is_clipped_to_zero_for_opposite_vectors(store: VectorStore) -> None:
    store.set_note("n", "h", ["text"])
    vector = np.zeros(384, dtype=np.float32)
    vector[0] = 1.0
    store.store_embeddings([(chunk_hash("text"), vector)])
    [hit] = store.search(-vector, 5)
    assert hit.similarity == 0.0
    [hit] = store.search(vector, 5)
    assert hit.similarity == pytest.approx(1.0)


def test_unchanged_chunk_is_not_embedded_again_after_an_update(
    store: VectorStore, embedder: HashingEmbedder
) -> None:
    store.set_note("n", "h1", ["first paragraph", "second paragraph"])
    embed_pending(store, embedder)
    assert store.set_note("n", "h2", ["first paragraph", "second paragraph edited"]) == 1
    embed_pending(store, embedder)
    assert embedder.embedded_texts.count("first paragraph") == 1
    assert embedder.embedded_texts[-1] == "second paragraph edited"


def test_chunk_is_not_embedded_again_after_delete_and_recreate(
    store: VectorStore, embedder: HashingEmbedder
) -> None:
    store.set_note("n", "h1", ["kept across deletion"])
    embed_pending(store, embedder)
    store.remove_note("n")
    assert store.set_note("other", "h9", ["kept across deletion"]) == 0
    assert embed_pending(store, embedder) == 0
    assert [hit.note_id for hit in search(store, embedder, "deletion")] == ["other"]


def test_chunk_is_not_embedded_again_after_reopening(
    path: Path, store: VectorStore, embedder: HashingEmbedder
) -> None:
    store.set_note("n", "h1", ["survives a restart"])
    embed_pending(store, embedder)
    store.close()
    reopened = VectorStore(path, embedder.model_id, embedder.dimension)
    try:
        assert reopened.set_note("n", "h2", ["survives a restart", "new text"]) == 1
        assert reopened.pending(10) == [(chunk_hash("new text"), "new text")]
    finally:
        reopened.close()


def test_notes_chunks_and_vectors_persist_across_reopen(
    path: Path, store: VectorStore, embedder: HashingEmbedder
) -> None:
    store.set_note("a", "ha", ["persistent apples"])
    store.set_note("b", "hb", ["persistent bananas", "not embedded yet"])
    embed_pending(store, embedder)
    store.set_note("c", "hc", ["still pending cherries"])
    store.close()
    reopened = VectorStore(path, embedder.model_id, embedder.dimension)
    try:
        assert reopened.note_hashes() == {"a": "ha", "b": "hb", "c": "hc"}
        assert reopened.pending(10) == [
            (chunk_hash("still pending cherries"), "still pending cherries")
        ]
        hits = search(reopened, embedder, "persistent apples")
        assert [hit.note_id for hit in hits][:2] == ["a", "b"]
        embed_pending(reopened, embedder)  # grows the loaded matrix into its spare row
        assert search(reopened, embedder, "cherries")[0].note_id == "c"
    finally:
        reopened.close()


def test_the_queue_of_chunks_to_embed_is_filled_by_its_first_reader_and_misses_nothing(
    path: Path, store: VectorStore, embedder: HashingEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Filling the queue reads every chunk (a second at 100,000 notes): opening does not do
    it, the first call that reads the queue does, and writes before it are not lost."""
    store.set_note("a", "ha", ["embedded already"])
    embed_pending(store, embedder)
    store.set_note("b", "hb", ["waiting one", "waiting two"])
    store.set_note("c", "hc", ["removed before the fill"])
    store.close()
    fills: list[int] = []
    real = VectorStore._queue

    def counted_fill(self: VectorStore, conn: sqlite3.Connection) -> None:
        if not self._queue_filled:
            fills.append(1)
        real(self, conn)

    monkeypatch.setattr(VectorStore, "_queue", counted_fill)
    reopened = VectorStore(path, embedder.model_id, embedder.dimension)
    try:
        reopened.set_note("d", "hd", ["written before the fill"])
        reopened.remove_note("c")
        hits = search(reopened, embedder, "embedded already")
        assert [hit.note_id for hit in hits][:1] == ["a"]
        assert fills == []  # opening, writes and searches leave the queue unfilled
        assert reopened.pending_count() == 3
        assert fills == [1]
        assert {text for _, text in reopened.pending(10)} == {
            "waiting one",
            "waiting two",
            "written before the fill",
        }
        assert reopened.counts().pending_chunks == 3
        assert fills == [1]  # once
    finally:
        reopened.close()


def test_pending_work_is_per_model(
    path: Path, store: VectorStore, embedder: HashingEmbedder
) -> None:
    store.set_note("n", "h", ["model specific"])
    embed_pending(store, embedder)
    store.close()
    other = VectorStore(path, "another-model", embedder.dimension)
    try:
        assert other.pending(10) == [(chunk_hash("model specific"), "model specific")]
        assert other.search(embedder.vector("model specific"), 5) == []
    finally:
        other.close()


def test_search_after_remove_excludes_the_note(
    store: VectorStore, embedder: HashingEmbedder
) -> None:
    store.set_note("a", "ha", ["shared words here"])
    store.set_note("b", "hb", ["shared words there"])
    embed_pending(store, embedder)
    assert {hit.note_id for hit in search(store, embedder, "shared words")} == {"a", "b"}
    store.remove_note("a")
    assert [hit.note_id for hit in search(store, embedder, "shared words")] == ["b"]
    assert store.note_hashes() == {"b": "hb"}


def test_update_replaces_the_chunks_search_finds(
    store: VectorStore, embedder: HashingEmbedder
) -> None:
    store.set_note("n", "h1", ["old subject matter"])
    embed_pending(store, embedder)
    store.warm()  # the update must now change the in-memory matrix, not just SQLite
    store.set_note("n", "h2", ["new subject matter"])
    embed_pending(store, embedder)
    [hit] = search(store, embedder, "subject matter", limit=5)
    assert hit.text == "new subject matter"


def test_filter_applies_before_top_k(store: VectorStore, embedder: HashingEmbedder) -> None:
    for i in range(30):
        store.set_note(f"loud{i}", f"h{i}", ["green tea green tea green tea"])
    for i in range(3):
        store.set_note(f"quiet{i}", f"q{i}", [f"a note about tea number {i}"])
    embed_pending(store, embedder)
    hits = store.search(
        embedder.vector("green tea"), 3, note_filter=lambda note: note.startswith("quiet")
    )
    assert sorted(hit.note_id for hit in hits) == ["quiet0", "quiet1", "quiet2"]


def test_a_warmed_index_follows_later_writes(store: VectorStore, embedder: HashingEmbedder) -> None:
    store.warm()
    store.set_note("n", "h", ["written after warming"])
    assert search(store, embedder, "warming") == []
    embed_pending(store, embedder)
    assert [hit.text for hit in search(store, embedder, "warming")] == ["written after warming"]


def test_search_returns_at_most_limit_hits_best_first(
    store: VectorStore, embedder: HashingEmbedder
) -> None:
    store.set_note("n", "h", ["tea", "tea tea kettle", "tea kettle water cup", "unrelated"])
    embed_pending(store, embedder)
    hits = search(store, embedder, "tea", limit=2)
    assert [hit.chunk_index for hit in hits] == [0, 1]
    assert hits[0].similarity >= hits[1].similarity
    assert search(store, embedder, "tea", limit=0) == []


def test_search_is_exact_over_thousands_of_chunks(store: VectorStore) -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((3000, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for n in range(300):
        store.set_note(f"n{n}", "h", [f"chunk {n * 10 + i}" for i in range(10)])
    store.store_embeddings([(chunk_hash(f"chunk {i}"), vectors[i]) for i in range(3000)])
    query = vectors[1234] + 0.5 * vectors[2999]
    hits = store.search(query, 5)
    expected = np.argsort(-(vectors @ (query / np.linalg.norm(query))))[:5]
    assert [f"n{i // 10}:{i % 10}" for i in expected] == [
        f"{hit.note_id}:{hit.chunk_index}" for hit in hits
    ]


def test_one_text_in_two_notes_is_embedded_once_and_found_in_both(
    store: VectorStore, embedder: HashingEmbedder
) -> None:
    store.set_note("a", "ha", ["identical paragraph"])
    store.set_note("b", "hb", ["identical paragraph"])
    assert embed_pending(store, embedder) == 1
    assert {hit.note_id for hit in search(store, embedder, "identical paragraph")} == {"a", "b"}


def test_removing_the_last_user_of_a_pending_chunk_drops_it_from_pending(
    store: VectorStore,
) -> None:
    store.set_note("a", "ha", ["shared pending", "only a"])
    store.set_note("b", "hb", ["shared pending"])
    store.remove_note("a")
    assert store.pending(10) == [(chunk_hash("shared pending"), "shared pending")]
    store.set_note("b", "hb2", ["rewritten"])
    assert store.pending(10) == [(chunk_hash("rewritten"), "rewritten")]


def test_clear_keeps_the_embedding_cache_unless_asked(
    store: VectorStore, embedder: HashingEmbedder
) -> None:
    store.set_note("n", "h", ["cached text"])
    embed_pending(store, embedder)
    store.clear()
    assert store.counts() == VectorCounts(0, 0, 0, 0)
    assert store.set_note("n", "h", ["cached text"]) == 0
    store.clear(cache=True)
    assert store.set_note("n", "h", ["cached text"]) == 1


def test_clear_empties_search_results(store: VectorStore, embedder: HashingEmbedder) -> None:
    store.set_note("n", "h", ["some words"])
    embed_pending(store, embedder)
    assert search(store, embedder, "words")
    store.clear()
    assert search(store, embedder, "words") == []


def test_wrong_vector_shape_is_rejected(store: VectorStore) -> None:
    store.set_note("n", "h", ["x"])
    with pytest.raises(ValueError, match="384"):
        store.store_embeddings([(chunk_hash("x"), np.ones(10, dtype=np.float32))])
    with pytest.raises(ValueError, match="384"):
        store.search(np.ones(3, dtype=np.float32), 5)
    assert store.pending(5) == [(chunk_hash("x"), "x")]


def test_a_different_dimension_is_a_new_space_and_the_old_vectors_stay_searchable(
    path: Path, store: VectorStore, embedder: HashingEmbedder
) -> None:
    store.set_note("n", "h", ["dimension check"])
    embed_pending(store, embedder)
    store.close()
    small = HashingEmbedder(dimension=128)
    wider = VectorStore(path, embedder.model_id, 128)
    try:
        assert [s.id for s in wider.searched_spaces()] == [
            "hashing-test/128/l2",
            "hashing-test/384/l2",
        ]
        assert wider.search(small.vector("dimension check"), 5) == []  # nothing in 128 yet
        query = QueryVectors(
            wider.space.id,
            {
                wider.space.id: small.vector("dimension check"),
                "hashing-test/384/l2": embedder.vector("dimension check"),
            },
        )
        assert [hit.note_id for hit in wider.search(query, 5)] == ["n"]
    finally:
        wider.close()


def test_concurrent_writes_and_searches_stay_consistent(
    store: VectorStore, embedder: HashingEmbedder
) -> None:
    errors: list[BaseException] = []

    def writer(prefix: str) -> None:
        try:
            for i in range(40):
                store.set_note(f"{prefix}{i}", "h", [f"{prefix} topic {i}", "common text"])
                embed_pending(store, embedder)
                if i % 3 == 0:
                    store.remove_note(f"{prefix}{i}")
        except BaseException as error:
            errors.append(error)

    def reader() -> None:
        try:
            for _ in range(100):
                for hit in search(store, embedder, "common text topic"):
                    assert hit.text in {"common text"} or "topic" in hit.text
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=writer, args=(p,)) for p in "xy"]
    threads.append(threading.Thread(target=reader))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    expected = {f"{p}{i}" for p in "xy" for i in range(40) if i % 3}
    hits = store.search(embedder.vector("common text"), 1000)
    assert {hit.note_id for hit in hits} == expected
    assert store.counts().notes == len(expected)


def test_pending_count_counts_chunk_rows_waiting_for_a_vector(
    store: VectorStore, embedder: HashingEmbedder
) -> None:
    store.set_note("n1", "h1", ["shared", "only here"])
    store.set_note("n2", "h2", ["shared"])  # the same text in two notes: two chunk rows
    assert store.pending_count() == 3 == store.counts().pending_chunks
    store.store_embeddings([(chunk_hash("shared"), embedder.vector("shared"))])
    assert store.pending_count() == 1 == store.counts().pending_chunks


def test_search_notes_finds_limit_notes_past_a_note_with_many_better_chunks(
    store: VectorStore, embedder: HashingEmbedder
) -> None:
    store.set_note("long", "h", [f"wren wren wren {i}" for i in range(50)])
    for i in range(4):
        store.set_note(f"short{i}", f"h{i}", [f"wren nest twig {i}"])
    embed_pending(store, embedder)
    hits = store.search_notes(embedder.vector("wren"), 3)
    assert hits[0].note_id == "long" and len(hits) == 3
    assert len({h.note_id for h in hits}) == 3


def test_search_notes_stops_at_the_threshold_and_at_the_last_chunk(
    store: VectorStore, embedder: HashingEmbedder
) -> None:
    store.set_note("a", "h1", ["finch finch"])
    store.set_note("b", "h2", ["finch and many other words here"])
    store.set_note("c", "h3", ["nothing in common"])
    embed_pending(store, embedder)
    query = embedder.vector("finch")
    assert [h.note_id for h in store.search_notes(query, 10)] == ["a", "b", "c"]
    assert [h.note_id for h in store.search_notes(query, 10, min_similarity=0.9)] == ["a"]
    assert [h.note_id for h in store.search_notes(query, 10, lambda n: n != "a")] == ["b", "c"]


def test_rank_orders_chunks_like_search_and_texts_reads_them_back(
    store: VectorStore, embedder: HashingEmbedder
) -> None:
    store.set_note("tea", "h1", ["green tea brewing", "black tea"])
    store.set_note("db", "h2", ["sqlite pages"])
    embed_pending(store, embedder)
    ranked = store.rank(embedder.vector("green tea"), 10)
    found = search(store, embedder, "green tea")
    assert [(c.note_id, c.chunk_index, c.similarity) for c in ranked] == [
        (h.note_id, h.chunk_index, h.similarity) for h in found
    ]
    assert store.texts(ranked[:1])[0].text == "green tea brewing"
    # Each chunk's own text (read by note and chunk index), in the ranking's order.
    chunks = {("tea", 0): "green tea brewing", ("tea", 1): "black tea", ("db", 0): "sqlite pages"}
    read = store.texts(list(reversed(ranked)))
    assert [(h.note_id, h.chunk_index) for h in read] == [
        (c.note_id, c.chunk_index) for c in reversed(ranked)
    ]
    assert all(h.text == chunks[(h.note_id, h.chunk_index)] for h in read) and len(read) == 3


def test_texts_drops_a_chunk_whose_note_changed_after_ranking(
    store: VectorStore, embedder: HashingEmbedder
) -> None:
    store.set_note("tea", "h1", ["green tea brewing"])
    embed_pending(store, embedder)
    ranked = store.rank(embedder.vector("green tea"), 10)
    store.set_note("tea", "h2", ["coffee instead"])
    assert store.texts(ranked) == []


def test_note_vectors_and_similarities_follow_updates_and_removal(
    store: VectorStore, embedder: HashingEmbedder
) -> None:
    """A note's mean vector is kept between calls; changing or removing the note's chunks
    must not leave the old mean behind."""
    store.set_note("n", "h1", ["apples and pears", "orchard fruit"])
    embed_pending(store, embedder)
    store.warm()
    query = embedder.vector("apples and pears orchard fruit")
    before = store.note_similarities(query, ["n"])["n"]
    assert before == pytest.approx(store.note_similarities(query, ["n"])["n"])
    store.set_note("n", "h2", ["diesel engines"])
    embed_pending(store, embedder)
    after = store.note_similarities(query, ["n"])
    assert after["n"] < before - 0.3
    expected = embedder.vector("diesel engines")
    assert float(store.note_vectors(["n"])["n"] @ expected) == pytest.approx(1.0, abs=0.02)
    store.remove_note("n")
    assert store.note_vectors(["n"]) == {} and store.note_similarities(query, ["n"]) == {}

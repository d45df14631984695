from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from lithos.services.embedding import EmbeddingWorker
from lithos.store.vectors import VectorStore
from tests.fakes import HashingEmbedder


class FailingOnceEmbedder(HashingEmbedder):
    """Raises on its first call, then works."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("model exploded")
        return super().embed(texts)


class GatedEmbedder(HashingEmbedder):
    """Blocks inside ``embed`` until the test opens the gate."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.gate = threading.Event()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.entered.set()
        self.gate.wait(5)
        return super().embed(texts)


@pytest.fixture
def vectors(tmp_path: Path) -> Iterator[VectorStore]:
    store = VectorStore(tmp_path / "vectors.db", "hashing-test", 384)
    yield store
    store.close()


def add_notes(vectors: VectorStore, count: int, chunks_per_note: int = 3) -> None:
    for n in range(count):
        chunks = [f"note {n} chunk {c} text" for c in range(chunks_per_note)]
        vectors.set_note(f"n{n}", f"h{n}", chunks)


def test_worker_drains_everything_pending(vectors: VectorStore) -> None:
    embedder = HashingEmbedder()
    add_notes(vectors, 10)
    worker = EmbeddingWorker(vectors, embedder, batch_size=4)
    worker.start()
    try:
        assert worker.wait_idle(10)
        assert vectors.counts().pending_chunks == 0
        assert vectors.counts().embedded_chunks == 30
        assert len(embedder.embedded_texts) == 30
    finally:
        worker.stop()


def test_notify_wakes_the_worker_for_new_chunks(vectors: VectorStore) -> None:
    embedder = HashingEmbedder()
    worker = EmbeddingWorker(vectors, embedder)
    worker.start()
    try:
        assert worker.wait_idle(5)
        vectors.set_note("late", "h", ["arrived after start"])
        worker.notify()
        assert worker.wait_idle(5)
        [hit] = vectors.search(embedder.vector("arrived after start"), 1)
        assert hit.note_id == "late"
    finally:
        worker.stop()


def test_wait_idle_is_false_while_work_is_pending_and_no_worker_runs(
    vectors: VectorStore,
) -> None:
    add_notes(vectors, 1)
    worker = EmbeddingWorker(vectors, HashingEmbedder())
    assert worker.wait_idle(0.05) is False


def test_wait_idle_waits_for_the_batch_in_flight(vectors: VectorStore) -> None:
    embedder = GatedEmbedder()
    add_notes(vectors, 1, chunks_per_note=1)
    worker = EmbeddingWorker(vectors, embedder)
    worker.start()
    try:
        assert embedder.entered.wait(5)
        assert worker.wait_idle(0.05) is False
        embedder.gate.set()
        assert worker.wait_idle(5) is True
    finally:
        embedder.gate.set()
        worker.stop()


def test_notify_never_blocks_even_while_a_batch_is_embedding(vectors: VectorStore) -> None:
    embedder = GatedEmbedder()
    add_notes(vectors, 1)
    worker = EmbeddingWorker(vectors, embedder)
    worker.start()
    try:
        assert embedder.entered.wait(5)
        started = time.monotonic()
        for _ in range(100):
            worker.notify()
        assert time.monotonic() - started < 0.5
    finally:
        embedder.gate.set()
        worker.stop()


def test_worker_survives_an_embedder_that_raises_once(
    vectors: VectorStore, caplog: pytest.LogCaptureFixture
) -> None:
    embedder = FailingOnceEmbedder()
    add_notes(vectors, 2)
    worker = EmbeddingWorker(vectors, embedder, retry_delay=0.01)
    with caplog.at_level(logging.ERROR, logger="lithos.embedding"):
        worker.start()
        try:
            assert worker.wait_idle(10)
        finally:
            worker.stop()
    assert vectors.counts().pending_chunks == 0
    assert vectors.counts().embedded_chunks == 6
    assert any("model exploded" in (record.exc_text or "") for record in caplog.records)


def test_pending_work_survives_a_stop_and_a_new_worker(tmp_path: Path) -> None:
    path = tmp_path / "vectors.db"
    first = VectorStore(path, "hashing-test", 384)
    add_notes(first, 3)
    EmbeddingWorker(first, HashingEmbedder()).stop()  # never started: a no-op
    first.close()
    second = VectorStore(path, "hashing-test", 384)
    worker = EmbeddingWorker(second, HashingEmbedder())
    worker.start()
    try:
        assert worker.wait_idle(10)
        assert second.counts().embedded_chunks == 9
    finally:
        worker.stop()
        second.close()


def test_stop_joins_the_thread(vectors: VectorStore) -> None:
    def running() -> int:
        return sum(thread.name == "lithos-embedding" for thread in threading.enumerate())

    before = running()
    worker = EmbeddingWorker(vectors, HashingEmbedder())
    assert not worker.is_alive()
    worker.start()
    assert worker.is_alive()
    assert running() == before + 1
    worker.stop()
    assert not worker.is_alive()
    assert running() == before


def test_embedder_of_another_space_is_rejected(vectors: VectorStore) -> None:
    with pytest.raises(ValueError, match="does not match"):
        EmbeddingWorker(vectors, HashingEmbedder(dimension=128))


class PoisonEmbedder(HashingEmbedder):
    """Always fails on one particular text."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if any("poison" in text for text in texts):
            raise ValueError("cannot embed this")
        return super().embed(texts)


def test_a_text_that_always_fails_does_not_block_the_others(vectors: VectorStore) -> None:
    vectors.set_note("bad", "h-bad", ["poison pill"])
    vectors.set_note("good", "h-good", ["fine text", "more fine text"])
    worker = EmbeddingWorker(vectors, PoisonEmbedder(), retry_delay=0.01)
    worker.start()
    try:
        assert worker.wait_idle(10)
    finally:
        worker.stop()
    counts = vectors.counts()
    assert counts.embedded_chunks == 2 and counts.pending_chunks == 1


def test_the_worker_loads_the_model_before_any_search_needs_it(vectors: VectorStore) -> None:
    embedder = HashingEmbedder()
    worker = EmbeddingWorker(vectors, embedder)
    worker.start()
    try:
        assert worker.wait_idle(5) and embedder.warmed
    finally:
        worker.stop()


@pytest.mark.parametrize("migrate", [True, False])
def test_after_a_model_change_the_worker_migrates_only_when_lazy(
    tmp_path: Path, migrate: bool
) -> None:
    path = tmp_path / "vectors.db"
    old = VectorStore(path, "hashing-test", 384)
    add_notes(old, 4, chunks_per_note=1)
    while batch := old.pending(8):
        old.store_embeddings([(h, HashingEmbedder().vector(t)) for h, t in batch])
    old.close()
    new_model = HashingEmbedder(dimension=64, model_id="hashing-small")
    store = VectorStore(path, "hashing-small", 64)
    store.set_note("fresh", "h", ["brand new text"])
    worker = EmbeddingWorker(store, new_model, migrate=migrate)
    worker.start()
    try:
        assert worker.wait_idle(10)
        counts = store.counts()
        assert counts.pending_chunks == 0
        if migrate:
            assert (counts.embedded_chunks, counts.migrating_chunks) == (5, 0)
            assert len(store.searched_spaces()) == 1  # the old space is retired
        else:
            assert (counts.embedded_chunks, counts.migrating_chunks) == (1, 4)
            assert new_model.embedded_texts == ["brand new text"]
    finally:
        worker.stop()
        store.close()


def test_the_worker_saves_the_matrix_snapshot_once_writes_settle(vectors: VectorStore) -> None:
    embedder = HashingEmbedder()
    add_notes(vectors, 5)
    worker = EmbeddingWorker(vectors, embedder)
    worker.snapshot_settle = 0.05
    worker.start()
    try:
        assert worker.wait_idle(timeout=10)
        deadline = time.monotonic() + 10
        while vectors.snapshot_stale() or not vectors.snapshot_path.exists():
            assert time.monotonic() < deadline, "the snapshot was never saved"
            time.sleep(0.01)
        saved = vectors.snapshot_path.stat().st_mtime_ns
        vectors.remove_note("n0")  # no wake-up: the settle timeout still finds it
        deadline = time.monotonic() + 10
        while vectors.snapshot_stale():
            assert time.monotonic() < deadline, "the changed matrix was never saved"
            time.sleep(0.01)
        assert vectors.snapshot_path.stat().st_mtime_ns >= saved
    finally:
        worker.stop()

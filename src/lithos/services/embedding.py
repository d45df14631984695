"""The embedding worker: embeds pending chunks in the background.

Writers never wait for the model. They put chunks in the vector store (which queues the ones
without a vector) and call :meth:`EmbeddingWorker.notify`; one daemon thread drains the queue in
small batches. The queue lives in the store, so nothing is lost when a batch fails or the
process stops: the work is simply still pending.
"""

from __future__ import annotations

import logging
import time

from lithos.domain.embedding import Embedder, space_of
from lithos.runtime import release_free_memory
from lithos.services.background import BackgroundWorker
from lithos.store.vectors import VectorStore

log = logging.getLogger("lithos.embedding")


GIVE_UP_AFTER = 3
# Seconds without a wake-up (no write) after which a changed search matrix is saved to its
# snapshot; and the age after which a stale snapshot is saved even while writes go on.
SNAPSHOT_SETTLE = 20.0
SNAPSHOT_MAX_AGE = 600.0


class EmbeddingWorker(BackgroundWorker):
    """Drains ``vectors.pending()`` through ``embedder`` on one daemon thread.

    A failing batch is logged and retried after a delay that doubles per consecutive failure,
    from ``retry_delay`` up to ``max_retry_delay`` seconds; the thread itself never dies of it.
    With ``migrate`` it also embeds, after any new text, the chunks still searched in an
    embedding space being retired; without it those wait for ``lithos reembed``.
    """

    thread_name = "lithos-embedding"

    def __init__(
        self,
        vectors: VectorStore,
        embedder: Embedder,
        batch_size: int = 8,
        retry_delay: float = 1.0,
        max_retry_delay: float = 60.0,
        migrate: bool = True,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if space_of(embedder) != vectors.space:
            raise ValueError(
                f"embedder space {space_of(embedder).id} does not match the vector store's"
                f" active space {vectors.space.id}"
            )
        super().__init__()
        self._vectors = vectors
        self._embedder = embedder
        self._batch_size = batch_size
        self._retry_delay = retry_delay
        self._max_retry_delay = max_retry_delay
        self.migrate = migrate
        self._busy = False
        self.snapshot_settle = SNAPSHOT_SETTLE
        self._failures: dict[str, int] = {}  # chunk hash -> failures when embedded alone
        self._given_up: set[str] = set()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until nothing is pending and no batch is in flight.

        Returns ``True`` once idle, ``False`` if ``timeout`` seconds pass first (for example
        while the embedder keeps failing or the worker is not running).
        """
        deadline = time.monotonic() + timeout
        while True:
            if not self._busy and not self._next_batch():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)

    def _run(self) -> None:
        self._busy = True
        try:
            self._vectors.warm()  # so the first search does not pay for reading the matrix
            self._embedder.warm()  # nor for loading the model
        except Exception:
            log.exception("could not prepare semantic search ahead of the first query")
        finally:
            self._busy = False
            release_free_memory()  # loading leaves large freed buffers behind
        failures = 0
        while not self._stopping.is_set():
            if not self._wake.wait(self.snapshot_settle):
                self._save_snapshot()  # no write for a while: the matrices have settled
                continue
            self._wake.clear()
            if self._vectors.snapshot_age() > SNAPSHOT_MAX_AGE:
                self._save_snapshot()  # writes never pause: save now and then all the same
            try:
                if self._drain():
                    release_free_memory()
            except Exception:
                failures += 1
                delay = min(self._max_retry_delay, self._retry_delay * 2 ** (failures - 1))
                log.exception(
                    "embedding failed (%d in a row); pending chunks kept, retrying in %.1f s",
                    failures,
                    delay,
                )
                self._stopping.wait(delay)
                self._wake.set()
            else:
                failures = 0

    def _save_snapshot(self) -> None:
        try:
            if self._vectors.snapshot_stale():
                self._vectors.save_snapshot()
        except Exception:
            log.exception("could not save the vector matrix snapshot; the next start reads SQLite")

    def _drain(self) -> bool:
        """Embed until nothing is pending; True if anything was embedded."""
        embedded = False
        while not self._stopping.is_set():
            self._busy = True
            try:
                batch = self._next_batch()
                if not batch:
                    return embedded
                embedded = True
                try:
                    self._embed(batch)
                except Exception:
                    if len(batch) == 1:
                        raise
                    log.exception("embedding a batch failed; retrying its chunks one by one")
                    for item in batch:  # find the text that fails, keep the others going
                        self._embed_alone(item)
            finally:
                self._busy = False
        return embedded

    def _next_batch(self) -> list[tuple[str, str]]:
        wanted = self._batch_size + len(self._given_up)
        pending = self._vectors.pending(wanted, migrate=self.migrate)
        return [item for item in pending if item[0] not in self._given_up][: self._batch_size]

    def _embed(self, batch: list[tuple[str, str]]) -> None:
        vectors = self._embedder.embed([text for _, text in batch])
        if vectors.shape != (len(batch), self._embedder.dimension):
            raise ValueError(f"embedder returned shape {vectors.shape} for {len(batch)}")
        self._vectors.store_embeddings(
            [(h, vector) for (h, _), vector in zip(batch, vectors, strict=True)]
        )

    def _embed_alone(self, item: tuple[str, str]) -> None:
        """Embed one chunk; a chunk that fails on its own ``GIVE_UP_AFTER`` times is skipped
        until restart (and stays counted as pending), so it cannot block the queue."""
        try:
            self._embed([item])
        except Exception:
            failures = self._failures.get(item[0], 0) + 1
            self._failures[item[0]] = failures
            if failures < GIVE_UP_AFTER:
                raise
            self._given_up.add(item[0])
            log.error("giving up on chunk %s after %d failures", item[0][:12], failures)

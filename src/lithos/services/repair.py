"""The repair worker: brings broken or lagging derived indexes back in step, in the background.

Two kinds of work reach it, and both end in the indexes agreeing with the files:

- a derived store found broken at start-up or reported broken while serving (a failed read
  or commit): the :class:`~lithos.store.lifecycle.StoreKeeper` moves it aside and opens an
  empty one, then the worker refills it from the files while Lithos serves (a full-text or
  vector store batch by batch, writes going on in between; the catalog by a full index
  check);
- a write whose file is saved but whose index update failed (deferred by the
  :class:`~lithos.services.indexing.Indexer`): the note is indexed again.

A failed attempt is logged and retried after a delay that doubles up to ``max_retry_delay``.
"""

from __future__ import annotations

import logging
from functools import partial

from lithos.errors import StoreCorrupt
from lithos.services.background import BackgroundWorker
from lithos.services.indexing import Indexer
from lithos.store.lifecycle import StoreKeeper

log = logging.getLogger("lithos.repair")
REBUILD_ROUNDS = 5  # a store breaking again and again while refilled is given up on (logged)


class RepairWorker(BackgroundWorker):
    """One daemon thread draining :class:`StoreKeeper` repairs and deferred index updates."""

    thread_name = "lithos-repair"

    def __init__(
        self,
        stores: StoreKeeper,
        indexer: Indexer,
        retry_delay: float = 0.5,
        max_retry_delay: float = 30.0,
    ) -> None:
        super().__init__()
        self._stores = stores
        self._indexer = indexer
        self._retry_delay = retry_delay
        self._max_retry_delay = max_retry_delay
        self.repairs = 0  # completed rounds that found work, for tests and stats
        stores.listener = self.notify
        indexer.on_deferred = self.notify

    def _run(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            self._wake.wait()
            self._wake.clear()
            if self._stopping.is_set():
                return
            try:
                worked = self._repair()
            except Exception:
                failures += 1
                delay = min(self._max_retry_delay, self._retry_delay * 2 ** (failures - 1))
                log.exception(
                    "index repair failed (%d in a row); retrying in %.1f s", failures, delay
                )
                self._stopping.wait(delay)
                self._wake.set()
                continue
            failures = 0
            if worked:
                self.repairs += 1

    def _repair(self) -> bool:
        worked = False
        if self._stores.broken() or self._stores.rebuilding():
            self._stores.heal()
            self._rebuild()
            worked = True
        if self._indexer.deferred():
            self._stores.run(self._indexer.retry_deferred)
            worked = True
        return worked

    def _rebuild(self) -> None:
        """Refill every ``rebuilding`` store from the files. A full-text or vector store is
        refilled a batch at a time while writes go on; an empty catalog needs the full index
        check, which holds the indexer lock throughout (writes wait for it)."""
        for _ in range(REBUILD_ROUNDS):
            waiting = self._stores.rebuilding()
            if not waiting:
                return
            if "catalog" in waiting:
                self._stores.run(self._indexer.reconcile)
            else:
                self._stores.run(partial(self._refill, waiting), only=waiting)
        raise StoreCorrupt("the indexes keep breaking while rebuilt", self._stores.data_dir)

    def _refill(self, names: frozenset[str]) -> None:
        def progress(done: int, total: int) -> None:
            self._stores.progress(names, done, total)

        self._indexer.refill(names, progress)

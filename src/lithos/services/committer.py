"""The full-text committer: one thread that commits Tantivy for the writers.

A write stages its full-text change (searchable at once through the overlay, see
store/fulltext_overlay.py) and returns without waiting for a Tantivy commit, which fsyncs
segment files and costs tens of milliseconds. This worker commits every staged change once
``interval`` seconds have passed since the first uncommitted one, or as soon as changes of
``max_pending`` notes wait (so the overlay every search scans stays small), whichever comes
first; stopping it commits what is left. Until a change is committed its note keeps the
durable write mark the writer made before touching the file, so a kill before the commit is
repaired by start-up's index check (docs/failure-modes.md). A hand edit the watcher indexed
has no mark: it is already in the catalog, and the index check finds the full-text index
holding another content hash for it (or none) and repairs that.
"""

from __future__ import annotations

import logging
import time

from lithos.services.background import BackgroundWorker
from lithos.services.indexing import Indexer

log = logging.getLogger("lithos.indexing")


class FullTextCommitter(BackgroundWorker):
    """Commits the full-text index in the background for :class:`Indexer`'s writes."""

    thread_name = "lithos-fulltext-commit"

    def __init__(self, indexer: Indexer, interval: float, max_pending: int) -> None:
        super().__init__()
        self._indexer = indexer
        self._interval = interval
        self._max_pending = max_pending

    def start(self) -> None:
        """Start the thread; from now on writes leave their commits to it."""
        self._indexer.commit_in_background(self.notify)
        super().start()

    def stop(self, timeout: float | None = 30.0) -> None:
        """Commit what is staged, stop the thread, and make writes commit themselves again."""
        self._indexer.commit_in_background(None)
        super().stop(timeout)
        self._indexer.commit_staged()  # anything staged while the thread was stopping

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            if not self._stopping.is_set():
                self._gather()
            self._indexer.commit_staged()
            if self._stopping.is_set():
                return

    def _gather(self) -> None:
        """Wait until the first waiting change is ``interval`` old or ``max_pending`` notes wait."""
        deadline = time.monotonic() + self._interval
        while not self._stopping.is_set():
            waiting = self._indexer.uncommitted()
            remaining = deadline - time.monotonic()
            if waiting == 0 or waiting >= self._max_pending or remaining <= 0:
                return
            self._wake.wait(remaining)
            self._wake.clear()

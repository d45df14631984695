"""Watches ``knowledge/`` for edits made by people and brings the indexes in step.

An isolated change is handled as soon as the knowledge directory has been quiet for
:data:`SETTLE` (an editor's save is a few events within a millisecond or two), so a hand edit is
searchable at once. A burst of changes (a ``git pull``, a sync client) keeps the directory busy,
so its paths are collected and handled together, in one batch with one full-text commit, when
the burst pauses for :data:`SETTLE` or when its oldest path has waited the debounce interval,
whichever comes first. A handled batch is searchable at once through the full-text overlay;
its Tantivy commit is left to the background committer. Each path is re-read and compared by
content hash with what the catalog holds, so the server's own writes (already indexed when
they return) cost one hash.
Directory moves and deletes trigger a verified reconcile of the whole tree.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from lithos.services.indexing import Indexer

log = logging.getLogger("lithos.watcher")
RESCAN = "\x00rescan"
SETTLE = 0.05  # seconds without any event after which pending paths are handled


class KnowledgeWatcher(FileSystemEventHandler):
    def __init__(self, indexer: Indexer, debounce_ms: int = 500) -> None:
        self._indexer = indexer
        self._debounce = debounce_ms / 1000
        self._settle = min(SETTLE, self._debounce)
        self._pending: dict[str, float] = {}  # path -> when its first unhandled event came
        self._last_event = 0.0
        self._cond = threading.Condition()
        self._stopping = False
        self._observer: Observer | None = None  # type: ignore[valid-type]
        self._thread: threading.Thread | None = None
        self.handled = 0  # paths processed, for tests and stats

    def start(self) -> None:
        observer = Observer()
        observer.schedule(self, str(self._indexer.files.root), recursive=True)
        observer.daemon = True
        observer.start()
        self._observer = observer
        self._thread = threading.Thread(target=self._run, name="lithos-watcher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
        if self._thread is not None:
            self._thread.join(timeout=5)

    # -- watchdog callbacks (observer thread) --------------------------------------------

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        if event.is_directory:
            if event.event_type in ("deleted", "moved"):
                self._mark(RESCAN)
            return
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            if raw:
                relative = self._indexer.files.relative(Path(str(raw)))
                if relative is not None:
                    self._mark(relative)

    def _mark(self, key: str) -> None:
        with self._cond:
            now = time.monotonic()
            self._pending.setdefault(key, now)
            self._last_event = now
            self._cond.notify_all()

    # -- worker thread --------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopping and not (due := self._due()):
                    self._cond.wait(timeout=self._wait_time())
                if self._stopping:
                    return
                for key in due:
                    del self._pending[key]
            self._handle(due)

    def _due(self) -> list[str]:
        """Every pending path once the directory is quiet; else those waiting too long."""
        now = time.monotonic()
        if self._pending and now - self._last_event >= self._settle:
            return list(self._pending)
        return [k for k, first in self._pending.items() if now - first >= self._debounce]

    def _wait_time(self) -> float | None:
        if not self._pending:
            return None
        now = time.monotonic()
        until_quiet = self._settle - (now - self._last_event)
        until_overdue = self._debounce - (now - min(self._pending.values()))
        return max(0.005, min(until_quiet, until_overdue))

    def _handle(self, keys: list[str]) -> None:
        """Index a batch of changed paths with one full-text commit (a ``git pull`` may touch
        hundreds of notes at once)."""
        try:
            if RESCAN in keys:
                self._indexer.reconcile()
            else:
                self._indexer.sync_paths(keys, background_commit=True)
            self.handled += len(keys)
        except Exception:  # a bad file or a transient I/O error must not kill the watcher
            log.exception("could not index %s; retried on their next change", ", ".join(keys))

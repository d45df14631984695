"""A thread pool made on first use and stopped on close, for services that hand work to a few
threads of their own (docs/concurrency.md lists each)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor


class LazyPool:
    """``workers`` threads named ``prefix``, started when first asked for."""

    def __init__(self, workers: int, prefix: str) -> None:
        self._workers, self._prefix = workers, prefix
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def get(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    max_workers=self._workers, thread_name_prefix=self._prefix
                )
            return self._executor

    def close(self) -> None:
        """Stop the threads after the work given to them finishes (a later :meth:`get`
        starts new ones)."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)

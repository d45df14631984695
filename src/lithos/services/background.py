"""The shape every background worker of Lithos shares: one daemon thread, woken by notify()."""

from __future__ import annotations

import threading


class BackgroundWorker:
    """One named daemon thread running :meth:`_run` until :meth:`stop`.

    Subclasses wait on ``self._wake`` (set by :meth:`notify`) and return from ``_run`` once
    ``self._stopping`` is set.
    """

    thread_name = "lithos-worker"

    def __init__(self) -> None:
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the thread (once) and let it look for work at once."""
        if self._thread is not None:
            return
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
        self._thread.start()
        self.notify()

    def is_alive(self) -> bool:
        """Whether the worker thread is running."""
        return self._thread is not None and self._thread.is_alive()

    def notify(self) -> None:
        """Tell the worker there may be work. Never blocks."""
        self._wake.set()

    def stop(self, timeout: float | None = 30.0) -> None:
        """Stop after the work in hand, if any, and join the thread. Safe if never started."""
        thread = self._thread
        if thread is None:
            return
        self._stopping.set()
        self._wake.set()
        thread.join(timeout)
        self._thread = None

    def _run(self) -> None:
        raise NotImplementedError

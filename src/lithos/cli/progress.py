"""Progress of long commands on stderr: a bar with rate and ETA on a terminal, and sparse
``key=value`` lines that scripts can parse when stderr is a file or a pipe."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

BAR_WIDTH = 24


class ProgressBar:
    """A :data:`lithos.services.indexing.Progress` callback: call it with ``(done, total)``.

    On a terminal it redraws one line at most ``redraw`` times a second:
    ``files [#########...] 1200/5000  24%  118/s  ETA 0:32``. Elsewhere it prints
    ``progress task=files done=1200 total=5000 rate=118.0 eta_s=32`` every ``every`` seconds
    and once at the end, so a log stays short. ``finish()`` ends the line.
    """

    def __init__(
        self,
        task: str,
        stream: TextIO | None = None,
        interactive: bool | None = None,
        every: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.task = task
        self.stream = stream or sys.stderr
        self.interactive = self.stream.isatty() if interactive is None else interactive
        self.every = 0.1 if self.interactive else every
        self.clock = clock
        self.started = clock()
        self._last_shown: float | None = None
        self._last: tuple[int, int] | None = None
        self._shown: tuple[int, int] | None = None
        self._finished = False

    def __call__(self, done: int, total: int) -> None:
        self._last = (done, total)
        now = self.clock()
        # A terminal shows the bar at once; a log gets its first line after `every` seconds.
        since = self._last_shown if self._last_shown is not None else self.started
        due = (self.interactive and self._last_shown is None) or now - since >= self.every
        if done >= total or due:
            self._show(done, total, now)

    def finish(self) -> None:
        """Show the final state once (if anything was reported) and end the line."""
        if self._finished or self._last is None:
            return
        self._finished = True
        done, total = self._last
        if self._shown != self._last:
            self._show(done, total, self.clock())
        if self.interactive:
            self.stream.write("\n")
            self.stream.flush()

    def _show(self, done: int, total: int, now: float) -> None:
        self._last_shown = now
        self._shown = (done, total)
        elapsed = max(now - self.started, 1e-9)
        rate = done / elapsed
        remaining = (total - done) / rate if rate > 0 and total >= done else None
        if self.interactive:
            self.stream.write("\r" + self._bar(done, total, rate, remaining))
        else:
            eta = "" if remaining is None else f" eta_s={round(remaining)}"
            self.stream.write(
                f"progress task={self.task} done={done} total={total} rate={rate:.1f}{eta}\n"
            )
        self.stream.flush()

    def _bar(self, done: int, total: int, rate: float, remaining: float | None) -> str:
        fraction = done / total if total else 1.0
        filled = round(BAR_WIDTH * min(fraction, 1.0))
        bar = "#" * filled + "." * (BAR_WIDTH - filled)
        eta = "--:--" if remaining is None else _clock_time(remaining)
        return f"{self.task} [{bar}] {done}/{total} {fraction:4.0%}  {rate:.0f}/s  ETA {eta}  "


def _clock_time(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"

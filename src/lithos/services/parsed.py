"""Notes parsed from their files' text, kept for the reads that follow.

Parsing a note's YAML frontmatter is most of the CPU of reading it. A note read again
with the very same text (same content hash, path and catalog creation time) parses to the same
value, so a small bounded memo of the last notes read answers repeated reads of hot notes
without parsing. Any change to the file changes its hash, so a kept value is never stale.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from lithos.domain.notes import Note, parse_note

KEPT_NOTES = 256  # notes kept, least recently read dropped first
KEPT_CHARS = 32_000  # a longer text is parsed every time (bounds the memory to ~8 M chars)


class ParsedNotes:
    """A thread-safe, bounded memo of :func:`parse_note` by the text's content hash."""

    def __init__(self, size: int = KEPT_NOTES) -> None:
        self._size = size
        self._notes: OrderedDict[tuple[str, str, str | None], Note] = OrderedDict()
        self._lock = threading.Lock()

    def parse(self, text: str, digest: str, path: str, fallback_time: str | None) -> Note:
        """``parse_note(text, path, fallback_time)``, ``digest`` being the text's
        :func:`content_hash` (the caller's, which it needs too). Raises what
        :func:`parse_note` raises (a failure is not kept)."""
        if len(text) > KEPT_CHARS or not fallback_time:  # then parse_note reads the clock
            return parse_note(text, path, fallback_time)
        note = self.held(digest, path, fallback_time)
        if note is not None:
            return note
        note = parse_note(text, path, fallback_time)
        key = (digest, path, fallback_time)
        with self._lock:
            self._notes[key] = note
            if len(self._notes) > self._size:
                self._notes.popitem(last=False)
        return note

    def held(self, digest: str, path: str, fallback_time: str | None) -> Note | None:
        """The note :meth:`parse` keeps for the text of this hash, path and creation time,
        or None (never parses)."""
        key = (digest, path, fallback_time)
        with self._lock:
            note = self._notes.get(key)
            if note is not None:
                self._notes.move_to_end(key)
            return note

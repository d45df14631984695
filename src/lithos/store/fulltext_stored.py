"""The stored fields of full-text hits read lately, kept until the index next changes.

Reading a hit's stored document from Tantivy (``Searcher.doc``) decompresses its block of the
document store and copies every stored field into Python, about 10 us a hit at 10,000 notes,
a tenth of a full-text search. A serving index is the only writer of its directory, so what a
note's document holds changes only with a commit (or a reopen) of that :class:`FullTextIndex`:
:class:`StoredDocs` keeps the fields a search shows (id, title, path, content) of the documents
read lately, by :func:`~lithos.store.fulltext.id_key`, for one index object and one commit
generation, and is replaced by an empty one when either changes. With a document highlighted
once it also keeps its lower-cased content (:meth:`StoredDocs.lowered`), which every snippet of
it searches: lower-casing a whole note costs a few microseconds a hit, as much as placing the
snippet's window.

Within one generation, every searcher shows the same document for a key: a search takes the
overlay's view before it reads the generation, so a note changed by a commit under way is
still masked by the overlay in any search that could read the generation from before it.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from typing import NamedTuple

# Bytes of content and lower-cased content (Python's size of the strings) kept at most, the
# least recently used documents going first: the 195 distinct hits of bench/load.py's 20
# queries at 10,000 notes hold 1.78 MB (1.47 million characters), and as much again lowered.
# The server's RSS target (< 350 MB) leaves little more.
STORED_BYTES = 4_000_000


class StoredFields(NamedTuple):
    id: str
    title: str
    path: str
    content: str


class StoredDocs:
    """Stored fields by document key, for the searchers of one index object at one
    generation (``owner``, ``generation``), at most :data:`STORED_BYTES` of content and
    lower-cased content."""

    def __init__(self, owner: object, generation: int, budget: int = STORED_BYTES) -> None:
        self.owner = owner
        self.generation = generation
        self._budget = budget
        self._bytes = 0
        self._docs: OrderedDict[int, StoredFields] = OrderedDict()
        self._lowered: dict[int, str] = {}  # of documents in ``_docs`` only
        self._lock = threading.Lock()  # the order and the size; never held across Tantivy

    def get(self, key: int) -> StoredFields | None:
        with self._lock:
            fields = self._docs.get(key)
            if fields is not None:
                self._docs.move_to_end(key)
            return fields

    def put(self, key: int, fields: StoredFields) -> None:
        size = sys.getsizeof(fields.content)
        if size > self._budget:
            return
        with self._lock:
            self._drop(key)
            self._docs[key] = fields
            self._bytes += size
            self._fit()

    def lowered(self, key: int, content: str) -> str:
        """``content.lower()``, kept with the document under ``key`` when ``content`` is the
        content kept there (made once per document kept, counted in the budget)."""
        with self._lock:
            text = self._lowered.get(key)
        if text is not None:
            return text
        text = content.lower()
        with self._lock:
            fields = self._docs.get(key)
            if fields is not None and fields.content is content and key not in self._lowered:
                self._lowered[key] = text
                self._bytes += sys.getsizeof(text)
                self._fit()
        return text

    def _drop(self, key: int) -> None:
        old = self._docs.pop(key, None)
        if old is not None:
            self._bytes -= sys.getsizeof(old.content)
        lowered = self._lowered.pop(key, None)
        if lowered is not None:
            self._bytes -= sys.getsizeof(lowered)

    def _fit(self) -> None:
        while self._bytes > self._budget:
            self._drop(next(iter(self._docs)))

    def __len__(self) -> int:
        return len(self._docs)

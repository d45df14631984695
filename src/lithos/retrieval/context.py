"""What every scout of one retrieval shares: the query, its embedding (computed once), the
notes the caller may see, and the clock."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from lithos.domain.chunks import RankedChunk
from lithos.domain.embedding import QueryVectors
from lithos.domain.filters import SearchFilter
from lithos.domain.retrieval import QueryClass, RetrievalQuery, classify_query, words
from lithos.lazy_numpy import np
from lithos.store.fulltext import TextRanking

# Words that carry no evidence on their own; a lexical reason never cites them.
STOPWORDS = frozenset(
    words(
        "a an and are as at be but by do does for from has have how i in is it its of on or"
        " that the this to was were what when where which who why will with you your"
    )
)


@dataclass(frozen=True)
class Eligibility:
    """The notes one caller may be shown, given filters and scopes. Every scout applies it
    before ranking, never by trimming its list afterwards.

    ``filter`` is the caller's filter and scope; ``allowed`` the ids it admits, or ``None``
    when nothing but the scope narrows the knowledge base; ``hidden`` the notes the scope
    excludes (usually few)."""

    filter: SearchFilter = field(default_factory=SearchFilter)
    allowed: frozenset[str] | None = None
    hidden: frozenset[str] = frozenset()

    @property
    def tags(self) -> tuple[str, ...]:
        return self.filter.tags

    @property
    def path_prefix(self) -> str | None:
        return self.filter.path_prefix

    @property
    def unrestricted(self) -> bool:
        return self.allowed is None and not self.hidden

    def allows(self, note_id: str) -> bool:
        if note_id in self.hidden:
            return False
        return self.allowed is None or note_id in self.allowed


@dataclass
class ScoutContext:
    query: RetrievalQuery
    eligibility: Eligibility
    now: datetime
    depth: int
    embed: Callable[[str], QueryVectors]
    query_class: QueryClass = field(init=False)
    terms: list[str] = field(init=False)
    # The lexical scout's BM25 ranking: its describe() reads the shown notes from it.
    text_ranking: TextRanking | None = field(default=None, init=False)
    # The vector scout's best chunk of each note it could show: its describe() reads the
    # texts of the ones that are shown.
    shown_chunks: dict[str, RankedChunk] = field(default_factory=dict, init=False)
    # What the vector and lexical scouts word their reasons from, in describe(), for the
    # notes that are shown: note id -> (its best chunk's cosine, its whole note's), and
    # note id -> (its title, its BM25 score).
    similarities: dict[str, tuple[float, float]] = field(default_factory=dict, init=False)
    text_named: dict[str, tuple[str, float]] = field(default_factory=dict, init=False)
    _vectors: QueryVectors | None = field(default=None, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __post_init__(self) -> None:
        self.query_class = classify_query(self.query.query)
        self.terms = [w for w in dict.fromkeys(words(self.query.query)) if w not in STOPWORDS]

    def query_vectors(self) -> QueryVectors:
        """The query embedded in every searched embedding space, computed on first use and
        shared by every later caller."""
        with self._lock:
            if self._vectors is None:
                self._vectors = self.embed(self.query.query)
            return self._vectors

    def query_vector(self) -> np.ndarray:
        """The query's embedding in the active space."""
        return self.query_vectors().primary_vector

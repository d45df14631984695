"""Phase A scouts: independent candidate generators that run concurrently.

Each scout returns :class:`~lithos.domain.retrieval.ScoutHit` values whose score is already
calibrated to [0, 1]. The other scouts use an absolute scale. The two relevance scouts (vector
and lexical) blend two views, see :func:`adaptive`: where the note stands among this query's
candidates (min-max, which adapts to each query's spread of scores, as hybrid search does) and
how strong its evidence is on an absolute scale (a cosine of 0.3 or a BM25 of 4 is weak whether
it is the only hit or one of fifty). Min-max alone would turn a lone weak hit into 1.0; here
min-max counts only over enough hits to have a spread, so a lone hit scores by its absolute
evidence.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Protocol, runtime_checkable

from lithos.domain.fusion import min_max
from lithos.domain.retrieval import Candidate, ScoutHit, words
from lithos.domain.timestamps import parse_timestamp
from lithos.errors import InvalidInput
from lithos.retrieval.context import STOPWORDS, ScoutContext
from lithos.services.graph import LinkGraph
from lithos.store.catalog import Catalog, ListQuery
from lithos.store.fulltext import FullTextIndex, TextRanking, id_key
from lithos.store.stats import StatsStore
from lithos.store.vectors import VectorStore

_HIGHLIGHT = re.compile(r"\*\*(.+?)\*\*")
TIME_WORDS = frozenset(
    words(
        "latest recent recently current currently newest new today now yesterday update"
        " updated upcoming week month"
    )
)


class Scout(Protocol):
    name: str

    def find(self, ctx: ScoutContext) -> list[ScoutHit]:
        """Candidates for the query, every one allowed by ``ctx.eligibility``."""
        ...


@runtime_checkable
class Describer(Protocol):
    """A scout that explains its finds only for the notes that are shown: what it would
    cost to explain every candidate is spent on the few that make the answer. Its hits may
    carry a placeholder reason (:data:`PENDING_VECTOR`, :data:`PENDING_LEXICAL`), which
    only ranks with them: no score reads a reason."""

    def describe(self, ctx: ScoutContext, shown: Sequence[Candidate]) -> None:
        """Word the reasons (and give the snippet, when none is set) of the ``shown``
        candidates this scout found, in place. Every placeholder is replaced before anything
        that can fail (a read)."""
        ...


# The reason the vector and lexical scouts give each hit until describe() words it for a
# note that is shown (~150 notes are pooled, ~10 shown; no other note's reasons are read).
PENDING_VECTOR = "vector: (worded when shown)"
PENDING_LEXICAL = "lexical: (worded when shown)"


def _replace(candidate: Candidate, old: str, new: str) -> None:
    candidate.reasons = [new if r == old else r for r in candidate.reasons]


def calibrate_cosine(similarity: float, floor: float, ceiling: float) -> float:
    return min(1.0, max(0.0, (similarity - floor) / (ceiling - floor)))


def calibrate_bm25(score: float, saturation: float) -> float:
    return score / (score + saturation) if score > 0 else 0.0


# Min-max needs a spread to measure: with fewer hits than this its share fades in proportion.
MIN_MAX_HITS = 10


def adaptive(raw: list[float], absolute: list[float], share: float) -> list[float]:
    """``share * minmax(raw) + (1 - share) * absolute`` per hit; ``raw`` is one query's list
    of raw scores (best first or not), ``absolute`` the same hits calibrated absolutely.
    Below :data:`MIN_MAX_HITS` hits the min-max share shrinks in proportion, so a lone hit
    scores by its absolute evidence alone (a lone weak hit stays weak)."""
    if not raw:
        return []
    share *= min(1.0, len(raw) / MIN_MAX_HITS)
    return [share * m + (1 - share) * a for m, a in zip(min_max(raw), absolute, strict=True)]


def _quote(terms: list[str]) -> str:
    return ", ".join(f"'{t}'" for t in terms[:4])


def _age(updated_at: str, now: datetime) -> float:
    """Age in days (0 for a timestamp that cannot be read or lies in the future)."""
    try:
        stamp = parse_timestamp(updated_at)
    except InvalidInput:  # a person's odd timestamp must not fail a retrieval
        return 0.0
    return max(0.0, (now - stamp).total_seconds() / 86400)


def _describe_age(days: float) -> str:
    if days < 1 / 24:
        return "minutes ago"
    if days < 1:
        return f"{round(days * 24)} hours ago"
    return f"{round(days)} days ago"


@dataclass(frozen=True)
class VectorCalibration:
    """How the vector scout scores a note: its best chunk's cosine plus ``note_weight`` times
    the cosine of the whole note (mean chunk vector); that sum, divided by ``1 + note_weight``,
    is mapped linearly from [floor, ceiling] to [0, 1] for the absolute part of
    :func:`adaptive` (``share`` is its min-max part)."""

    floor: float
    ceiling: float
    note_weight: float
    share: float


class VectorScout:
    name = "scout_vector"

    def __init__(
        self,
        vectors: VectorStore,
        calibration: VectorCalibration,
        ready: Callable[[], None] = lambda: None,
    ) -> None:
        """``ready`` raises while the vector store is being rebuilt (the scout then counts
        as failed and the retrieval as degraded, rather than answering from some notes)."""
        self.vectors, self.cal, self.ready = vectors, calibration, ready

    def find(self, ctx: ScoutContext) -> list[ScoutHit]:
        self.ready()
        eligible = ctx.eligibility
        note_filter = None if eligible.unrestricted else eligible.allows
        cal = self.cal
        # The best chunk of each of the closest notes; no text is read here: describe()
        # reads those of the few shown that could lead the answer (the others' snippets
        # come from the lexical scout or the note's lead). Exact similarities for as many
        # notes as can be shown; the tail keeps its compact (int8) one, within ~0.002, as
        # hybrid search's does.
        query = ctx.query_vectors()
        found_notes = self.vectors.rank_notes(
            query, ctx.depth, note_filter, cal.floor, exact=ctx.query.limit
        )
        ranked = [h for h in found_notes if h.similarity > cal.floor]
        ctx.shown_chunks = {h.note_id: h for h in ranked[: ctx.query.limit]}
        # How close the whole note is (its mean chunk vector) adds to its best chunk.
        found = self.vectors.note_similarities(query, [h.note_id for h in ranked])
        whole = [found.get(h.note_id, h.similarity) for h in ranked]
        raw = [h.similarity + cal.note_weight * w for h, w in zip(ranked, whole, strict=True)]
        absolute = [
            calibrate_cosine(r / (1 + cal.note_weight), cal.floor, cal.ceiling) for r in raw
        ]
        ctx.similarities = {
            h.note_id: (h.similarity, w) for h, w in zip(ranked, whole, strict=True)
        }
        scores = adaptive(raw, absolute, cal.share)
        return [
            ScoutHit(hit.note_id, score, PENDING_VECTOR)
            for hit, score in zip(ranked, scores, strict=True)
        ]

    def describe(self, ctx: ScoutContext, shown: Sequence[Candidate]) -> None:
        """Word the reason of each shown note this scout found; give each shown note among
        the best it ranked (as many as can be shown) its best chunk's text as the snippet,
        unless it has one; a chunk whose note changed since it was ranked gives none."""
        for c in shown:
            if c.note_id in ctx.similarities:
                similarity, mean = ctx.similarities[c.note_id]
                whole_note = f", whole note {mean:.2f}" if self.cal.note_weight else ""
                reason = f"vector: close in meaning (cosine {similarity:.2f}{whole_note})"
                _replace(c, PENDING_VECTOR, reason)
        best = ctx.shown_chunks
        wanted = [best[c.note_id] for c in shown if c.note_id in best and c.snippet is None]
        if not wanted:
            return
        texts = {hit.note_id: hit.text for hit in self.vectors.texts(wanted)}
        for c in shown:
            if c.snippet is None and texts.get(c.note_id):
                c.snippet = texts[c.note_id]


class LexicalScout:
    name = "scout_lexical"

    def __init__(
        self,
        fulltext: FullTextIndex,
        graph: LinkGraph,
        saturation: float,
        share: float,
        ready: Callable[[], None] = lambda: None,
    ) -> None:
        """``graph`` names the ranked documents (ids and titles) without reading them;
        ``ready`` raises while the full-text index is being rebuilt (see VectorScout);
        ``share`` is the min-max part of the score (:func:`adaptive`)."""
        self.fulltext, self.graph = fulltext, graph
        self.saturation, self.share = saturation, share
        self.ready = ready

    def find(self, ctx: ScoutContext) -> list[ScoutHit]:
        """The best ``ctx.depth`` notes by BM25. Snippets are not made here: most candidates
        are never shown, so :meth:`describe` highlights the few that are, read from the
        ranking kept in ``ctx``."""
        if not ctx.terms:
            return []
        self.ready()
        # Every filter is applied inside the index: the allowed ids when a filter narrows the
        # knowledge base, else the (few) ids the caller's scope hides.
        eligible = ctx.eligibility
        ctx.text_ranking = self.fulltext.rank(
            ctx.query.query,
            limit=ctx.depth,
            syntax=False,
            only_ids=eligible.allowed,
            exclude_ids=eligible.hidden if eligible.allowed is None else (),
        )
        found = self._named(ctx.text_ranking)
        ctx.text_named = {note_id: (title, score) for note_id, title, score in found}
        raw = [score for _, _, score in found]
        absolute = [calibrate_bm25(r, self.saturation) for r in raw]
        return [
            ScoutHit(note_id, calibrated, PENDING_LEXICAL)
            for (note_id, _, _), calibrated in zip(
                found, adaptive(raw, absolute, self.share), strict=True
            )
        ]

    def _named(self, ranking: TextRanking) -> list[tuple[str, str, float]]:
        """``(id, title, BM25 score)`` of the ranking's documents, in its order. The link
        graph names them from their keys, so no stored document is read, except a document
        whose note the graph does not know (one being forgotten at this moment, or held by
        an index that is behind the catalog)."""
        named = self.graph.keyed(ranking.keys)
        unknown = {key for key in ranking.keys if key not in named}
        read: dict[int, tuple[str, str]] = {}
        if unknown:
            for hit in self.fulltext.hits(ranking, unknown, snippets=False):
                read[id_key(hit.id)] = (hit.id, hit.title)
        found = []
        for key, (score, _) in zip(ranking.keys, ranking.found, strict=True):
            name = named.get(key) or read.get(key)
            if name is not None:
                found.append((name[0], name[1], float(score)))
        return found

    def describe(self, ctx: ScoutContext, shown: Sequence[Candidate]) -> None:
        """Word the reason of each shown note this scout found (the query words its title
        holds), then give it its highlighted snippet (unless another scout gave it one) and
        name the query words matched in its text in that reason."""
        mine = {c.note_id: c for c in shown if self.name in c.evidence}
        for note_id, c in mine.items():
            if note_id in ctx.text_named:
                title, score = ctx.text_named[note_id]
                _replace(c, PENDING_LEXICAL, self._reason(ctx, title, score))
        if not mine or ctx.text_ranking is None:
            return
        # Read from find()'s ranking: no second search, the same BM25 scores.
        keys = {id_key(note_id) for note_id in mine}
        for hit in self.fulltext.hits(ctx.text_ranking, keys):
            if hit.id not in mine:  # another id with the same 64-bit key
                continue
            c = mine[hit.id]
            brief = self._reason(ctx, hit.title, hit.score)
            full = self._reason(ctx, hit.title, hit.score, hit.snippet)
            c.reasons = [full if r == brief else r for r in c.reasons]
            if c.snippet is None and hit.snippet:
                c.snippet = hit.snippet

    def _reason(self, ctx: ScoutContext, title: str, score: float, snippet: str = "") -> str:
        """The scout's reason for a note: the query words its title holds, and with the
        highlighted ``snippet`` (shown notes only), those its text matched."""
        title_words = _title_words(title)
        in_title = [t for t in ctx.terms if t in title_words]
        in_text = (
            [
                t
                for t in dict.fromkeys(w.lower() for w in _HIGHLIGHT.findall(snippet))
                if t not in STOPWORDS and t not in in_title
            ]
            if snippet  # a shown note's brief reason, worded before its snippet, has none
            else []
        )
        parts = []
        if in_title:
            parts.append(f"matched {_quote(in_title)} in title")
        if in_text:
            parts.append(f"matched {_quote(in_text)} in text")
        detail = "; ".join(parts) or "query words in text"
        return f"lexical: {detail} (BM25 {score:.1f})"


@lru_cache(maxsize=1 << 14)
def _title_words(title: str) -> frozenset[str]:
    """The words of a note title, kept per title: the same notes' titles are matched
    against query after query."""
    return frozenset(words(title))


class ExactAliasScout:
    name = "scout_exact_alias"

    def __init__(self, graph: LinkGraph) -> None:
        self.graph = graph

    def find(self, ctx: ScoutContext) -> list[ScoutHit]:
        text = ctx.query.query.strip().strip("[]\"'")
        return [
            ScoutHit(note, 1.0, f"exact: the query is this note's {how}")
            for note, how in self.graph.exact_matches(text)
            if ctx.eligibility.allows(note)
        ]


class TagsRecencyScout:
    name = "scout_tags_recency"

    def __init__(self, catalog: Catalog, half_life_days: float) -> None:
        self.catalog, self.half_life = catalog, half_life_days

    def find(self, ctx: ScoutContext) -> list[ScoutHit]:
        words_ = ctx.terms
        if not words_:
            return []
        candidates = [*words_, *("-".join(p) for p in itertools.pairwise(words_))]
        hits = []
        depth = ctx.depth + len(ctx.eligibility.hidden)
        for note, updated_at, matched in self.catalog.tagged(candidates, depth * 4):
            if not ctx.eligibility.allows(note):
                continue
            days = _age(updated_at, ctx.now)
            recency = 0.5 ** (days / self.half_life)
            share = min(1.0, len(matched) / max(1, min(3, len(words_))))
            score = 0.6 * share + 0.4 * recency
            reason = f"tags: tagged {_quote(list(matched))}, updated {_describe_age(days)}"
            hits.append(ScoutHit(note, score, reason))
            if len(hits) == ctx.depth:
                break
        return hits


class FreshnessScout:
    """For queries that ask for something recent, the most recently updated notes."""

    name = "scout_freshness"

    def __init__(self, catalog: Catalog, half_life_days: float) -> None:
        self.catalog, self.half_life = catalog, half_life_days

    def find(self, ctx: ScoutContext) -> list[ScoutHit]:
        asked = TIME_WORDS & set(words(ctx.query.query))
        if not asked:
            return []
        eligible = ctx.eligibility
        entries, _ = self.catalog.query(ListQuery(filter=eligible.filter, limit=ctx.depth))
        hits = []
        for entry in entries:
            if not eligible.allows(entry.id):
                continue
            days = _age(entry.updated_at, ctx.now)
            score = 0.5 ** (days / self.half_life)
            word = sorted(asked)[0]
            reason = f"freshness: updated {_describe_age(days)} (the query asks for '{word}')"
            hits.append(ScoutHit(entry.id, score, reason))
        return hits[: ctx.depth]


class TaskContextScout:
    """The notes the caller's task has already been shown (its working memory)."""

    name = "scout_task_context"

    def __init__(self, stats: StatsStore) -> None:
        self.stats = stats

    def find(self, ctx: ScoutContext) -> list[ScoutHit]:
        task = ctx.query.task_id
        if task is None:
            return []
        depth = ctx.depth + len(ctx.eligibility.hidden)
        hits = []
        for item in self.stats.working_memory(task, depth):
            if not ctx.eligibility.allows(item.node_id):
                continue
            score = 1.0 - math.exp(-item.activations / 2)
            times = "once" if item.activations == 1 else f"{item.activations} times"
            reason = f"task: retrieved {times} before in task {task}"
            hits.append(ScoutHit(item.node_id, score, reason))
        return hits[: ctx.depth]

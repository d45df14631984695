"""Full-text changes not yet committed to Tantivy, searchable at once.

A Tantivy commit fsyncs new segment files (tens of milliseconds), so writes do not wait for
one: :class:`~lithos.store.fulltext.FullTextIndex` keeps every change staged since its last
commit in an :class:`Overlay` and searches it beside the on-disk index. A document in the
overlay hides its older copy on disk; a deletion in the overlay hides the document.

The overlay is searched in Python, not with a second (in-RAM) Tantivy index: committing even a
RAM index costs as much as the write it would serve (27 ms measured under load), and a tiny
index's BM25 statistics would make its scores incomparable with the disk's (a term in one of
three documents gets an idf of 0.47, in ten of 10,000 about 6.9). Instead the query is compiled
from Tantivy's own query grammar (``tantivy.parse_query``) into terms and phrases analysed with
the index's ``en_stem`` analyzer, matched with Tantivy's boolean rules, and scored with
Tantivy's BM25 (k1 1.2, b 0.75, field norms quantised as Tantivy stores them) from the
statistics of the on-disk index plus the overlay's own documents: a note scores in the overlay
what it scores once committed (tests/store/test_fulltext_overlay.py checks this). Query
syntax the overlay cannot evaluate this way (prefixes, ranges, sets, sloppy phrases, raw
fields) compiles to None; the caller then commits first and searches the disk alone.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import tantivy

from lithos.domain.tags import tag_key

K1 = 1.2
B = 0.75
TEXT_FIELDS = ("title", "content")


@cache
def _analyzer() -> tantivy.TextAnalyzer:
    """Tantivy's ``en_stem`` analyzer: simple tokens, at most 40 bytes, lower case, stemmed."""
    builder = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
    builder = builder.filter(tantivy.Filter.remove_long(40)).filter(tantivy.Filter.lowercase())
    return builder.filter(tantivy.Filter.stemmer("english")).build()


def analyze(text: str) -> list[tuple[str, int]]:
    """``(term, position)`` of each token Tantivy indexes for ``text`` in a text field."""
    return [(token.text, token.position) for token in _analyzer().pre_tokenize(text).tokens]


def _field_norms() -> list[int]:
    """Tantivy's 256 field-norm values (Lucene's SmallFloat byte4 code, 24 exact values)."""
    values = []
    for code in range(256):
        if code < 24:
            values.append(code)
            continue
        small = code - 24
        bits, shift = small & 0x07, (small >> 3) - 1
        values.append(24 + (bits if shift == -1 else (bits | 0x08) << shift))
    return values


_NORMS = _field_norms()


def stored_length(tokens: int) -> int:
    """A field's token count as Tantivy stores it: the largest field-norm value not above it."""
    low, high = 0, len(_NORMS) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if _NORMS[middle] <= tokens:
            low = middle
        else:
            high = middle - 1
    return _NORMS[low]


@dataclass
class OverlayDoc:
    """A staged document and, once a search needed them, its analysed text fields."""

    id: str
    title: str
    content: str
    path: str
    author: str
    tag_keys: frozenset[str]
    content_hash: str
    updated_at: str
    _positions: dict[str, dict[str, list[int]]] | None = field(default=None, repr=False)
    _lengths: dict[str, int] | None = field(default=None, repr=False)

    def positions(self, name: str) -> dict[str, list[int]]:
        """Term -> positions in field ``name`` (analysed once, on first use)."""
        self._analyse()
        assert self._positions is not None
        return self._positions[name]

    def length(self, name: str) -> int:
        """The number of tokens in field ``name`` (before quantisation)."""
        self._analyse()
        assert self._lengths is not None
        return self._lengths[name]

    def _analyse(self) -> None:
        if self._positions is not None:
            return
        positions: dict[str, dict[str, list[int]]] = {}
        lengths: dict[str, int] = {}
        for name in TEXT_FIELDS:
            tokens = analyze(self.title if name == "title" else self.content)
            terms: dict[str, list[int]] = {}
            for term, position in tokens:
                terms.setdefault(term, []).append(position)
            positions[name], lengths[name] = terms, len(tokens)
        # Benign race: two searches may analyse the same document; both results are equal.
        self._lengths, self._positions = lengths, positions


@dataclass(frozen=True)
class _Entry:
    ticket: int
    doc: OverlayDoc | None  # None: deleted


@dataclass(frozen=True)
class OverlayView:
    """The overlay at one moment: id -> the staged document, or None for a deletion."""

    entries: Mapping[str, OverlayDoc | None]

    @property
    def docs(self) -> list[OverlayDoc]:
        return [doc for doc in self.entries.values() if doc is not None]


class Overlay:
    """Changes staged since the last commit, by note id; the newest change of an id wins.

    Thread-safe. ``put``/``remove`` record a change under its ticket; ``drop_through``
    forgets every change whose ticket a commit has covered (or a failed commit discarded).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._view = OverlayView({})

    def put(self, ticket: int, docs: Iterable[OverlayDoc]) -> None:
        with self._lock:
            for doc in docs:
                self._entries[doc.id] = _Entry(ticket, doc)
            self._publish()

    def remove(self, ticket: int, ids: Iterable[str]) -> None:
        with self._lock:
            for note_id in ids:
                self._entries[note_id] = _Entry(ticket, None)
            self._publish()

    def drop_through(self, ticket: int) -> None:
        with self._lock:
            stale = [i for i, entry in self._entries.items() if entry.ticket <= ticket]
            if not stale:
                return
            for note_id in stale:
                del self._entries[note_id]
            self._publish()

    def view(self) -> OverlayView:
        return self._view  # replaced whole under the lock, never changed in place

    def __len__(self) -> int:
        return len(self._view.entries)

    def _publish(self) -> None:
        self._view = OverlayView({i: entry.doc for i, entry in self._entries.items()})


# -- the query, compiled --------------------------------------------------------------


@dataclass(frozen=True)
class Leaf:
    """A term (one token) or an exact phrase (several) in one text field."""

    field: str
    terms: tuple[str, ...]
    offsets: tuple[int, ...]  # each term's position relative to the first
    boost: float


@dataclass(frozen=True)
class Clause:
    """Tantivy's boolean query: every ``must``, at least one ``should`` when there is no
    ``must``, no ``must_not``; the score is the sum of the matching scoring clauses."""

    must: tuple[Node, ...] = ()
    should: tuple[Node, ...] = ()
    must_not: tuple[Node, ...] = ()
    boost: float = 1.0


Node = Leaf | Clause


class Unsupported(Exception):
    """The query uses syntax the overlay does not evaluate."""


def compile_query(query: str, field_boosts: Mapping[str, float]) -> Node | None:
    """The overlay's form of ``query`` (Tantivy syntax, searched over title and content), or
    None when it uses syntax the overlay cannot evaluate exactly."""
    try:
        return _compile(tantivy.parse_query(query), field_boosts, 1.0)
    except (Unsupported, ValueError):
        return None


def _compile(ast: Mapping[str, Any], boosts: Mapping[str, float], boost: float) -> Node:
    kind = ast.get("type")
    if kind == "boost":
        return _compile(ast["underlying"], boosts, boost * float(ast["boost"]))
    if kind == "literal":
        return _literal(ast, boosts, boost)
    if kind == "bool":
        parts: dict[str, list[Node]] = {"must": [], "should": [], "must_not": []}
        for occur, sub in ast["clauses"]:
            parts[occur or "should"].append(_compile(sub, boosts, 1.0))
        if not parts["must"] and not parts["should"]:
            raise Unsupported("only excluding clauses")
        return Clause(tuple(parts["must"]), tuple(parts["should"]), tuple(parts["must_not"]), boost)
    raise Unsupported(str(kind))


def _literal(ast: Mapping[str, Any], boosts: Mapping[str, float], boost: float) -> Node:
    name = ast.get("field_name")
    if ast.get("prefix") or (name is not None and name not in TEXT_FIELDS):
        raise Unsupported("prefix or raw field")
    tokens = analyze(str(ast["phrase"]))
    if len(tokens) > 1 and ast.get("slop", 0):
        raise Unsupported("sloppy phrase")
    fields = [name] if name else list(TEXT_FIELDS)
    if not tokens:
        return Clause()  # Tantivy's empty query: matches nothing
    first = tokens[0][1]
    terms = tuple(term for term, _ in tokens)
    offsets = tuple(position - first for _, position in tokens)
    leaves = tuple(Leaf(f, terms, offsets, boost * boosts.get(f, 1.0)) for f in fields)
    return leaves[0] if len(leaves) == 1 else Clause(should=leaves)


def leaves(node: Node) -> Iterable[Leaf]:
    if isinstance(node, Leaf):
        yield node
        return
    for part in (*node.must, *node.should, *node.must_not):
        yield from leaves(part)


# -- scoring ------------------------------------------------------------------------


@dataclass(frozen=True)
class Statistics:
    """BM25's corpus statistics: documents, documents per term, mean field lengths."""

    documents: int
    doc_freq: Mapping[tuple[str, str], int]
    mean_length: Mapping[str, float]

    def idf(self, name: str, term: str) -> float:
        n = self.doc_freq.get((name, term), 0)
        return math.log(1.0 + (self.documents - n + 0.5) / (n + 0.5))


def disk_totals(searcher: tantivy.Searcher, schema: tantivy.Schema) -> tuple[int, dict[str, float]]:
    """The number of documents BM25 counts in the on-disk index and each text field's mean
    length, as Tantivy's own scoring uses them. The binding exposes neither, so both are read
    from the explanation of a term query for a term of one of the first documents (its idf
    and document frequency give the count)."""
    documents, means = 0, {}
    for _, address in searcher.search(tantivy.Query.all_query(), limit=8, count=False).hits:
        doc = searcher.doc(address)
        for name in TEXT_FIELDS:
            tokens = analyze(str(doc.get_first(name) or ""))
            if name in means or not tokens:
                continue
            term = tokens[0][0]
            query = tantivy.Query.term_query(schema, name, term, "position")
            hit = searcher.search(query, limit=1, count=False).hits[0][1]
            explanation = query.explain(searcher, hit).to_json()
            means[name] = explained(explanation, "avgdl") or 0.0
            idf = explained(explanation, "idf") or 0.0
            held = int(searcher.doc_freq(name, term))
            documents = round((math.exp(idf) - 1.0) * (held + 0.5) + held - 0.5)
    return documents, means


def overlay_statistics(
    searcher: tantivy.Searcher,
    node: Node,
    disk_documents: int,
    disk_mean: Mapping[str, float],
    docs: Sequence[OverlayDoc],
) -> Statistics:
    """The statistics for ``node``'s terms that the on-disk index will have once ``docs`` are
    committed to it (a replaced document still counts until Tantivy merges it away, as it
    does on disk)."""
    terms = {(leaf.field, term) for leaf in leaves(node) for term in leaf.terms}
    freq = {(name, term): int(searcher.doc_freq(name, term)) for name, term in terms}
    for doc in docs:
        for name, term in terms:
            if term in doc.positions(name):
                freq[(name, term)] += 1
    total = disk_documents + len(docs)
    mean = {}
    for name in TEXT_FIELDS:
        tokens = disk_mean.get(name, 0.0) * disk_documents
        tokens += sum(stored_length(doc.length(name)) for doc in docs)
        mean[name] = tokens / total if total else 0.0
    return Statistics(total, freq, mean)


def score(node: Node, doc: OverlayDoc, stats: Statistics) -> float | None:
    """The BM25 score Tantivy gives ``doc`` for ``node``, or None if it does not match."""
    if isinstance(node, Leaf):
        return _leaf_score(node, doc, stats)
    if any(score(part, doc, stats) is not None for part in node.must_not):
        return None
    total, matched = 0.0, False
    for part in node.must:
        value = score(part, doc, stats)
        if value is None:
            return None
        total, matched = total + value, True
    for part in node.should:
        value = score(part, doc, stats)
        if value is not None:
            total, matched = total + value, True
    return total * node.boost if matched else None


def _leaf_score(leaf: Leaf, doc: OverlayDoc, stats: Statistics) -> float | None:
    positions = doc.positions(leaf.field)
    if len(leaf.terms) == 1:
        frequency = len(positions.get(leaf.terms[0], ()))
    else:
        frequency = _phrase_count(leaf, positions)
    if frequency == 0:
        return None
    idf = sum(stats.idf(leaf.field, term) for term in leaf.terms)
    length = stored_length(doc.length(leaf.field))
    mean = stats.mean_length.get(leaf.field) or float(length) or 1.0
    saturation = frequency / (frequency + K1 * (1.0 - B + B * length / mean))
    return leaf.boost * idf * (K1 + 1.0) * saturation


def _phrase_count(leaf: Leaf, positions: Mapping[str, list[int]]) -> int:
    starts = positions.get(leaf.terms[0])
    if not starts:
        return 0
    later = [set(positions.get(term, ())) for term in leaf.terms[1:]]
    return sum(
        1
        for start in starts
        if all(start + offset in held for offset, held in zip(leaf.offsets[1:], later, strict=True))
    )


def highlights(
    content: str, terms: Collection[str], max_chars: int
) -> tuple[int, int, list[tuple[int, int]]] | None:
    """The stretch of ``content`` of at most ``max_chars`` characters holding the most tokens
    of ``terms`` (starting at the first of them), and the character spans of those tokens;
    None when no token of ``content`` is among ``terms``. The on-disk index's snippet
    generator cannot do this for a staged document: it skips terms the disk does not hold."""
    spans = [
        (token.char_offset_from, token.char_offset_to)
        for token in _analyzer().pre_tokenize(content).tokens
        if token.text in terms
    ]
    if not spans:
        return None
    best, best_count, last = 0, 0, 0
    for first, (start, _) in enumerate(spans):
        last = max(last, first)
        while last + 1 < len(spans) and spans[last + 1][1] - start <= max_chars:
            last += 1
        if last - first + 1 > best_count:
            best, best_count = first, last - first + 1
    start = spans[best][0]
    end = min(len(content), start + max_chars)
    return start, end, [span for span in spans[best : best + best_count] if span[1] <= end]


def passes(
    doc: OverlayDoc,
    tags: Collection[str],
    author: str | None,
    path_prefix: str | None,
    only_ids: Collection[str] | None,
    exclude_ids: Collection[str],
) -> bool:
    """The full-text search filters, as the on-disk query applies them."""
    if only_ids is not None and doc.id not in only_ids:
        return False
    if doc.id in exclude_ids:
        return False
    if author is not None and doc.author != author:
        return False
    if path_prefix and not doc.path.startswith(path_prefix):
        return False
    return all(tag_key(tag) in doc.tag_keys for tag in tags)


def explained(explanation: str, description: str) -> float | None:
    """The value of the first node of a Tantivy explanation whose description starts so."""
    stack = [json.loads(explanation)]
    while stack:
        node = stack.pop(0)
        if str(node.get("description", "")).startswith(description):
            return float(node["value"])
        stack.extend(node.get("details", []))
    return None

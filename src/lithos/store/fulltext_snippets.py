"""Snippets of full-text hits: the fragment of a note's content around its matches, matches in
``**bold**``, cut-off text marked with ``…``, at most :data:`SNIPPET_MAX_CHARS` characters.

Tantivy makes the fragment of a committed document (:func:`render_snippet`), from the
stretch of its content around the query's rarest words (:func:`snippet_window`) rather than
from all of it: Tantivy tokenizes and stems every word it is given, which for the notes of a
real vault cost more than the search itself. A document still staged in the overlay gets the
same shape from the overlay's own highlighting (:func:`overlay_snippet`); a hit shown without
highlighting gets the start of its content (:func:`lead`). Pure functions, no I/O.

In a window of ASCII text :func:`best_fragment` finds the fragment Tantivy would pick without
Tantivy: its generator stems every word of the window, while only the words starting like a
query term need a look, plus a token boundary every :data:`SNIPPET_MAX_CHARS` characters.
"""

from __future__ import annotations

import math
import re
import string
import struct
from array import array
from collections.abc import Collection, Iterable, Mapping
from functools import lru_cache

import tantivy

from lithos.store.fulltext_overlay import analyze, highlights

SNIPPET_MAX_CHARS = 200
# How much text around the best-weighted matches Tantivy's snippet generator reads.
WINDOW_CHARS = 4 * SNIPPET_MAX_CHARS
# Occurrences of one word looked at when placing the window (frequent words weigh little).
_OCCURRENCES_PER_TERM = 8
_WORD = re.compile(r"\w+")
# Tantivy's en_stem tokens in ASCII text: runs of letters and digits, longer ones than this
# dropped (its remove_long filter).
_TOKEN = re.compile(r"[A-Za-z0-9]+")
_TOKEN_CHARS = frozenset(string.ascii_letters + string.digits)
_LONGEST_TOKEN = 39
# Snowball's exceptional forms whose stem does not start like the word ("dying" -> "die").
_IRREGULAR_STARTS = {"die": "dy", "lie": "ly", "tie": "ty"}
_FLOAT32 = struct.Struct("f")


def term_weights(
    terms: Collection[str], documents: int, doc_freq: Mapping[str, int]
) -> dict[str, float]:
    """BM25's inverse document frequency of each term, as Tantivy weighs a match in a snippet."""
    return {
        term: math.log(1 + (documents - doc_freq[term] + 0.5) / (doc_freq[term] + 0.5))
        for term in terms
        if doc_freq.get(term)
    }


# A term looked for in a text: the words that may stem to it, the term, its weight.
Sought = tuple[re.Pattern[str], str, float]
# What placing a window saw of each term's words, by the text of the term's regex and the
# term: the words found stemming to it, in order; the text was read up to the end of the last
# one if there are _OCCURRENCES_PER_TERM of them, to its end otherwise.
Scanned = dict[tuple[str, str], list[re.Match[str]]]


class SnippetTerms:
    """A query's terms as :func:`snippet_window` and :func:`best_fragment` look for them,
    made once for the query's terms and their frequencies rather than once a hit (shared, never
    changed after it is made): the rare terms that place the window (those
    weighing at least half the heaviest one: frequent words weigh little in Tantivy's choice
    of fragment and are costly to look for), the others, used when no rare one occurs, and
    the fragment's terms with their weights (:func:`fragment_weights`)."""

    __slots__ = ("common", "fragment", "rare")

    def __init__(
        self, weights: Mapping[str, float], fragment: Mapping[str, float] | None = None
    ) -> None:
        heaviest = max(weights.values(), default=0.0)
        self.rare = _sought(
            {term: weight for term, weight in weights.items() if 2 * weight >= heaviest}
        )
        self.common = _sought(
            {term: weight for term, weight in weights.items() if 2 * weight < heaviest}
        )
        self.fragment = _sought(fragment or {}, irregular=True)


def _sought(weights: Mapping[str, float], irregular: bool = False) -> list[Sought]:
    """Each term with the words that may stem to it: those starting with the term less its
    last letter ("hoping" -> "hope"), and with ``irregular`` Snowball's "dying", "lying" and
    "tying" too."""
    sought = []
    for term, weight in weights.items():
        sought.append((_starting_with(term[:-1] if len(term) > 2 else term), term, weight))
        if irregular and term in _IRREGULAR_STARTS:
            sought.append((_starting_with(_IRREGULAR_STARTS[term]), term, weight))
    return sought


def snippet_window(
    content: str,
    terms: SnippetTerms,
    lowered: str | None = None,
    scanned: Scanned | None = None,
) -> tuple[int, int] | None:
    """The stretch ``[start, end)`` of ``content``, about :data:`WINDOW_CHARS` long and cut
    at spaces, around the words matching the query's rarest terms (``terms``: the query's
    :class:`SnippetTerms`); None when no word of ``content`` matches a term. ``lowered`` is
    ``content.lower()`` when the caller has it; ``scanned``, when given, is filled with the
    words found on the way, for :func:`best_fragment`.

    Only the rare terms place the window, unless none of them occurs. Tantivy then
    highlights every matching word inside the window."""
    if lowered is None:
        lowered = content.lower()
    if len(lowered) != len(content):  # lower-casing moved the offsets: read everything
        return 0, len(content)
    found = _occurrences(lowered, terms.rare, scanned) or _occurrences(
        lowered, terms.common, scanned
    )
    if not found:
        return None
    found.sort()
    # The stretch of SNIPPET_MAX_CHARS holding the most weight, as Tantivy scores fragments.
    best_at, best, total, first = found[0][0], 0.0, 0.0, 0
    for at, weight in found:
        total += weight
        while at - found[first][0] > SNIPPET_MAX_CHARS:
            total -= found[first][1]
            first += 1
        if total > best:
            best, best_at = total, found[first][0]
    start = max(0, best_at - (WINDOW_CHARS - SNIPPET_MAX_CHARS) // 2)
    end = min(len(content), start + WINDOW_CHARS)
    if start > 0:
        start = content.rfind(" ", 0, start) + 1
    space = content.find(" ", end)
    return start, len(content) if space < 0 else space


def fragment_weights(doc_freq: Mapping[str, int]) -> dict[str, float]:
    """Each term's weight in Tantivy's choice of fragment: 1 / (1 + documents holding it), a
    32-bit float as Tantivy computes it; terms no document holds are left out."""
    return {
        term: _FLOAT32.unpack(_FLOAT32.pack(1.0 / (1.0 + count)))[0]
        for term, count in doc_freq.items()
        if count
    }


def best_fragment(
    window: str,
    terms: SnippetTerms,
    lowered: str | None = None,
    scanned: Scanned | None = None,
    offset: int = 0,
) -> tuple[int, int, list[tuple[int, int]]] | None:
    """``(start, stop, spans)``: the fragment ``window[start:stop]`` Tantivy's snippet generator
    picks in ``window`` with at most :data:`SNIPPET_MAX_CHARS` characters, and the spans of its
    matching words, relative to ``start``. None when ``window`` is not ASCII (Tantivy counts
    bytes and Unicode's letters) or no word of it matches a term.

    Tantivy cuts the text into fragments, each starting at the first token (run of letters
    and digits) that would take the one before past the limit, scores each by summing the
    weights of its matching tokens (``terms.fragment``: :func:`fragment_weights`) in 32-bit
    floats, and keeps the best, the first of equals. ``lowered`` is ``window.lower()`` when
    the caller has it; ``scanned`` what :func:`snippet_window` saw placing ``window`` at
    ``offset`` of the text (its words there are not looked for again)."""
    if not window.isascii():
        return None
    if lowered is None or len(lowered) != len(window):
        lowered = window.lower()
    found = _matches(lowered, terms.fragment, scanned, offset)
    if not found:
        return None
    size, count = len(window), len(found)
    total = array("f", [0.0])  # sums round to 32 bits, as Tantivy's do
    best_total, best = 0.0, (0, 0, 0, 0)
    start = at = 0
    while at < count:
        edge = start + SNIPPET_MAX_CHARS
        boundary = size if edge >= size else _token_ending_after(window, edge, size)
        first, total[0] = at, 0.0
        while at < count and found[at][0] < boundary:
            total[0] += found[at][2]
            at += 1
        if total[0] > best_total:
            best_total, best = total[0], (start, boundary, first, at)
        start = boundary
    start, boundary, first, last = best
    stop = _last_token_end(window, start, boundary)
    return start, stop, [(low - start, high - start) for low, high, _ in found[first:last]]


def _matches(
    lowered: str, sought: Iterable[Sought], scanned: Scanned | None = None, offset: int = 0
) -> list[tuple[int, int, float]]:
    """``(start, end, weight)`` of every word of ``lowered`` that stems to a term, in order.
    A term ``scanned`` holds (:func:`snippet_window` placed ``lowered`` at ``offset`` of the
    text it scanned, cut at spaces) is looked for only past where that scan stopped."""
    found = []
    end = offset + len(lowered)
    for words, term, weight in sought:
        kept = scanned.get((words.pattern, term)) if scanned else None
        start = 0
        if kept is not None:
            for word in kept:
                if offset <= word.start() < end:
                    found.append((word.start() - offset, word.end() - offset, weight))
            if len(kept) < _OCCURRENCES_PER_TERM or kept[-1].end() >= end:
                continue
            start = max(kept[-1].end() - offset, 0)
        for word in words.finditer(lowered, start):
            if _stem(word.group()) == term:
                found.append((word.start(), word.end(), weight))
    found.sort()
    return found


def _token_ending_after(window: str, edge: int, size: int) -> int:
    """Where the first token of ``window`` ending after ``edge`` starts (``size`` if none)."""
    if window[edge] in _TOKEN_CHARS:
        start = edge
        while start and window[start - 1] in _TOKEN_CHARS:
            start -= 1
        token = _TOKEN.match(window, start)
    else:
        token = _TOKEN.search(window, edge)
    while token is not None and token.end() - token.start() > _LONGEST_TOKEN:
        token = _TOKEN.search(window, token.end())
    return size if token is None else token.start()


def _last_token_end(window: str, start: int, end: int) -> int:
    """Where the last token of ``window[start:end]`` ends (there is one)."""
    while True:
        while window[end - 1] not in _TOKEN_CHARS:
            end -= 1
        first = end
        while first > start and window[first - 1] in _TOKEN_CHARS:
            first -= 1
        if end - first <= _LONGEST_TOKEN:
            return end
        end = first


def render_fragment(
    content: str, window: tuple[int, int], fragment: tuple[int, int, list[tuple[int, int]]]
) -> str:
    """:func:`render_snippet` of the fragment :func:`best_fragment` found in the stretch
    ``window`` of ``content``."""
    start, end = window
    text = content[start:end]
    low, high, spans = fragment
    marked = _bold(text, [(low + first, low + last) for first, last in spans], low, high)
    before = _WORD.search(content, 0, start) or _WORD.search(text, 0, low)
    after = _WORD.search(content, end) or _WORD.search(text, high)
    return ("…" if before else "") + marked + ("…" if after else "")


def _bold(text: str, spans: Iterable[tuple[int, int]], start: int, end: int) -> str:
    """``text[start:end]`` with ``spans`` in ``**bold**`` and its whitespace collapsed."""
    parts, cursor = [], start
    for low, high in spans:
        if low < cursor:
            continue
        parts += [text[cursor:low], "**", text[low:high], "**"]
        cursor = high
    parts.append(text[cursor:end])
    return " ".join("".join(parts).split())


def _occurrences(
    lowered: str, sought: Iterable[Sought], scanned: Scanned | None = None
) -> list[tuple[int, float]]:
    """``(offset, weight)`` of the first words of ``lowered`` that stem to each term (not
    Snowball's irregular "dying", "lying" and "tying": :func:`_sought`); with ``scanned``,
    each term's words found are kept there (:data:`Scanned`)."""
    found: list[tuple[int, float]] = []
    for words, term, weight in sought:
        kept: list[re.Match[str]] = []
        for word in words.finditer(lowered):
            if _stem(word.group()) == term:
                found.append((word.start(), weight))
                kept.append(word)
                if len(kept) == _OCCURRENCES_PER_TERM:
                    break
        if scanned is not None:
            scanned[words.pattern, term] = kept
    return found


@lru_cache(maxsize=1 << 12)
def _starting_with(prefix: str) -> re.Pattern[str]:
    """Words (runs of letters and digits) starting with ``prefix``. The literal comes first so
    the regex engine skips ahead to each occurrence; the lookbehind after it then drops an
    occurrence inside a word (a letter or digit before it), in C rather than in Python."""
    literal = re.escape(prefix)
    return re.compile(literal + r"(?<![^\W_]" + literal + r")[^\W_]*")


@lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    """The term Tantivy indexes for one word ("" if it is not exactly one token)."""
    tokens = analyze(word)
    return tokens[0][0] if len(tokens) == 1 else ""


def render_snippet(
    snippet: tantivy.Snippet, content: str, window: tuple[int, int] | None = None
) -> str:
    """The fragment with matches in ``**bold**``; the start of ``content`` if nothing matched.
    ``snippet`` was made from the stretch ``window`` of ``content`` (default: all of it)."""
    ranges = sorted((r.start, r.end) for r in snippet.highlighted())
    if not ranges:
        return lead(content)
    # Highlight offsets are UTF-8 byte offsets into the fragment.
    fragment = snippet.fragment().encode()
    parts, cursor = [], 0
    for low, high in ranges:
        if low < cursor:
            continue
        parts += [fragment[cursor:low], b"**", fragment[low:high], b"**"]
        cursor = high
    parts.append(fragment[cursor:])
    text = b"".join(parts).decode()
    # Mark cut-off text, but not a fragment that only stops short of a final full stop.
    start, end = window or (0, len(content))
    where, source = snippet.fragment_range(), content[start:end].encode()
    before = _WORD.search(content, 0, start) or _WORD.search(
        source[: where.start].decode(errors="ignore")
    )
    after = _WORD.search(content, end) or _WORD.search(source[where.end :].decode(errors="ignore"))
    return ("…" if before else "") + " ".join(text.split()) + ("…" if after else "")


def overlay_snippet(content: str, terms: Collection[str]) -> str:
    """A staged document's snippet, cut and marked as :func:`render_snippet` does."""
    found = highlights(content, terms, SNIPPET_MAX_CHARS)
    if found is None:
        return lead(content)
    start, end, spans = found
    prefix = "…" if _WORD.search(content[:start]) else ""
    suffix = "…" if _WORD.search(content[end:]) else ""
    return prefix + _bold(content, spans, start, end) + suffix


def lead(content: str) -> str:
    # Only the start can be shown: normalising a long note's whole text would cost more than
    # the search (hybrid builds a lead for each of its 100 candidates).
    head = content[: 2 * SNIPPET_MAX_CHARS + 100]
    text = " ".join(head.split())
    if len(text) <= SNIPPET_MAX_CHARS:
        return text if len(head) == len(content) else text + "…"
    cut = text[:SNIPPET_MAX_CHARS].rsplit(" ", 1)[0]
    return cut + "…"

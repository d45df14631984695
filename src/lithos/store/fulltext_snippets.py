"""Snippets of full-text hits: the fragment of a note's content around its matches, matches in
``**bold**``, cut-off text marked with ``…``, at most :data:`SNIPPET_MAX_CHARS` characters.

Tantivy makes the fragment of a committed document (:func:`render_snippet`), from the
stretch of its content around the query's rarest words (:func:`snippet_window`) rather than
from all of it: Tantivy tokenizes and stems every word it is given, which for the notes of a
real vault cost more than the search itself. A document still staged in the overlay gets the
same shape from the overlay's own highlighting (:func:`overlay_snippet`); a hit shown without
highlighting gets the start of its content (:func:`lead`). Pure functions, no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from functools import lru_cache

import tantivy

from lithos.store.fulltext_overlay import analyze, highlights

SNIPPET_MAX_CHARS = 200
# How much text around the best-weighted matches Tantivy's snippet generator reads.
WINDOW_CHARS = 4 * SNIPPET_MAX_CHARS
# Occurrences of one word looked at when placing the window (frequent words weigh little).
_OCCURRENCES_PER_TERM = 8
_WORD = re.compile(r"\w+")


def term_weights(
    terms: Collection[str], documents: int, doc_freq: Mapping[str, int]
) -> dict[str, float]:
    """BM25's inverse document frequency of each term, as Tantivy weighs a match in a snippet."""
    return {
        term: math.log(1 + (documents - doc_freq[term] + 0.5) / (doc_freq[term] + 0.5))
        for term in terms
        if doc_freq.get(term)
    }


def snippet_window(content: str, weights: Mapping[str, float]) -> tuple[int, int] | None:
    """The stretch ``[start, end)`` of ``content``, about :data:`WINDOW_CHARS` long and cut
    at spaces, around the words matching the query's rarest terms (``weights``: stemmed term
    -> weight); None when no word of ``content`` matches a term.

    Only the terms weighing at least half the heaviest one place the window (unless none of
    them occurs): frequent words weigh little in Tantivy's choice of fragment and are costly
    to look for. Tantivy then highlights every matching word inside the window."""
    lowered = content.lower()
    if len(lowered) != len(content):  # lower-casing moved the offsets: read everything
        return 0, len(content)
    heaviest = max(weights.values(), default=0.0)
    rare = {term: weight for term, weight in weights.items() if 2 * weight >= heaviest}
    found = _occurrences(lowered, rare) or _occurrences(
        lowered, {term: weight for term, weight in weights.items() if term not in rare}
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


def _occurrences(lowered: str, weights: Mapping[str, float]) -> list[tuple[int, float]]:
    """``(offset, weight)`` of the first words of ``lowered`` that stem to each term. A word
    stemming to a term starts with the term less its last letter ("dying" -> "die")."""
    found: list[tuple[int, float]] = []
    for term, weight in weights.items():
        seen = 0
        for word in _starting_with(term[:-1] if len(term) > 2 else term).finditer(lowered):
            if _stem(word.group()) == term:
                found.append((word.start(), weight))
                seen += 1
                if seen == _OCCURRENCES_PER_TERM:
                    break
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
    parts, cursor = [], start
    for low, high in spans:
        if low < cursor:
            continue
        parts += [content[cursor:low], "**", content[low:high], "**"]
        cursor = high
    parts.append(content[cursor:end])
    prefix = "…" if _WORD.search(content[:start]) else ""
    suffix = "…" if _WORD.search(content[end:]) else ""
    return prefix + " ".join("".join(parts).split()) + suffix


def lead(content: str) -> str:
    # Only the start can be shown: normalising a long note's whole text would cost more than
    # the search (hybrid builds a lead for each of its 100 candidates).
    head = content[: 2 * SNIPPET_MAX_CHARS + 100]
    text = " ".join(head.split())
    if len(text) <= SNIPPET_MAX_CHARS:
        return text if len(head) == len(content) else text + "…"
    cut = text[:SNIPPET_MAX_CHARS].rsplit(" ", 1)[0]
    return cut + "…"

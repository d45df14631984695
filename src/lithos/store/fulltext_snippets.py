"""Snippets of full-text hits: the fragment of a note's content around its matches, matches in
``**bold**``, cut-off text marked with ``…``, at most :data:`SNIPPET_MAX_CHARS` characters.

Tantivy makes the fragment of a committed document (:func:`render_snippet`); a document still
staged in the overlay gets the same shape from the overlay's own highlighting
(:func:`overlay_snippet`); a hit shown without highlighting gets the start of its content
(:func:`lead`). Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Collection

import tantivy

from lithos.store.fulltext_overlay import highlights

SNIPPET_MAX_CHARS = 200
_WORD = re.compile(r"\w+")


def render_snippet(snippet: tantivy.Snippet, content: str) -> str:
    """The fragment with matches in ``**bold**``; the start of ``content`` if nothing matched."""
    ranges = sorted((r.start, r.end) for r in snippet.highlighted())
    if not ranges:
        return lead(content)
    # Highlight offsets are UTF-8 byte offsets into the fragment.
    fragment = snippet.fragment().encode()
    parts, cursor = [], 0
    for start, end in ranges:
        if start < cursor:
            continue
        parts += [fragment[cursor:start], b"**", fragment[start:end], b"**"]
        cursor = end
    parts.append(fragment[cursor:])
    text = b"".join(parts).decode()
    # Mark cut-off text, but not a fragment that only stops short of a final full stop.
    where, source = snippet.fragment_range(), content.strip().encode()
    prefix = "…" if _WORD.search(source[: where.start].decode(errors="ignore")) else ""
    suffix = "…" if _WORD.search(source[where.end :].decode(errors="ignore")) else ""
    return prefix + " ".join(text.split()) + suffix


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

"""Chunks: the units of text that semantic search embeds and ranks.

A note is split into chunks on paragraph boundaries so that a hit points at the passage that
matched, not at a whole document whose meaning is averaged away. Search works on chunks; callers
deduplicate the hits to notes with :func:`best_per_note`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol, TypeVar

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_PARAGRAPH_SEPARATOR = "\n\n"
_SENTENCE_SEPARATOR = " "


# Bump when chunk_text would cut the same text differently: stored chunks are then re-derived.
CHUNKER_VERSION = 1


def chunk_text(text: str, target: int = 500, maximum: int = 1000) -> list[str]:
    """Split Markdown ``text`` into chunks of about ``target`` characters.

    Contract:

    - Paragraphs (separated by blank lines) are packed in order into a chunk while the chunk
      stays within ``target`` characters; paragraphs are joined by one blank line.
    - No chunk is longer than ``maximum``. A paragraph longer than ``maximum`` is split at
      sentence ends; a sentence longer than ``maximum`` at the last whitespace before the limit,
      or exactly at the limit when there is none.
    - Chunks are stripped and never empty; whitespace-only text gives ``[]``.
    - Deterministic: the same arguments always give the same chunks.

    Raises ``ValueError`` unless ``0 < target <= maximum``.
    """
    if not 0 < target <= maximum:
        raise ValueError(f"need 0 < target <= maximum, got target={target}, maximum={maximum}")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    paragraphs = (part.strip() for part in _PARAGRAPH_BREAK.split(text))
    pieces = (
        piece
        for paragraph in paragraphs
        if paragraph
        for piece in _split_paragraph(paragraph, target, maximum)
    )
    return list(_pack(pieces, target, _PARAGRAPH_SEPARATOR))


def chunk_hash(text: str) -> str:
    """The sha256 hex digest of ``text`` (UTF-8): the identity of a chunk's content."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ChunkHit:
    """One chunk that matched a semantic query.

    ``similarity`` is the cosine similarity of the query and the chunk, clipped to ``[0, 1]``.
    """

    note_id: str
    chunk_index: int
    text: str
    similarity: float


@dataclass(frozen=True)
class RankedChunk:
    """A chunk's place in a semantic ranking, before its text is read: enough to fuse
    rankings and to read the text of the few chunks that are shown."""

    note_id: str
    chunk_index: int
    chunk_hash: str
    similarity: float


class _Scored(Protocol):
    @property
    def note_id(self) -> str: ...

    @property
    def similarity(self) -> float: ...


Hit = TypeVar("Hit", bound=_Scored)


def best_per_note(hits: Iterable[Hit], limit: int) -> list[Hit]:
    """The best hit of each note, best first, at most ``limit`` of them.

    Ties keep the order of ``hits``, so the result is deterministic for a deterministic input.
    """
    best: dict[str, Hit] = {}
    for hit in hits:
        held = best.get(hit.note_id)
        if held is None or hit.similarity > held.similarity:
            best[hit.note_id] = hit
    ranked = sorted(best.values(), key=lambda hit: hit.similarity, reverse=True)
    return ranked[: max(limit, 0)]


def _split_paragraph(paragraph: str, target: int, maximum: int) -> Iterator[str]:
    if len(paragraph) <= maximum:
        yield paragraph
        return
    sentences = (
        piece
        for sentence in _SENTENCE_END.split(paragraph)
        for piece in _hard_split(sentence, maximum)
    )
    yield from _pack(sentences, target, _SENTENCE_SEPARATOR)


def _hard_split(sentence: str, maximum: int) -> Iterator[str]:
    rest = sentence.strip()
    while len(rest) > maximum:
        cut = max(rest.rfind(space, maximum // 2, maximum + 1) for space in " \n\t")
        if cut <= 0:
            cut = maximum
        head, rest = rest[:cut].strip(), rest[cut:].strip()
        if head:
            yield head
    if rest:
        yield rest


def _pack(pieces: Iterable[str], target: int, separator: str) -> Iterator[str]:
    """Join consecutive pieces while the result stays within ``target``.

    A piece already longer than ``target`` becomes a chunk of its own, so the longest chunk is
    ``max(target, longest piece)``.
    """
    current = ""
    for piece in pieces:
        if not current:
            current = piece
        elif len(current) + len(separator) + len(piece) <= target:
            current = current + separator + piece
        else:
            yield current
            current = piece
    if current:
        yield current

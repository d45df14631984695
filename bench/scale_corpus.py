"""A vault of up to 100,000 notes made of real text, for the scale benchmark (bench/scale.py).

The three real corpora hold 15,720 documents (3,112 PowerShell pages, 7,425 tldr pages, 5,183
SciFact abstracts), so larger vaults are composed from their pieces:

- a *piece* is one tldr page (its title and body), one SciFact abstract (title and text) or one
  ``##`` section of a PowerShell page (titled "page title: section heading"; the text before the
  first ``##`` is the page's own piece), taken verbatim;
- note ``i`` draws 1, 2 or 3 pieces (probabilities 0.5 / 0.35 / 0.15) uniformly from the pool of
  every piece with a seeded generator (seed 100_000 by default), so the same ``count`` always
  gives the same notes, and a smaller vault is a prefix of a larger one;
- its title is its first piece's title, made unique by a " (n)" suffix when an earlier note took
  it; its body is each piece under a ``##`` heading of the piece's title; its frontmatter holds
  the title and the source corpora as tags (no id: the import assigns one);
- it lives in ``knowledge/<source of its first piece>/<i // 1000>/``, at most 1,000 notes a folder.

Pieces are reused (each about six times at 100,000 notes), always in new combinations, so no two
notes have the same text, and chunk boundaries (hence chunk hashes) mostly differ too. Nothing
here is committed: :func:`write_vault` writes the folder in a few seconds from the read-only
archives in ../shared/data.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench import corpus, scifact

PIECES_PER_NOTE = (1, 2, 3)
PIECE_ODDS = (0.5, 0.35, 0.15)
SEED = 100_000
NOTES_PER_FOLDER = 1000
_SECTION = re.compile(r"^###? ", re.MULTILINE)
MIN_PIECE_CHARS = 80


@dataclass(frozen=True)
class Piece:
    source: str  # "powershell", "tldr" or "scifact"
    title: str
    text: str


@dataclass(frozen=True)
class Note:
    path: str  # relative to knowledge/
    title: str
    text: str  # the whole file: frontmatter and body


def pieces(unpacked: list[corpus.Page]) -> list[Piece]:
    """Every piece of the three corpora, in a fixed order (``unpacked`` from corpus.unpack)."""
    found: list[Piece] = []
    for page in unpacked:
        title, body = corpus.title_and_body(page)
        if page.source == "tldr":
            body = body.split("\n", 1)[1] if body.startswith("# ") else body
            found.append(Piece("tldr", title, body.strip()))
            continue
        head, *sections = _SECTION.split(body)
        head = "\n".join(line for line in head.splitlines() if not line.startswith("# "))
        found.extend(_piece("powershell", title, head))
        for section in sections:
            heading, _, text = section.partition("\n")
            found.extend(_piece("powershell", f"{title}: {heading.strip()}", text))
    for _, (title, text) in sorted(scifact.load().corpus.items()):
        found.extend(_piece("scifact", title.strip() or "SciFact abstract", text))
    return found


def _piece(source: str, title: str, text: str) -> list[Piece]:
    """The piece, or none when its text is too short to stand as one (a bare heading)."""
    text = text.strip()
    return [Piece(source, title, text)] if len(text) >= MIN_PIECE_CHARS else []


def notes(pool: list[Piece], count: int, seed: int = SEED) -> list[Note]:
    """The first ``count`` notes composed from ``pool`` (see the module docstring)."""
    # Two streams, each drawn in note order, so the first notes never depend on ``count``.
    sizes = np.random.default_rng([seed, 0]).choice(PIECES_PER_NOTE, size=count, p=PIECE_ODDS)
    picks = np.random.default_rng([seed, 1]).integers(0, len(pool), size=int(sizes.sum()))
    used: Counter[str] = Counter()
    made: list[Note] = []
    start = 0
    for i, size in enumerate(sizes):
        chosen = [pool[p] for p in picks[start : start + size]]
        start += size
        base = chosen[0].title
        used[base] += 1
        title = base if used[base] == 1 else f"{base} ({used[base]})"
        tags = sorted({piece.source for piece in chosen})
        body = "\n\n".join(f"## {piece.title}\n\n{piece.text}" for piece in chosen)
        text = f"---\ntitle: {json.dumps(title)}\ntags: {json.dumps(tags)}\n---\n\n{body}\n"
        path = f"{chosen[0].source}/{i // NOTES_PER_FOLDER:03d}/note-{i:06d}.md"
        made.append(Note(path, title, text))
    return made


def write_vault(count: int, into: Path, seed: int = SEED) -> list[Note]:
    """Write the first ``count`` notes as Markdown files under ``into``; returns them."""
    with tempfile.TemporaryDirectory(prefix="lithos-scale-corpus-") as tmp:
        pool = pieces(corpus.unpack(Path(tmp)))
    made = notes(pool, count, seed)
    for note in made:
        target = into / note.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(note.text, encoding="utf-8")
    return made

"""The composed 100,000-note vault of bench/scale_corpus.py: deterministic, real text, unique
titles, valid frontmatter, a smaller vault a prefix of a larger one."""

from __future__ import annotations

from pathlib import Path

from bench import corpus, scale_corpus
from bench.scale_corpus import Piece
from lithos.domain.notes import split_frontmatter

POOL = [Piece("tldr", f"tool {i % 7}", " ".join([f"Real text number {i}."] * 8)) for i in range(40)]


def test_notes_are_deterministic_and_a_smaller_vault_is_a_prefix() -> None:
    small = scale_corpus.notes(POOL, 50)
    large = scale_corpus.notes(POOL, 200)
    assert small == large[:50]
    assert scale_corpus.notes(POOL, 200) == large
    assert scale_corpus.notes(POOL, 200, seed=1) != large


def test_titles_are_unique_and_each_piece_is_verbatim_under_its_heading() -> None:
    made = scale_corpus.notes(POOL, 300)
    assert len({note.title for note in made}) == 300
    assert len({note.path for note in made}) == 300
    for note in made[:20]:
        metadata, body = split_frontmatter(note.text)
        assert metadata["title"] == note.title
        assert metadata["tags"] == ["tldr"]
        sections = body.strip().split("## ")[1:]
        assert 1 <= len(sections) <= 3
        for section in sections:
            heading, _, text = section.partition("\n\n")
            assert Piece("tldr", heading, text.strip()) in POOL


def test_powershell_pages_are_cut_at_their_headings(tmp_path: Path) -> None:
    page = tmp_path / "Get-Thing.md"
    page.write_text(
        "---\ntitle: Get-Thing\n---\n# Get-Thing\n\n## SYNOPSIS\n\nGets a thing from the place"
        " where things are kept, one at a time, as objects with properties.\n\n"
        "## PARAMETERS\n\n### -Name\n\n"
        "The name of the thing to get; wildcards are accepted, and an empty name is an error.\n"
        "\n### -Tiny\n\nshort\n",
        encoding="utf-8",
    )
    found = scale_corpus.pieces([corpus.Page("powershell", "powershell/Get-Thing.md", page)])
    own = [piece for piece in found if piece.source == "powershell"]
    assert [piece.title for piece in own] == ["Get-Thing: SYNOPSIS", "Get-Thing: -Name"]
    assert own[1].text.startswith("The name of the thing")
    assert any(piece.source == "scifact" for piece in found)  # the abstracts follow

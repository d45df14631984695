"""Full-text snippets of real pages stay what they were: 774 pages of the benchmark corpus
(PowerShell reference pages, repeated across versions, and tldr pages), 36 searches, every
hit's snippet compared with the one pinned in tests/fixtures/snippets (see make.py there)."""

from __future__ import annotations

import json
import lzma
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lithos.store.fulltext import FullTextIndex, id_key
from tests.fixtures.snippets.make import documents

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "snippets"
PINNED: list[dict[str, Any]] = json.loads((FIXTURE / "snippets.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FullTextIndex]:
    with lzma.open(FIXTURE / "pages.json.xz", "rt", encoding="utf-8") as source:
        pages = json.load(source)
    with FullTextIndex(tmp_path_factory.mktemp("snippets") / "fulltext") as index:
        index.upsert(documents(pages))
        yield index


def test_the_sample_repeats_pages_and_most_snippets_highlight() -> None:
    """The pins cover what the code special-cases: identical texts among one search's hits,
    hits without a highlight, and a search without hits."""
    with lzma.open(FIXTURE / "pages.json.xz", "rt", encoding="utf-8") as source:
        bodies = {note_id: body for note_id, _, _, body in json.load(source)}
    repeated = [
        search
        for search in PINNED
        if len({bodies[note_id] for note_id, _ in search["hits"]}) < len(search["hits"])
    ]
    snippets = [snippet for search in PINNED for _, snippet in search["hits"]]
    assert len(repeated) >= 10
    assert sum("**" in snippet for snippet in snippets) >= 300
    assert any("**" not in snippet for snippet in snippets)
    assert any(not search["hits"] for search in PINNED)


@pytest.mark.parametrize("pinned", PINNED, ids=lambda pinned: repr(pinned["query"]))
def test_snippets_are_the_pinned_ones(sample: FullTextIndex, pinned: dict[str, Any]) -> None:
    hits = sample.search(
        pinned["query"],
        limit=pinned["limit"],
        syntax=pinned["syntax"],
        highlight=pinned["highlight"],
    )
    assert [[hit.id, hit.snippet] for hit in hits] == pinned["hits"]


@pytest.mark.parametrize("pinned", PINNED[:20], ids=lambda pinned: repr(pinned["query"]))
def test_some_hits_read_alone_get_the_same_snippets(
    sample: FullTextIndex, pinned: dict[str, Any]
) -> None:
    """Hybrid reads only the fused hits of a ranking: every other one here."""
    ranking = sample.rank(pinned["query"], limit=pinned["limit"], syntax=pinned["syntax"])
    wanted = [note_id for note_id, _ in pinned["hits"]][::2]
    hits = sample.hits(ranking, {id_key(note_id) for note_id in wanted})
    expected = [hit for hit in pinned["hits"] if hit[0] in wanted]
    assert [[hit.id, hit.snippet] for hit in hits] == expected

"""The lexical scout names its BM25 ranking from the link graph instead of reading stored
Tantivy documents: the same hits as reading them, after writes, deletes and hand edits, on a
real app (real SQLite, Tantivy and vector store; the fake embedder)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

import pytest
from fastmcp import Client

from lithos.app import LithosApp
from lithos.domain.retrieval import RetrievalQuery, ScoutHit
from lithos.domain.timestamps import utc_now
from lithos.retrieval.context import Eligibility, ScoutContext
from lithos.retrieval.scouts import LexicalScout
from lithos.services.graph import LinkGraph
from lithos.store.fulltext import FullTextDoc
from tests.support import call

QUERIES = ["retry backoff", "jitter", "pump sizing cold", "sourdough oven", "backoff pump"]


class _NoNames:
    """A graph that knows no note: the scout then reads every stored document, as it did
    before it asked the graph."""

    def keyed(self, keys: Iterable[int]) -> dict[int, tuple[str, str]]:
        return {}


def _scout(app: LithosApp) -> LexicalScout:
    [scout] = [s for s in app.retrieval.phase_a if isinstance(s, LexicalScout)]
    return scout


def _stored_reader(scout: LexicalScout) -> LexicalScout:
    graph = cast(LinkGraph, _NoNames())
    return LexicalScout(scout.fulltext, graph, scout.saturation, scout.share)


def _find(scout: LexicalScout, query: str, eligibility: Eligibility | None = None) -> list:
    ctx = ScoutContext(
        RetrievalQuery(query), eligibility or Eligibility(), utc_now(), 100, _no_embedding
    )
    return scout.find(ctx)


def _no_embedding(text: str) -> Any:
    raise AssertionError("the lexical scout never embeds")


@pytest.fixture
def stored_reads(app: LithosApp, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many documents each read of stored documents asked for (all: -1)."""
    reads: list[int] = []
    hits = app.fulltext.hits

    def counted(ranking: Any, keys: Any = None, *args: Any, **kwargs: Any) -> Any:
        reads.append(-1 if keys is None else len(keys))
        return hits(ranking, keys, *args, **kwargs)

    monkeypatch.setattr(app.fulltext, "hits", counted)
    return reads


async def _write(client: Client, title: str, content: str) -> str:
    result = await call(client, "lithos_write", agent="a", title=title, content=content)
    return str(result["id"])


def _same_as_stored(app: LithosApp, reads: list[int]) -> list[list[ScoutHit]]:
    scout, reader = _scout(app), _stored_reader(_scout(app))
    found = []
    for query in QUERIES:
        reads.clear()
        named = _find(scout, query)
        assert reads == [], f"{query!r} read stored documents"
        assert named == _find(reader, query), query
        found.append(named)
    return found


async def test_names_match_the_stored_documents_after_writes_deletes_and_hand_edits(
    client: Client, app: LithosApp, stored_reads: list[int]
):
    backoff = await _write(client, "Exponential backoff", "Retry with backoff and jitter.")
    pump = await _write(client, "Pump sizing", "pump sizing for cold climates and heat load")
    bread = await _write(client, "Bread", "sourdough loaves in a hot oven, retry if flat")
    first = _same_as_stored(app, stored_reads)
    assert {h.note_id for h in first[0]} == {backoff, bread}
    assert "matched 'backoff' in title" in first[0][0].reason

    await call(client, "lithos_delete", id=bread, agent="a")
    after_delete = _same_as_stored(app, stored_reads)
    assert bread not in {h.note_id for hits in after_delete for h in hits}

    # A person renames the pump note by hand: its new title counts at once.
    [entry] = app.catalog.get_many([pump]).values()
    file = app.config.knowledge_dir / entry.path
    file.write_text(file.read_text().replace("Pump sizing", "Cold pump"), encoding="utf-8")
    app.indexer.sync_paths([entry.path])
    [pump_hit] = [h for h in _same_as_stored(app, stored_reads)[2] if h.note_id == pump]
    assert "matched 'pump', 'cold' in title" in pump_hit.reason


async def test_a_note_is_named_as_soon_as_its_write_returns(
    client: Client, app: LithosApp, stored_reads: list[int]
):
    for n in range(3):
        note = await _write(client, f"Jitter {n}", "spread retries with jitter")
        hits = _find(_scout(app), "jitter")
        assert note in {h.note_id for h in hits}
        assert stored_reads == []
    [newest] = [h for h in hits if h.note_id == note]
    assert newest.reason.startswith("lexical: matched 'jitter' in title")


async def test_a_document_the_graph_does_not_know_is_read_from_the_index(
    client: Client, app: LithosApp, stored_reads: list[int]
):
    """An index ahead of the catalog (here: a document put in the index alone) still names
    its hit, from the stored document."""
    known = await _write(client, "Backoff", "retry with backoff")
    stray = FullTextDoc("stray", "Stray backoff", "backoff", "stray.md", "", (), "h", "")
    app.fulltext.upsert([stray])
    hits = _find(_scout(app), "backoff")
    assert {h.note_id for h in hits} == {known, "stray"}
    assert stored_reads == [1]
    assert hits == _find(_stored_reader(_scout(app)), "backoff")
    [read] = [h for h in hits if h.note_id == "stray"]
    assert "matched 'backoff' in title" in read.reason


async def test_eligibility_still_narrows_inside_the_index(client: Client, app: LithosApp):
    shown = await _write(client, "Backoff one", "retry with backoff")
    hidden = await _write(client, "Backoff two", "retry with backoff")
    hits = _find(_scout(app), "backoff", Eligibility(hidden=frozenset({hidden})))
    assert [h.note_id for h in hits] == [shown]

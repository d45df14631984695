"""The lexical scout names its BM25 ranking from the link graph instead of reading stored
Tantivy documents: the same hits and names (the titles its reasons are worded from, for the
notes shown) as reading them, after writes, deletes and hand edits, on a real app (real
SQLite, Tantivy and vector store; the fake embedder)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple, cast

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


class Found(NamedTuple):
    """A hit, and the title and BM25 score its reason is worded from when it is shown."""

    hit: ScoutHit
    title: str
    bm25: float


def _find(scout: LexicalScout, query: str, eligibility: Eligibility | None = None) -> list[Found]:
    ctx = ScoutContext(
        RetrievalQuery(query), eligibility or Eligibility(), utc_now(), 100, _no_embedding
    )
    hits = scout.find(ctx)
    assert set(ctx.text_named) == {h.note_id for h in hits}
    return [Found(h, *ctx.text_named[h.note_id]) for h in hits]


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


def _same_as_stored(app: LithosApp, reads: list[int]) -> list[list[Found]]:
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
    assert {f.hit.note_id for f in first[0]} == {backoff, bread}
    assert first[0][0].title == "Exponential backoff"

    await call(client, "lithos_delete", id=bread, agent="a")
    after_delete = _same_as_stored(app, stored_reads)
    assert bread not in {f.hit.note_id for found in after_delete for f in found}

    # A person renames the pump note by hand: its new title counts at once.
    [entry] = app.catalog.get_many([pump]).values()
    file = app.config.knowledge_dir / entry.path
    file.write_text(file.read_text().replace("Pump sizing", "Cold pump"), encoding="utf-8")
    app.indexer.sync_paths([entry.path])
    [pump_hit] = [f for f in _same_as_stored(app, stored_reads)[2] if f.hit.note_id == pump]
    assert pump_hit.title == "Cold pump"


async def test_a_note_is_named_as_soon_as_its_write_returns(
    client: Client, app: LithosApp, stored_reads: list[int]
):
    for n in range(3):
        note = await _write(client, f"Jitter {n}", "spread retries with jitter")
        found = _find(_scout(app), "jitter")
        assert note in {f.hit.note_id for f in found}
        assert stored_reads == []
    [newest] = [f for f in found if f.hit.note_id == note]
    assert newest.title == "Jitter 2"


async def test_a_document_the_graph_does_not_know_is_read_from_the_index(
    client: Client, app: LithosApp, stored_reads: list[int]
):
    """An index ahead of the catalog (here: a document put in the index alone) still names
    its hit, from the stored document."""
    known = await _write(client, "Backoff", "retry with backoff")
    stray = FullTextDoc("stray", "Stray backoff", "backoff", "stray.md", "", (), "h", "")
    app.fulltext.upsert([stray])
    found = _find(_scout(app), "backoff")
    assert {f.hit.note_id for f in found} == {known, "stray"}
    assert stored_reads == [1]
    assert found == _find(_stored_reader(_scout(app)), "backoff")
    [read] = [f for f in found if f.hit.note_id == "stray"]
    assert read.title == "Stray backoff"


async def test_eligibility_still_narrows_inside_the_index(client: Client, app: LithosApp):
    shown = await _write(client, "Backoff one", "retry with backoff")
    hidden = await _write(client, "Backoff two", "retry with backoff")
    found = _find(_scout(app), "backoff", Eligibility(hidden=frozenset({hidden})))
    assert [f.hit.note_id for f in found] == [shown]

"""The vector scout ranks without reading a chunk text; describe() gives the shown notes it
ranked its best chunk's text, as the snippet find() used to attach: real app (real SQLite,
Tantivy and vector store; the fake embedder)."""

from __future__ import annotations

from typing import Any

import pytest
from fastmcp import Client

from lithos.app import LithosApp
from lithos.domain.retrieval import Candidate, RetrievalQuery
from lithos.domain.timestamps import utc_now
from lithos.retrieval.context import Eligibility, ScoutContext
from lithos.retrieval.scouts import VectorScout
from tests.support import call

# Several chunks each (chunks of ~500 characters), the closest one last.
NOTES = {
    "Garden": "Tomatoes want sun. " * 40 + "\n\n" + "Prune the apple tree in winter. " * 8,
    "Orchard": "Pear rows in spring. " * 40 + "\n\n" + "Apple tree, winter pruning. " * 8,
    "Kitchen": "Bake bread at dawn. " * 40 + "\n\n" + "An apple tree pie for winter. " * 8,
}


def _scout(app: LithosApp) -> VectorScout:
    [scout] = [s for s in app.retrieval.phase_a if isinstance(s, VectorScout)]
    return scout


def _ctx(app: LithosApp, query: str, limit: int) -> ScoutContext:
    return ScoutContext(
        RetrievalQuery(query, limit=limit), Eligibility(), utc_now(), 50, app.vectors.embed_query
    )


@pytest.fixture
def text_reads(app: LithosApp, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The notes of each read of chunk texts from the vector store."""
    reads: list[list[str]] = []
    texts = app.vectors.texts

    def counted(ranked: Any) -> Any:
        reads.append([chunk.note_id for chunk in ranked])
        return texts(ranked)

    monkeypatch.setattr(app.vectors, "texts", counted)
    return reads


async def _write_notes(client: Client, app: LithosApp) -> dict[str, str]:
    ids = {}
    for title, content in NOTES.items():
        result = await call(client, "lithos_write", agent="a", title=title, content=content)
        ids[title] = str(result["id"])
    assert app.embedding.wait_idle(10)
    return ids


async def test_find_reads_no_text_and_describe_reads_the_shown_best_chunks(
    client: Client, app: LithosApp, text_reads: list[list[str]]
):
    ids = await _write_notes(client, app)
    query = "winter pruning of the apple tree"
    ctx = _ctx(app, query, limit=2)
    hits = _scout(app).find(ctx)
    assert text_reads == []
    assert {h.note_id for h in hits} == set(ids.values())
    assert all(h.snippet is None for h in hits)
    # As many notes as can be shown keep their best chunk for describe().
    best = app.vectors.search_notes(ctx.query_vectors(), 2)
    assert list(ctx.shown_chunks) == [h.note_id for h in best]
    text_reads.clear()  # search_notes read those texts

    shown = [Candidate(h.note_id) for h in hits]
    _scout(app).describe(ctx, shown)
    assert text_reads == [[h.note_id for h in best]]
    snippets = {c.note_id: c.snippet for c in shown}
    for hit in best:
        assert snippets[hit.note_id] == hit.text
        assert "apple tree" in hit.text.lower() and "sun" not in hit.text.lower()
    # The third note was not among the best two: no text of it is read or given.
    [third] = set(ids.values()) - {h.note_id for h in best}
    assert snippets[third] is None


async def test_describe_keeps_a_snippet_and_skips_a_chunk_changed_since_ranked(
    client: Client, app: LithosApp, text_reads: list[list[str]]
):
    ids = await _write_notes(client, app)
    ctx = _ctx(app, "apple tree winter", limit=3)
    _scout(app).find(ctx)
    kept = Candidate(ids["Garden"], snippet="from another scout")
    changed, fresh = Candidate(ids["Orchard"]), Candidate(ids["Kitchen"])
    await call(
        client, "lithos_write", agent="a", id=ids["Orchard"], title="Orchard", content="Pears."
    )
    _scout(app).describe(ctx, [kept, changed, fresh])
    assert text_reads == [[ids["Orchard"], ids["Kitchen"]]]
    assert kept.snippet == "from another scout"
    assert changed.snippet is None  # its ranked chunk is gone: the lead or lexical speaks
    assert fresh.snippet is not None and "apple tree pie" in fresh.snippet


async def test_retrieve_shows_the_best_chunk_of_the_notes_the_vector_scout_ranked(
    client: Client, app: LithosApp
):
    """Its text comes before the lexical scout's highlighted snippet, as when find() gave it."""
    await _write_notes(client, app)
    query = "apple tree winter"
    result = await app.retrieval.retrieve(RetrievalQuery(query))
    best = {h.note_id: h.text for h in app.vectors.search_notes(app.vectors.embed_query(query), 10)}
    found = [r for r in result.results if "scout_vector" in r.scouts]
    assert len(found) >= 2
    assert any("scout_lexical" in r.scouts for r in found)
    for r in found:
        assert r.snippet == best[r.id][:300] and "**" not in r.snippet

"""Each index records how it was derived; a change of model, chunking or format re-derives
what depends on it at start-up, and nothing else."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lithos.app import LithosApp
from lithos.services.knowledge import WriteRequest
from tests.fakes import HashingEmbedder
from tests.support import make_app

LONG = " ".join(f"Sentence number {i} says something about the topic." for i in range(40))
SHORT = "One short line."


def chunking(size: int) -> dict[str, int]:
    return {"search.chunk_size": size, "search.chunk_max": size * 2}


def started(data_dir: Path, embedder: HashingEmbedder, size: int) -> LithosApp:
    app = make_app(data_dir, embedder=embedder, **chunking(size))
    app.start(watch=False)
    assert app.embedding.wait_idle(timeout=30)
    return app


def test_changing_chunk_size_rechunks_and_embeds_only_new_chunk_text(data_dir: Path):
    app = started(data_dir, HashingEmbedder(), 50)
    long = asyncio.run(app.knowledge.write(WriteRequest(agent="a", title="Long", content=LONG)))
    short = asyncio.run(app.knowledge.write(WriteRequest(agent="a", title="S", content=SHORT)))
    assert app.embedding.wait_idle(timeout=30)
    before = app.vectors.chunks(long["id"])
    short_before = app.vectors.chunks(short["id"])
    assert len(short_before) == 1
    app.close()

    embedder = HashingEmbedder()
    again = started(data_dir, embedder, 400)
    try:
        report = again.last_reconcile
        assert report is not None and report.rederived == ["vectors"]
        assert report.vectors_fixed == 2 and report.fulltext_fixed == 0
        after = again.vectors.chunks(long["id"])
        assert len(after) < len(before)
        assert all(len(chunk) <= 800 for chunk in after)
        assert again.vectors.chunks(short["id"]) == short_before
        # Chunk text that did not change (the short note's) came from the vector cache.
        assert sorted(embedder.embedded_texts) == sorted(set(after) - set(before))
    finally:
        again.close()

    unchanged = started(data_dir, HashingEmbedder(), 400)
    try:
        assert unchanged.last_reconcile is not None
        assert unchanged.last_reconcile.rederived == [] and unchanged.indexer.applied == 0
    finally:
        unchanged.close()


def test_an_index_derived_by_another_format_is_rebuilt_alone(data_dir: Path):
    app = started(data_dir, HashingEmbedder(), 500)
    for i in range(3):
        asyncio.run(app.knowledge.write(WriteRequest(agent="a", title=f"N{i}", content="x")))
    app.fulltext.record_derivation({"format": 0})
    app.close()
    again = started(data_dir, HashingEmbedder(), 500)
    try:
        report = again.last_reconcile
        assert report is not None and report.rederived == ["fulltext"]
        assert report.fulltext_fixed == 3 and report.catalog_fixed == report.vectors_fixed == 0
        assert again.fulltext.derivation() == again.indexer.derivations()["fulltext"]
    finally:
        again.close()

"""A model change with two real spaces: the shipped all-MiniLM-L6-v2 and a feature-hashing
embedder registered as a second model. Search through a real MCP client keeps finding notes
through the old space while they wait to be embedded again, and the old space is retired when
the migration completes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastmcp import Client

from lithos.domain.embedding import space_of
from lithos.mcp.server import create_server
from lithos.services.reembed import reembed
from lithos.store.embedder import MODELS, OnnxEmbedder, register_model
from tests.fakes import HashingEmbedder
from tests.mcp.test_semantic_model import NOTES
from tests.support import call, make_app

pytestmark = pytest.mark.model


@pytest.fixture
def hashing_model() -> Iterator[str]:
    register_model("hashing-test", lambda threads, batch: HashingEmbedder())
    yield "hashing-test"
    MODELS.pop("hashing-test")


async def test_old_space_answers_until_migrated_then_retires(
    data_dir: Path, hashing_model: str
) -> None:
    shipped = OnnxEmbedder()
    first = make_app(data_dir, embedder=shipped)
    first.start(watch=False)
    try:
        async with Client(create_server(first)) as client:
            for title, content in NOTES.items():
                await call(client, "lithos_write", agent="a", title=title, content=content)
        assert first.embedding.wait_idle(60)
    finally:
        first.close()

    hashing = HashingEmbedder()
    second = make_app(data_dir, embedder=hashing, **{"search.space_migration": "batch"})
    second.start(watch=False)
    try:
        async with Client(create_server(second)) as client:
            stats = await call(client, "lithos_stats")
            assert stats["indexes"]["embedding_space"] == space_of(hashing).id
            assert stats["indexes"]["retiring_spaces"] == [space_of(shipped).id]
            assert stats["indexes"]["migrating_chunks"] == len(NOTES)
            assert stats["indexes"]["pending_chunks"] == 0
            # No word in common with the note: only the shipped model's space can find it.
            found = await call(client, "lithos_semantic", query="teaching my dog to obey")
            assert found["results"][0]["title"] == "Training a puppy"
            assert "pending_chunks" not in found

            report = reembed(second.vectors, second.embedder)
            assert (report.embedded, report.remaining) == (len(NOTES), 0)
            assert report.retired == [space_of(shipped).id]

            stats = await call(client, "lithos_stats")
            assert stats["indexes"]["retiring_spaces"] == []
            assert stats["indexes"]["embedded_chunks"] == len(NOTES)
            # The hashing model finds by shared words only, and the old space is not asked.
            found = await call(client, "lithos_semantic", query="teaching my dog to obey")
            assert found["results"] == []
            found = await call(client, "lithos_semantic", query="reward the dog", threshold=0.1)
            assert found["results"][0]["title"] == "Training a puppy"
    finally:
        second.close()

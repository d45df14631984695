"""Semantic and hybrid search with the real all-MiniLM-L6-v2 model (ONNX, offline)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from fastmcp import Client

from lithos.app import LithosApp
from lithos.mcp.server import create_server
from lithos.store.embedder import create_embedder
from tests.support import call, make_app

pytestmark = pytest.mark.model

NOTES = {
    "Brewing green tea": "Heat water to about 80 degrees and steep the leaves for two minutes.",
    "Rotating database credentials": "Issue a new password, deploy it, then revoke the old one.",
    "Training a puppy": "Reward the dog right after it sits; keep sessions short and frequent.",
    "Kubernetes pod eviction": "The kubelet evicts pods when a node runs low on memory or disk.",
}


@pytest.fixture
def real_app(data_dir: Path) -> Iterator[LithosApp]:
    app = make_app(data_dir, embedder=create_embedder("all-MiniLM-L6-v2"))
    app.start(watch=False)
    try:
        yield app
    finally:
        app.close()


@pytest.fixture
async def loaded(real_app: LithosApp) -> AsyncIterator[tuple[Client, dict[str, str]]]:
    """A client over the notes above, all embedded; and the note id of each title."""
    async with Client(create_server(real_app)) as client:
        ids = {}
        for title, content in NOTES.items():
            written = await call(client, "lithos_write", agent="a", title=title, content=content)
            ids[title] = written["id"]
        assert real_app.embedding.wait_idle(60)
        yield client, ids


@pytest.mark.parametrize(
    ("query", "title"),
    [
        ("how do I make a cup of tea", "Brewing green tea"),
        ("changing secrets without downtime", "Rotating database credentials"),
        ("teaching my dog to obey", "Training a puppy"),
        ("why was my container killed when the machine ran out of RAM", "Kubernetes pod eviction"),
    ],
)
async def test_semantic_search_finds_paraphrases_with_no_shared_words(
    loaded: tuple[Client, dict[str, str]], query: str, title: str
):
    client, ids = loaded
    result = await call(client, "lithos_semantic", query=query)
    assert result["results"][0]["id"] == ids[title]
    assert 0.3 <= result["results"][0]["similarity"] <= 1.0


async def test_hybrid_ranks_the_paraphrase_first_too(loaded: tuple[Client, dict[str, str]]):
    client, ids = loaded
    result = await call(client, "lithos_search", query="steeping tea leaves", mode="hybrid")
    assert result["results"][0]["id"] == ids["Brewing green tea"]


async def test_unrelated_query_stays_below_a_high_threshold(
    loaded: tuple[Client, dict[str, str]],
):
    client, _ = loaded
    result = await call(client, "lithos_semantic", query="medieval french poetry", threshold=0.6)
    assert result["results"] == []

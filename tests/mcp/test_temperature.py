"""Temperature and exploration through a real MCP client: temperature is 1 - coherence of the
best candidates by typed edges (weighted by type; contradicts lowers it), wiki-links and
embeddings, and it decides whether the exploration scouts run."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from lithos.app import LithosApp
from lithos.domain.edges import EdgeUpsert
from lithos.domain.retrieval import RANDOM, Candidate, ScoutHit
from lithos.mcp.server import create_server
from tests.support import call, make_app

SOLAR = [
    ("Solar inverter sizing", "solar panels feed the inverter; size the inverter to the array"),
    ("Solar panel tilt", "solar panels tilt toward the sun for the most yield"),
    ("Solar battery storage", "solar panels charge a battery bank for the night"),
    ("Solar shading losses", "solar panels lose yield when one cell is shaded"),
]
SCATTERED = [
    ("Sourdough starter", "feed the starter flour and water daily; it smells of yeast"),
    ("Chess openings", "the sicilian defence answers e4 with c5"),
    ("Tide tables", "spring tides follow the full and new moon"),
    ("Bicycle chains", "a stretched chain wears the cassette; measure it yearly"),
]


@pytest.fixture
async def tuned(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    """Exploration on (off by default), with the test's ``lcma.exploration`` settings."""
    overrides: dict[str, Any] = dict(getattr(request, "param", {}))
    exploration = {"enabled": True, **overrides.get("lcma.exploration", {})}
    app = make_app(tmp_path / "data", **{**overrides, "lcma.exploration": exploration})
    app.start(watch=False)
    try:
        async with Client(create_server(app)) as client:
            client.app = app  # type: ignore[attr-defined]
            yield client
    finally:
        app.close()


async def write_all(client: Client, notes: list[tuple[str, str]]) -> list[str]:
    ids = []
    for title, content in notes:
        result = await call(client, "lithos_write", agent="a", title=title, content=content)
        ids.append(str(result["id"]))
    return ids


async def connect(app: LithosApp, ids: list[str], edge_type: str, weight: float) -> None:
    for a, b in itertools.combinations(ids, 2):
        await app.edges.upsert(EdgeUpsert(a, b, edge_type, weight=weight))  # type: ignore[arg-type]


async def retrieve(client: Client, query: str, **args: object) -> dict[str, Any]:
    result = await call(client, "lithos_retrieve", query=query, **args)
    assert "results" in result, result
    return result


async def fired(client: Client, result: dict[str, Any]) -> set[str]:
    receipt = await call(client, "lithos_receipt_get", receipt_id=result["receipt_id"])
    assert receipt["temperature"] == result["temperature"]
    return set(receipt["scouts_fired"])


async def test_a_coherent_query_is_colder_than_a_scattered_one(tuned: Client):
    app: LithosApp = tuned.app  # type: ignore[attr-defined]
    solar = await write_all(tuned, SOLAR)
    await write_all(tuned, SCATTERED)
    await connect(app, solar, "supports", 1.0)
    assert app.embedding.wait_idle(10)
    coherent = await retrieve(tuned, "solar panels", limit=4)
    scattered = await retrieve(tuned, "starter chess tides chain", limit=4)
    assert set(r["id"] for r in coherent["results"]) == set(solar)
    assert coherent["temperature"] < 0.6 < scattered["temperature"] <= 1.0
    # Exploration runs only for the hot query.
    assert not {"scout_novelty", "scout_random"} & await fired(tuned, coherent)
    assert {"scout_novelty", "scout_random"} <= await fired(tuned, scattered)


async def test_edge_type_and_contradictions_move_the_temperature(tuned: Client):
    app: LithosApp = tuned.app  # type: ignore[attr-defined]
    solar = await write_all(tuned, SOLAR)
    assert app.embedding.wait_idle(10)
    alone = (await retrieve(tuned, "solar panels"))["temperature"]
    await connect(app, solar, "related_to", 0.5)
    loose = (await retrieve(tuned, "solar panels"))["temperature"]
    await connect(app, solar, "supports", 0.5)
    bound = (await retrieve(tuned, "solar panels"))["temperature"]
    await connect(app, solar, "contradicts", 0.9)
    disputed = (await retrieve(tuned, "solar panels"))["temperature"]
    assert bound < loose < alone
    assert disputed > bound and disputed > alone


@pytest.mark.parametrize("tuned", [{"lcma.exploration": {"threshold": 1.0}}], indirect=True)
async def test_exploration_never_runs_at_or_below_the_threshold(tuned: Client):
    await write_all(tuned, SCATTERED)
    result = await retrieve(tuned, "starter chess tides chain")
    assert result["temperature"] <= 1.0
    assert not {"scout_novelty", "scout_random"} & await fired(tuned, result)
    assert not any("exploration:" in r for hit in result["results"] for r in hit["reasons"])


async def test_by_default_a_hot_query_is_measured_but_not_explored(client: Client):
    """Exploration is off by default (it changed no score on SciFact or LongMemEval):
    temperature is still reported, and no exploration scout runs however hot the query."""
    await write_all(client, SCATTERED)
    result = await retrieve(client, "starter chess tides chain", limit=4)
    assert result["temperature"] > 0.6  # hot: above the exploration threshold
    assert not {"scout_novelty", "scout_random"} & await fired(client, result)
    assert not any("exploration:" in r for hit in result["results"] for r in hit["reasons"])


@pytest.mark.parametrize(
    "tuned", [{"lcma.exploration": {"threshold": 0.0, "slots": 1}}], indirect=True
)
async def test_a_hot_query_shows_an_exploration_pick_with_its_reason(tuned: Client):
    app: LithosApp = tuned.app  # type: ignore[attr-defined]
    await write_all(tuned, SOLAR + SCATTERED)
    assert app.embedding.wait_idle(10)
    first = await retrieve(tuned, "solar panels yield", limit=3)
    again = await retrieve(tuned, "solar panels yield", limit=3)
    assert first["temperature"] > 0.0
    explored = [
        hit for hit in first["results"] if {"scout_novelty", "scout_random"} & set(hit["scouts"])
    ]
    assert explored, first["results"]
    reasons = [r for hit in explored for r in hit["reasons"] if r.startswith("exploration:")]
    assert any("rarely retrieved note near the query" in r or "random pick" in r for r in reasons)
    # Seeded: the same query on the same notes explores the same way.
    assert [h["id"] for h in first["results"]] == [h["id"] for h in again["results"]]


@pytest.mark.parametrize(
    "tuned",
    # The vector scout keeps only close notes, so the lexical scout's solar notes make the pool.
    [{"lcma.exploration": {"threshold": 0.0, "slots": 1}, "lcma.vector_floor": 0.6}],
    indirect=True,
)
async def test_a_note_only_exploration_found_is_ranked_with_what_was_learned_about_it(
    tuned: Client,
):
    """Terrace 1 reads the learned statistics of the pool while the temperature is measured;
    a note exploration adds afterwards is read then, so its salience is its own."""
    app: LithosApp = tuned.app  # type: ignore[attr-defined]
    ids = await write_all(tuned, SOLAR + SCATTERED)
    chess = ids[len(SOLAR) + 1]
    assert app.embedding.wait_idle(10)
    app.stats_store.db.call(
        lambda conn: conn.execute(
            "INSERT INTO node_stats(node_id, salience) VALUES (?, 0.9)", (chess,)
        )
    )
    seen_in_pool: list[bool] = []

    class Stub:
        name = RANDOM

        def explore(
            self, ctx: object, top: Sequence[str], pool: Mapping[str, Candidate]
        ) -> list[ScoutHit]:
            seen_in_pool.append(chess in pool)
            return [ScoutHit(chess, 1.0, "exploration: the stub's pick")]

    app.retrieval.exploration = [Stub()]
    result = await retrieve(tuned, "solar panels", limit=3)
    assert seen_in_pool == [False]  # not among the notes whose statistics were read first
    picked = [hit for hit in result["results"] if hit["id"] == chess]
    assert picked and picked[0]["salience"] == 0.9, result["results"]

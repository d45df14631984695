"""Living memory end to end through MCP: three agents work through many seeded tasks with a
settable clock. Repeated co-use creates and strengthens edges, unused ones decay, a planted
contradiction is surfaced and resolved, a concept forms and is damped, and a coherent query
runs cooler than a scattered one. Deterministic: fixed seed, fixed clock, no sleeps."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from fastmcp import Client

from lithos.app import LithosApp
from tests.support import call, note_file

RETRY = {
    "Exponential backoff": "Retry failed calls with exponential backoff between attempts.",
    "Retry jitter": "Add jitter to retry backoff so clients do not retry in lockstep.",
    "Retry budget": "A retry budget caps the extra load that retry attempts may add.",
}
GARDEN = {
    "Tomato watering": "Water tomatoes deeply twice a week in the garden.",
    "Tomato staking": "Stake tomatoes in the garden once they flower.",
}
SCATTERED = {
    "Sourdough": "Feed the sourdough starter flour and water daily.",
    "Tide tables": "Tide tables predict high water at the harbour.",
    "Chess openings": "The Sicilian defence answers the king pawn opening.",
}
AGENTS = ("planner", "coder", "reviewer")


async def write_all(client: Client, notes: dict[str, str]) -> dict[str, str]:
    ids = {}
    for title, text in notes.items():
        written = await call(client, "lithos_write", agent="seed", title=title, content=text)
        ids[title] = written["id"]
    return ids


async def work(
    app: LithosApp, client: Client, agent: str, query: str, wanted: set[str]
) -> dict[str, Any]:
    """One task: retrieve twice, complete citing what it wanted among the results."""
    task = (await call(client, "lithos_task_create", title=query, agent=agent))["task_id"]
    for _ in range(2):
        got = await call(client, "lithos_retrieve", query=query, task_id=task, agent_id=agent)
    cited = [r["id"] for r in got["results"] if r["id"] in wanted]
    done = await call(client, "lithos_task_complete", task_id=task, agent=agent, cited_nodes=cited)
    assert done["success"] is True
    worker = app.consolidation_worker
    assert worker is not None and await asyncio.to_thread(worker.wait_idle, 20.0)
    return got


async def related(client: Client, a: str, b: str) -> float:
    first, second = sorted((a, b))
    listed = await call(client, "lithos_edge_list", from_id=first, to_id=second, type="related_to")
    return listed["edges"][0]["weight"] if listed["edges"] else 0.0


@pytest.mark.parametrize("scenario", [{"lcma.concepts": {"enabled": True}}], indirect=True)
async def test_living_memory_over_many_tasks(scenario):
    app, client, clock = scenario
    retry = await write_all(client, RETRY)
    garden = await write_all(client, GARDEN)
    await write_all(client, SCATTERED)
    rng = random.Random(20261124)

    # Early on the gardeners work twice; then only retry work, by three agents, for weeks.
    garden_weights = []
    for _ in range(2):
        clock.advance(hours=3)
        await work(app, client, rng.choice(AGENTS), "tomatoes garden", set(garden.values()))
        garden_weights.append(await related(client, *garden.values()))
    assert 0 < garden_weights[0] < garden_weights[1]  # created, then strengthened
    garden_pair = garden_weights[1]
    backoff, jitter = retry["Exponential backoff"], retry["Retry jitter"]
    weights = []
    for _ in range(4):
        clock.advance(days=1)
        await work(app, client, rng.choice(AGENTS), "retry backoff", set(retry.values()))
        weights.append(await related(client, backoff, jitter))
    assert weights == sorted(weights)
    assert weights[-1] >= weights[0] + 0.25  # repeated co-use strengthens
    assert await related(client, *garden.values()) < garden_pair  # unused: decaying

    # A concept formed with consolidation: a real note linking the three retry notes.
    concepts = await call(client, "lithos_list", note_types=["concept"])
    [concept] = concepts["items"]
    read = await call(client, "lithos_read", id=concept["id"])
    assert read["metadata"]["note_type"] == "concept"
    assert {link["id"] for link in read["links"]} >= set(retry.values())

    # The concept comes back as a gateway with its specifics, and loses score each time.
    clock.advance(days=2)
    scores = []
    for _ in range(3):
        got = await call(client, "lithos_retrieve", query="retry backoff", limit=5)
        by_id = {r["id"]: r for r in got["results"]}
        assert concept["id"] in by_id
        assert any("concept: gateway to" in r for r in by_id[concept["id"]]["reasons"])
        assert any("concept: a specific of" in r for r in by_id[backoff]["reasons"])
        scores.append(by_id[concept["id"]]["score"])
    assert scores[0] > scores[1] > scores[2]

    # A planted contradiction: a person's note says the opposite of the budget note.
    (app.files.root / "No budget.md").write_text(
        note_file(
            {"title": "No budget", "contradicts": ["[[Retry budget]]"]},
            "Retries need no budget: retry as often as you like.",
        ),
        encoding="utf-8",
    )
    await asyncio.to_thread(app.indexer.index_path, "No budget.md")
    got = await call(
        client, "lithos_retrieve", query="retry budget", surface_conflicts=True, limit=5
    )
    [conflict] = got["conflicts"]
    assert conflict["state"] == "unreviewed" and retry["Retry budget"] in (
        conflict["from_id"],
        conflict["to_id"],
    )
    resolved = await call(
        client,
        "lithos_conflict_resolve",
        edge_id=conflict["edge_id"],
        resolution="refuted",
        resolver="reviewer",
        winner_id=retry["Retry budget"],
    )
    assert resolved["conflict"]["state"] == "refuted"
    assert (await call(client, "lithos_conflicts", state="unreviewed"))["count"] == 0

    # Temperature: the retry notes hang together, the scattered ones do not.
    coherent = await call(client, "lithos_retrieve", query="retry backoff jitter", limit=3)
    scattered = await call(client, "lithos_retrieve", query="sourdough tide chess", limit=3)
    assert coherent["temperature"] < scattered["temperature"]

    # Months without use: the garden edge sinks to its floor; the retry edge is far above it.
    clock.advance(days=365)
    assert await related(client, *garden.values()) == pytest.approx(0.05, abs=0.01)


async def test_by_default_no_concept_forms_however_often_notes_are_cited_together(scenario):
    """Concepts are off by default (they raised no score on SciFact): the same co-use that
    forms a concept when they are on leaves the knowledge base without concept notes."""
    app, client, clock = scenario
    retry = await write_all(client, RETRY)
    for _ in range(4):
        clock.advance(days=1)
        await work(app, client, "planner", "retry backoff", set(retry.values()))
    worker = app.consolidation_worker
    assert worker is not None
    worker.sweep_now()
    assert await asyncio.to_thread(worker.wait_idle, 20.0)
    assert (await call(client, "lithos_list", note_types=["concept"]))["items"] == []
    got = await call(client, "lithos_retrieve", query="retry backoff", limit=5)
    assert not any(r.startswith("concept:") for hit in got["results"] for r in hit["reasons"])
    # What the co-use taught is still learned: the edge between the notes.
    assert await related(client, retry["Exponential backoff"], retry["Retry jitter"]) > 0.5

"""The exploration scouts' weights, learned apart from task feedback per query class
(LCMA-DESIGN 2.2 disagreement 1, 5.6), through a real MCP client: results scout_novelty found
that a task cited raise its weight and not scout_random's, and the other way round; ignored
and misleading results lower them; the weights stay within their bounds, a receipt teaches
once, and hot retrievals of that query class rank with what was learned."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from lithos.mcp.server import create_server
from tests.mcp.test_temperature import SCATTERED, SOLAR
from tests.support import call, make_app, note_file

NOVELTY, RANDOM = "scout_novelty", "scout_random"
START = 0.25  # both scouts start here, so their picks reach the results shown
QUERY = "solar panels yield"  # a "lookup" query
# Every query is hot; both scouts pick two notes beyond the three shown.
HOT = {
    "lcma.exploration": {
        "enabled": True,
        "threshold": 0.0,
        "novelty_k": 2,
        "random_k": 2,
        "cited_step": 0.05,
        "ignored_step": 0.01,
        "misleading_step": 0.1,
    },
    "lcma.scout_weights": {NOVELTY: START, RANDOM: START},
}


@pytest.fixture
async def hot(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    extra: dict[str, Any] = getattr(request, "param", {})
    settings = {**HOT, **extra}
    if "lcma.exploration" in extra:
        settings["lcma.exploration"] = {**HOT["lcma.exploration"], **extra["lcma.exploration"]}
    app = make_app(tmp_path / "data", **settings)
    # Fixed ids: the random scout's seeded draw depends on them, so every run sees the same.
    for i, (title, body) in enumerate(SOLAR + SCATTERED):
        front = {"id": f"00000000-0000-4000-8000-{i:012d}", "title": title}
        (app.files.root / f"{title}.md").write_text(note_file(front, body), encoding="utf-8")
    app.start(watch=False)
    try:
        async with Client(create_server(app)) as client:
            assert app.embedding.wait_idle(10)
            yield client
    finally:
        app.close()


async def retrieve_in_task(client: Client, query: str = QUERY) -> tuple[str, dict[str, Any]]:
    task = (await call(client, "lithos_task_create", title="t", agent="ag"))["task_id"]
    got = await call(client, "lithos_retrieve", query=query, limit=3, task_id=task, agent_id="ag")
    assert "results" in got, got
    return str(task), got


def found_by(got: dict[str, Any], scout: str, not_by: str | None = None) -> list[str]:
    return [
        r["id"]
        for r in got["results"]
        if scout in r["scouts"] and (not_by is None or not_by not in r["scouts"])
    ]


async def weights(client: Client, query_class: str | None = "lookup") -> dict[str, Any]:
    args = {} if query_class is None else {"query_class": query_class}
    table = (await call(client, "lithos_scout_weights", **args))["weights"]
    return {(w["scout"], w["query_class"]): w for w in table}


async def complete(client: Client, task: str, **feedback: Any) -> dict[str, Any]:
    done = await call(client, "lithos_task_complete", task_id=task, agent="ag", **feedback)
    assert done.get("success") is True, done
    return done["feedback"]


async def test_cited_novelty_results_raise_the_novelty_weight_and_not_the_random_one(
    hot: Client,
):
    task, got = await retrieve_in_task(hot)
    novel = found_by(got, NOVELTY, not_by=RANDOM)
    assert novel, got["results"]
    feedback = await complete(hot, task, cited_nodes=novel[:1])
    explored, randoms = len(found_by(got, NOVELTY)), len(found_by(got, RANDOM))
    table = await weights(hot)
    novelty, random = table[(NOVELTY, "lookup")], table[(RANDOM, "lookup")]
    assert novelty["learned"] is True
    assert novelty["weight"] == pytest.approx(START + 0.05 - 0.01 * (explored - 1))
    assert (novelty["cited"], novelty["ignored"], novelty["misleading"]) == (1, explored - 1, 0)
    assert novelty["weight"] > START
    # Random's results (if any were shown) were ignored: it can only have lost.
    assert random["weight"] == pytest.approx(START - 0.01 * randoms)
    assert random["cited"] == 0
    moved = {(w["scout"], w["query_class"]): w["weight"] for w in feedback["scout_weights"]}
    assert moved[(NOVELTY, "lookup")] == pytest.approx(novelty["weight"])
    # Other query classes have learned nothing.
    design = await weights(hot, "design")
    assert design[(NOVELTY, "design")] == {
        "scout": NOVELTY,
        "query_class": "design",
        "weight": START,
        "learned": False,
        "cited": 0,
        "ignored": 0,
        "misleading": 0,
        "updated_at": None,
    }


async def test_cited_random_results_raise_the_random_weight_and_not_the_novelty_one(
    hot: Client,
):
    task, got = await retrieve_in_task(hot)
    lucky = found_by(got, RANDOM, not_by=NOVELTY)
    assert lucky, got["results"]
    await complete(hot, task, cited_nodes=lucky[:1])
    explored, randoms = len(found_by(got, NOVELTY)), len(found_by(got, RANDOM))
    table = await weights(hot)
    assert table[(RANDOM, "lookup")]["weight"] == pytest.approx(START + 0.05 - 0.01 * (randoms - 1))
    assert table[(RANDOM, "lookup")]["weight"] > START
    assert table[(NOVELTY, "lookup")]["weight"] == pytest.approx(START - 0.01 * explored)
    assert table[(NOVELTY, "lookup")]["weight"] <= START


@pytest.mark.parametrize(
    "hot",
    [{"lcma.exploration": {"cited_step": 0.2, "misleading_step": 0.5, "ignored_step": 0.0}}],
    indirect=True,
)
async def test_learned_weights_stay_within_their_floor_and_ceiling(hot: Client):
    for _ in range(2):
        task, got = await retrieve_in_task(hot)
        await complete(hot, task, cited_nodes=found_by(got, NOVELTY))
    assert (await weights(hot))[(NOVELTY, "lookup")]["weight"] == pytest.approx(0.3)
    task, got = await retrieve_in_task(hot, "solar panels tilt")
    await complete(hot, task, misleading_nodes=found_by(got, RANDOM)[:1])
    assert (await weights(hot))[(RANDOM, "lookup")]["weight"] == pytest.approx(0.01)


async def test_a_receipt_moves_the_weights_once(hot: Client):
    task, got = await retrieve_in_task(hot)
    await complete(hot, task, cited_nodes=found_by(got, NOVELTY)[:1])
    before = await weights(hot, None)
    again = await call(
        hot, "lithos_task_complete", task_id=task, agent="ag", cited_nodes=found_by(got, NOVELTY)
    )
    assert again["code"] == "task_not_open"
    other = (await call(hot, "lithos_task_create", title="t2", agent="ag"))["task_id"]
    reuse = await call(
        hot,
        "lithos_task_complete",
        task_id=other,
        agent="ag",
        receipt_id=got["receipt_id"],
        cited_nodes=found_by(got, NOVELTY),
    )
    assert reuse["code"] == "receipt_not_found"
    assert await weights(hot, None) == before


async def test_hot_retrievals_rank_with_the_learned_weight(hot: Client):
    task, got = await retrieve_in_task(hot)
    lucky = found_by(got, RANDOM, not_by=NOVELTY)
    assert lucky, got["results"]
    before = next(r["score"] for r in got["results"] if r["id"] == lucky[0])
    await complete(hot, task, cited_nodes=lucky[:1])
    learned = (await weights(hot))[(RANDOM, "lookup")]["weight"]
    _, again = await retrieve_in_task(hot)
    after = next(r["score"] for r in again["results"] if r["id"] == lucky[0])
    # A random pick's evidence is 1.0, so its score moves by the weight learned, plus the
    # small salience, usage and query-class gains of a cited note.
    assert after - before >= learned - START > 0


@pytest.mark.parametrize("hot", [{"lcma.exploration": {"learn": False}}], indirect=True)
async def test_with_learning_off_the_configured_weights_stay(hot: Client):
    task, got = await retrieve_in_task(hot)
    feedback = await complete(hot, task, cited_nodes=found_by(got, NOVELTY))
    assert feedback["scout_weights"] == []
    table = await weights(hot)
    assert all(w["weight"] == START and not w["learned"] for w in table.values())


async def test_a_bad_query_class_is_invalid_input(hot: Client):
    bad = await call(hot, "lithos_scout_weights", query_class="gossip")
    assert bad["status"] == "error" and bad["code"] == "invalid_input"

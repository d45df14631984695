"""Consolidation through MCP: completing a task with lithos_task_complete queues it for the
background worker, which turns its recurring working memory into a related_to edge that
lithos_edge_list shows."""

from __future__ import annotations

import asyncio

import pytest
from fastmcp import Client

from lithos.app import LithosApp
from tests.support import call


async def test_completing_a_task_consolidates_its_working_memory(app: LithosApp, client: Client):
    ids = []
    for title, text in (("Backoff", "backoff for retries"), ("Jitter", "jitter for retries")):
        written = await call(client, "lithos_write", agent="a", title=title, content=text)
        ids.append(written["id"])
    task = (await call(client, "lithos_task_create", title="t", agent="agent-1"))["task_id"]
    for _ in range(2):
        got = await call(client, "lithos_retrieve", query="retries", task_id=task, limit=2)
        assert {r["id"] for r in got["results"]} == set(ids)
    worker = app.consolidation_worker
    assert worker is not None
    done = await call(client, "lithos_task_complete", task_id=task, agent="agent-1")
    assert done["success"] is True
    assert await asyncio.to_thread(worker.wait_idle, 10.0)
    first, second = sorted(ids)
    listed = await call(client, "lithos_edge_list", from_id=first, type="related_to")
    [edge] = listed["edges"]
    assert edge["to_id"] == second and edge["provenance"] == "rule"
    assert edge["actor"] == "lithos-consolidation"


async def write(client: Client, title: str, text: str, note_type: str = "observation") -> str:
    result = await call(
        client, "lithos_write", agent="a", title=title, content=text, note_type=note_type
    )
    return str(result["id"])


async def salience(client: Client, note_id: str) -> float:
    return float((await call(client, "lithos_node_stats", node_id=note_id))["salience"])


async def test_a_cited_hypothesis_is_promoted_once_and_a_disputed_one_is_not(
    app: LithosApp, client: Client
):
    used = await write(client, "Cache idea", "maybe caching fixes latency", "hypothesis")
    disputed = await write(client, "Index idea", "maybe an index fixes latency", "hypothesis")
    other = await write(client, "Index result", "an index did not fix latency")
    await call(
        client, "lithos_edge_upsert", from_id=other, to_id=disputed, type="contradicts", agent="a"
    )
    task = (await call(client, "lithos_task_create", title="t", agent="agent-1"))["task_id"]
    got = await call(
        client, "lithos_retrieve", query="fixes latency", task_id=task, agent_id="agent-1", limit=4
    )
    assert {used, disputed} <= {r["id"] for r in got["results"]}
    done = await call(
        client,
        "lithos_task_complete",
        task_id=task,
        agent="agent-1",
        cited_nodes=[used, disputed],
    )
    assert done["success"] is True
    worker = app.consolidation_worker
    assert worker is not None and await asyncio.to_thread(worker.wait_idle, 10.0)
    # Both were cited alike; only the uncontradicted one gained the promotion on top.
    promoted = app.config.lcma.consolidation.promotion_salience_boost
    assert await salience(client, used) == pytest.approx(
        await salience(client, disputed) + promoted, abs=1e-4
    )
    before = await salience(client, used)
    worker.sweep_now()  # consolidation again: promoted once, not twice
    assert await asyncio.to_thread(worker.wait_idle, 10.0)
    assert await salience(client, used) == pytest.approx(before, abs=1e-4)


async def test_stale_working_memory_is_evicted_and_what_it_taught_stays(scenario):
    app, client, clock = scenario
    ids = []
    for title, text in (("Backoff", "backoff for retries"), ("Jitter", "jitter for retries")):
        ids.append(await write(client, title, text))
    # A task that uses both notes twice and is never completed.
    task = (await call(client, "lithos_task_create", title="t", agent="agent-1"))["task_id"]
    for _ in range(2):
        await call(client, "lithos_retrieve", query="retries", task_id=task, limit=2)
    assert app.stats_store.working_memory(task, 10)
    worker = app.consolidation_worker
    assert worker is not None
    worker.sweep_now()
    assert await asyncio.to_thread(worker.wait_idle, 10.0)
    assert app.stats_store.working_memory(task, 10)  # fresh: kept for the task

    clock.advance(hours=app.config.lcma.consolidation.stale_after_hours + 1)
    worker.sweep_now()
    assert await asyncio.to_thread(worker.wait_idle, 10.0)
    assert app.stats_store.working_memory(task, 10) == []
    first, second = sorted(ids)
    listed = await call(client, "lithos_edge_list", from_id=first, type="related_to")
    assert [e["to_id"] for e in listed["edges"]] == [second]

"""Consolidation through MCP: completing a task with lithos_task_complete queues it for the
background worker, which turns its recurring working memory into a related_to edge that
lithos_edge_list shows."""

from __future__ import annotations

import asyncio

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

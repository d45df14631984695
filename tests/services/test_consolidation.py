"""Working memory -> long-term memory: recurring notes' edges grow once per task, used and
uncontradicted hypotheses are promoted once, stale working memory is evicted, and running it
again changes nothing. Real stores, a settable clock, no background thread."""

from __future__ import annotations

import sqlite3

import pytest

from lithos.app import LithosApp
from lithos.domain.edges import EdgeFilter, EdgeUpsert
from lithos.domain.metadata import MetadataChange
from lithos.domain.retrieval import RetrievalQuery
from lithos.services.knowledge import WriteRequest
from tests.services.conftest import Clock


async def note(app: LithosApp, title: str, content: str, note_type: str = "observation") -> str:
    change = MetadataChange(note_type=note_type)
    result = await app.knowledge.write(
        WriteRequest(agent="writer", title=title, content=content, metadata=change)
    )
    return str(result["id"])


async def retrieve(app: LithosApp, query: str, task: str, limit: int = 3) -> list[str]:
    got = await app.retrieval.retrieve(
        RetrievalQuery(query=query, task_id=task, agent_id="agent-1", limit=limit)
    )
    return [r.id for r in got.results]


async def new_task(app: LithosApp) -> str:
    return str((await app.coordination.create_task("t", "agent-1"))["task_id"])


def snapshot(app: LithosApp) -> dict[str, list[tuple[object, ...]]]:
    """Every row of the learned state consolidation may touch."""
    tables = {
        "edges.db": ["edges", "reinforcements", "conflict_events"],
        "stats.db": ["node_stats", "working_memory", "hypothesis_promotions"],
    }
    found = {}
    for name, names in tables.items():
        conn = sqlite3.connect(app.config.data_dir / ".lithos" / name)
        try:
            for table in names:
                rows = conn.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
                found[table] = [tuple(r) for r in rows]
        finally:
            conn.close()
    return found


def related(app: LithosApp, a: str, b: str) -> float | None:
    first, second = sorted((a, b))
    edges = app.edge_store.find(
        EdgeFilter(from_id=first, to_id=second, type="related_to"), app.clock()
    )
    return edges[0].weight if edges else None


async def test_notes_recurring_in_a_task_get_an_edge_once(lithos: LithosApp, clock: Clock):
    a = await note(lithos, "Backoff", "exponential backoff for retries")
    b = await note(lithos, "Jitter", "jitter for retries and backoff")
    c = await note(lithos, "Tomatoes", "tomatoes want sun")
    task = await new_task(lithos)
    first = await retrieve(lithos, "backoff retries", task, limit=2)
    assert set(first) == {a, b}
    await retrieve(lithos, "backoff retries jitter", task, limit=2)
    await retrieve(lithos, "tomatoes", task, limit=1)

    report = lithos.consolidation.consolidate(task)
    assert set(report.recurring) == {a, b}  # c was retrieved once: not recurring
    assert report.reinforced == (tuple(sorted((a, b))),)
    assert related(lithos, a, b) == pytest.approx(0.5)  # a new edge at the initial weight
    assert related(lithos, a, c) is None
    [edge] = lithos.edge_store.find(EdgeFilter(type="related_to"), clock())
    assert edge.provenance == "rule" and edge.actor == "lithos-consolidation"
    assert f"used together in task {task}" in edge.evidence[0]


async def test_consolidating_twice_changes_nothing_more(lithos: LithosApp, clock: Clock):
    a = await note(lithos, "Backoff", "exponential backoff for retries")
    b = await note(lithos, "Jitter", "jitter for retries and backoff")
    h = await note(lithos, "Retry idea", "maybe retries and backoff need a budget", "hypothesis")
    task = await new_task(lithos)
    for _ in range(2):
        await retrieve(lithos, "backoff retries", task, limit=3)
    await lithos.feedback.complete(task, "agent-1", cited_nodes=[a, b, h])
    first = lithos.consolidation.consolidate(task)
    assert first.reinforced and first.promoted == (h,)
    before = snapshot(lithos)
    again = lithos.consolidation.consolidate(task)
    assert not again.changed and again.reinforced == () and again.promoted == ()
    assert snapshot(lithos) == before
    # Later, still nothing: the ledger remembers the task's pairs; only the clock moved.
    clock.advance(hours=1)
    assert not lithos.consolidation.consolidate(task).changed


async def test_a_second_task_reinforces_the_same_pair_again(lithos: LithosApp, clock: Clock):
    a = await note(lithos, "Backoff", "exponential backoff for retries")
    b = await note(lithos, "Jitter", "jitter for retries and backoff")
    for _ in range(2):
        task = await new_task(lithos)
        for _ in range(2):
            await retrieve(lithos, "backoff retries", task, limit=2)
        lithos.consolidation.consolidate(task)
    assert related(lithos, a, b) == pytest.approx(0.6)  # 0.5, then one step of 0.1


async def test_a_contradicted_or_uncited_hypothesis_is_not_promoted(
    lithos: LithosApp, clock: Clock
):
    used = await note(lithos, "Cache idea", "maybe caching fixes latency", "hypothesis")
    disputed = await note(lithos, "Index idea", "maybe an index fixes latency", "hypothesis")
    unused = await note(lithos, "Shard idea", "maybe sharding fixes latency", "hypothesis")
    other = await note(lithos, "Index result", "an index did not fix latency")
    lithos.edge_store.upsert([EdgeUpsert(other, disputed, "contradicts", actor="x")], clock())
    task = await new_task(lithos)
    await retrieve(lithos, "fixes latency", task, limit=4)
    await lithos.feedback.complete(task, "agent-1", cited_nodes=[used, disputed])
    report = lithos.consolidation.consolidate(task)
    assert report.promoted == (used,)
    stats = lithos.stats_store.node_stats([used, disputed, unused])
    assert stats[used].salience == pytest.approx(0.52 + 0.05)
    assert stats[disputed].salience == pytest.approx(0.52)


async def test_stale_working_memory_is_evicted_after_consolidation(lithos: LithosApp, clock: Clock):
    a = await note(lithos, "Backoff", "exponential backoff for retries")
    b = await note(lithos, "Jitter", "jitter for retries and backoff")
    task = await new_task(lithos)
    for _ in range(2):
        await retrieve(lithos, "backoff retries", task, limit=2)
    assert lithos.consolidation.consolidate(task).evicted == 0  # fresh: kept for the task
    assert lithos.stats_store.working_memory(task, 10)

    clock.advance(hours=25)
    report = lithos.consolidation.sweep()
    [done] = report.consolidated
    assert done.task_id == task and done.evicted == 2 and done.reinforced == ()
    assert lithos.stats_store.working_memory(task, 10) == []
    assert related(lithos, a, b) is not None  # what was learned stays


async def test_a_deleted_note_is_left_out_of_consolidation(lithos: LithosApp):
    a = await note(lithos, "Backoff", "exponential backoff for retries")
    b = await note(lithos, "Jitter", "jitter for retries and backoff")
    task = await new_task(lithos)
    for _ in range(2):
        await retrieve(lithos, "backoff retries", task, limit=2)
    await lithos.knowledge.delete(b)
    report = lithos.consolidation.consolidate(task)
    assert report.recurring == (a,) and report.reinforced == ()

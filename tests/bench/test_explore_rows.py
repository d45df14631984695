"""bench/explore_eval.py starts every row from the same learned state: what one row's
retrievals record (receipts, retrieval counts) is gone before the next row."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from bench.harness import row_state
from lithos.domain.retrieval import LearningRules, Receipt, ReceiptNode
from lithos.store.memory import MEMORY_MIGRATIONS
from lithos.store.sqlite import Database
from lithos.store.stats import STATS_MIGRATIONS, StatsStore


def receipt(receipt_id: str, nodes: list[str]) -> Receipt:
    return Receipt(
        id=receipt_id,
        created_at="2026-01-01T00:00:00.000000Z",
        query="q",
        query_class="lookup",
        arguments={},
        agent_id=None,
        task_id=None,
        status="ok",
        final_nodes=tuple(ReceiptNode(n, i, 1.0, (), ()) for i, n in enumerate(nodes, 1)),
    )


async def test_a_row_does_not_inherit_the_retrievals_of_the_row_before(tmp_path: Path):
    db = Database(tmp_path / "stats.db", (*STATS_MIGRATIONS, *MEMORY_MIGRATIONS))
    store = StatsStore(db, LearningRules())
    try:
        await store.record(receipt("before", ["a"]))
        db.call(partial(row_state, "save"))
        await store.record(receipt("row-1", ["a", "b"]))
        assert store.node_stats(["a"])["a"].retrieval_count == 2
        db.call(partial(row_state, "restore"))
        stats = store.node_stats(["a", "b"])
        assert stats["a"].retrieval_count == 1 and "b" not in stats
        assert await store.receipt("row-1") is None
        kept = await store.receipt("before")
        assert kept is not None and kept.node_ids == ["a"]
    finally:
        store.close()

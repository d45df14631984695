"""The learned-state store on a real SQLite file: bounds, once-only feedback, co-citation."""

from __future__ import annotations

from pathlib import Path

import pytest

from lithos.domain.retrieval import (
    NOVELTY,
    RANDOM,
    Feedback,
    LearningRules,
    Receipt,
    ReceiptNode,
    ScoutLearning,
    ScoutTally,
    split_feedback,
)
from lithos.store.sqlite import Database
from lithos.store.stats import STATS_MIGRATIONS, StatsStore

RULES = LearningRules(cited_salience_boost=0.3, misleading_salience_penalty=0.3)


def receipt(receipt_id: str, nodes: list[str], task: str = "t") -> Receipt:
    return Receipt(
        id=receipt_id,
        created_at=f"2026-01-01T00:00:0{len(receipt_id) % 10}.000000Z",
        query="q",
        query_class="lookup",
        arguments={},
        agent_id="a",
        task_id=task,
        status="ok",
        final_nodes=tuple(ReceiptNode(n, i, 1.0, (), ()) for i, n in enumerate(nodes, 1)),
    )


def feedback(receipt_id: str, cited=(), ignored=(), misleading=()) -> Feedback:
    return Feedback(receipt_id, "t", "a", "lookup", tuple(cited), tuple(ignored), tuple(misleading))


@pytest.fixture
def store(tmp_path: Path):
    s = StatsStore(Database(tmp_path / "stats.db", STATS_MIGRATIONS), RULES)
    yield s
    s.close()


async def test_salience_never_passes_its_ceiling_or_floor(store: StatsStore):
    for i in range(8):
        await store.record(receipt(f"r{i}", ["up", "down"]))
        await store.apply(feedback(f"r{i}", cited=["up"], misleading=["down"]), "now")
    got = store.node_stats(["up", "down"])
    assert got["up"].salience == RULES.salience_ceiling
    assert got["down"].salience == RULES.salience_floor
    assert got["up"].query_class_priors["lookup"] == pytest.approx(0.24)
    assert got["down"].query_class_priors["lookup"] == -RULES.prior_bound


async def test_feedback_on_one_receipt_is_applied_once(store: StatsStore):
    await store.record(receipt("r1", ["n"]))
    assert await store.apply(feedback("r1", cited=["n"]), "now") == []
    assert await store.apply(feedback("r1", cited=["n"]), "now") is None
    assert store.node_stats(["n"])["n"].cited_count == 1


async def test_chronic_ignoring_costs_salience_only_after_the_threshold(store: StatsStore):
    for i in range(7):
        await store.record(receipt(f"i{i}", ["n"]))
        await store.apply(feedback(f"i{i}", ignored=["n"]), "now")
    stats = store.node_stats(["n"])["n"]
    # Ignores 6 and 7 pass chronic_ignored_after (5): two penalties of 0.02.
    assert stats.ignored_count == 7 and stats.salience == pytest.approx(0.46)


async def test_co_citation_is_read_from_receipt_rows(store: StatsStore):
    await store.record(receipt("r1", ["a", "b", "c"]))
    await store.apply(feedback("r1", cited=["a", "b"], ignored=["c"]), "now")
    assert store.cited_together(["a"], 5) == [("b", "a", 1)]
    assert store.cited_together(["c"], 5) == []


async def test_exploration_scouts_learn_apart_per_query_class_once_per_receipt(tmp_path: Path):
    scouts = ScoutLearning(start={NOVELTY: 0.1, RANDOM: 0.02}, floor=0.01, ceiling=0.3)
    store = StatsStore(Database(tmp_path / "stats.db", STATS_MIGRATIONS), RULES, scouts)
    try:
        shown = Receipt(
            id="r1",
            created_at="2026-01-01T00:00:00.000000Z",
            query="q",
            query_class="lookup",
            arguments={},
            agent_id="a",
            task_id="t",
            status="ok",
            final_nodes=(
                ReceiptNode("both", 1, 1.0, (), ("scout_vector", NOVELTY, RANDOM)),
                ReceiptNode("novel", 2, 1.0, (), (NOVELTY,)),
                ReceiptNode("plain", 3, 1.0, (), ("scout_vector",)),
            ),
        )
        told = split_feedback(shown, "t", "a", cited=["novel"], misleading=["both"])
        assert told.explored == (ScoutTally(NOVELTY, 1, 0, 1), ScoutTally(RANDOM, 0, 0, 1))
        assert await store.apply(told, "now") == []
        assert await store.apply(told, "later") is None  # once per receipt
        learned = store.scout_weights("lookup")
        assert learned[NOVELTY] == pytest.approx(0.1 + 0.01 - 0.02)
        assert learned[RANDOM] == pytest.approx(0.01)  # 0.02 - 0.02 held at the floor
        assert store.scout_weights("design") == {NOVELTY: 0.1, RANDOM: 0.02}
    finally:
        store.close()

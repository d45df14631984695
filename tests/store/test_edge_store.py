"""The SQLite edge store on a real file: upserts, reinforcement, decay on read, conflicts."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lithos.domain.edges import (
    ConflictFilter,
    ConflictResolution,
    DecayCurve,
    DecayPolicy,
    EdgeFilter,
    EdgeRules,
    EdgeUpsert,
)
from lithos.store.edges import SqliteEdgeStore

NOW = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
RULES = EdgeRules(
    initial_weight=0.5,
    reinforce_step=0.1,
    decay=DecayPolicy({"related_to": DecayCurve(30, 0.05), "contradicts": DecayCurve(365, 0.3)}),
)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteEdgeStore]:
    opened = SqliteEdgeStore.open(tmp_path / ".lithos" / "edges.db", RULES)
    yield opened
    opened.close()


def test_upserting_the_same_edge_twice_keeps_one_row_and_reinforces_it(store: SqliteEdgeStore):
    first = store.upsert([EdgeUpsert("a", "b", "related_to")], NOW)[0]
    second = store.upsert([EdgeUpsert("a", "b", "related_to")], NOW + timedelta(seconds=1))[0]
    assert second.edge_id == first.edge_id
    assert (first.weight, second.weight) == (0.5, 0.6)
    assert len(store.find(EdgeFilter(), NOW)) == 1


def test_an_explicit_weight_is_set_not_added(store: SqliteEdgeStore):
    store.upsert([EdgeUpsert("a", "b", "supports", weight=0.9)], NOW)
    again = store.upsert([EdgeUpsert("a", "b", "supports", weight=0.3)], NOW)[0]
    assert again.weight == 0.3


def test_reinforcement_never_passes_one(store: SqliteEdgeStore):
    store.upsert([EdgeUpsert("a", "b", "supports", weight=0.95)], NOW)
    assert store.upsert([EdgeUpsert("a", "b", "supports")], NOW)[0].weight == 1.0


def test_namespace_and_type_make_separate_edges(store: SqliteEdgeStore):
    store.upsert(
        [
            EdgeUpsert("a", "b", "supports"),
            EdgeUpsert("a", "b", "refines"),
            EdgeUpsert("a", "b", "supports", namespace="project/x"),
        ],
        NOW,
    )
    assert len(store.find(EdgeFilter(from_id="a"), NOW)) == 3
    assert len(store.find(EdgeFilter(namespace="project/x"), NOW)) == 1
    assert len(store.find(EdgeFilter(type="supports"), NOW)) == 2


def test_evidence_accumulates_without_duplicates(store: SqliteEdgeStore):
    store.upsert([EdgeUpsert("a", "b", "supports", evidence=("one", "two"))], NOW)
    edge = store.upsert([EdgeUpsert("a", "b", "supports", evidence=("two", "three"))], NOW)[0]
    assert edge.evidence == ("one", "two", "three")


def test_an_unused_edge_reads_weaker_as_time_passes_down_to_its_floor(store: SqliteEdgeStore):
    edge = store.upsert([EdgeUpsert("a", "b", "related_to", weight=0.85)], NOW)[0]
    month = store.get(edge.edge_id, NOW + timedelta(days=30))
    years = store.get(edge.edge_id, NOW + timedelta(days=3650))
    assert month is not None and years is not None
    assert month.weight == pytest.approx(0.05 + 0.8 / 2)
    assert month.stored_weight == 0.85  # decay is computed on read, nothing was written
    assert years.weight == pytest.approx(0.05, abs=1e-6)


def test_reinforcing_a_decayed_edge_starts_from_its_decayed_weight(store: SqliteEdgeStore):
    store.upsert([EdgeUpsert("a", "b", "related_to", weight=0.85)], NOW)
    later = NOW + timedelta(days=30)
    edge = store.upsert([EdgeUpsert("a", "b", "related_to")], later)[0]
    assert edge.weight == pytest.approx(0.45 + 0.1)
    assert edge.last_used_at == later


def test_human_edges_do_not_decay(store: SqliteEdgeStore):
    edge = store.upsert([EdgeUpsert("a", "b", "related_to", provenance="human", weight=0.9)], NOW)
    read = store.get(edge[0].edge_id, NOW + timedelta(days=400))
    assert read is not None and read.weight == 0.9


def test_mark_used_keeps_the_current_weight_and_restarts_decay(store: SqliteEdgeStore):
    edge = store.upsert([EdgeUpsert("a", "b", "related_to", weight=0.85)], NOW)[0]
    later = NOW + timedelta(days=30)
    assert store.mark_used([edge.edge_id], later) == 1
    read = store.get(edge.edge_id, later)
    assert read is not None and read.stored_weight == pytest.approx(0.45)
    assert read.last_used_at == later


def test_a_new_contradiction_opens_one_unreviewed_conflict(store: SqliteEdgeStore):
    store.upsert([EdgeUpsert("a", "b", "contradicts", actor="agent-a")], NOW)
    store.upsert([EdgeUpsert("a", "b", "contradicts", actor="agent-b")], NOW)
    [conflict] = store.conflicts(ConflictFilter(), NOW)
    assert conflict.state == "unreviewed"
    assert [(e.state, e.actor) for e in conflict.history] == [("unreviewed", "agent-a")]


def test_removed_note_hides_its_edges_and_a_returning_note_gets_them_back(
    store: SqliteEdgeStore,
):
    store.upsert([EdgeUpsert("a", "b", "supports"), EdgeUpsert("c", "a", "refines")], NOW)
    assert store.remove_note("a", NOW) == 2
    assert store.find(EdgeFilter(), NOW) == []
    assert store.restore(["a"], {"a", "b"}.__contains__) == 1  # c is gone: its edge stays hidden
    assert [e.to_id for e in store.find(EdgeFilter(), NOW)] == ["b"]


def test_purge_drops_only_edges_removed_before_the_cutoff(store: SqliteEdgeStore):
    store.upsert([EdgeUpsert("a", "b", "supports"), EdgeUpsert("c", "d", "supports")], NOW)
    store.remove_note("a", NOW)
    store.remove_note("c", NOW + timedelta(days=10))
    assert store.purge_removed(NOW + timedelta(days=5), limit=100) == 1
    assert store.restore(["c"], {"c", "d"}.__contains__) == 1


def test_the_schema_refuses_weights_outside_zero_to_one(store: SqliteEdgeStore):
    with pytest.raises(sqlite3.IntegrityError):
        store.upsert([EdgeUpsert("a", "b", "supports", weight=1.5)], NOW)
    assert store.find(EdgeFilter(), NOW) == []


def test_resolving_a_conflict_appends_to_its_history(store: SqliteEdgeStore):
    edge = store.upsert([EdgeUpsert("a", "b", "contradicts", actor="agent-a")], NOW)[0]
    later = NOW + timedelta(hours=1)
    decision = ConflictResolution(edge.edge_id, "refuted", "reviewer", note="b was measured")
    resolved = store.resolve(decision, later)
    assert resolved is not None and resolved.state == "refuted"
    assert [(e.state, e.actor, e.note) for e in resolved.history] == [
        ("unreviewed", "agent-a", None),
        ("refuted", "reviewer", "b was measured"),
    ]
    assert store.conflicts(ConflictFilter(state="unreviewed"), later) == []


def test_only_contradictions_can_be_resolved(store: SqliteEdgeStore):
    edge = store.upsert([EdgeUpsert("a", "b", "supports")], NOW)[0]
    assert store.resolve(ConflictResolution(edge.edge_id, "refuted", "r"), NOW) is None
    assert store.resolve(ConflictResolution("edge-missing", "refuted", "r"), NOW) is None

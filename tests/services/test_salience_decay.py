"""Unused salience decays along its note type's curve to a floor, in small batches that
never overwrite a change made meanwhile. A settable clock, real stores, no sleeps."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from lithos.app import LithosApp
from lithos.domain.edges import DecayCurve
from lithos.domain.memory import SalienceDecay
from lithos.domain.metadata import MetadataChange
from lithos.domain.retrieval import RetrievalQuery
from lithos.domain.timestamps import format_timestamp
from lithos.services.knowledge import WriteRequest
from lithos.store.memory import SalienceUpdate
from tests.services.conftest import Clock
from tests.support import make_app

OFF = {"lcma.consolidation": {"enabled": False, "decay_batch": 2}}


async def cited(app: LithosApp, title: str, note_type: str = "observation") -> str:
    """A note retrieved in a task and cited when it completed (salience 0.52)."""
    written = await app.knowledge.write(
        WriteRequest(
            agent="w",
            title=title,
            content=f"{title} words",
            metadata=MetadataChange(note_type=note_type),
        )
    )
    note_id = str(written["id"])
    task = str((await app.coordination.create_task("t", "agent-1"))["task_id"])
    query = RetrievalQuery(query=title, task_id=task, agent_id="agent-1", limit=1)
    got = await app.retrieval.retrieve(query)
    assert got.results[0].id == note_id
    await app.feedback.complete(task, "agent-1", cited_nodes=[note_id])
    return note_id


def salience(app: LithosApp, note_id: str) -> float:
    return app.stats_store.node_stats([note_id])[note_id].salience


def test_the_curve_halves_the_distance_to_the_floor_each_half_life():
    decay = SalienceDecay({"observation": DecayCurve(90, 0.4)})
    assert decay.salience("observation", 0.6, 0) == 0.6
    assert decay.salience("observation", 0.6, 90) == pytest.approx(0.5)
    assert decay.salience("observation", 0.6, 180) == pytest.approx(0.45)
    assert decay.salience("observation", 0.6, 100_000) == pytest.approx(0.4)
    assert decay.salience("observation", 0.3, 1000) == 0.3  # under the floor: never lifted
    assert decay.salience("unknown_type", 0.6, 1000) == 0.6


def test_a_concept_never_holds_more_than_its_cap():
    decay = SalienceDecay({"concept": DecayCurve(180, 0.45)}, concept_cap=0.85)
    assert decay.salience("concept", 0.9, 0) == 0.85
    assert decay.salience("observation", 0.9, 0) == 0.9


async def test_an_unused_note_decays_toward_its_type_floor(lithos: LithosApp, clock: Clock):
    observation = await cited(lithos, "Backoff")
    hypothesis = await cited(lithos, "Sharding", "hypothesis")
    assert salience(lithos, observation) == pytest.approx(0.52)
    clock.advance(days=45)
    lithos.consolidation.sweep()
    # observation: half-life 90 days, floor 0.4; hypothesis: half-life 45 days, floor 0.3.
    # The sweep consolidated the stale task first, which promoted the cited hypothesis (+0.05).
    assert salience(lithos, observation) == pytest.approx(0.4 + 0.12 * 0.5**0.5)
    assert salience(lithos, hypothesis) == pytest.approx(0.3 + 0.27 * 0.5)
    clock.advance(days=3650)
    lithos.consolidation.sweep()
    assert salience(lithos, observation) == pytest.approx(0.4, abs=1e-6)
    assert salience(lithos, hypothesis) == pytest.approx(0.3, abs=1e-6)


async def test_daily_sweeps_follow_the_same_curve_as_one_late_sweep(data_dir: Path, clock: Clock):
    results = []
    for every in (1, 60):
        app = make_app(data_dir / str(every), clock=clock, **OFF)
        app.start(watch=False, embed=False)
        try:
            start = clock.now
            note = await cited(app, "Backoff")
            for _ in range(60 // every):
                clock.advance(days=every)
                app.consolidation.sweep()
            results.append(salience(app, note))
            clock.now = start
        finally:
            app.close()
    daily, once = results
    assert once < 0.52
    assert daily == pytest.approx(once, abs=1e-9)


async def test_the_sweep_works_in_batches_and_stops_between_them(lithos: LithosApp, clock: Clock):
    notes = [await cited(lithos, f"Topic {n}") for n in range(5)]
    clock.advance(days=90)
    stopping = threading.Event()
    stopping.set()
    visited, lowered, batches = lithos.consolidation.decay_salience(clock(), stopping)
    assert (visited, batches) == (0, 0)  # asked to stop: not even one batch
    visited, lowered, batches = lithos.consolidation.decay_salience(clock())
    assert (visited, lowered, batches) == (5, 5, 3)  # decay_batch is 2
    assert {round(salience(lithos, n), 6) for n in notes} == {round(0.4 + 0.12 * 0.5, 6)}


async def test_a_use_between_reading_and_writing_a_batch_wins(lithos: LithosApp, clock: Clock):
    note = await cited(lithos, "Backoff")
    clock.advance(days=90)
    [row] = lithos.memory_store.salience_batch("", 10)
    # The note is cited again after the sweep read it: the sweep's update must not land.
    task = str((await lithos.coordination.create_task("t", "agent-1"))["task_id"])
    again = RetrievalQuery(query="Backoff", task_id=task, agent_id="agent-1", limit=1)
    await lithos.retrieval.retrieve(again)
    await lithos.feedback.complete(task, "agent-1", cited_nodes=[note])
    stale = SalienceUpdate(note, row.salience, row.anchor, 0.46, format_timestamp(clock()))
    assert lithos.memory_store.set_salience([stale]) == 0
    assert salience(lithos, note) == pytest.approx(0.54)


async def test_a_floor_above_the_stored_salience_leaves_it_alone(data_dir: Path, clock: Clock):
    settings = {**OFF, "lcma.decay": {"salience_floor": {"observation": 0.6}}}
    app = make_app(data_dir, clock=clock, **settings)
    app.start(watch=False, embed=False)
    try:
        note = await cited(app, "Backoff")
        clock.advance(days=400)
        app.consolidation.sweep()
        assert salience(app, note) == pytest.approx(0.52)
    finally:
        app.close()


def test_a_note_never_retrieved_has_nothing_to_decay(lithos: LithosApp, clock: Clock):
    clock.advance(days=400)
    assert lithos.consolidation.sweep().visited == 0

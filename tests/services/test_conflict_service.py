"""ConflictService's helpers for retrieval: conflicts among a set, and the candidate detector."""

from __future__ import annotations

from lithos.app import LithosApp
from lithos.domain.contradictions import contradiction_signal
from lithos.domain.edges import ConflictFilter, ConflictResolution, EdgeUpsert
from lithos.services.knowledge import WriteRequest


async def notes(app: LithosApp, *titles: str) -> list[str]:
    ids = []
    for title in titles:
        created = await app.knowledge.write(WriteRequest("agent-a", title=title, content="x"))
        ids.append(str(created["id"]))
    return ids


def test_negation_about_the_same_thing_is_a_signal():
    signal = contradiction_signal(
        "Connection pooling improves database latency under load",
        "Connection pooling does not improve database latency under load",
    )
    assert signal is not None and "negation" in signal.reasons[0]


def test_different_numbers_for_the_same_quantity_are_a_signal():
    signal = contradiction_signal(
        "The API gateway timeout is 30 seconds for upstream calls",
        "The API gateway timeout is 60 seconds for upstream calls",
    )
    assert signal is not None
    assert signal.reasons == ("different numbers for 'seconds': 30 vs 60",)


def test_unrelated_or_agreeing_texts_are_no_signal():
    assert (
        contradiction_signal("Cats sleep most of the day", "Rust has no garbage collector") is None
    )
    assert (
        contradiction_signal(
            "The gateway timeout is 30 seconds", "The gateway timeout is 30 seconds by default"
        )
        is None
    )


async def test_conflicts_among_lists_only_open_conflicts_inside_the_set(app: LithosApp):
    a, b, c = await notes(app, "A", "B", "C")
    inside = await app.edges.upsert(EdgeUpsert(a, b, "contradicts"))
    await app.edges.upsert(EdgeUpsert(a, c, "contradicts"))
    assert [k.edge.edge_id for k in app.conflicts.conflicts_among([a, b])] == [inside.edge_id]
    await app.conflicts.resolve(ConflictResolution(inside.edge_id, "refuted", "reviewer"))
    assert app.conflicts.conflicts_among([a, b]) == []


async def test_detected_candidates_are_recorded_unreviewed_with_evidence(app: LithosApp):
    a, b, c = await notes(app, "A", "B", "C")
    texts = {
        a: "Retry budget: the client retries 3 times before failing the request",
        b: "Retry budget: the client retries 5 times before failing the request",
        c: "Gardening notes about tomatoes",
    }
    [found] = app.conflicts.detect(texts)
    assert {found.edge.from_id, found.edge.to_id} == {a, b}
    assert found.state == "unreviewed" and found.edge.provenance == "inferred"
    assert any("different numbers" in e for e in found.edge.evidence)
    assert app.conflicts.detect(texts) == []  # already flagged: nothing new
    listed = await app.conflicts.find(ConflictFilter(state="unreviewed"))
    assert len(listed) == 1

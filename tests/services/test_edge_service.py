"""EdgeService's graph signals for retrieval: neighbours by weight and coherence of a set."""

from __future__ import annotations

import pytest

from lithos.app import LithosApp
from lithos.domain.edges import EdgeUpsert
from lithos.services.knowledge import WriteRequest


async def notes(app: LithosApp, *titles: str, content: str = "body") -> list[str]:
    ids = []
    for title in titles:
        created = await app.knowledge.write(WriteRequest("agent-a", title=title, content=content))
        ids.append(str(created["id"]))
    return ids


async def test_neighbours_come_strongest_first_without_contradictions(app: LithosApp):
    a, b, c, d = await notes(app, "A", "B", "C", "D")
    await app.edges.upsert(EdgeUpsert(a, b, "related_to", weight=0.3))
    await app.edges.upsert(EdgeUpsert(c, a, "supports", weight=0.8))
    await app.edges.upsert(EdgeUpsert(a, d, "contradicts", weight=0.9))
    found = app.edges.neighbours([a])
    assert [(n.note_id, n.weight) for n in found] == [(c, 0.8), (b, 0.3)]
    asked = app.edges.neighbours([a], types=["contradicts"])
    assert [n.note_id for n in asked] == [d]
    assert [n.note_id for n in app.edges.neighbours([a], hidden={c})] == [b]


async def test_coherence_is_the_mean_pair_strength_from_edges_and_links(app: LithosApp):
    a, b = await notes(app, "A", "B")
    [c] = await notes(app, "C", content="see [[a]]")
    await app.edges.upsert(EdgeUpsert(a, b, "supports", weight=0.9))
    # pairs: a-b 0.9 (edge), a-c 0.5 (wiki-link), b-c 0 -> mean 1.4 / 3
    assert app.edges.coherence([a, b, c]) == pytest.approx(1.4 / 3)
    assert app.edges.coherence([a]) == 0.0


async def test_edge_types_weigh_differently_and_a_contradiction_lowers_coherence(app: LithosApp):
    a, b, c = await notes(app, "A", "B", "C")
    await app.edges.upsert(EdgeUpsert(a, b, "contradicts", weight=1.0))
    assert app.edges.coherence([a, b]) == -1.0
    await app.edges.upsert(EdgeUpsert(a, b, "supports", weight=0.8))
    assert app.edges.coherence([a, b]) == pytest.approx(0.8 - 1.0)
    # related_to binds less than supports (0.6 of its weight by default)
    await app.edges.upsert(EdgeUpsert(b, c, "related_to", weight=0.5))
    assert app.edges.coherence([b, c]) == pytest.approx(0.3)
    assert app.edges.coherence([b, c], type_strength={"related_to": 1.0}) == pytest.approx(0.5)

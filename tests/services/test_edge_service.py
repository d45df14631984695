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


async def test_neighbours_each_reads_every_seed_as_neighbours_of_that_seed_alone(app: LithosApp):
    a, b, c, d, e = await notes(app, "A", "B", "C", "D", "E")
    await app.edges.upsert(EdgeUpsert(a, b, "related_to", weight=0.3))
    await app.edges.upsert(EdgeUpsert(c, a, "supports", weight=0.8))
    await app.edges.upsert(EdgeUpsert(a, d, "refines", weight=0.5))
    await app.edges.upsert(EdgeUpsert(a, e, "contradicts", weight=0.9))
    await app.edges.upsert(EdgeUpsert(b, d, "depends_on", weight=0.6))
    await app.edges.upsert(EdgeUpsert(e, b, "supports", weight=0.7))
    each = app.edges.neighbours_each([a, b, e], limit=2)
    # Each seed keeps its own limit, both directions, strongest first; another seed may be
    # a seed's neighbour (a-b), and contradictions are left out unless asked for.
    assert [(n.note_id, n.seed, n.weight) for n in each[a]] == [(c, a, 0.8), (d, a, 0.5)]
    assert [(n.note_id, n.weight) for n in each[b]] == [(e, 0.7), (d, 0.6)]
    assert [(n.note_id, n.weight) for n in each[e]] == [(b, 0.7)]
    for seed in (a, b, e):
        for limit in (1, 2, 50):
            alone = app.edges.neighbours([seed], limit=limit)
            assert app.edges.neighbours_each([a, b, e], limit=limit)[seed] == alone
    asked = app.edges.neighbours_each([a, b], types=["contradicts"])
    assert [n.note_id for n in asked[a]] == [e] and asked[b] == []
    typed = app.edges.neighbours_each([a, d], types=["refines", "depends_on"])
    assert [n.note_id for n in typed[a]] == [d]
    assert [n.note_id for n in typed[d]] == [b, a]
    assert [n.note_id for n in app.edges.neighbours_each([a], hidden={c})[a]] == [d, b]
    assert app.edges.neighbours_each([]) == {}


async def test_neighbours_each_makes_one_database_round_trip(
    app: LithosApp, monkeypatch: pytest.MonkeyPatch
):
    seeds = await notes(app, "A", "B", "C", "D")
    for i, seed in enumerate(seeds[:-1]):
        await app.edges.upsert(EdgeUpsert(seed, seeds[i + 1], "related_to", weight=0.5))
    calls = []
    original = app.edges.store.touching

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(app.edges.store, "touching", counted)
    each = app.edges.neighbours_each(seeds)
    assert len(calls) == 1
    assert [len(each[seed]) for seed in seeds] == [1, 2, 2, 1]

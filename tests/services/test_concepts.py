"""Concept nodes: notes cited together again and again become one concept note (a real
Markdown file linking its members), formed once, updated when the cluster grows, never
overwriting a person's edit; retrieval damps it and returns it with its specifics."""

from __future__ import annotations

from lithos.app import LithosApp
from lithos.domain.memory import cluster_key
from lithos.domain.metadata import MetadataChange
from lithos.domain.notes import split_frontmatter
from lithos.domain.retrieval import RetrievalQuery
from lithos.services.knowledge import WriteRequest
from lithos.store.memory import ConceptClaim
from tests.services.conftest import Clock

TOPICS = {
    "Exponential backoff": "Retries wait exponentially longer: backoff spreads retry load.",
    "Retry jitter": "Jitter randomises retry delays so clients do not retry in lockstep.",
    "Retry budget": "A retry budget caps how much extra load retries may add.",
    "Circuit breaker": "A circuit breaker stops retries when a dependency keeps failing.",
    "Tomato care": "Tomatoes want sun, deep watering and a stake once they flower.",
}


async def notes(app: LithosApp, **scopes: str) -> dict[str, str]:
    ids = {}
    for title, text in TOPICS.items():
        change = MetadataChange(access_scope=scopes.get(title, "shared"))
        written = await app.knowledge.write(
            WriteRequest(agent="writer", title=title, content=text, metadata=change)
        )
        ids[title] = str(written["id"])
    return ids


async def cite_together(
    app: LithosApp, clock: Clock, group: list[str], times: int = 3, agent: str = "agent-1"
) -> None:
    """``times`` tasks, each retrieving the group's notes and citing all of them."""
    for _ in range(times):
        clock.advance(minutes=5)
        task = str((await app.coordination.create_task("t", agent))["task_id"])
        query = RetrievalQuery(query="retry", task_id=task, agent_id=agent, limit=10)
        got = await app.retrieval.retrieve(query)
        assert set(group) <= {r.id for r in got.results}
        await app.feedback.complete(task, agent, cited_nodes=group)


def concept_notes(app: LithosApp) -> list[str]:
    return [e.id for e in app.catalog.entries() if e.note_type == "concept"]


def text_of(app: LithosApp, note_id: str) -> str:
    entry = app.catalog.get(note_id)
    assert entry is not None
    return (app.files.root / entry.path).read_text()


async def test_notes_cited_together_form_one_concept_note(lithos: LithosApp, clock: Clock):
    ids = await notes(lithos)
    group = [ids["Exponential backoff"], ids["Retry jitter"], ids["Retry budget"]]
    await cite_together(lithos, clock, group)
    report = await lithos.concepts.form()
    [concept] = report.formed
    assert concept_notes(lithos) == [concept]
    meta, body = split_frontmatter(text_of(lithos, concept))
    assert meta["note_type"] == "concept" and meta["author"] == "lithos-concepts"
    assert sorted(meta["derived_from_ids"]) == sorted(group)
    assert lithos.catalog.get(concept).path.startswith("concepts/")  # type: ignore[union-attr]
    for title in ("Exponential backoff", "Retry jitter", "Retry budget"):
        assert f"|{title}]]" in body
    # The links are real: the link graph resolves every member.
    assert set(lithos.graph.linked([concept, *group])[concept]) == set(group)


async def test_forming_again_changes_nothing(lithos: LithosApp, clock: Clock):
    ids = await notes(lithos)
    group = [ids["Exponential backoff"], ids["Retry jitter"], ids["Retry budget"]]
    await cite_together(lithos, clock, group)
    [concept] = (await lithos.concepts.form()).formed
    before = text_of(lithos, concept)
    again = await lithos.concepts.form()
    assert again.formed == again.updated == again.tracked == ()
    assert concept_notes(lithos) == [concept] and text_of(lithos, concept) == before


async def test_a_grown_cluster_updates_its_concept_and_a_persons_edit_is_kept(
    lithos: LithosApp, clock: Clock
):
    ids = await notes(lithos)
    group = [ids["Exponential backoff"], ids["Retry jitter"], ids["Retry budget"]]
    await cite_together(lithos, clock, group)
    [concept] = (await lithos.concepts.form()).formed
    await cite_together(lithos, clock, [*group, ids["Circuit breaker"]])
    report = await lithos.concepts.form()
    assert report.updated == (concept,) and report.formed == ()
    assert "|Circuit breaker]]" in text_of(lithos, concept)

    # A person rewrites the concept; the cluster changes again; the file stays theirs.
    path = lithos.files.root / lithos.catalog.get(concept).path  # type: ignore[union-attr]
    mine = text_of(lithos, concept).replace("## Members", "## My own words")
    path.write_text(mine)
    lithos.indexer.index_path(lithos.catalog.get(concept).path)  # type: ignore[union-attr]
    await lithos.knowledge.delete(ids["Circuit breaker"])
    report = await lithos.concepts.form()
    assert report.tracked == (concept,) and report.updated == ()
    assert path.read_text() == mine
    links = lithos.memory_store.concept_links([concept])
    assert {m for _, m in links} == set(group)


async def test_private_notes_never_join_a_concept(lithos: LithosApp, clock: Clock):
    ids = await notes(lithos, **{"Retry budget": "agent_private"})
    group = [ids["Exponential backoff"], ids["Retry jitter"], ids["Retry budget"]]
    await cite_together(lithos, clock, group, agent="writer")  # the author sees all three
    assert (await lithos.concepts.form()).formed == ()
    await cite_together(lithos, clock, [*group[:2], ids["Circuit breaker"]], agent="writer")
    [concept] = (await lithos.concepts.form()).formed
    assert "Retry budget" not in text_of(lithos, concept)


async def test_a_concept_claimed_before_a_crash_is_adopted_not_duplicated(
    lithos: LithosApp, clock: Clock
):
    ids = await notes(lithos)
    group = sorted([ids["Exponential backoff"], ids["Retry jitter"], ids["Retry budget"]])
    await cite_together(lithos, clock, group)
    key = cluster_key(group)
    # A run claimed the cluster and wrote the note, then stopped before recording it.
    lithos.memory_store.claim_concept(ConceptClaim(key, "default", "Left over", tuple(group)), "")
    written = await lithos.knowledge.write(
        WriteRequest(
            agent="lithos-concepts",
            title="Left over",
            content="x",
            aliases=[f"concept-{key}"],
            metadata=MetadataChange(note_type="concept"),
        )
    )
    report = await lithos.concepts.form()
    assert report.formed == (written["id"],)
    assert concept_notes(lithos) == [written["id"]]


async def test_retrieval_returns_the_concept_with_its_specifics_and_damps_repeats(
    lithos: LithosApp, clock: Clock
):
    ids = await notes(lithos)
    group = [ids["Exponential backoff"], ids["Retry jitter"], ids["Retry budget"]]
    await cite_together(lithos, clock, group)
    [concept] = (await lithos.concepts.form()).formed
    clock.advance(days=2)  # the citing retrievals above leave the repeat window

    scores = []
    for _ in range(3):
        got = await lithos.retrieval.retrieve(RetrievalQuery(query="retry jitter", limit=4))
        by_id = {r.id: r for r in got.results}
        assert concept in by_id, [r.title for r in got.results]
        assert any(r.startswith("concept: gateway to") for r in by_id[concept].reasons)
        specifics = [n for n in group if n in by_id]
        assert specifics
        assert all(
            any(r.startswith("concept: a specific of") for r in by_id[n].reasons) for n in specifics
        )
        scores.append(by_id[concept].score)
    assert scores[0] > scores[1] > scores[2]  # each retrieval in the window costs more
    assert any("concept: damped -0.10" in r for r in by_id[concept].reasons)


async def test_the_gateway_shows_one_concept_after_its_best_specific_in_the_last_place(
    lithos: LithosApp, clock: Clock
):
    ids = await notes(lithos)
    group = [ids["Exponential backoff"], ids["Retry jitter"], ids["Retry budget"]]
    await cite_together(lithos, clock, group)
    [concept] = (await lithos.concepts.form()).formed
    clock.advance(days=2)

    got = await lithos.retrieval.retrieve(RetrievalQuery(query="retry jitter", limit=3))
    order = [r.id for r in got.results]
    assert len(order) == 3 and order.count(concept) == 1
    place = order.index(concept)
    assert place > 0 and order[place - 1] in group  # right after a member shown anyway
    assert order[0] in group and order.index(order[0]) < place
    # The other results keep their ranking; the concept only took a place after them.
    scores = [r.score for r in got.results if r.id != concept]
    assert scores == sorted(scores, reverse=True)

    # No member among the results: the concept stays out, however well its text matches.
    got = await lithos.retrieval.retrieve(RetrievalQuery(query="tomatoes sun watering", limit=1))
    assert [r.id for r in got.results] == [ids["Tomato care"]]
    got = await lithos.retrieval.retrieve(RetrievalQuery(query="tomatoes sun watering", limit=2))
    assert concept not in {r.id for r in got.results}

"""Learning from feedback: lithos_task_complete's cited/misleading nodes against a
lithos_retrieve receipt, seen through lithos_node_stats and later retrievals."""

from __future__ import annotations

import pytest
from fastmcp import Client

from tests.support import call


async def write(client: Client, title: str, content: str, **args: object) -> str:
    result = await call(client, "lithos_write", agent="a", title=title, content=content, **args)
    return str(result["id"])


async def task(client: Client, agent: str = "agent-1") -> str:
    return str((await call(client, "lithos_task_create", title="t", agent=agent))["task_id"])


async def retrieve(client: Client, query: str, **args: object) -> dict:
    result = await call(client, "lithos_retrieve", query=query, **args)
    assert "results" in result, result
    return result


async def stats(client: Client, note: str) -> dict:
    return await call(client, "lithos_node_stats", node_id=note)


async def test_cited_notes_gain_and_the_rest_of_the_receipt_is_ignored(client: Client):
    good = await write(client, "Good", "otter habitats rivers")
    meh = await write(client, "Meh", "otter habitats lakes")
    outsider = await write(client, "Outsider", "unrelated text")
    t = await task(client)
    got = await retrieve(client, "otter habitats", task_id=t, agent_id="agent-1")
    done = await call(
        client, "lithos_task_complete", task_id=t, agent="agent-1", cited_nodes=[good, outsider]
    )
    assert done["success"] is True
    feedback = done["feedback"]
    assert feedback["receipt_id"] == got["receipt_id"] and feedback["applied"] is True
    assert feedback["cited"] == [good] and feedback["ignored"] == [meh]
    assert feedback["misleading"] == [] and feedback["quarantined"] == []
    g, m, o = await stats(client, good), await stats(client, meh), await stats(client, outsider)
    assert g["cited_count"] == 1 and g["salience"] == pytest.approx(0.52) and g["last_used_at"]
    assert g["query_class_priors"] == {"lookup": pytest.approx(0.03)}
    assert m["ignored_count"] == 1 and m["salience"] == 0.5
    assert m["query_class_priors"] == {"lookup": pytest.approx(-0.03)}
    assert o["cited_count"] == 0 and o["retrieval_count"] == 0


async def test_without_receipt_id_the_agents_latest_receipt_of_the_task_counts(client: Client):
    first = await write(client, "First", "beaver dams")
    second = await write(client, "Second", "beaver lodges")
    t = await task(client)
    await retrieve(client, "dams", task_id=t, agent_id="agent-1")
    latest = await retrieve(client, "lodges", task_id=t, agent_id="agent-1")
    await retrieve(client, "dams", task_id=t, agent_id="someone-else")
    done = await call(
        client, "lithos_task_complete", task_id=t, agent="agent-1", cited_nodes=[first, second]
    )
    assert done["feedback"]["receipt_id"] == latest["receipt_id"]
    # "First" came back in the latest receipt only through the task's working memory.
    assert set(done["feedback"]["cited"]) <= {first, second} and second in done["feedback"]["cited"]


async def test_a_receipt_of_another_task_is_receipt_not_found_and_the_task_stays_open(
    client: Client,
):
    note = await write(client, "Note", "heron fishing")
    mine, other = await task(client), await task(client)
    foreign = await retrieve(client, "heron", task_id=other, agent_id="agent-1")
    result = await call(
        client,
        "lithos_task_complete",
        task_id=mine,
        agent="agent-1",
        cited_nodes=[note],
        receipt_id=foreign["receipt_id"],
    )
    assert result["code"] == "receipt_not_found"
    [status] = (await call(client, "lithos_task_status", task_id=mine))["tasks"]
    assert status["status"] == "open"
    assert (await stats(client, note))["cited_count"] == 0
    unknown = await call(
        client, "lithos_task_complete", task_id=mine, agent="agent-1", receipt_id="rcpt_nope"
    )
    assert unknown["code"] == "receipt_not_found"


async def test_completion_without_feedback_teaches_nothing(client: Client):
    note = await write(client, "Plain", "kestrel hovering")
    t = await task(client)
    await retrieve(client, "kestrel", task_id=t, agent_id="agent-1")
    done = await call(client, "lithos_task_complete", task_id=t, agent="agent-1")
    assert done == {"success": True}
    assert (await stats(client, note))["ignored_count"] == 0


async def test_repeatedly_misleading_notes_are_quarantined(client: Client):
    bad = await write(client, "Wrong claim", "puffins migrate south in spring")
    for round_ in range(3):
        t = await task(client)
        got = await retrieve(client, "puffins migrate", task_id=t, agent_id="agent-1")
        assert bad in [r["id"] for r in got["results"]]
        done = await call(
            client, "lithos_task_complete", task_id=t, agent="agent-1", misleading_nodes=[bad]
        )
        assert done["feedback"]["misleading"] == [bad]
        assert done["feedback"]["quarantined"] == ([bad] if round_ == 2 else [])
    s = await stats(client, bad)
    assert s["misleading_count"] == 3 and s["salience"] == pytest.approx(0.35)
    assert s["query_class_priors"]["lookup"] == pytest.approx(-0.24)
    note = await call(client, "lithos_read", id=bad)
    assert note["metadata"]["status"] == "quarantined"
    assert bad not in [r["id"] for r in (await retrieve(client, "puffins migrate"))["results"]]


async def test_cited_together_notes_return_through_coactivation(client: Client):
    a = await write(client, "Sourdough starter", "flour water wild yeast")
    b = await write(client, "Oven schedule", "bake at dawn")
    t = await task(client)
    await retrieve(client, "sourdough starter", task_id=t, agent_id="agent-1")
    await retrieve(client, "oven schedule", task_id=t, agent_id="agent-1")
    done = await call(
        client, "lithos_task_complete", task_id=t, agent="agent-1", cited_nodes=[a, b]
    )
    assert set(done["feedback"]["cited"]) == {a, b}
    later = {r["id"]: r for r in (await retrieve(client, "sourdough starter"))["results"]}
    assert "scout_coactivation" in later[b]["scouts"]
    assert "coactivation: cited together with 'Sourdough starter' once" in later[b]["reasons"]


async def test_feedback_moves_the_ranking_for_the_same_kind_of_query(client: Client):
    one = await write(client, "Crane one", "crane nesting sites")
    two = await write(client, "Crane two", "crane nesting sites")
    before = [r["id"] for r in (await retrieve(client, "crane nesting"))["results"]]
    loser = before[-1]
    for _ in range(2):
        t = await task(client)
        await retrieve(client, "crane nesting", task_id=t, agent_id="agent-1")
        await call(client, "lithos_task_complete", task_id=t, agent="agent-1", cited_nodes=[loser])
    after = await retrieve(client, "crane nesting")
    assert after["results"][0]["id"] == loser and {one, two} == set(before)
    top = after["results"][0]
    assert any(r.startswith("learned: cited 2 times") for r in top["reasons"])
    assert top["salience"] == pytest.approx(0.54)


async def edges_between(client: Client, a: str, b: str) -> list[dict]:
    listed = await call(client, "lithos_edge_list", type="related_to")
    return [e for e in listed["edges"] if {e["from_id"], e["to_id"]} == {a, b}]


async def cite(client: Client, query: str, cited: list[str], **args: object) -> dict:
    t = await task(client)
    await retrieve(client, query, task_id=t, agent_id="agent-1", **args)
    done = await call(client, "lithos_task_complete", task_id=t, agent="agent-1", cited_nodes=cited)
    return done["feedback"]


async def test_cited_notes_are_joined_by_a_reinforced_rule_edge(client: Client):
    a = await write(client, "Glacier retreat", "glacier ice melt rates")
    b = await write(client, "Glacier lakes", "glacier ice lakes form")
    first = await cite(client, "glacier ice", [a, b])
    [edge] = await edges_between(client, a, b)
    assert first["edges_reinforced"] == [edge["edge_id"]] and first["edges_weakened"] == 0
    assert edge["provenance"] == "rule" and edge["actor"] == "agent-1"
    assert edge["weight"] == pytest.approx(0.3) and edge["namespace"] == "default"
    assert any(first["receipt_id"] in e for e in edge["evidence"])
    await cite(client, "glacier ice", [a, b])
    [again] = await edges_between(client, a, b)
    assert again["edge_id"] == edge["edge_id"] and again["weight"] == pytest.approx(0.33, abs=1e-3)
    # The learned edge is now a graph signal: it shows up among the note's related notes.
    related = await call(client, "lithos_related", id=a)
    assert b in [n["id"] for n in related["edges"]], related


async def test_a_rule_reinforcement_keeps_an_agents_edge_its_provenance(client: Client):
    a = await write(client, "Tide tables", "tide height times")
    b = await write(client, "Tide pools", "tide pool life")
    low, high = sorted([a, b])
    await call(
        client,
        "lithos_edge_upsert",
        from_id=low,
        to_id=high,
        type="related_to",
        agent="curator",
        weight=0.6,
    )
    await cite(client, "tide", [a, b])
    [edge] = await edges_between(client, a, b)
    assert edge["provenance"] == "agent" and edge["actor"] == "curator"
    assert edge["weight"] == pytest.approx(0.63, abs=1e-3)


async def test_only_pairs_among_the_first_cited_notes_become_edges(client: Client):
    notes = [await write(client, f"Lichen {i}", f"lichen growth on rock {i}") for i in range(7)]
    feedback = await cite(client, "lichen growth rock", notes)
    assert len(feedback["cited"]) == 7
    # The first five cited notes in the receipt's rank order: 5 * 4 / 2 pairs.
    assert len(feedback["edges_reinforced"]) == 10
    listed = await call(client, "lithos_edge_list", type="related_to")
    touched = {n for e in listed["edges"] for n in (e["from_id"], e["to_id"])}
    assert touched == set(feedback["cited"][:5])


async def test_misleading_notes_weaken_the_edges_that_pulled_them_in(client: Client):
    good = await write(client, "Owl pellets", "owl pellet bones")
    bad = await write(client, "Owl myth", "owl pellet folklore")
    person = await write(client, "Owl guide", "owl pellet guide")
    await call(
        client,
        "lithos_edge_upsert",
        from_id=good,
        to_id=bad,
        type="supports",
        agent="x",
        weight=0.5,
    )
    await call(
        client,
        "lithos_edge_upsert",
        from_id=person,
        to_id=bad,
        type="contradicts",
        agent="x",
        weight=0.5,
    )
    t = await task(client)
    got = await retrieve(client, "owl pellet", task_id=t, agent_id="agent-1")
    assert {good, bad, person} <= {r["id"] for r in got["results"]}
    done = await call(
        client, "lithos_task_complete", task_id=t, agent="agent-1", misleading_nodes=[bad]
    )
    assert done["feedback"]["edges_weakened"] == 1
    listed = (await call(client, "lithos_edge_list", to_id=bad))["edges"]
    weights = {e["type"]: e["weight"] for e in listed}
    assert weights["supports"] == pytest.approx(0.45, abs=1e-3)
    assert weights["contradicts"] == pytest.approx(0.5, abs=1e-3)  # a contradiction stays


async def test_node_stats_lists_coactivation_partners_the_caller_may_see(client: Client):
    a = await write(client, "Moss A", "moss spores damp")
    b = await write(client, "Moss B", "moss spores shade")
    c = await write(client, "Moss C", "moss spores rock")
    secret = await write(client, "Moss secret", "moss spores private", access_scope="agent_private")
    await cite(
        client,
        "moss spores",
        [a, b],
    )
    await cite(client, "moss spores", [a, b])
    await retrieve(client, "moss spores", agent_id="a")
    stats = await call(client, "lithos_node_stats", node_id=a)
    partners = {p["note_id"]: p for p in stats["coactivation"]}
    assert partners[b]["co_cited"] == 2 and partners[b]["co_retrieved"] == 3
    assert partners[b]["title"] == "Moss B"
    assert partners[c]["co_cited"] == 0 and partners[c]["co_retrieved"] == 3
    assert stats["coactivation"][0]["note_id"] == b  # most co-cited first
    assert secret not in partners
    mine = await call(client, "lithos_node_stats", node_id=a, agent_id="a")
    assert secret in {p["note_id"] for p in mine["coactivation"]}
    # The private note's own statistics are hidden from everyone but its author.
    assert (await call(client, "lithos_node_stats", node_id=secret))["code"] == "doc_not_found"
    own = await call(client, "lithos_node_stats", node_id=secret, agent_id="a")
    assert own["retrieval_count"] == 1

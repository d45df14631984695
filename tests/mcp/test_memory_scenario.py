"""A deterministic scenario through MCP with the settable clock: co-use strengthens edges,
time passes and unused ones decay, a planted contradiction is detected, listed and resolved
with `supersedes` written into the winner's file."""

from __future__ import annotations

import asyncio

import pytest
from fastmcp import Client

from lithos.domain.notes import split_frontmatter
from tests.support import call, note_file

TOPICS = {
    "backoff": "Exponential backoff spaces retries of failed calls further apart each time.",
    "jitter": "Jitter randomises retry delays so that clients do not retry in lockstep.",
    "budget": "A retry budget caps the share of extra load that retries may add.",
    "gardening": "Tomatoes want sun, deep watering and a stake once they flower.",
}


async def write(client: Client, title: str, content: str) -> str:
    result = await call(client, "lithos_write", agent="planner", title=title, content=content)
    return str(result["id"])


async def weights(client: Client, source: str) -> dict[str, float]:
    listed = await call(client, "lithos_edge_list", from_id=source, type="related_to")
    return {e["to_id"]: e["weight"] for e in listed["edges"]}


async def test_use_strengthens_disuse_weakens_and_a_contradiction_is_resolved(scenario):
    app, client, clock = scenario
    ids = {name: await write(client, name.title(), text) for name, text in TOPICS.items()}
    backoff, jitter, budget = ids["backoff"], ids["jitter"], ids["budget"]

    # Five tasks: backoff and jitter are used together every time, budget once.
    for task in range(5):
        clock.advance(hours=1)
        used = [backoff, jitter] + ([budget] if task == 0 else [])
        for other in used[1:]:
            await call(
                client,
                "lithos_edge_upsert",
                from_id=backoff,
                to_id=other,
                type="related_to",
                agent=f"agent-{task % 2}",
                evidence=[f"task {task}"],
            )
    strong = await weights(client, backoff)
    # 0.5, then four steps of 0.1, less what each hour between tasks took away
    assert strong[jitter] == pytest.approx(0.9, abs=0.005) and strong[jitter] < 0.9
    assert strong[budget] == pytest.approx(0.5, abs=0.005) and strong[budget] < 0.5
    listed = await call(client, "lithos_edge_list", from_id=backoff, type="related_to")
    assert listed["edges"][0]["evidence"] == [f"task {t}" for t in range(5)]

    coherent = await asyncio.to_thread(app.edges.coherence, [backoff, jitter])
    scattered = await asyncio.to_thread(app.edges.coherence, [backoff, ids["gardening"]])
    assert 1 - coherent < 1 - scattered  # a coherent set runs cooler

    # Sixty days without use: both decay toward the related_to floor (0.05, half-life 30).
    clock.advance(days=60)
    faded = await weights(client, backoff)
    assert faded[jitter] == pytest.approx(0.05 + (strong[jitter] - 0.05) / 4, abs=1e-5)
    assert faded[budget] == pytest.approx(0.05 + (strong[budget] - 0.05) / 4, abs=1e-5)
    # Using backoff-jitter again reinforces from the decayed weight; budget keeps fading.
    await call(
        client, "lithos_edge_upsert", from_id=backoff, to_id=jitter, type="related_to", agent="a"
    )
    clock.advance(days=3650)
    final = await weights(client, backoff)
    assert final[budget] == pytest.approx(0.05, abs=1e-3)
    assert final[jitter] == pytest.approx(0.05, abs=1e-3)

    # A planted contradiction is flagged, listed, and resolved by an explicit decision.
    old = await write(client, "Gateway timeout", "The API gateway timeout is 30 seconds.")
    new = await write(client, "Gateway timeout now", "The API gateway timeout is 60 seconds.")
    flagged = await asyncio.to_thread(app.conflicts.detect_among, [old, new, backoff])
    assert len(flagged) == 1 and flagged[0].state == "unreviewed"
    [conflict] = (await call(client, "lithos_conflicts", state="unreviewed"))["conflicts"]
    assert {conflict["from_id"], conflict["to_id"]} == {old, new}
    assert any("different numbers for 'seconds'" in e for e in conflict["edge"]["evidence"])
    resolved = await call(
        client,
        "lithos_conflict_resolve",
        edge_id=conflict["edge_id"],
        resolution="superseded",
        resolver="reviewer",
        winner_id=new,
    )
    assert resolved["conflict"]["state"] == "superseded"
    path = (await call(client, "lithos_read", id=new))["path"]
    meta, _ = split_frontmatter((app.files.root / path).read_text())
    assert meta["supersedes"] == old
    assert (await call(client, "lithos_conflicts", state="unreviewed"))["count"] == 0


async def test_a_person_s_declared_edge_does_not_decay(scenario):
    app, client, clock = scenario
    target = await write(client, "Target", "x")
    (app.files.root / "claim.md").write_text(
        note_file({"title": "Claim", "supports": ["[[target]]"]}, "y"), encoding="utf-8"
    )
    await asyncio.to_thread(app.indexer.index_path, "claim.md")
    clock.advance(days=1000)
    listed = await call(client, "lithos_edge_list", to_id=target)
    [edge] = listed["edges"]
    assert edge["provenance"] == "human" and edge["weight"] == 0.9

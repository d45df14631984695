"""lithos_retrieve, lithos_receipt_get, lithos_receipts and lithos_node_stats through a real
MCP client over a real app (real SQLite, Tantivy and vector store; the fake embedder)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
from fastmcp import Client

from lithos.app import LithosApp
from lithos.domain.retrieval import Candidate, ScoutHit
from lithos.mcp.server import create_server
from lithos.retrieval.context import ScoutContext
from tests.support import call, make_app


async def write(client: Client, title: str, content: str, **args: object) -> str:
    result = await call(client, "lithos_write", agent="a", title=title, content=content, **args)
    return str(result["id"])


async def retrieve(client: Client, query: str, **args: object) -> dict:
    result = await call(client, "lithos_retrieve", query=query, **args)
    assert "results" in result, result
    return result


def by_id(result: dict) -> dict[str, dict]:
    return {r["id"]: r for r in result["results"]}


async def test_results_carry_score_reasons_scouts_and_a_receipt(client: Client, app: LithosApp):
    note = await write(client, "Exponential backoff", "Retry with backoff and jitter.")
    assert app.embedding.wait_idle(10)
    result = await retrieve(client, "backoff")
    [hit] = result["results"]
    assert hit["id"] == note and hit["title"] == "Exponential backoff"
    assert hit["path"] == "Exponential backoff.md" and hit["score"] > 0
    assert {"scout_lexical", "scout_vector"} <= set(hit["scouts"])
    assert any(r.startswith("lexical: matched 'backoff' in title") for r in hit["reasons"])
    vector = [r for r in hit["reasons"] if r.startswith("vector: close in meaning (cosine")]
    assert vector and "whole note" in vector[0]
    assert hit["salience"] == 0.5 and hit["is_stale"] is False and hit["updated_at"]
    assert "backoff" in hit["snippet"]
    assert result["terrace_reached"] == 1 and result["receipt_id"].startswith("rcpt_")
    assert result["degraded"] is False and result["failed_scouts"] == []
    assert "conflicts" not in result


async def test_focus_lifts_a_note_close_to_the_best_results(client: Client, app: LithosApp):
    """Pseudo-relevance feedback: of two notes the query matches equally weakly, the one
    whose meaning is close to the best results ranks higher, and its reasons say why."""
    await write(client, "Pump sizing", "pump sizing for cold climates and heat load")
    await write(client, "Pump sizing guide", "pump sizing in cold climates by heat load")
    close = await write(client, "Winter", "sizing cold climates heat load")
    far = await write(client, "Bread", "sizing sourdough loaves tin oven")
    assert app.embedding.wait_idle(10)
    results = by_id(await retrieve(client, "pump sizing", limit=10))
    assert any(r.startswith("focus: close to the best results") for r in results[close]["reasons"])
    assert not any(r.startswith("focus") for r in results[far]["reasons"])
    # The same query evidence for both (one 'sizing' in the text), so focus decides.
    assert results[close]["reasons"][:2] == results[far]["reasons"][:2]
    assert results[close]["score"] > results[far]["score"]


async def test_shown_lexical_hits_name_the_words_their_text_matched(client: Client):
    """The lexical scout ranks without snippets and explains only what is shown: every shown
    note it found says which query words its text matched, whatever its rank."""
    notes = [
        await write(client, f"Note {i}", f"retry with jitter {'and spacing ' * i}then wait")
        for i in range(25)
    ]
    result = await retrieve(client, "jitter spacing", limit=25)
    shown = by_id(result)
    assert set(shown) == set(notes)
    for note in notes[1:]:
        lexical = [r for r in shown[note]["reasons"] if r.startswith("lexical:")]
        assert lexical and lexical[0].startswith("lexical: matched 'jitter', 'spacing' in text")
    assert "matched 'jitter' in text" in " ".join(shown[notes[0]]["reasons"])


async def test_every_shown_reason_is_worded_even_when_describing_fails(
    client: Client, app: LithosApp, monkeypatch: pytest.MonkeyPatch
):
    """The vector and lexical scouts word their reasons for the shown notes only (their
    other hits carry a placeholder); a read that fails while describing leaves a shown
    note its brief reason, never the placeholder."""
    notes = [
        await write(client, f"Backoff {i}", f"retry with backoff {'and jitter ' * i}then wait")
        for i in range(12)
    ]
    assert app.embedding.wait_idle(10)
    described = by_id(await retrieve(client, "backoff jitter", limit=12))

    def fail(*args: object, **kwargs: object) -> None:
        raise OSError("the disk is gone")

    monkeypatch.setattr(app.fulltext, "hits", fail)
    monkeypatch.setattr(app.vectors, "texts", fail)
    brief = by_id(await retrieve(client, "backoff jitter", limit=12))
    assert set(described) == set(brief) == set(notes)
    vector_found = 0
    title_only = "lexical: matched 'backoff' in title (BM25"
    for note in notes:
        in_text = "lexical: matched 'backoff' in title; matched 'jitter' in text (BM25"
        for shown, expected in ((described, in_text), (brief, title_only)):
            if note == notes[0]:  # no 'jitter' in its text
                expected = title_only
            reasons = shown[note]["reasons"]
            assert not any("worded when shown" in r for r in reasons), reasons
            lexical = [r for r in reasons if r.startswith("lexical:")]
            assert len(lexical) == 1 and lexical[0].startswith(expected), lexical
            vector = [r for r in reasons if r.startswith("vector:")]
            assert len(vector) == ("scout_vector" in shown[note]["scouts"]), reasons
            assert all(r.startswith("vector: close in meaning (cosine") for r in vector)
            vector_found += len(vector)
    assert vector_found >= 12


async def test_conflicts_appear_only_when_asked(client: Client):
    await write(client, "Alpha", "alpha words")
    result = await retrieve(client, "alpha", surface_conflicts=True)
    assert result["conflicts"] == []


async def test_a_lone_weak_match_does_not_score_like_a_strong_one(client: Client):
    await write(client, "Kettle descaling", "Descale the kettle with vinegar. " * 3)
    await write(client, "Garden", "Roses, tulips and one mention of vinegar in passing. " * 8)
    strong = (await retrieve(client, "kettle descaling vinegar"))["results"][0]
    weak = (await retrieve(client, "tulips"))["results"][0]
    lone = (await retrieve(client, "passing"))["results"]
    assert len(lone) == 1
    assert lone[0]["score"] < strong["score"]
    assert lone[0]["score"] < 0.5 and weak["score"] < strong["score"]


async def test_exact_title_and_alias_scout(client: Client):
    note = await write(client, "Runbook Zeta", "steps", aliases=["zeta-ops"])
    for query in ("Runbook Zeta", "zeta-ops"):
        hit = by_id(await retrieve(client, query))[note]
        assert "scout_exact_alias" in hit["scouts"]
        assert any(r.startswith("exact: the query is this note's") for r in hit["reasons"])


async def test_tags_scout_finds_notes_tagged_with_a_query_word(client: Client):
    note = await write(client, "Untitled thing", "nothing relevant", tags=["kubernetes"])
    hit = by_id(await retrieve(client, "kubernetes upgrades"))[note]
    assert hit["scouts"] == ["scout_tags_recency"]
    assert hit["reasons"][0].startswith("tags: tagged 'kubernetes'")


async def test_freshness_scout_fires_only_for_time_sensitive_queries(client: Client):
    note = await write(client, "Release notes", "version four shipped")
    fresh = by_id(await retrieve(client, "latest release notes"))[note]
    assert "scout_freshness" in fresh["scouts"]
    plain = by_id(await retrieve(client, "release notes"))[note]
    assert "scout_freshness" not in plain["scouts"]


async def test_graph_scout_adds_linked_notes_with_the_seed_title(client: Client):
    target = await write(client, "Jitter maths", "the distribution of delays")
    await write(client, "Backoff guide", "Use backoff. See [[Jitter maths]].")
    hit = by_id(await retrieve(client, "backoff"))[target]
    assert "scout_graph" in hit["scouts"]
    assert "graph: linked from 'Backoff guide'" in hit["reasons"]


async def test_max_context_nodes_limits_the_seeds_of_phase_b(client: Client):
    target = await write(client, "Linked only", "zzz")
    await write(client, "Seed two", "apple apple banana see [[Linked only]]")
    await write(client, "Seed one", "apple apple apple banana")
    wide = by_id(await retrieve(client, "apple", max_context_nodes=2))
    narrow = by_id(await retrieve(client, "apple", max_context_nodes=1))
    assert target in wide and target not in narrow


async def test_filters_apply_inside_every_scout(client: Client):
    inside = await write(client, "Backoff inside", "backoff [[Outside note]]", path="team")
    outside = await write(client, "Outside note", "backoff too", tags=["backoff"])
    result = by_id(await retrieve(client, "backoff", path_prefix="team/"))
    assert set(result) == {inside}
    tagged = by_id(await retrieve(client, "backoff", tags=["backoff"]))
    assert set(tagged) == {outside}


async def test_task_results_enter_working_memory_and_come_back(client: Client):
    note = await write(client, "Queue design", "bounded queues with backpressure")
    first = by_id(await retrieve(client, "backpressure", task_id="task-1", agent_id="a"))
    assert "scout_task_context" not in first[note]["scouts"]
    later = by_id(await retrieve(client, "something unrelated", task_id="task-1"))
    assert later[note]["scouts"] == ["scout_task_context"]
    assert later[note]["reasons"] == ["task: retrieved once before in task task-1"]
    other = await retrieve(client, "something unrelated", task_id="task-2")
    assert note not in by_id(other)


async def test_temperature_is_measured_per_query(client: Client):
    a = await write(client, "Hub", "solar panels [[Spoke]]")
    await write(client, "Spoke", "solar panels inverter [[Hub]]")
    await write(client, "Lonely one", "wind turbines")
    await write(client, "Lonely two", "tidal generators")
    linked = await retrieve(client, "solar panels")
    apart = await retrieve(client, "wind turbines tidal generators")
    assert a in by_id(linked)
    assert 0.0 <= linked["temperature"] < apart["temperature"] <= 1.0


async def test_near_duplicates_are_pushed_below_a_distinct_note(client: Client, app: LithosApp):
    text = "heat pump installation costs and savings in cold climates"
    first = await write(client, "Heat pumps A", text)
    twin = await write(client, "Heat pumps B", text)
    other = await write(client, "Heat pump noise", "heat pump installation noise levels")
    assert app.embedding.wait_idle(10)
    ids = [r["id"] for r in (await retrieve(client, "heat pump installation costs"))["results"]]
    assert ids.index(other) < max(ids.index(first), ids.index(twin))
    results = by_id(await retrieve(client, "heat pump installation costs"))
    pushed = results[twin] if ids.index(twin) > ids.index(first) else results[first]
    assert any(r.startswith("diversity:") for r in pushed["reasons"])


async def test_every_call_writes_a_readable_receipt(client: Client):
    note = await write(client, "Receipts", "why was this retrieved")
    result = await retrieve(client, "retrieved", agent_id="auditor", task_id="t-9", limit=3)
    receipt = await call(client, "lithos_receipt_get", receipt_id=result["receipt_id"])
    assert receipt["id"] == result["receipt_id"] and receipt["status"] == "ok"
    assert receipt["query"] == "retrieved" and receipt["agent_id"] == "auditor"
    assert receipt["task_id"] == "t-9" and receipt["arguments"]["limit"] == 3
    assert receipt["final_nodes"][0]["id"] == note
    assert receipt["final_nodes"][0]["reasons"] == result["results"][0]["reasons"]
    assert "scout_lexical" in receipt["scouts_fired"] and receipt["scouts_failed"] == []
    assert receipt["candidates_considered"] >= 1 and receipt["terrace_reached"] == 1
    assert receipt["temperature"] == result["temperature"]
    assert {"phase_a", "phase_b", "rerank", "total"} <= set(receipt["timings_ms"])


async def test_unknown_receipt_is_receipt_not_found(client: Client):
    result = await call(client, "lithos_receipt_get", receipt_id="rcpt_nope")
    assert result["status"] == "error" and result["code"] == "receipt_not_found"


async def test_receipts_filter_by_agent_task_note_since_and_limit(client: Client):
    a = await write(client, "Apples", "apples")
    b = await write(client, "Pears", "pears")
    r1 = (await retrieve(client, "apples", agent_id="x", task_id="t1"))["receipt_id"]
    r2 = (await retrieve(client, "pears", agent_id="y", task_id="t1"))["receipt_id"]
    r3 = (await retrieve(client, "apples", agent_id="y"))["receipt_id"]

    async def receipts(**args: object) -> list[str]:
        return [r["id"] for r in (await call(client, "lithos_receipts", **args))["receipts"]]

    assert await receipts() == [r3, r2, r1]
    assert await receipts(agent_id="y") == [r3, r2]
    assert await receipts(task_id="t1") == [r2, r1]
    # r2 returned Apples too: it was in task t1's working memory.
    assert await receipts(note_id=a) == [r3, r2, r1]
    assert await receipts(note_id=b) == [r2]
    assert await receipts(note_id=b, agent_id="x") == []
    assert await receipts(limit=1) == [r3]
    assert await receipts(since="2999-01-01") == []
    bad = await call(client, "lithos_receipts", since="yesterday")
    assert bad["code"] == "invalid_input"


async def test_node_stats_count_retrievals(client: Client):
    note = await write(client, "Counted", "counting retrievals")
    fresh = await call(client, "lithos_node_stats", node_id=note)
    assert fresh["retrieval_count"] == 0 and fresh["salience"] == 0.5
    await retrieve(client, "counting")
    await retrieve(client, "retrievals")
    stats = await call(client, "lithos_node_stats", node_id=note)
    assert stats["retrieval_count"] == 2 and stats["last_retrieved_at"]
    assert stats["cited_count"] == stats["ignored_count"] == stats["misleading_count"] == 0


async def test_node_stats_errors(client: Client):
    missing = await call(client, "lithos_node_stats", node_id=str(uuid.UUID(int=0)))
    assert missing["code"] == "doc_not_found"
    malformed = await call(client, "lithos_node_stats", node_id="nope")
    assert malformed["code"] == "invalid_input"


async def test_invalid_arguments_are_invalid_input(client: Client):
    for args in ({"query": ""}, {"query": "x", "limit": 0}, {"query": "x", "max_context_nodes": 0}):
        result = await call(client, "lithos_retrieve", **args)
        assert result["code"] == "invalid_input"


async def test_blank_query_fails_and_still_leaves_a_receipt(client: Client):
    result = await call(client, "lithos_retrieve", query="   ", agent_id="blank")
    assert result["code"] == "invalid_input"
    [receipt] = (await call(client, "lithos_receipts", agent_id="blank"))["receipts"]
    assert receipt["status"] == "error" and receipt["error_code"] == "invalid_input"


class BrokenScout:
    name = "scout_broken"

    def find(self, ctx: ScoutContext) -> list[ScoutHit]:
        raise RuntimeError("index unavailable")


class MuteScout:
    """Finds a note but cannot explain it."""

    name = "scout_mute"

    def __init__(self, note_id: str) -> None:
        self.note_id = note_id

    def find(self, ctx: ScoutContext) -> list[ScoutHit]:
        return [ScoutHit(self.note_id, 0.9, "mute: found it")]

    def describe(self, ctx: ScoutContext, shown: Sequence[Candidate]) -> None:
        raise RuntimeError("cannot explain")


async def test_a_scout_that_cannot_describe_its_results_keeps_its_brief_reason(
    client: Client, app: LithosApp
):
    note = await write(client, "Quiet", "nothing to match")
    mute = MuteScout(note)
    app.retrieval.phase_a.append(mute)
    app.retrieval.describers.append(mute)
    result = await retrieve(client, "unrelated words")
    assert "mute: found it" in by_id(result)[note]["reasons"]
    assert result["degraded"] is False


async def test_a_failing_scout_is_reported_not_fatal(client: Client, app: LithosApp):
    note = await write(client, "Sturdy", "sturdy results")
    app.retrieval.phase_a.append(BrokenScout())
    result = await retrieve(client, "sturdy")
    assert [r["id"] for r in result["results"]] == [note]
    assert result["degraded"] is True and result["failed_scouts"] == ["scout_broken"]
    receipt = await call(client, "lithos_receipt_get", receipt_id=result["receipt_id"])
    assert receipt["scouts_failed"] == ["scout_broken"]


@pytest.fixture
async def disabled(tmp_path: Path) -> AsyncIterator[tuple[Client, LithosApp]]:
    app = make_app(tmp_path / "off", **{"lcma.enabled": False})
    app.start(watch=False)
    try:
        async with Client(create_server(app)) as client:
            yield client, app
    finally:
        app.close()


async def test_disabled_lcma_answers_lcma_disabled_with_a_receipt(disabled):
    client, _ = disabled
    result = await call(client, "lithos_retrieve", query="anything", agent_id="z")
    assert result["status"] == "error" and result["code"] == "lcma_disabled"
    [receipt] = (await call(client, "lithos_receipts", agent_id="z"))["receipts"]
    assert receipt["error_code"] == "lcma_disabled"


async def test_tools_publish_typed_output_schemas_and_annotations(client: Client):
    tools = {t.name: t for t in await client.list_tools()}
    for name in ("lithos_retrieve", "lithos_receipt_get", "lithos_receipts", "lithos_node_stats"):
        tool = tools[name]
        assert tool.output_schema and tool.output_schema.get("properties"), name
        assert tool.annotations is not None and tool.annotations.destructive_hint is False
        for arg, schema in tool.input_schema["properties"].items():
            assert schema.get("description"), f"{name}.{arg}"
    assert tools["lithos_retrieve"].annotations.read_only_hint is False
    assert tools["lithos_receipt_get"].annotations.read_only_hint is True


async def test_provenance_scout_follows_derived_from_both_ways(client: Client):
    source = await write(client, "Raw interview", "zebra migration timings")
    summary = await write(client, "Migration summary", "condensed notes", derived_from_ids=[source])
    hit = by_id(await retrieve(client, "zebra"))[summary]
    assert "scout_provenance" in hit["scouts"]
    assert "provenance: derived from 'Raw interview'" in hit["reasons"]
    back = by_id(await retrieve(client, "condensed"))
    assert "provenance: source of 'Migration summary'" in back[source]["reasons"]
    assert back[summary]["derived_from_ids"] == [source]


async def test_source_url_scout_adds_notes_from_the_same_source(client: Client):
    url = "https://example.com/paper"
    first = await write(client, "Paper claims", "walrus tusks", source_url=url)
    second = await write(client, "Paper methods", "sampling design", source_url=url)
    result = by_id(await retrieve(client, "walrus"))
    assert result[first]["source_url"] == url
    assert result[second]["scouts"] == ["scout_source_url"]
    assert result[second]["reasons"] == ["source: same source URL as 'Paper claims'"]


async def test_graph_scout_follows_typed_edges(client: Client):
    a = await write(client, "Caching strategy", "llama cache")
    b = await write(client, "Invalidation", "other words")
    await call(client, "lithos_edge_upsert", from_id=a, to_id=b, type="supports", agent="x")
    hit = by_id(await retrieve(client, "llama"))[b]
    assert "scout_graph" in hit["scouts"]
    assert "graph: supports edge from 'Caching strategy'" in hit["reasons"]


@pytest.mark.parametrize("rule_weight", [None, 1.0], ids=["default", "rule-trusted"])
async def test_graph_scout_follows_edges_a_rule_wrote_only_when_trusted(
    tmp_path: Path, rule_weight: float | None
):
    overrides = {} if rule_weight is None else {"lcma.graph_provenance_weights": {"rule": 1.0}}
    app = make_app(tmp_path / "data", **overrides)
    app.start(watch=False)
    try:
        async with Client(create_server(app)) as client:
            seed = await write(client, "Caching strategy", "llama cache")
            by_agent = await write(client, "Invalidation", "other words")
            by_rule = await write(client, "Warm-up", "different words")
            for target, provenance in ((by_agent, "agent"), (by_rule, "rule")):
                edge = {"from_id": seed, "to_id": target, "type": "related_to"}
                await call(client, "lithos_edge_upsert", agent="x", provenance=provenance, **edge)
            found = by_id(await retrieve(client, "llama"))
    finally:
        app.close()
    assert "graph: related_to edge from 'Caching strategy'" in found[by_agent]["reasons"]
    followed = by_rule in found and "scout_graph" in found[by_rule]["scouts"]
    assert followed is (rule_weight is not None)


async def test_contradictions_among_results_are_surfaced_when_asked(client: Client):
    a = await write(client, "Claim one", "ostrich speed is high")
    b = await write(client, "Claim two", "ostrich speed is low")
    edge = await call(
        client, "lithos_edge_upsert", from_id=a, to_id=b, type="contradicts", agent="x"
    )
    result = await retrieve(client, "ostrich speed", surface_conflicts=True)
    [conflict] = result["conflicts"]
    assert conflict["from_id"] == a and conflict["to_id"] == b
    assert conflict["state"] == "unreviewed" and conflict["edge_id"] == edge["edge"]["edge_id"]


async def test_expired_notes_are_marked_stale(client: Client):
    note = await write(client, "Old price list", "emu feed prices", expires_at="2020-01-01")
    assert by_id(await retrieve(client, "emu feed"))[note]["is_stale"] is True


async def test_scopes_hide_private_task_and_quarantined_notes_in_every_scout(client: Client):
    private = await write(
        client, "Secret plan", "narwhal plan", access_scope="agent_private", tags=["narwhal"]
    )
    task_note = await write(
        client, "Task scratch", "narwhal scratch", access_scope="task", task_id="t-5"
    )
    gone = await write(client, "Bad note", "narwhal nonsense", status="quarantined")
    public = await write(client, "Narwhal", "public narwhal [[Secret plan]] [[Bad note]]")
    anonymous = set(by_id(await retrieve(client, "narwhal")))
    assert anonymous == {public}
    assert set(by_id(await retrieve(client, "narwhal", agent_id="a"))) == {public, private}
    in_task = set(by_id(await retrieve(client, "narwhal", agent_id="b", task_id="t-5")))
    assert in_task == {public, task_note}
    assert gone not in in_task


async def test_namespace_filter_keeps_notes_of_any_given_namespace(client: Client):
    a = await write(client, "Ops A", "heron", namespace="ops")
    b = await write(client, "Dev B", "heron", namespace="dev")
    await write(client, "Other C", "heron", namespace="misc")
    result = by_id(await retrieve(client, "heron", namespace_filter=["ops", "dev"]))
    assert set(result) == {a, b}


async def test_note_type_priors_reorder_equal_evidence(client: Client, app: LithosApp):
    hypothesis = await write(client, "Bison A", "bison grazing", note_type="hypothesis")
    summary = await write(client, "Bison B", "bison grazing", note_type="summary")
    # Equal evidence needs both notes embedded: their chunks differ (the title is in them),
    # and a retrieve between the two embeddings finds only the first by meaning.
    assert app.embedding.wait_idle(10)
    result = await retrieve(client, "bison grazing")
    ids = [r["id"] for r in result["results"]]
    assert ids.index(summary) < ids.index(hypothesis)
    assert "type: summary prior +0.03" in by_id(result)[summary]["reasons"]


async def test_design_and_debugging_questions_carry_their_conflicts_by_default(client: Client):
    a = await write(client, "Ostrich claim one", "ostrich speed is high")
    b = await write(client, "Ostrich claim two", "ostrich speed is low")
    edge = await call(
        client, "lithos_edge_upsert", from_id=a, to_id=b, type="contradicts", agent="x"
    )
    edge_id = edge["edge"]["edge_id"]
    assert "conflicts" not in await retrieve(client, "ostrich speed")  # a lookup
    for query in ("why is ostrich speed so debated", "ostrich speed error"):  # design, debug
        got = await retrieve(client, query)
        assert [c["edge_id"] for c in got["conflicts"]] == [edge_id], query
        assert "conflicts" not in await retrieve(client, query, surface_conflicts=False)
    receipt = await call(client, "lithos_receipt_get", receipt_id=got["receipt_id"])
    assert receipt["arguments"]["surface_conflicts"] is None  # as asked: by query class


async def test_surfacing_conflicts_flags_likely_contradictions_among_the_results(
    client: Client,
):
    old = await write(client, "API gateway limit", "The API gateway limit is 30 seconds.")
    new = await write(client, "API gateway limit now", "The API gateway limit is 60 seconds.")
    plain = await retrieve(client, "API gateway limit", limit=2)
    assert "conflicts" not in plain  # a lookup: nothing surfaced, nothing flagged
    assert (await call(client, "lithos_conflicts"))["count"] == 0
    got = await retrieve(client, "API gateway limit", limit=2, surface_conflicts=True)
    [conflict] = got["conflicts"]
    assert {conflict["from_id"], conflict["to_id"]} == {old, new}
    assert conflict["state"] == "unreviewed"  # flagged for review, never resolved here
    [listed] = (await call(client, "lithos_conflicts", state="unreviewed"))["conflicts"]
    assert listed["edge"]["provenance"] == "inferred"
    assert any("different numbers for 'seconds'" in e for e in listed["edge"]["evidence"])
    again = await retrieve(client, "API gateway limit", limit=2, surface_conflicts=True)
    assert [c["edge_id"] for c in again["conflicts"]] == [conflict["edge_id"]]  # not twice

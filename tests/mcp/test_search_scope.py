"""Visibility rules and search fixes through a real MCP client: nothing hidden leaks through
search (every mode), lithos_semantic, lithos_list, lithos_links or lithos_tags, and a filtered
search still fills its limit."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastmcp import Client

from lithos.app import LithosApp
from lithos.mcp.server import create_server
from tests.support import call, make_app

MODES = ["fulltext", "semantic", "hybrid"]


async def write(client: Client, title: str, content: str, **args: object) -> dict:
    args.setdefault("agent", "writer")
    return await call(client, "lithos_write", title=title, content=content, **args)


async def hidden_and_visible(client: Client, app: LithosApp) -> dict[str, str]:
    """One note of each visibility, all about the same thing; returns title -> id."""
    notes = {
        "shared": await write(client, "Shared walrus", "walrus tusks ivory"),
        "archived": await write(client, "Archived walrus", "walrus tusks ivory", status="archived"),
        "private": await write(
            client,
            "Private walrus",
            "walrus tusks ivory",
            agent="alice",
            access_scope="agent_private",
        ),
        "task": await write(
            client, "Task walrus", "walrus tusks ivory", access_scope="task", task_id="t-1"
        ),
        "quarantined": await write(
            client, "Quarantined walrus", "walrus tusks ivory", status="quarantined"
        ),
    }
    assert app.embedding.wait_idle(10)
    return {name: note["id"] for name, note in notes.items()}


async def found(client: Client, tool: str, **args: object) -> set[str]:
    result = await call(client, tool, query="walrus tusks ivory", **args)
    assert "results" in result, result
    return {hit["id"] for hit in result["results"]}


@pytest.mark.parametrize("mode", MODES)
async def test_search_hides_private_task_and_quarantined_notes(
    client: Client, app: LithosApp, mode: str
):
    ids = await hidden_and_visible(client, app)
    public = {ids["shared"], ids["archived"]}
    assert await found(client, "lithos_search", mode=mode) == public
    assert await found(client, "lithos_search", mode=mode, agent_id="bob") == public
    assert await found(client, "lithos_search", mode=mode, agent_id="alice") == public | {
        ids["private"]
    }
    assert await found(client, "lithos_search", mode=mode, task_id="t-1") == public | {ids["task"]}
    assert await found(client, "lithos_search", mode=mode, task_id="t-2") == public


async def test_semantic_tool_applies_the_same_rule(client: Client, app: LithosApp):
    ids = await hidden_and_visible(client, app)
    everyone = await found(client, "lithos_semantic")
    assert everyone == {ids["shared"], ids["archived"]}
    mine = await found(client, "lithos_semantic", agent_id="alice", task_id="t-1")
    assert mine == everyone | {ids["private"], ids["task"]}


async def test_a_quarantined_note_is_still_readable_by_id(client: Client, app: LithosApp):
    ids = await hidden_and_visible(client, app)
    assert (await call(client, "lithos_read", id=ids["quarantined"]))["title"] == (
        "Quarantined walrus"
    )


@pytest.mark.parametrize("mode", MODES)
async def test_a_search_for_ten_returns_ten_visible_notes_when_hidden_ones_rank_higher(
    client: Client, app: LithosApp, mode: str
):
    # The hidden notes repeat the query words, so they would outrank every visible note.
    for i in range(10):
        await write(
            client,
            f"Hidden {i}",
            "otter otter otter river",
            agent="alice",
            access_scope="agent_private",
        )
    visible = {
        (await write(client, f"Visible {i}", f"otter river bank {i}"))["id"] for i in range(10)
    }
    for i in range(5):
        await write(client, f"Other {i}", "unrelated granite quarry")
    assert app.embedding.wait_idle(10)
    result = await call(
        client, "lithos_search", query="otter river", mode=mode, limit=10, threshold=0.0
    )
    assert {hit["id"] for hit in result["results"]} == visible


async def test_links_neither_list_nor_walk_through_hidden_notes(client: Client):
    end = await write(client, "End", "the end")
    secret = await write(
        client, "Secret", "see [[end]]", agent="alice", access_scope="agent_private"
    )
    start = await write(client, "Start", "see [[secret]]")
    anonymous = await call(client, "lithos_links", id=start["id"], direction="outgoing", depth=2)
    assert anonymous["outgoing"] == []
    alice = await call(
        client, "lithos_links", id=start["id"], direction="outgoing", depth=2, agent_id="alice"
    )
    assert [n["id"] for n in alice["outgoing"]] == [secret["id"], end["id"]]
    incoming = await call(client, "lithos_links", id=end["id"], direction="incoming")
    assert incoming["incoming"] == []


async def test_tags_count_only_the_notes_the_caller_may_see(client: Client):
    await write(client, "A", "x", tags=["walrus"])
    await write(client, "B", "x", tags=["walrus"], agent="alice", access_scope="agent_private")
    await write(client, "C", "x", tags=["walrus", "bad"], status="quarantined")
    assert (await call(client, "lithos_tags"))["tags"] == {"walrus": 1}
    assert (await call(client, "lithos_tags", agent_id="alice"))["tags"] == {"walrus": 2}


async def test_semantic_returns_limit_notes_when_one_note_has_many_similar_chunks(
    client: Client, app: LithosApp
):
    # One long note whose 60 paragraphs all match the query better than any other note: the
    # old search ranked 4 x limit chunks and so found only this note.
    paragraphs = "\n\n".join(f"heron heron heron marsh {i} " + "x" * 480 for i in range(60))
    await write(client, "Long", paragraphs)
    others = {(await write(client, f"Short {i}", f"heron marsh reeds {i}"))["id"] for i in range(5)}
    assert app.embedding.wait_idle(20)
    result = await call(client, "lithos_semantic", query="heron marsh", limit=6, threshold=0.0)
    ids = [hit["id"] for hit in result["results"]]
    assert len(ids) == 6 and others <= set(ids)


async def test_search_threshold_drops_weak_semantic_hits(client: Client, app: LithosApp):
    strong = await write(client, "Strong", "kestrel hovering kestrel")
    await write(client, "Weak", "kestrel among many other unrelated words about the weather")
    assert app.embedding.wait_idle(10)
    loose = await call(
        client, "lithos_search", query="kestrel hovering", mode="semantic", threshold=0.0
    )
    strict = await call(
        client, "lithos_search", query="kestrel hovering", mode="semantic", threshold=0.8
    )
    assert len(loose["results"]) == 2
    assert [hit["id"] for hit in strict["results"]] == [strong["id"]]


async def test_semantic_tool_takes_author_and_path_prefix(client: Client, app: LithosApp):
    a = await write(client, "In team", "badger sett", path="team", agent="ann")
    await write(client, "Elsewhere", "badger sett", agent="ann")
    await write(client, "By other", "badger sett", path="team", agent="ola")
    assert app.embedding.wait_idle(10)
    result = await call(
        client, "lithos_semantic", query="badger sett", author="ann", path_prefix="team"
    )
    assert [hit["id"] for hit in result["results"]] == [a["id"]]


async def test_a_limit_above_max_results_is_cut_and_says_so(data_dir: Path):
    app = make_app(data_dir, **{"search.max_results": 3})
    app.start(watch=False)
    try:
        async with Client(create_server(app)) as client:
            for i in range(5):
                await write(client, f"Gull {i}", "gull cliff")
            capped = await call(client, "lithos_search", query="gull", limit=5)
            assert len(capped["results"]) == 3 and capped["limit_capped_to"] == 3
            within = await call(client, "lithos_search", query="gull", limit=3)
            assert len(within["results"]) == 3 and "limit_capped_to" not in within
    finally:
        app.close()


async def test_related_neither_reports_nor_walks_through_hidden_notes(client: Client):
    start = (await write(client, "Root", "root"))["id"]
    private = await write(
        client,
        "Private child",
        "see [[root]]",
        agent="alice",
        access_scope="agent_private",
        derived_from_ids=[start],
    )
    grandchild = (await write(client, "Grandchild", "x", derived_from_ids=[private["id"]]))["id"]
    quarantined = (await write(client, "Bad", "x", status="quarantined"))["id"]
    await call(
        client, "lithos_edge_upsert", from_id=start, to_id=quarantined, type="supports", agent="x"
    )
    anonymous = await call(client, "lithos_related", id=start, depth=2)
    assert anonymous["provenance"]["derivatives"] == []
    assert anonymous["links"]["incoming"] == [] and anonymous["edges"] == []
    alice = await call(client, "lithos_related", id=start, depth=2, agent_id="alice")
    assert [n["id"] for n in alice["provenance"]["derivatives"]] == [private["id"], grandchild]
    assert [n["id"] for n in alice["links"]["incoming"]] == [private["id"]]


@pytest.mark.parametrize("mode", MODES)
async def test_search_filters_by_note_type_and_namespace_inside_the_query(
    client: Client, app: LithosApp, mode: str
):
    concept = await write(client, "Concept", "puffin colony", note_type="concept")
    await write(client, "Finding", "puffin colony", note_type="agent_finding")
    elsewhere = await write(client, "Elsewhere", "puffin colony", namespace="birds/sea")
    assert app.embedding.wait_idle(10)
    by_type = await call(
        client, "lithos_search", query="puffin colony", mode=mode, note_types=["concept"]
    )
    assert [hit["id"] for hit in by_type["results"]] == [concept["id"]]
    by_namespace = await call(
        client, "lithos_semantic", query="puffin colony", namespaces=["birds/sea"]
    )
    assert [hit["id"] for hit in by_namespace["results"]] == [elsewhere["id"]]


@pytest.mark.parametrize("mode", MODES)
async def test_a_note_made_private_is_hidden_from_the_next_search(
    client: Client, app: LithosApp, mode: str
):
    """The caller's hidden notes are kept between searches; a write that hides a note
    returns only once every later search leaves it out, and one that shows it again too."""
    note = await write(client, "Walrus", "walrus tusks ivory", agent="alice")
    assert app.embedding.wait_idle(10)
    assert await found(client, "lithos_search", mode=mode) == {note["id"]}
    assert await found(client, "lithos_search", mode=mode) == {note["id"]}  # kept: same answer
    await call(client, "lithos_write", agent="alice", id=note["id"], access_scope="agent_private")
    assert await found(client, "lithos_search", mode=mode) == set()
    assert await found(client, "lithos_search", mode=mode, agent_id="alice") == {note["id"]}
    await call(client, "lithos_write", agent="alice", id=note["id"], access_scope="shared")
    assert await found(client, "lithos_search", mode=mode) == {note["id"]}

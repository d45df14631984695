"""lithos_search, lithos_semantic, lithos_links and lithos_tags through a real MCP client."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import pytest
from fastmcp import Client

from lithos.app import LithosApp
from lithos.store.fulltext import TextRanking
from tests.support import call


async def write(client: Client, title: str, content: str, **args: object) -> dict:
    return await call(client, "lithos_write", agent="a", title=title, content=content, **args)


async def ids(client: Client, query: str, **args: object) -> list[str]:
    result = await call(client, "lithos_search", query=query, **args)
    return [r["id"] for r in result["results"]]


async def test_a_note_is_searchable_as_soon_as_its_write_returns(client: Client):
    note = await write(client, "Tea brewing", "Steep the leaves for three minutes.")
    assert await ids(client, "steep") == [note["id"]]


async def test_search_follows_updates_and_deletes(client: Client):
    note = await write(client, "Changing", "original wording")
    await call(client, "lithos_write", agent="a", id=note["id"], content="replacement wording")
    assert await ids(client, "original") == []
    assert await ids(client, "replacement") == [note["id"]]
    await call(client, "lithos_delete", id=note["id"])
    assert await ids(client, "replacement") == []


async def test_search_results_have_snippets_with_highlights_and_paths(client: Client):
    await write(client, "Snips", "Some words before. The pangolin is scaly. Words after.")
    [hit] = (await call(client, "lithos_search", query="pangolin"))["results"]
    assert "**pangolin**" in hit["snippet"] and hit["path"] == "Snips.md" and hit["score"] > 0


async def test_search_filters_by_tags_author_and_path_prefix(client: Client):
    a = await write(client, "A", "shared term", tags=["x", "y"], path="team/one")
    b = await call(
        client, "lithos_write", agent="other", title="B", content="shared term", tags=["x"]
    )
    assert set(await ids(client, "shared")) == {a["id"], b["id"]}
    assert await ids(client, "shared", tags=["x", "y"]) == [a["id"]]
    assert await ids(client, "shared", author="other") == [b["id"]]
    assert await ids(client, "shared", path_prefix="team/") == [a["id"]]


async def test_query_syntax_phrases_and_fields_work(client: Client):
    a = await write(client, "Alpha guide", "the quick brown fox")
    b = await write(client, "Beta", "brown quick fox alpha")
    assert await ids(client, '"quick brown"') == [a["id"]]
    assert await ids(client, "title:alpha") == [a["id"]]
    assert set(await ids(client, "fox AND brown")) == {a["id"], b["id"]}


async def test_unparseable_queries_fall_back_instead_of_failing(client: Client):
    note = await write(client, "Parse", "robust parsing")
    for query in ["robust AND (", '"robust', "robust title:", "robust)", "robust nofield:x"]:
        result = await call(client, "lithos_search", query=query)
        assert [r["id"] for r in result["results"]] == [note["id"]], query


async def test_empty_query_is_invalid_input(client: Client):
    assert (await call(client, "lithos_search", query="   "))["code"] == "invalid_input"
    assert (await call(client, "lithos_search", query="x", mode="nope"))["code"] == "invalid_input"


async def test_semantic_and_hybrid_find_embedded_notes(client: Client, app: LithosApp):
    note = await write(client, "Gardening", "Water tomato plants every morning.")
    await write(client, "Other", "Quarterly finance report numbers.")
    assert app.embedding.wait_idle(10)
    semantic = await call(client, "lithos_semantic", query="tomato plants water")
    assert semantic["results"][0]["id"] == note["id"]
    assert 0.0 <= semantic["results"][0]["similarity"] <= 1.0
    assert "pending_chunks" not in semantic
    hybrid = await call(client, "lithos_search", query="tomato plants", mode="hybrid")
    assert hybrid["results"][0]["id"] == note["id"]
    assert hybrid["results"][0]["fulltext_rank"] == 1


async def test_semantic_threshold_and_tag_filter(client: Client, app: LithosApp):
    a = await write(client, "One", "apples and pears", tags=["fruit"])
    await write(client, "Two", "apples and pears")
    assert app.embedding.wait_idle(10)
    tagged = await call(client, "lithos_semantic", query="apples pears", tags=["fruit"])
    assert [r["id"] for r in tagged["results"]] == [a["id"]]
    strict = await call(client, "lithos_semantic", query="zzz unrelated", threshold=0.9)
    assert strict["results"] == []


async def test_tags_counts_are_exact_after_writes_and_deletes(client: Client):
    a = await write(client, "A", "x", tags=["red", "blue"])
    await write(client, "B", "x", tags=["red"])
    assert (await call(client, "lithos_tags"))["tags"] == {"blue": 1, "red": 2}
    await call(client, "lithos_write", agent="a", id=a["id"], tags=["green"])
    assert (await call(client, "lithos_tags"))["tags"] == {"green": 1, "red": 1}
    await call(client, "lithos_delete", id=a["id"])
    assert (await call(client, "lithos_tags"))["tags"] == {"red": 1}


async def test_links_resolve_by_path_filename_uuid_and_alias(client: Client):
    target = await write(client, "Target note", "t", path="folder", aliases=["the-target"])
    by_path = await write(client, "By path", "see [[folder/Target note]]")
    by_name = await write(client, "By name", "see [[target note|display]]")
    by_uuid = await write(client, "By uuid", f"see [[{target['id']}]]")
    by_alias = await write(client, "By alias", "see [[the-target]]")
    incoming = await call(client, "lithos_links", id=target["id"], direction="incoming")
    assert {n["id"] for n in incoming["incoming"]} == {
        by_path["id"],
        by_name["id"],
        by_uuid["id"],
        by_alias["id"],
    }
    read = await call(client, "lithos_read", id=by_name["id"])
    assert read["links"] == [
        {"target": "target note", "id": target["id"], "title": "Target note", "status": "resolved"}
    ]


async def test_ambiguous_filename_links_stay_unresolved(client: Client):
    await write(client, "Dup", "1", path="a")
    await write(client, "Dup", "2", path="b")
    source = await write(client, "Source", "[[dup]] and [[a/dup]]")
    read = await call(client, "lithos_read", id=source["id"])
    statuses = {link["target"]: link["status"] for link in read["links"]}
    assert statuses == {"dup": "ambiguous", "a/dup": "resolved"}


async def test_links_depth_walks_several_hops_flat_and_deduplicated(client: Client):
    c = await write(client, "C", "end")
    b = await write(client, "B", "[[c]]")
    a = await write(client, "A", "[[b]] and [[c]]")
    one = await call(client, "lithos_links", id=a["id"], direction="outgoing", depth=1)
    assert {n["id"] for n in one["outgoing"]} == {b["id"], c["id"]}
    back = await call(client, "lithos_links", id=c["id"], direction="incoming", depth=2)
    assert [n["id"] for n in back["incoming"]].count(a["id"]) == 1
    assert {n["id"] for n in back["incoming"]} == {a["id"], b["id"]}
    bad = await call(client, "lithos_links", id=a["id"], depth=4)
    assert bad["code"] == "invalid_input"


async def test_stats_counts_every_index_and_pending_work(client: Client, app: LithosApp):
    await write(client, "S", "para one\n\npara two", tags=["t"])
    assert app.embedding.wait_idle(10)
    stats = await call(client, "lithos_stats")
    assert stats["documents"] == 1 and stats["tags"] == 1 and stats["agents"] == 1
    indexes = stats["indexes"]
    assert indexes["catalog_documents"] == indexes["fulltext_documents"] == 1
    assert indexes["vector_documents"] == 1 and indexes["pending_chunks"] == 0
    assert stats["chunks"] == indexes["embedded_chunks"] >= 1


async def test_links_follow_notes_written_and_deleted_after_the_graph_was_built(client: Client):
    source = await write(client, "Source", "see [[later]]")
    statuses = await call(client, "lithos_read", id=source["id"])
    assert [link["status"] for link in statuses["links"]] == ["broken"]  # graph built here
    first = await write(client, "Later", "one", path="a")
    read = await call(client, "lithos_read", id=source["id"])
    assert [(link["status"], link["id"]) for link in read["links"]] == [("resolved", first["id"])]
    incoming = await call(client, "lithos_links", id=first["id"], direction="incoming")
    assert [n["id"] for n in incoming["incoming"]] == [source["id"]]
    second = await write(client, "Later", "two", path="b")  # now [[later]] is ambiguous
    read = await call(client, "lithos_read", id=source["id"])
    assert [link["status"] for link in read["links"]] == ["ambiguous"]
    await call(client, "lithos_delete", id=first["id"])  # unique again
    read = await call(client, "lithos_read", id=source["id"])
    assert [(link["status"], link["id"]) for link in read["links"]] == [("resolved", second["id"])]


async def test_reading_after_a_write_does_not_rebuild_the_graph(
    client: Client, app: LithosApp, monkeypatch
):
    note = await write(client, "A", "[[b]]")
    await call(client, "lithos_read", id=note["id"])  # builds the graph once
    monkeypatch.setattr(app.catalog, "link_rows", lambda: pytest.fail("graph rebuilt"))
    target = await write(client, "B", "x")
    read = await call(client, "lithos_read", id=note["id"])
    assert read["links"][0]["id"] == target["id"]


async def test_hybrid_shows_a_note_found_only_by_meaning_with_its_best_chunk(
    client: Client, app: LithosApp
):
    await write(client, "Gardening", "Water tomato plants every morning.")
    other = await write(client, "Finance", "Quarterly report numbers.")
    assert app.embedding.wait_idle(10)
    hybrid = await call(client, "lithos_search", query="tomato plants", mode="hybrid")
    last = hybrid["results"][-1]
    assert (last["id"], last["title"], last["path"]) == (other["id"], "Finance", other["path"])
    assert last["fulltext_rank"] is None and last["semantic_rank"] == 2
    assert "Quarterly report numbers." in last["snippet"]


async def test_hybrid_reads_only_the_documents_it_shows(
    client: Client, app: LithosApp, monkeypatch
):
    """Forty notes match both halves; hybrid ranks them all by key and reads the stored
    documents of the three it shows, highlighted, with the ranks each half gave them."""
    for i in range(40):
        await write(client, f"Tomato {i}", f"Tomato plants number {i} need water. " * (i + 1))
    assert app.embedding.wait_idle(30)
    read: list[int] = []
    hits = app.fulltext.hits

    def counted(ranking: TextRanking, keys: Collection[int] | None = None, **options: Any):
        read.append(len(ranking.found if keys is None else keys))
        return hits(ranking, keys, **options)

    monkeypatch.setattr(app.fulltext, "hits", counted)
    hybrid = await call(client, "lithos_search", query="tomato water", mode="hybrid", limit=3)
    assert read == [3] and len(hybrid["results"]) == 3
    text = [h.id for h in app.fulltext.search("tomato water", limit=50, syntax=False)]
    for result in hybrid["results"]:
        assert result["fulltext_rank"] == text.index(result["id"]) + 1
        assert result["semantic_rank"] >= 1 and "**" in result["snippet"]

"""Tags through the tools: Obsidian's rules on write, inline #tags counted and filtered."""

from __future__ import annotations

from fastmcp import Client

from lithos.app import LithosApp
from tests.support import call


async def test_a_tag_obsidian_cannot_use_is_refused_and_nothing_is_written(
    client: Client, app: LithosApp
):
    result = await call(
        client, "lithos_write", agent="newcomer", title="T", content="x", tags=["machine learning"]
    )
    assert result["status"] == "error" and result["code"] == "invalid_input"
    assert '"machine-learning"' in result["message"]
    assert list(app.files.root.glob("*.md")) == []
    assert (await call(client, "lithos_agent_list"))["agents"] == []


async def test_a_leading_hash_is_dropped_on_write(client: Client, app: LithosApp):
    made = await call(client, "lithos_write", agent="a", title="T", content="x", tags=["#python"])
    read = await call(client, "lithos_read", id=made["id"])
    assert read["metadata"]["tags"] == ["python"]


async def test_inline_tags_count_in_lithos_tags_and_filters(client: Client, app: LithosApp):
    inline = await call(
        client,
        "lithos_write",
        agent="a",
        title="Garden",
        content="Planting #tomatoes today.\n\n```\n#notatag\n```\n",
        tags=["garden"],
    )
    (app.files.root / "Hand.md").write_text("# Hand\n\nMore #tomatoes, see http://x.org/#frag\n")
    app.reconcile()
    tags = (await call(client, "lithos_tags"))["tags"]
    assert tags == {"garden": 1, "tomatoes": 2}
    listed = await call(client, "lithos_list", tags=["#tomatoes"])
    assert {item["title"] for item in listed["items"]} == {"Garden", "Hand"}
    found = await call(client, "lithos_search", query="planting", tags=["tomatoes"])
    assert [hit["id"] for hit in found["results"]] == [inline["id"]]
    missing = await call(client, "lithos_search", query="planting", tags=["notatag"])
    assert missing["results"] == []

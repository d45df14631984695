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


async def test_tags_are_one_tag_whatever_their_case(client: Client, app: LithosApp):
    """Obsidian treats #Python and #python as one tag; so do lithos_tags and every filter."""
    upper = await call(
        client, "lithos_write", agent="a", title="Upper", content="Snakes and #Python", tags=["ML"]
    )
    lower = await call(
        client, "lithos_write", agent="a", title="Lower", content="snakes", tags=["python"]
    )
    (app.files.root / "Both.md").write_text("# Both\n\nsnakes #python and #PYTHON #ml\n")
    (app.files.root / "Other.md").write_text("# Other\n\nsnakes #Pythonic\n")
    app.reconcile()
    items = (await call(client, "lithos_list"))["items"]
    both = next(i["id"] for i in items if i["title"] == "Both")
    everything = {upper["id"], lower["id"], both}

    tags = (await call(client, "lithos_tags"))["tags"]
    # Three notes carry the tag (one twice): counted once each, under the most used spelling.
    # ML (written by an agent) and ml (inline) are used once each: the first in sort order wins.
    assert tags == {"ML": 2, "python": 3, "Pythonic": 1}
    for spelling in ("python", "#Python", "PYTHON", "pYtHoN"):
        listed = await call(client, "lithos_list", tags=[spelling])
        assert {i["id"] for i in listed["items"]} == everything, spelling
        found = await call(client, "lithos_search", query="snakes", tags=[spelling])
        assert {hit["id"] for hit in found["results"]} == everything, spelling
        retrieved = await call(client, "lithos_retrieve", query="snakes", tags=[spelling])
        assert {hit["id"] for hit in retrieved["results"]} == everything, spelling
    assert app.embedding.wait_idle(20)
    for mode in ("semantic", "hybrid"):
        found = await call(
            client, "lithos_search", query="snakes", mode=mode, tags=["PyThOn"], threshold=0.0
        )
        assert {hit["id"] for hit in found["results"]} == everything, mode
    # Each note still shows the spellings it was written with.
    listed = {i["title"]: i["tags"] for i in (await call(client, "lithos_list"))["items"]}
    assert listed["Upper"] == ["ML", "Python"]
    assert listed["Both"] == ["python", "PYTHON", "ml"]

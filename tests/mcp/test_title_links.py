"""Notes are named after their titles, and [[Title]] links resolve to them."""

from __future__ import annotations

from pathlib import Path

from fastmcp import Client

from lithos.app import LithosApp
from lithos.mcp.server import create_server
from tests.support import call, make_app


async def test_a_title_link_written_by_an_agent_resolves(client: Client, app: LithosApp):
    loop = await call(client, "lithos_write", agent="a", title="Event Loop", content="Runs tasks.")
    user = await call(
        client, "lithos_write", agent="a", title="Asyncio", content="Built on the [[event loop]]."
    )
    assert loop["path"] == "Event Loop.md" and (app.files.root / "Event Loop.md").is_file()
    links = await call(client, "lithos_links", id=user["id"])
    assert [n["id"] for n in links["outgoing"]] == [loop["id"]]
    read = await call(client, "lithos_read", id=user["id"])
    assert read["links"][0]["status"] == "resolved"


async def test_a_title_differing_only_in_case_gets_its_own_file(client: Client, app: LithosApp):
    await call(client, "lithos_write", agent="a", title="Event Loop", content="one")
    second = await call(client, "lithos_write", agent="a", title="event loop", content="two")
    assert second["path"] == "event loop 2.md"


async def test_slug_file_names_remain_a_setting(data_dir: Path):
    app = make_app(data_dir, **{"storage.file_names": "slug"})
    app.start(watch=False)
    try:
        async with Client(create_server(app)) as client:
            made = await call(client, "lithos_write", agent="a", title="Event Loop", content="x")
            linking = await call(
                client, "lithos_write", agent="a", title="B", content="[[Event Loop]]"
            )
            assert made["path"] == "event-loop.md"
            links = await call(client, "lithos_links", id=linking["id"])
            assert [n["id"] for n in links["outgoing"]] == [made["id"]]
    finally:
        app.close()

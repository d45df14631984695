"""The server begins the background work `lithos serve` deferred (the start-up index check,
the embedding worker) once it has answered its first tool call, or after an upper bound when
no call comes; the check then indexes what changed while Lithos was stopped."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastmcp import Client

from lithos.app import LithosApp
from lithos.mcp import server as mcp_server
from lithos.mcp.server import create_server
from tests.services.test_background_check import stopped_with_edits
from tests.support import call, make_app


@pytest.fixture
def deferred(data_dir: Path) -> Iterator[tuple[LithosApp, dict[str, str]]]:
    """An app started as `lithos serve` starts it (check beside serving, background work
    deferred) over notes edited while it was stopped; the ids of its notes by title."""
    ids = stopped_with_edits(data_dir)
    app = make_app(data_dir)
    try:
        app.start(watch=False, check_in_background=True, defer_background=True)
        assert not app.wait_checked(0) and not app.embedding.is_alive()
        yield app, ids
    finally:
        app.close()


def found(result: dict) -> list[str]:
    return [hit["id"] for hit in result["results"]]


async def began(app: LithosApp, client: Client, ids: dict[str, str]) -> None:
    """The deferred work began: the check ended, having indexed the hand edit, and the
    embedding worker runs."""
    assert await asyncio.to_thread(app.wait_checked, 10)
    assert app.embedding.is_alive()
    after = await call(client, "lithos_search", query="kingfisher")
    assert found(after) == [ids["Heron"]]


async def test_deferred_work_begins_after_the_first_answered_tool_call(
    deferred: tuple[LithosApp, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mcp_server, "BACKGROUND_AT_LATEST_S", 3600.0)
    app, ids = deferred
    async with Client(create_server(app)) as client:
        await client.list_tools()  # not a tool call: nothing begins
        assert not app.wait_checked(0) and not app.embedding.is_alive()
        # The first call is answered from the indexes as they were.
        first = await call(client, "lithos_search", query="kingfisher")
        assert found(first) == []
        await began(app, client, ids)
    assert app.health()["components"]["index_check"] == "done"


async def test_deferred_work_begins_at_the_upper_bound_without_a_call(
    deferred: tuple[LithosApp, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mcp_server, "BACKGROUND_AT_LATEST_S", 0.01)
    app, ids = deferred
    async with Client(create_server(app)) as client:
        await began(app, client, ids)


async def test_a_failed_first_call_begins_the_deferred_work_too(
    deferred: tuple[LithosApp, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mcp_server, "BACKGROUND_AT_LATEST_S", 3600.0)
    app, _ = deferred
    async with Client(create_server(app)) as client:
        refused = await call(client, "lithos_read", id="no-such-note")
        assert refused["status"] == "error"
        assert await asyncio.to_thread(app.wait_checked, 10)


async def test_after_the_first_call_the_deferred_work_waits_for_the_server_to_be_idle(
    deferred: tuple[LithosApp, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mcp_server, "BACKGROUND_AT_LATEST_S", 3600.0)
    monkeypatch.setattr(mcp_server, "BACKGROUND_IDLE_S", 3600.0)
    app, _ = deferred
    async with Client(create_server(app)) as client:
        first = await call(client, "lithos_search", query="kingfisher")
        assert found(first) == []
        await client.list_tools()  # a request right after the first call
        assert not app.wait_checked(0) and not app.embedding.is_alive()
    assert not app.embedding.is_alive()  # the idle wait ended with the server


async def test_the_deferred_work_begins_once_the_server_is_idle_after_the_first_call(
    deferred: tuple[LithosApp, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mcp_server, "BACKGROUND_AT_LATEST_S", 3600.0)
    monkeypatch.setattr(mcp_server, "BACKGROUND_IDLE_S", 0.01)
    app, ids = deferred
    async with Client(create_server(app)) as client:
        await call(client, "lithos_search", query="kingfisher")
        await began(app, client, ids)

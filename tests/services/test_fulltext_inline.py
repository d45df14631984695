"""Where a full-text search runs: on the caller's event loop when it waits on no other thread
(the caller's hidden ids held in memory, nothing to commit first, a short result), else on a
worker thread; either way it finds every note whose write returned."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lithos.app import LithosApp
from lithos.domain.filters import SearchFilter
from lithos.domain.metadata import MetadataChange
from lithos.domain.scope import Scope
from lithos.services.knowledge import WriteRequest
from lithos.services.search import INLINE_RESULTS
from tests.support import make_app


@pytest.fixture
def app(data_dir: Path) -> Iterator[LithosApp]:
    """A started app whose committer waits a minute: written notes stay staged."""
    settings: dict[str, Any] = {"index.commit_interval_ms": 60_000}
    app = make_app(data_dir, **settings)
    app.start(watch=False, embed=False)
    try:
        yield app
    finally:
        app.close()


@pytest.fixture
def ranked_on(app: LithosApp, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The threads the full-text index ranked on, one per search, in order."""
    threads: list[int] = []
    rank = app.fulltext.rank

    def recorded(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.get_ident())
        return rank(*args, **kwargs)

    monkeypatch.setattr(app.fulltext, "rank", recorded)
    return threads


async def write(app: LithosApp, title: str, content: str, **fields: Any) -> str:
    result = await app.knowledge.write(
        WriteRequest(agent="writer", title=title, content=content, **fields)
    )
    assert result["status"] == "created", result
    return str(result["id"])


async def found(app: LithosApp, query: str, **args: Any) -> list[str]:
    result = await app.search.search(query, mode="fulltext", **args)
    return [hit["id"] for hit in result["results"]]


async def test_a_search_runs_on_the_loop_once_the_hidden_ids_are_held(
    app: LithosApp, ranked_on: list[int]
) -> None:
    here = threading.get_ident()
    first = await write(app, "Tidal pools", "Anemones in tidal pools.")
    assert await found(app, "anemones") == [first]  # reads the hidden ids on the catalog thread
    assert await found(app, "anemones") == [first]
    assert ranked_on[0] != here and ranked_on[1] == here
    # A write changes the catalog: the next search reads the ids again, off the loop, and
    # finds the new note.
    second = await write(app, "Rock pools", "More anemones in rock pools.")
    assert set(await found(app, "anemones")) == {first, second}
    assert ranked_on[2] != here
    assert set(await found(app, "anemones")) == {first, second}
    assert ranked_on[3] == here


async def test_a_note_made_private_is_hidden_from_the_next_search_on_the_loop(
    app: LithosApp, ranked_on: list[int]
) -> None:
    note = await write(app, "Kelp", "Kelp forests grow fast.")
    assert await found(app, "kelp") == [note]
    assert await found(app, "kelp") == [note]
    assert ranked_on[-1] == threading.get_ident()
    private = MetadataChange(access_scope="agent_private")
    result = await app.knowledge.write(WriteRequest(agent="writer", id=note, metadata=private))
    assert result["status"] == "updated", result
    assert await found(app, "kelp") == []
    assert await found(app, "kelp") == []
    assert ranked_on[-1] == threading.get_ident()
    owner = SearchFilter(scope=Scope(agent_id="writer"))
    assert await found(app, "kelp", search_filter=owner) == [note]


async def test_a_query_that_commits_first_or_a_long_result_runs_off_the_loop(
    app: LithosApp, ranked_on: list[int]
) -> None:
    here = threading.get_ident()
    note = await write(app, "Barnacles", "Barnacles cement themselves to rocks.")
    assert await found(app, "barnacles") == [note]
    assert await found(app, "barnacles") == [note]
    assert ranked_on[-1] == here
    # A query the staged-change overlay cannot evaluate (a phrase with slop) commits the
    # staged note first: on a worker thread, never on the loop, and the note is found.
    assert app.fulltext.uncommitted() > 0
    assert not app.fulltext.never_commits('"barnacles cement"~2')
    assert await found(app, '"barnacles cement"~2') == [note]
    assert ranked_on[-1] != here
    assert app.fulltext.uncommitted() == 0
    assert await found(app, "barnacles", limit=INLINE_RESULTS + 1) == [note]
    assert ranked_on[-1] != here


async def test_a_scope_s_hidden_ids_are_held_apart_from_another_s(
    app: LithosApp, ranked_on: list[int]
) -> None:
    private = MetadataChange(access_scope="agent_private")
    mine = await write(app, "Urchins", "Urchins graze kelp.", metadata=private)
    theirs = SearchFilter(scope=Scope(agent_id="someone"))
    owner = SearchFilter(scope=Scope(agent_id="writer"))
    assert await found(app, "urchins", search_filter=owner) == [mine]
    assert await found(app, "urchins", search_filter=theirs) == []
    assert await found(app, "urchins", search_filter=owner) == [mine]
    assert await found(app, "urchins", search_filter=theirs) == []
    assert ranked_on[2] == ranked_on[3] == threading.get_ident()

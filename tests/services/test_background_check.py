"""lithos serve answers before the start-up index check ends: the check runs on a thread of
its own, and every edit made while Lithos was stopped is still indexed by it."""

from __future__ import annotations

import asyncio
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.services.test_indexing import assert_in_step, fulltext_ids, write
from tests.support import CheckHold, make_app, note_file


@pytest.fixture
def hold(monkeypatch: pytest.MonkeyPatch) -> Iterator[CheckHold]:
    held = CheckHold(monkeypatch)
    try:
        yield held
    finally:
        held.release.set()


def stopped_with_edits(data_dir: Path) -> dict[str, str]:
    """A knowledge base whose files were edited, removed and added while Lithos was stopped;
    the ids of its notes by title."""
    app = make_app(data_dir)
    app.start(watch=False)
    ids = {title: write(app, title, body)["id"] for title, body in NOTES.items()}
    app.close()
    knowledge = data_dir / "knowledge"
    heron = knowledge / "Heron.md"
    heron.write_text(heron.read_text().replace("grey heron", "blue kingfisher heron"))
    (knowledge / "Gone.md").unlink()
    (knowledge / "Hand.md").write_text(note_file({"title": "Hand"}, "a hand written osprey"))
    return ids


NOTES = {"Heron": "a grey heron", "Gone": "a removed pelican", "Kept": "a kept cormorant"}


def test_serving_starts_before_the_check_and_the_check_indexes_edits_made_while_stopped(
    data_dir: Path, hold: CheckHold
) -> None:
    ids = stopped_with_edits(data_dir)
    app = make_app(data_dir)
    release = hold.release
    try:
        hold.start_held(app, watch=False)  # start returned; the check holds the indexer lock
        assert not app.wait_checked(0)
        # A search answers meanwhile (from the indexes as they were); a write waits its turn.
        found = asyncio.run(app.search.search("cormorant", mode="fulltext"))
        assert [hit["id"] for hit in found["results"]] == [ids["Kept"]]
        written: list[dict] = []
        writer = threading.Thread(target=lambda: written.append(write(app, "Wren", "a wren")))
        writer.start()
        release.set()
        assert app.wait_checked(10)
        writer.join(10)
        report = app.last_reconcile
        assert report is not None and app.health()["components"]["index_check"] == "done"
        assert (report.catalog_fixed, report.removed, report.unchanged) == (2, 1, 1)
        assert fulltext_ids(app, "kingfisher") == [ids["Heron"]]
        assert fulltext_ids(app, "pelican") == []
        assert len(fulltext_ids(app, "osprey")) == 1
        assert fulltext_ids(app, "wren") == [written[0]["id"]]
        assert_in_step(app)
    finally:
        release.set()
        app.close()


def test_a_catalog_to_rebuild_is_checked_before_serving(data_dir: Path) -> None:
    """Reads, lists and every search filter need the catalog: it is filled first."""
    stopped_with_edits(data_dir)
    shutil.rmtree(data_dir / ".index")
    app = make_app(data_dir)
    try:
        report = app.start(watch=False, check_in_background=True)
        assert report is not None and report.catalog_fixed == 3
        assert app.wait_checked(0) and app.health()["components"]["index_check"] == "done"
        assert_in_step(app)
    finally:
        app.close()


def test_closing_while_the_check_runs_leaves_indexes_the_next_start_trusts(
    data_dir: Path,
) -> None:
    stopped_with_edits(data_dir)
    app = make_app(data_dir)
    app.start(watch=False, check_in_background=True)
    app.close()  # waits for the check: it uses every index until it ends
    again = make_app(data_dir)
    try:
        report = again.start(watch=False)
        assert report is not None and report.unchanged == 3 and again.indexer.applied == 0
        assert_in_step(again)
    finally:
        again.close()


def test_deferred_background_work_waits_for_begin_background_then_indexes_edits(
    data_dir: Path,
) -> None:
    """`lithos serve` starts the check and the embedding worker only after the server has
    had its first seconds alone; the check then still indexes what changed while stopped."""
    ids = stopped_with_edits(data_dir)
    app = make_app(data_dir)
    try:
        assert app.start(watch=False, check_in_background=True, defer_background=True) is None
        assert not app.wait_checked(0) and not app.embedding.is_alive()
        assert app.health()["components"]["index_check"] == "running"
        # Served meanwhile from the indexes as they were: the hand edit is not in them yet.
        assert fulltext_ids(app, "kingfisher") == []
        assert fulltext_ids(app, "cormorant") == [ids["Kept"]]
        app.begin_background()
        app.begin_background()  # once is enough; again changes nothing
        assert app.wait_checked(10) and app.embedding.is_alive()
        assert app.health()["components"]["index_check"] == "done"
        assert fulltext_ids(app, "kingfisher") == [ids["Heron"]]
        assert fulltext_ids(app, "pelican") == []
        assert len(fulltext_ids(app, "osprey")) == 1
        assert_in_step(app)
    finally:
        app.close()


def test_closing_before_deferred_work_began_starts_none_of_it(data_dir: Path) -> None:
    stopped_with_edits(data_dir)
    app = make_app(data_dir)
    app.start(watch=False, check_in_background=True, defer_background=True)
    app.close()
    app.begin_background()  # too late: the app is closed
    assert not app.wait_checked(0) and not app.embedding.is_alive()
    again = make_app(data_dir)
    try:
        report = again.start(watch=False)  # the check that never ran happens now
        assert report is not None and (report.catalog_fixed, report.removed) == (2, 1)
        assert_in_step(again)
    finally:
        again.close()

"""A write marks its paths durably before the file changes, so a process killed at any step
of a write leaves either indexes in step with the file or a mark that start-up retries."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from lithos.app import LithosApp
from lithos.services.knowledge import WriteRequest
from tests.support import CheckHold, make_app

pytestmark = pytest.mark.fault


class Killed(BaseException):
    """The process dying at this point: nothing after it runs, no handler catches it."""


def marks(data_dir: Path) -> dict[str, str]:
    """The marks as another process would read them from the catalog file."""
    with sqlite3.connect(data_dir / ".index" / "catalog.db") as conn:
        return dict(conn.execute("SELECT path, reason FROM deferred").fetchall())


def write(app: LithosApp, **fields: object) -> dict:
    return asyncio.run(app.knowledge.write(WriteRequest(agent="a", **fields)))  # type: ignore[arg-type]


def kill_at(app: LithosApp, step: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def die(*args: object, **kwargs: object) -> None:
        raise Killed

    target = {
        "before the file": (app.files, "replace"),
        "after the file": (app.indexer, "stage"),
    }[step]
    monkeypatch.setattr(*target, die)


def start_again(
    data_dir: Path, beside: bool, monkeypatch: pytest.MonkeyPatch
) -> tuple[LithosApp, CheckHold | None]:
    """The app restarted after the kill; ``beside``: its index check runs beside serving and
    is held, so only the repair of the marked files before serving can have run."""
    again = make_app(data_dir)
    if not beside:
        again.start(watch=False, embed=False)
        return again, None
    hold = CheckHold(monkeypatch)
    hold.start_held(again, watch=False, embed=False)
    return again, hold


def release_check(app: LithosApp, hold: CheckHold | None) -> None:
    if hold is not None:
        hold.release.set()
    assert app.wait_checked(10) and app.index_check == "done"


@pytest.mark.parametrize("beside", [False, True], ids=["check-first", "check-beside"])
@pytest.mark.parametrize("step", ["before the file", "after the file"])
def test_a_write_killed_at_any_step_leaves_a_mark_that_start_up_retries(
    data_dir: Path, step: str, beside: bool, monkeypatch: pytest.MonkeyPatch
):
    app = make_app(data_dir)
    app.start(watch=False, embed=False)
    note = write(app, title="Kept", content="original words")
    monkeypatch.setattr(app.indexer, "forget_finished_marks", lambda: None)  # killed: no close
    kill_at(app, step, monkeypatch)
    with pytest.raises(Killed):
        write(app, id=note["id"], content="zeppelin")
    left = marks(data_dir)
    assert set(left) == {note["path"]} and left[note["path"]].startswith("interrupted")
    monkeypatch.undo()
    app.close()

    again, hold = start_again(data_dir, beside, monkeypatch)
    try:
        saved = "zeppelin" in (data_dir / "knowledge" / note["path"]).read_text()
        assert saved == (step != "before the file")
        word = "zeppelin" if saved else "original"
        assert [hit.id for hit in again.fulltext.search(word)] == [note["id"]]
        entry = again.catalog.get(note["id"])
        assert entry is not None and entry.content_hash == again.fulltext.hashes()[note["id"]]
        assert marks(data_dir) == {}
        release_check(again, hold)
    finally:
        if hold is not None:
            hold.release.set()
        again.close()


@pytest.mark.parametrize("beside", [False, True], ids=["check-first", "check-beside"])
def test_a_write_acknowledged_before_its_full_text_commit_is_repaired_at_start_up(
    data_dir: Path, beside: bool, monkeypatch: pytest.MonkeyPatch
):
    app = make_app(data_dir, **{"index.commit_interval_ms": 60_000})
    app.start(watch=False, embed=False)
    note = write(app, title="Kept", content="original words")
    app.indexer.commit_staged()
    updated = write(app, id=note["id"], content="zeppelin")
    assert updated["indexing"] == "done"  # searchable now, from the overlay
    assert [hit.id for hit in app.fulltext.search("zeppelin")] == [note["id"]]
    assert app.fulltext.uncommitted() == 1
    assert set(marks(data_dir)) == {note["path"]}
    # Killed now: no commit, no close of the marks (the overlay dies with the process).
    monkeypatch.setattr(app.indexer, "commit_staged", lambda: None)
    monkeypatch.setattr(app.indexer, "forget_finished_marks", lambda: None)
    app.close()
    monkeypatch.undo()
    assert set(marks(data_dir)) == {note["path"]}

    again, hold = start_again(data_dir, beside, monkeypatch)
    try:
        assert [hit.id for hit in again.fulltext.search("zeppelin")] == [note["id"]]
        assert again.fulltext.search("original") == []
        assert again.fulltext.uncommitted() == 0
        assert marks(data_dir) == {}
        release_check(again, hold)
    finally:
        if hold is not None:
            hold.release.set()
        again.close()


def test_a_finished_write_leaves_no_mark_once_the_next_write_or_close_forgets_it(
    data_dir: Path,
):
    app = make_app(data_dir)
    app.start(watch=False, embed=False)
    first = write(app, title="First", content="one")
    assert set(marks(data_dir)) == {first["path"]}  # kept until its full-text commit
    app.indexer.commit_staged()  # what the committer does within commit_interval_ms
    assert set(marks(data_dir)) == {first["path"]}  # forgotten with the next write
    second = write(app, title="Second", content="two")
    assert set(marks(data_dir)) == {second["path"]}
    write(app, id=second["id"], path="moved")
    deleted = asyncio.run(app.knowledge.delete(first["id"]))
    assert deleted["indexing"] == "done"
    assert app.indexer.deferred() == {}
    app.close()
    assert marks(data_dir) == {}


def test_a_write_whose_file_step_fails_is_retried_not_forgotten(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    app = make_app(data_dir)
    app.start(watch=False, embed=False)
    try:
        assert app.repair is not None
        app.repair.stop()  # hold the retry back to look at what was recorded
        note = write(app, title="Kept", content="body")

        def failing_replace(relative: str, text: str) -> None:
            raise OSError("read-only folder")

        monkeypatch.setattr(app.files, "replace", failing_replace)
        with pytest.raises(OSError):
            write(app, id=note["id"], content="changed")
        monkeypatch.undo()
        assert note["path"] in app.indexer.deferred()
        assert note["path"] in marks(data_dir)
        app.indexer.retry_deferred()
        assert app.indexer.deferred() == {} and note["path"] not in marks(data_dir)
        entry = app.catalog.get(note["id"])
        assert entry is not None and entry.content_hash == app.fulltext.hashes()[note["id"]]
    finally:
        app.close()

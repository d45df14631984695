"""The file watcher brings hand edits into every index and ignores the server's own writes."""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lithos.app import LithosApp
from lithos.services.knowledge import WriteRequest
from tests.support import make_app


@pytest.fixture
def watched(data_dir: Path) -> Iterator[LithosApp]:
    app = make_app(data_dir)
    app.start(watch=True)
    try:
        yield app
    finally:
        app.close()


def eventually(check: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def found(app: LithosApp, word: str) -> list[str]:
    return [h.id for h in app.fulltext.search(word, limit=10)]


def test_a_file_dropped_in_by_hand_is_indexed(watched: LithosApp):
    (watched.files.root / "manual.md").write_text("# Manual note\n\nquokka facts\n")
    assert eventually(lambda: len(found(watched, "quokka")) == 1)
    entry = watched.catalog.by_path("manual.md")
    assert entry is not None and entry.title == "Manual note"


def test_a_hand_edit_replaces_the_old_text_in_the_index(watched: LithosApp):
    created = asyncio.run(
        watched.knowledge.write(WriteRequest(agent="a", title="Edit me", content="before"))
    )
    path = watched.files.root / created["path"]
    path.write_text(path.read_text().replace("before", "axolotl"))
    assert eventually(lambda: found(watched, "axolotl") == [created["id"]])
    assert found(watched, "before") == []
    assert eventually(lambda: watched.vectors.note_hashes() == watched.fulltext.hashes())


def test_a_hand_delete_removes_the_note_everywhere(watched: LithosApp):
    created = asyncio.run(
        watched.knowledge.write(WriteRequest(agent="a", title="Delete me", content="narwhal"))
    )
    (watched.files.root / created["path"]).unlink()
    assert eventually(lambda: watched.catalog.get(created["id"]) is None)
    assert eventually(lambda: found(watched, "narwhal") == [])
    assert eventually(lambda: created["id"] not in watched.vectors.note_hashes())


def test_a_rename_keeps_the_note_identity(watched: LithosApp):
    created = asyncio.run(
        watched.knowledge.write(WriteRequest(agent="a", title="Old name", content="okapi"))
    )
    (watched.files.root / "moved").mkdir()
    (watched.files.root / created["path"]).rename(watched.files.root / "moved" / "new-name.md")

    def moved() -> bool:
        entry = watched.catalog.get(created["id"])
        return entry is not None and entry.path == "moved/new-name.md"

    assert eventually(moved)
    assert eventually(lambda: watched.catalog.count() == 1)
    assert eventually(lambda: found(watched, "okapi") == [created["id"]])
    assert watched.catalog.count() == 1


def test_a_deleted_folder_removes_its_notes(watched: LithosApp):
    asyncio.run(
        watched.knowledge.write(WriteRequest(agent="a", title="In folder", content="x", path="f"))
    )
    shutil.rmtree(watched.files.root / "f")
    assert eventually(lambda: watched.catalog.count() == 0)


def test_the_servers_own_writes_are_not_reindexed_by_the_watcher(watched: LithosApp):
    for i in range(5):
        asyncio.run(watched.knowledge.write(WriteRequest(agent="a", title=f"Own {i}", content="x")))
    applied = watched.indexer.applied
    time.sleep(1.0)  # several debounce intervals: the watcher has seen every event by now
    assert watched.watcher is not None and watched.watcher.handled >= 5
    assert watched.indexer.applied == applied


def test_broken_yaml_from_a_person_is_reported_and_the_watcher_keeps_going(watched: LithosApp):
    (watched.files.root / "broken.md").write_text("---\ntitle: [oops\n---\nbody\n")
    assert eventually(lambda: any(p["path"] == "broken.md" for p in watched.catalog.problems()))
    (watched.files.root / "fine.md").write_text("# Fine\n\nplatypus\n")
    assert eventually(lambda: len(found(watched, "platypus")) == 1)


def test_many_files_arriving_together_share_one_full_text_commit(watched: LithosApp):
    commits = watched.fulltext.commits
    for i in range(40):
        (watched.files.root / f"pulled-{i}.md").write_text(f"# Pulled {i}\n\nbulkword{i}\n")
    assert eventually(lambda: watched.catalog.count() == 40)
    assert eventually(lambda: watched.fulltext.count() == 40)
    assert found(watched, "bulkword7") != []
    assert watched.fulltext.commits - commits < 20  # batched, not one commit per file


@pytest.fixture
def patient(data_dir: Path) -> Iterator[LithosApp]:
    """A watcher whose debounce (a minute) is far longer than any test waits."""
    app = make_app(data_dir, **{"index.watch_debounce_ms": 60_000})
    app.start(watch=True)
    try:
        yield app
    finally:
        app.close()


def test_an_isolated_hand_edit_is_handled_without_waiting_for_the_debounce(patient: LithosApp):
    (patient.files.root / "lone.md").write_text("# Lone edit\n\npangolin\n")
    assert eventually(lambda: len(found(patient, "pangolin")) == 1)


def test_a_burst_of_hand_edits_is_indexed_in_few_batches(patient: LithosApp):
    commits = patient.fulltext.commits
    for i in range(30):
        (patient.files.root / f"burst-{i}.md").write_text(f"# Burst {i}\n\nwombat{i} herd\n")
    assert eventually(lambda: len(patient.fulltext.search("herd", limit=50)) == 30)
    assert patient.fulltext.commits - commits < 30  # not one commit per file


@pytest.fixture
def slow_commits(data_dir: Path) -> Iterator[LithosApp]:
    """A server whose full-text commits come a minute after a change, far beyond any wait."""
    app = make_app(data_dir, **{"index.commit_interval_ms": 60_000})
    app.start(watch=True, embed=False)
    try:
        yield app
    finally:
        app.close()


def test_a_hand_edit_is_searchable_before_its_full_text_commit(slow_commits: LithosApp):
    watcher, commits = slow_commits.watcher, slow_commits.fulltext.commits
    assert watcher is not None
    (slow_commits.files.root / "quick.md").write_text("# Quick\n\nmeerkat\n")
    assert eventually(lambda: watcher.handled >= 1)  # counted once its handling returned
    assert len(found(slow_commits, "meerkat")) == 1
    assert slow_commits.fulltext.commits == commits  # found in the overlay, commit to come
    assert slow_commits.fulltext.uncommitted() == 1


def test_a_hand_edit_killed_before_its_full_text_commit_is_repaired_at_start_up(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    app = make_app(data_dir, **{"index.commit_interval_ms": 60_000})
    app.start(watch=True, embed=False)
    (app.files.root / "late.md").write_text("# Late\n\ncapybara\n")
    assert eventually(lambda: len(found(app, "capybara")) == 1)
    note_id = found(app, "capybara")[0]
    # Killed now: the staged change is never committed (the overlay dies with the process).
    monkeypatch.setattr(app.indexer, "commit_staged", lambda: None)
    app.close()
    monkeypatch.undo()

    again = make_app(data_dir)
    try:
        assert again.fulltext.hashes() == {}  # the commit never happened
        again.start(watch=False, embed=False)
        assert found(again, "capybara") == [note_id]
        assert again.fulltext.uncommitted() == 0
    finally:
        again.close()

"""Indexes stay true to the files: start-up verification, repair, and hand edits."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

from lithos.app import LithosApp
from lithos.services.knowledge import WriteRequest
from tests.support import make_app, note_file


def write(app: LithosApp, title: str, content: str, **kw: object) -> dict:
    return asyncio.run(
        app.knowledge.write(WriteRequest(agent="a", title=title, content=content, **kw))
    )  # type: ignore[arg-type]


def fulltext_ids(app: LithosApp, query: str) -> list[str]:
    return [h.id for h in app.fulltext.search(query, limit=50)]


def assert_in_step(app: LithosApp) -> None:
    """Every index holds exactly the notes on disk, at their current content."""
    catalog = {e.id: e.content_hash for e in app.catalog.entries()}
    assert app.fulltext.hashes() == catalog
    assert app.vectors.note_hashes() == catalog
    assert len(catalog) == len(list(app.files.scan()))


def test_restart_with_intact_indexes_redoes_nothing(data_dir: Path):
    app = make_app(data_dir)
    app.start(watch=False)
    for i in range(5):
        write(app, f"Note {i}", f"body {i}")
    app.close()
    again = make_app(data_dir)
    report = again.start(watch=False)
    assert report.unchanged == 5 and again.indexer.applied == 0
    assert_in_step(again)
    again.close()


def test_deleted_fulltext_index_is_rebuilt_at_start(data_dir: Path):
    app = make_app(data_dir)
    app.start(watch=False)
    created = write(app, "Kept", "alpha bravo")
    app.close()
    shutil.rmtree(data_dir / ".tantivy")
    again = make_app(data_dir)
    report = again.start(watch=False)
    assert report.fulltext_fixed == 1 and report.catalog_fixed == 0 and report.vectors_fixed == 0
    assert fulltext_ids(again, "bravo") == [created["id"]]
    assert_in_step(again)
    again.close()


def test_deleted_catalog_and_vectors_are_rebuilt_at_start(data_dir: Path):
    app = make_app(data_dir)
    app.start(watch=False)
    write(app, "One", "x")
    app.close()
    shutil.rmtree(data_dir / ".index")
    shutil.rmtree(data_dir / ".vectors")
    again = make_app(data_dir)
    report = again.start(watch=False)
    assert report.catalog_fixed == 1 and report.vectors_fixed == 1 and report.fulltext_fixed == 0
    assert_in_step(again)
    again.close()


def test_file_edited_while_server_was_down_is_reindexed(data_dir: Path):
    app = make_app(data_dir)
    app.start(watch=False)
    created = write(app, "Edited", "old words")
    app.close()
    path = data_dir / "knowledge" / created["path"]
    path.write_text(path.read_text().replace("old words", "fresh vocabulary"))
    again = make_app(data_dir)
    again.start(watch=False)
    assert fulltext_ids(again, "vocabulary") == [created["id"]]
    assert fulltext_ids(again, "old") == []
    assert_in_step(again)
    again.close()


def test_file_deleted_and_added_while_down_are_reconciled(data_dir: Path):
    app = make_app(data_dir)
    app.start(watch=False)
    gone = write(app, "Gone", "x")
    app.close()
    (data_dir / "knowledge" / gone["path"]).unlink()
    (data_dir / "knowledge" / "dropped.md").write_text("# Dropped in\n\nBy a person.\n")
    again = make_app(data_dir)
    report = again.start(watch=False)
    assert report.removed == 1 and report.ids_assigned == 1
    assert again.catalog.get(gone["id"]) is None
    [entry] = again.catalog.entries()
    assert entry.title == "Dropped in" and entry.path == "dropped.md"
    assert_in_step(again)
    again.close()


def test_file_without_id_gets_a_stable_id_that_survives_restarts(data_dir: Path):
    knowledge = data_dir / "knowledge"
    knowledge.mkdir(parents=True)
    text = note_file({"title": "Hand", "tags": ["x"]}, "Body.\n")
    (knowledge / "hand.md").write_text(text)
    app = make_app(data_dir)
    app.start(watch=False)
    first = app.catalog.by_path("hand.md")
    app.close()
    assert (knowledge / "hand.md").read_text() == text
    again = make_app(data_dir)
    again.start(watch=False)
    assert again.catalog.by_path("hand.md").id == first.id
    again.close()


def test_broken_yaml_is_reported_not_fatal(data_dir: Path):
    knowledge = data_dir / "knowledge"
    knowledge.mkdir(parents=True)
    (knowledge / "bad.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    (knowledge / "good.md").write_text("# Good\n\ntext\n")
    app = make_app(data_dir)
    report = app.start(watch=False)
    assert [p["path"] for p in report.problems] == ["bad.md"]
    assert [e.path for e in app.catalog.entries()] == ["good.md"]
    assert asyncio.run(app.stats())["problems"] == 1
    app.close()


def test_clear_rebuilds_every_index_from_the_files(data_dir: Path):
    app = make_app(data_dir)
    app.start(watch=False)
    for i in range(3):
        write(app, f"N{i}", f"text {i}")
    report = app.reconcile(clear=True)
    assert report.catalog_fixed == 3 and report.fulltext_fixed == 3 and report.vectors_fixed == 3
    assert_in_step(app)
    app.close()


def test_renamed_file_keeps_its_identity(data_dir: Path):
    app = make_app(data_dir)
    app.start(watch=False)
    created = write(app, "Before", "rename me")
    app.close()
    knowledge = data_dir / "knowledge"
    (knowledge / "sub").mkdir()
    (knowledge / created["path"]).rename(knowledge / "sub" / "after.md")
    again = make_app(data_dir)
    again.start(watch=False)
    entry = again.catalog.get(created["id"])
    assert entry is not None and entry.path == "sub/after.md"
    assert_in_step(again)
    again.close()


def test_a_copied_file_with_a_duplicate_id_is_reported_and_not_indexed(data_dir: Path):
    app = make_app(data_dir)
    app.start(watch=False)
    created = write(app, "Original", "x")
    knowledge = data_dir / "knowledge"
    shutil.copy(knowledge / created["path"], knowledge / "copy.md")
    report = app.reconcile()
    assert any(p["kind"] == "duplicate_id" and p["path"] == "copy.md" for p in report.problems)
    assert app.catalog.get(created["id"]).path == created["path"]
    app.close()


def test_unchanged_text_is_never_embedded_twice(data_dir: Path):
    app = make_app(data_dir)
    app.start(watch=False)
    created = write(app, "Emb", "paragraph one\n\nparagraph two")
    assert app.embedding.wait_idle(10)
    embedded = len(app.embedder.embedded_texts)  # type: ignore[attr-defined]
    asyncio.run(app.knowledge.write(WriteRequest(agent="b", id=created["id"], tags=["t"])))
    app.reconcile(clear=True)
    assert app.embedding.wait_idle(10)
    assert len(app.embedder.embedded_texts) == embedded  # type: ignore[attr-defined]
    app.close()


def test_a_file_too_large_to_be_a_note_is_reported_and_skipped(data_dir: Path):
    knowledge = data_dir / "knowledge"
    knowledge.mkdir(parents=True)
    (knowledge / "huge.md").write_text("# Huge\n\n" + "word " * 300_000)
    (knowledge / "small.md").write_text("# Small\n\nfine\n")
    app = make_app(data_dir, **{"storage.max_content_bytes": 100_000})
    report = app.start(watch=False)
    assert [(p["path"], p["kind"]) for p in report.problems] == [("huge.md", "too_large")]
    assert [e.path for e in app.catalog.entries()] == ["small.md"]
    app.close()


def test_a_symlinked_file_is_not_indexed(data_dir: Path, tmp_path: Path):
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\nprivate words outside the knowledge base\n")
    knowledge = data_dir / "knowledge"
    knowledge.mkdir(parents=True)
    (knowledge / "link.md").symlink_to(secret)
    app = make_app(data_dir)
    app.start(watch=False)
    assert app.catalog.count() == 0 and fulltext_ids(app, "private") == []
    assert "id:" not in secret.read_text()  # nothing was written through the link
    app.close()


def test_files_synced_together_that_share_an_id_index_one_and_report_the_other(data_dir: Path):
    app = make_app(data_dir)
    app.start(watch=False)
    front = {"id": "11111111-1111-4111-8111-111111111111", "title": "Twin"}
    for name in ("a.md", "b.md"):
        (app.files.root / name).write_text(note_file(front, f"twin {name}"))
    indexed = app.indexer.sync_paths(["a.md", "b.md"])
    assert list(indexed) == ["a.md"]
    assert app.catalog.problem("b.md") == (
        "duplicate_id",
        "id 11111111-1111-4111-8111-111111111111 is already used by another file",
    )
    assert_in_step_except(app, "b.md")
    app.close()


def assert_in_step_except(app: LithosApp, skipped: str) -> None:
    catalog = {e.id: e.content_hash for e in app.catalog.entries()}
    assert app.fulltext.hashes() == catalog and app.vectors.note_hashes() == catalog
    assert skipped not in {e.path for e in app.catalog.entries()}


def test_start_up_reads_no_file_whose_time_and_size_are_those_indexed(data_dir: Path, monkeypatch):
    app = make_app(data_dir)
    app.start(watch=False)
    for i in range(3):
        write(app, f"Note {i}", f"body {i}")
    app.close()
    first = make_app(data_dir)
    first.start(watch=False)  # the edge projection reads each file written by a tool once
    first.close()
    again = make_app(data_dir)
    reads: list[str] = []
    read_text = again.files.read_text
    monkeypatch.setattr(again.files, "read_text", lambda p: reads.append(p) or read_text(p))
    report = again.start(watch=False)
    assert (report.unchanged, reads, again.indexer.applied) == (3, [], 0)
    again.close()


def test_an_edit_hidden_behind_the_old_time_and_size_is_found_by_reindex(data_dir: Path):
    app = make_app(data_dir)
    app.start(watch=False)
    note = write(app, "Tricky", "alpha words")
    app.close()
    path = data_dir / "knowledge" / note["path"]
    stat = path.stat()
    path.write_text(path.read_text().replace("alpha words", "gamma words"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # as `cp -p` or a sync tool might
    again = make_app(data_dir)
    again.start(watch=False)  # start-up trusts time and size, as git does
    assert fulltext_ids(again, "gamma") == []
    report = again.reconcile()  # `lithos reindex` reads every file
    assert report.fulltext_fixed == 1 and fulltext_ids(again, "gamma") == [note["id"]]
    assert_in_step(again)
    again.close()


def test_an_edit_made_while_stopped_is_indexed_at_start_up(data_dir: Path):
    app = make_app(data_dir)
    app.start(watch=False)
    note = write(app, "Edited", "alpha words")
    app.close()
    path = data_dir / "knowledge" / note["path"]
    path.write_text(path.read_text().replace("alpha words", "delta and more words"))
    again = make_app(data_dir)
    again.start(watch=False)
    assert fulltext_ids(again, "delta") == [note["id"]]
    assert_in_step(again)
    again.close()

"""People's files are theirs: indexing never writes into them, and their ids stay stable."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

from lithos.app import LithosApp
from lithos.domain.notes import split_frontmatter
from lithos.services.knowledge import WriteRequest
from tests.services.test_watcher import eventually
from tests.support import make_app

# An imported documentation page: frontmatter of its own, no id, keys in its own order.
PAGE = """---
Download Help Link: https://aka.ms/powershell75-help
Help Version: 7.5.0.0
Locale: en-US
Module Name: Microsoft.PowerShell.Host
ms.date: 06/09/2017
schema: 2.0.0
title: Microsoft.PowerShell.Host
---
# Microsoft.PowerShell.Host Module

## Description

Cmdlets that manage data from host programs. See [[Start-Transcript]].
"""

JOURNAL = """---
# my own comment
tags: [journal, ideas]
mood: good
---

Thinking about #gardening today.
"""

PLAIN = "# Shopping\n\n- apples\n- pears\n"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def seed(data_dir: Path) -> dict[str, Path]:
    knowledge = data_dir / "knowledge"
    (knowledge / "ps").mkdir(parents=True)
    files = {
        "ps/Microsoft.PowerShell.Host.md": PAGE,
        "Journal.md": JOURNAL,
        "Shopping list.md": PLAIN,
    }
    for relative, text in files.items():
        (knowledge / relative).write_text(text, encoding="utf-8")
    return {relative: knowledge / relative for relative in files}


def ids(app: LithosApp) -> dict[str, str]:
    return {e.path: e.id for e in app.catalog.entries()}


def test_indexing_and_reindexing_leave_hand_written_files_byte_identical(data_dir: Path):
    files = seed(data_dir)
    before = {path: digest(file) for path, file in files.items()}
    app = make_app(data_dir)
    report = app.start(watch=False)
    assert report.ids_assigned == 3
    app.reconcile(clear=True)
    app.close()
    assert {path: digest(file) for path, file in files.items()} == before


def test_hand_written_files_keep_their_ids_across_restarts_and_a_full_rebuild(data_dir: Path):
    seed(data_dir)
    app = make_app(data_dir)
    app.start(watch=False)
    first = ids(app)
    app.close()
    again = make_app(data_dir)
    again.start(watch=False)
    assert ids(again) == first
    report = again.reconcile(clear=True)
    assert ids(again) == first and report.ids_assigned == 0
    again.close()


def test_a_hand_written_file_renamed_while_stopped_keeps_its_id(data_dir: Path):
    files = seed(data_dir)
    app = make_app(data_dir)
    app.start(watch=False)
    first = ids(app)
    app.close()
    files["Shopping list.md"].rename(files["Shopping list.md"].with_name("Groceries.md"))
    again = make_app(data_dir)
    again.start(watch=False)
    assert ids(again)["Groceries.md"] == first["Shopping list.md"]
    assert "Shopping list.md" not in ids(again)
    again.close()


def test_a_copy_of_a_hand_written_file_gets_its_own_id(data_dir: Path):
    files = seed(data_dir)
    app = make_app(data_dir)
    app.start(watch=False)
    (files["Shopping list.md"].parent / "Shopping 2.md").write_text(PLAIN)
    app.reconcile()
    found = ids(app)
    assert found["Shopping 2.md"] != found["Shopping list.md"]
    app.close()


def test_the_watcher_indexes_and_follows_a_renamed_hand_written_file_without_writing_it(
    data_dir: Path,
):
    knowledge = data_dir / "knowledge"
    knowledge.mkdir(parents=True)
    app = make_app(data_dir)
    app.start(watch=True)
    try:
        note = knowledge / "Journal.md"
        note.write_text(JOURNAL)
        written = digest(note)
        assert eventually(lambda: app.catalog.by_path("Journal.md") is not None)
        note_id = ids(app)["Journal.md"]
        moved = knowledge / "Diary.md"
        note.rename(moved)
        assert eventually(lambda: app.catalog.by_path("Diary.md") is not None)
        assert ids(app) == {"Diary.md": note_id}
        assert digest(moved) == written
    finally:
        app.close()


def test_an_agent_update_rewrites_only_the_keys_it_changes(data_dir: Path):
    files = seed(data_dir)
    app = make_app(data_dir)
    app.start(watch=False)
    note_id = ids(app)["ps/Microsoft.PowerShell.Host.md"]
    asyncio.run(app.knowledge.write(WriteRequest(agent="bot", id=note_id, tags=["powershell"])))
    text = files["ps/Microsoft.PowerShell.Host.md"].read_text()
    meta, body = split_frontmatter(text)
    assert meta["id"] == note_id and meta["tags"] == ["powershell"]
    assert meta["contributors"] == ["bot"] and "author" not in meta and "confidence" not in meta
    # Every line the person wrote is still there, in the same order, and the body is intact.
    original = PAGE.split("---\n")[1].splitlines()
    kept = [line for line in text.split("---\n")[1].splitlines() if line in original]
    assert kept == original
    assert body == PAGE.split("---\n", 2)[2]
    assert ids(app)["ps/Microsoft.PowerShell.Host.md"] == note_id
    app.close()


def test_an_agent_update_keeps_comments_list_style_and_unknown_keys(data_dir: Path):
    files = seed(data_dir)
    app = make_app(data_dir)
    app.start(watch=False)
    note_id = ids(app)["Journal.md"]
    asyncio.run(
        app.knowledge.write(WriteRequest(agent="bot", id=note_id, tags=["journal", "plants"]))
    )
    text = files["Journal.md"].read_text()
    assert "# my own comment\ntags: [journal, plants]\nmood: good\n" in text
    assert text.endswith("---\n\nThinking about #gardening today.\n")
    app.close()


def test_an_agent_content_update_keeps_the_persons_frontmatter_lines(data_dir: Path):
    files = seed(data_dir)
    app = make_app(data_dir)
    app.start(watch=False)
    note_id = ids(app)["Shopping list.md"]
    asyncio.run(app.knowledge.write(WriteRequest(agent="bot", id=note_id, content="- plums\n")))
    meta, body = split_frontmatter(files["Shopping list.md"].read_text())
    assert meta["id"] == note_id and body == "\n- plums\n"
    # The title came from the heading the new content dropped, so it is now written down.
    assert set(meta) == {"id", "title", "created_at", "updated_at", "contributors"}
    assert meta["title"] == "Shopping"
    app.close()


def test_adopt_writes_only_the_identity_into_hand_written_files(data_dir: Path):
    files = seed(data_dir)
    app = make_app(data_dir)
    app.start(watch=False)
    first = ids(app)
    adopted = app.indexer.adopt(sorted(first))
    assert adopted == sorted(first)
    text = files["Journal.md"].read_text()
    assert text.startswith("---\nid: " + first["Journal.md"] + "\ncreated_at: ")
    assert "# my own comment\ntags: [journal, ideas]\nmood: good\n---\n\nThinking" in text
    assert (
        split_frontmatter(PLAIN)[1] == split_frontmatter(files["Shopping list.md"].read_text())[1]
    )
    assert ids(app) == first
    assert app.indexer.adopt(sorted(first)) == []
    app.close()


def test_the_adopt_files_setting_writes_ids_while_indexing(data_dir: Path):
    files = seed(data_dir)
    app = make_app(data_dir, **{"storage.adopt_files": True})
    app.start(watch=False)
    first = ids(app)
    assert (
        split_frontmatter(files["Shopping list.md"].read_text())[0]["id"]
        == first["Shopping list.md"]
    )
    app.close()

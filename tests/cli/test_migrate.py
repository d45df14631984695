"""`lithos migrate`: a dry run that shows per file what would change and touches nothing, and
an idempotent run that changes only notes below the current version, keeping each file's own
formatting, with the indexes in step."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from fastmcp import Client

from lithos.cli.main import main
from lithos.domain.notes import content_hash
from lithos.mcp.server import create_server
from tests.fakes import HashingEmbedder
from tests.support import call, make_app

CLIPPED = """---
title: "Tea, brewed well"   # clipped from the web
source: https://example.org/tea
tags: [tea, howto]
---

Body text stays.
"""
CURRENT = "---\ntitle: Current\nschema_version: 2\nsource: https://x.example\n---\nBody\n"
PLAIN = "# Plain\n\nA person's note without frontmatter.\n"
BROKEN = "---\nschema_version: two\n---\nBody\n"


@pytest.fixture(autouse=True)
def fake_embedder(monkeypatch):
    monkeypatch.setattr("lithos.app.create_embedder", lambda *a, **k: HashingEmbedder())


@pytest.fixture
def knowledge(data_dir: Path) -> Path:
    root = data_dir / "knowledge"
    (root / "clips").mkdir(parents=True)
    (root / "clips" / "tea.md").write_text(CLIPPED)
    (root / "current.md").write_text(CURRENT)
    (root / "plain.md").write_text(PLAIN)
    (root / "broken.md").write_text(BROKEN)
    (root / "old.md").write_text("---\ntitle: Old\nsource: task-9\n---\nOld body\n")
    return root


def hashes(data_dir: Path) -> dict[str, str]:
    """Every file under the data directory (notes, indexes, state) by content hash."""
    return {
        str(p.relative_to(data_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(data_dir.rglob("*"))
        if p.is_file()
    }


def migrate(data_dir: Path, *args: str) -> int:
    return main(["--data-dir", str(data_dir), "migrate", *args])


def test_a_dry_run_shows_each_change_and_touches_no_file(
    data_dir: Path, knowledge: Path, capsys
) -> None:
    assert main(["--data-dir", str(data_dir), "reindex", "--no-embed"]) in (0, 1)
    capsys.readouterr()
    before = hashes(data_dir)
    assert migrate(data_dir, "--dry-run") == 0
    out = capsys.readouterr()
    assert hashes(data_dir) == before
    assert "clips/tea.md: v1 -> v2 (0002_source_url_from_source)\n" in out.out
    assert "+source_url: https://example.org/tea\n" in out.out
    assert "old.md: v1 -> v2" in out.out
    assert "broken.md: skipped: schema_version must be a whole number" in out.out
    assert "current.md" not in out.out and "plain.md" not in out.out
    assert "2 of 5 file(s) would be migrated to schema version 2; 1 skipped" in out.err

    assert migrate(data_dir, "--dry-run", "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert hashes(data_dir) == before
    assert report["applied"] is False
    by_path = {note["path"]: note for note in report["notes"]}
    assert by_path["clips/tea.md"]["fields"] == [
        {"key": "source_url", "before": None, "after": "https://example.org/tea"},
        {"key": "schema_version", "before": None, "after": 2},
    ]
    assert by_path["old.md"]["fields"] == [{"key": "schema_version", "before": None, "after": 2}]


def test_migrate_changes_only_notes_below_the_version_and_is_idempotent(
    data_dir: Path, knowledge: Path, capsys
) -> None:
    untouched = {name: (knowledge / name).read_bytes() for name in ("current.md", "plain.md")}
    untouched["broken.md"] = (knowledge / "broken.md").read_bytes()
    assert migrate(data_dir, "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["applied"] is True
    assert sorted(note["path"] for note in report["notes"]) == ["clips/tea.md", "old.md"]
    for name, content in untouched.items():
        assert (knowledge / name).read_bytes() == content
    tea = (knowledge / "clips" / "tea.md").read_text()
    assert tea == CLIPPED.replace(
        "tags: [tea, howto]\n",
        "tags: [tea, howto]\nschema_version: 2\nsource_url: https://example.org/tea\n",
    )
    record = json.loads((data_dir / ".lithos" / "migrations" / "registry.json").read_text())
    assert record["current_version"] == 2
    assert record["migrations"] == [{"from": 1, "to": 2, "name": "0002_source_url_from_source"}]
    assert [run["migrated"] for run in record["runs"]] == [2]

    before = hashes(data_dir / "knowledge")
    assert migrate(data_dir, "--json") == 0
    again = json.loads(capsys.readouterr().out)
    assert again["notes"] == []
    assert hashes(data_dir / "knowledge") == before
    record = json.loads((data_dir / ".lithos" / "migrations" / "registry.json").read_text())
    assert len(record["runs"]) == 1  # a run that changed nothing is not recorded


async def test_migrated_notes_are_indexed_and_new_agent_notes_need_no_migration(
    data_dir: Path, knowledge: Path, capsys
) -> None:
    assert migrate(data_dir) == 0
    capsys.readouterr()
    app = make_app(data_dir)  # opened, not started: the indexes as migrate left them
    entry = app.catalog.by_path("clips/tea.md")
    assert entry is not None and entry.source_url == "https://example.org/tea"
    assert entry.content_hash == content_hash((knowledge / "clips" / "tea.md").read_text())
    app.start(watch=False)
    try:
        async with Client(create_server(app)) as client:
            written = await call(client, "lithos_write", agent="a", title="New", content="x")
            read = await call(client, "lithos_read", id=written["id"])
            assert read["metadata"]["schema_version"] == 2
    finally:
        app.close()
    assert migrate(data_dir, "--dry-run") == 0
    assert "0 of 6 file(s) would be migrated" in capsys.readouterr().err

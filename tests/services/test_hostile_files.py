"""A hostile file in the vault is reported as a problem; it never stops start-up, freezes a
read or blocks the watcher."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from fastmcp import Client

from lithos.errors import NoteUnreadable
from lithos.mcp.server import create_server
from tests.domain.test_frontmatter import HOSTILE
from tests.services.test_watcher import eventually
from tests.support import call, make_app

FILES = {
    f"{name.replace(' ', '-')}.md": f"---\n{block}\n---\n\nbody\n"
    for name, block in HOSTILE.items()
}


@pytest.fixture
def hostile_vault(data_dir: Path) -> Path:
    knowledge = data_dir / "knowledge"
    knowledge.mkdir(parents=True)
    for name, text in FILES.items():
        (knowledge / name).write_text(text)
    (knowledge / "good.md").write_text("# Good\n\nplatypus facts\n")
    return knowledge


def test_start_up_reports_every_hostile_file_and_indexes_the_rest(hostile_vault: Path):
    app = make_app(hostile_vault.parent)
    try:
        report = app.start(watch=False)
        assert sorted(p["path"] for p in report.problems) == sorted(FILES)
        assert [e.path for e in app.catalog.entries()] == ["good.md"]
        assert asyncio.run(app.stats())["problems"] == len(FILES)
    finally:
        app.close()


async def test_reading_a_hostile_file_answers_promptly_with_the_envelope(hostile_vault: Path):
    app = make_app(hostile_vault.parent)
    app.start(watch=False)
    try:
        async with Client(create_server(app)) as client:
            for name in FILES:
                started = time.monotonic()
                answer = await call(client, "lithos_read", path=name)
                assert time.monotonic() - started < 5
                assert answer["status"] == "error"
                assert answer["code"] == "note_unreadable", answer
                assert name in answer["message"]
            good = await call(client, "lithos_read", path="good.md")
            assert "platypus" in good["content"]
    finally:
        app.close()


def test_a_hostile_file_dropped_in_while_running_does_not_block_the_watcher(data_dir: Path):
    app = make_app(data_dir)
    app.start(watch=True)
    try:
        for name, text in FILES.items():
            (app.files.root / name).write_text(text)
        (app.files.root / "after.md").write_text("# After\n\nwombat facts\n")
        assert eventually(lambda: app.catalog.by_path("after.md") is not None)
        assert eventually(lambda: {p["path"] for p in app.catalog.problems()} == set(FILES))
        with pytest.raises(NoteUnreadable):
            asyncio.run(app.knowledge.read(path="billion-laughs.md"))
    finally:
        app.close()

"""Every tool failure is the envelope, and no message carries a path outside knowledge/."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastmcp import Client

from lithos.app import LithosApp
from lithos.errors import InvalidInput
from lithos.mcp.envelope import check_arguments, scrub_paths
from lithos.mcp.server import create_server
from tests.support import call

LONG = "x" * 256
FAILURES = [
    ("lithos_read", {"path": f"{LONG}.md"}, "invalid_path"),
    ("lithos_read", {"path": f"deep/{'é' * 130}/note.md"}, "invalid_path"),
    ("lithos_write", {"agent": "a", "title": "t", "content": "c", "path": LONG}, "invalid_path"),
    ("lithos_read", {"path": "a\x00b.md"}, "invalid_path"),
    ("lithos_read", {"path": "a\x00b"}, "invalid_path"),
    ("lithos_read", {"id": "\x00"}, "invalid_input"),
    ("lithos_write", {"agent": "a\x00", "title": "t", "content": "c"}, "invalid_input"),
    ("lithos_write", {"agent": "a", "title": "t", "content": "lone \ud800"}, "invalid_input"),
    ("lithos_list", {"offset": 2**63}, "invalid_input"),
    ("lithos_list", {"offset": 2**70}, "invalid_input"),
    ("lithos_list", {"path_prefix": "\x00"}, "invalid_path"),
    ("lithos_agent_register", {"id": "a", "metadata": {"k": "\x00"}}, "invalid_input"),
    ("lithos_task_create", {"agent": "a", "title": "t", "tags": ["\udfff"]}, "invalid_input"),
    ("lithos_list", {"limit": True}, "invalid_input"),
    ("lithos_list", {"limit": "5"}, "invalid_input"),
    ("lithos_links", {"id": "00000000-0000-4000-8000-000000000000", "depth": 1.5}, "invalid_input"),
    ("lithos_no_such_tool", {}, "unknown_tool"),
]


@pytest.mark.parametrize(("tool", "arguments", "code"), FAILURES)
async def test_failure_is_the_envelope_without_absolute_paths(
    client: Client, app: LithosApp, tool: str, arguments: dict, code: str
):
    answer = await call(client, tool, **arguments)
    assert answer["status"] == "error"
    assert answer["code"] == code, answer
    assert str(app.config.data_dir) not in answer["message"]
    assert "Errno" not in answer["message"]


async def test_deeply_nested_arguments_are_refused_without_recursion(client: Client):
    nested: dict = {}
    for _ in range(60):
        nested = {"k": nested}
    answer = await call(client, "lithos_agent_register", id="a", metadata=nested)
    assert answer["code"] == "invalid_input"
    assert "nested deeper" in answer["message"]


async def test_an_unexpected_exception_is_an_internal_error_with_paths_scrubbed(app: LithosApp):
    server = create_server(app)
    secret = app.config.data_dir / ".lithos" / "coordination.db"
    inside = app.files.root / "notes" / "a.md"

    @server.tool
    def explode() -> dict:
        raise OSError(5, f"I/O error on {inside} near {secret}")

    async with Client(server) as client:
        answer = await call(client, "explode")
    assert answer["status"] == "error" and answer["code"] == "internal_error"
    assert "notes/a.md" in answer["message"]
    assert str(app.config.data_dir) not in answer["message"]
    assert "<path>" in answer["message"]


@pytest.mark.parametrize(
    "value", [float("nan"), float("inf"), -float("inf"), 2**63, -(2**63) - 1, [{"k": 2**70}]]
)
def test_non_finite_numbers_and_integers_beyond_64_bits_are_refused(value: object):
    # JSON carries neither NaN nor 2**70 into SQLite; a Python caller could.
    with pytest.raises(InvalidInput):
        check_arguments({"x": value})


def test_scrub_keeps_relative_paths_urls_and_words():
    root = "/srv/lithos/data/knowledge"
    text = (
        f"no note at {root}/a/b.md; cannot open '/etc/shadow' or /var/x.db, see "
        "http://127.0.0.1:8765/mcp and a/b.md at 2026-01-05T09:00:00Z (title:asyncio)"
    )
    assert scrub_paths(text, root) == (
        "no note at a/b.md; cannot open '<path>' or <path>, see "
        "http://127.0.0.1:8765/mcp and a/b.md at 2026-01-05T09:00:00Z (title:asyncio)"
    )


def test_a_long_path_segment_written_by_hand_is_refused_before_touching_disk(tmp_path: Path):
    from lithos.errors import InvalidPath
    from lithos.store.markdown import KnowledgeFiles

    files = KnowledgeFiles(tmp_path)
    with pytest.raises(InvalidPath):
        files.check_file(f"{LONG}.md")
    with pytest.raises(InvalidPath):
        files.check_dir(f"ok/{LONG}")

"""A failed call changes nothing: not the files, not coordination.db, not the agent registry
(no agent is created, none has its last_seen_at moved)."""

from __future__ import annotations

import sqlite3

import pytest
from fastmcp import Client

from lithos.app import LithosApp
from tests.support import call

UNKNOWN_NOTE = "00000000-0000-4000-8000-000000000000"


def snapshot(app: LithosApp) -> dict[str, list[tuple]]:
    """Every row of coordination.db and every knowledge file's bytes."""
    rows: dict[str, list[tuple]] = {}
    with sqlite3.connect(app.config.data_dir / ".lithos" / "coordination.db") as conn:
        tables = [
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not r[0].startswith("sqlite_")
        ]
        for table in sorted(tables):
            rows[table] = sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
    rows["files"] = sorted(
        (p.relative_to(app.files.root).as_posix(), p.read_bytes())
        for p in app.files.root.rglob("*")
        if p.is_file()
    )
    return rows


@pytest.fixture
async def world(client: Client) -> dict[str, str]:
    """An open task whose aspect 'impl' is held by 'holder', a closed task, and a note."""
    task = (await call(client, "lithos_task_create", title="Open", agent="holder"))["task_id"]
    await call(client, "lithos_task_claim", task_id=task, aspect="impl", agent="holder")
    closed = (await call(client, "lithos_task_create", title="Done", agent="holder"))["task_id"]
    await call(client, "lithos_task_complete", task_id=closed, agent="holder")
    note = await call(client, "lithos_write", agent="holder", title="Note", content="body")
    return {"task": task, "closed": closed, "note": note["id"], "version": note["version"]}


def failing_calls(w: dict[str, str]) -> list[tuple[str, dict, str]]:
    return [
        (
            "lithos_task_claim",
            {"task_id": "task-nope", "aspect": "a", "agent": "x"},
            "task_not_found",
        ),
        (
            "lithos_task_claim",
            {"task_id": w["task"], "aspect": "impl", "agent": "x"},
            "claim_failed",
        ),
        (
            "lithos_task_claim",
            {"task_id": w["closed"], "aspect": "a", "agent": "x"},
            "task_not_open",
        ),
        (
            "lithos_task_claim",
            {"task_id": w["task"], "aspect": "impl", "agent": "holder", "ttl_minutes": 0},
            "invalid_input",
        ),
        (
            "lithos_task_renew",
            {"task_id": w["task"], "aspect": "impl", "agent": "x"},
            "claim_not_found",
        ),
        (
            "lithos_task_renew",
            {"task_id": "task-nope", "aspect": "impl", "agent": "holder"},
            "task_not_found",
        ),
        (
            "lithos_task_release",
            {"task_id": w["task"], "aspect": "impl", "agent": "x"},
            "claim_not_found",
        ),
        (
            "lithos_task_release",
            {"task_id": w["task"], "aspect": "other", "agent": "holder"},
            "claim_not_found",
        ),
        (
            "lithos_task_update",
            {"task_id": "task-nope", "agent": "x", "title": "t"},
            "task_not_found",
        ),
        (
            "lithos_task_update",
            {"task_id": w["closed"], "agent": "holder", "title": "t"},
            "task_not_open",
        ),
        ("lithos_task_update", {"task_id": w["task"], "agent": "x"}, "invalid_input"),
        ("lithos_task_complete", {"task_id": "task-nope", "agent": "x"}, "task_not_found"),
        ("lithos_task_complete", {"task_id": w["closed"], "agent": "holder"}, "task_not_open"),
        ("lithos_task_cancel", {"task_id": w["closed"], "agent": "x"}, "task_not_open"),
        (
            "lithos_finding_post",
            {"task_id": "task-nope", "agent": "x", "summary": "s"},
            "task_not_found",
        ),
        ("lithos_write", {"agent": "x", "id": UNKNOWN_NOTE, "content": "c"}, "doc_not_found"),
        (
            "lithos_write",
            {"agent": "holder", "id": w["note"], "content": "c", "expected_version": "0" * 16},
            "version_conflict",
        ),
        (
            "lithos_write",
            {"agent": "x", "title": "t", "content": "c", "path": "../out"},
            "invalid_path",
        ),
        ("lithos_write", {"agent": "x", "id": w["note"], "path": "../out"}, "invalid_path"),
        ("lithos_delete", {"id": UNKNOWN_NOTE, "agent": "x"}, "doc_not_found"),
        ("lithos_agent_info", {"id": "x"}, "agent_not_found"),
    ]


async def test_every_failed_call_leaves_every_row_and_file_as_it_was(
    client: Client, app: LithosApp, world: dict[str, str]
):
    for tool, arguments, code in failing_calls(world):
        before = snapshot(app)
        answer = await call(client, tool, **arguments)
        assert answer.get("code") == code, (tool, arguments, answer)
        assert snapshot(app) == before, (tool, arguments)
    agents = await call(client, "lithos_agent_list")
    assert [a["id"] for a in agents["agents"]] == ["holder"]


async def test_a_successful_call_still_registers_and_touches_its_agent(
    client: Client, world: dict[str, str]
):
    before = (await call(client, "lithos_agent_info", id="holder"))["last_seen_at"]
    await call(client, "lithos_task_renew", task_id=world["task"], aspect="impl", agent="holder")
    after = (await call(client, "lithos_agent_info", id="holder"))["last_seen_at"]
    assert after > before
    await call(client, "lithos_task_claim", task_id=world["task"], aspect="docs", agent="newcomer")
    await call(client, "lithos_write", agent="writer", title="Fresh", content="x")
    known = {a["id"] for a in (await call(client, "lithos_agent_list"))["agents"]}
    assert known == {"holder", "newcomer", "writer"}

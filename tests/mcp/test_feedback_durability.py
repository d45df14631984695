"""Completing a task with feedback waits on one fsync, coordination.db's; the learned state
(stats.db, edges.db) commits without waiting for the disk and catches up from coordination.db
at start-up when a power cut took its latest commits back.

A power cut is simulated by putting back copies of stats.db and edges.db taken after the
retrieval (whose receipt is committed with an fsync) and before the completion: what the
files hold when their later commits never reached the disk."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from lithos.app import LithosApp
from lithos.mcp.server import create_server
from lithos.store.sqlite import Database
from tests.support import call, make_app

STATE = ("stats", "edges")


def snapshot(data_dir: Path, into: Path) -> dict[str, Path]:
    """Consistent copies of the learned-state files as committed now."""
    into.mkdir(exist_ok=True)
    copies = {}
    for name in STATE:
        copies[name] = into / f"{name}.db"
        source = sqlite3.connect(data_dir / ".lithos" / f"{name}.db")
        copy = sqlite3.connect(copies[name])
        try:
            source.backup(copy)
        finally:
            copy.close()
            source.close()
    return copies


def put_back(data_dir: Path, copy: Path) -> None:
    """Replace the learned-state file named like ``copy`` (and its WAL) while no app runs."""
    live = data_dir / ".lithos" / copy.name
    for suffix in ("-wal", "-shm"):
        live.with_name(live.name + suffix).unlink(missing_ok=True)
    live.write_bytes(copy.read_bytes())


def learned(data_dir: Path) -> dict[str, Any]:
    """What feedback taught, read straight from the files."""
    stats = sqlite3.connect(data_dir / ".lithos" / "stats.db")
    edges = sqlite3.connect(data_dir / ".lithos" / "edges.db")
    try:
        return {
            "applied": stats.execute("SELECT receipt_id FROM feedback_applied").fetchall(),
            "nodes": stats.execute(
                "SELECT node_id, cited_count, ignored_count, misleading_count,"
                " round(salience, 6) FROM node_stats ORDER BY node_id"
            ).fetchall(),
            "edges": edges.execute(
                "SELECT from_id, to_id, type, round(weight, 6) FROM edges"
                " ORDER BY from_id, to_id, type"
            ).fetchall(),
        }
    finally:
        stats.close()
        edges.close()


async def retrieve_in_task(client: Client) -> tuple[str, list[str]]:
    """Three notes retrieved in a task; returns the task id and the note ids."""
    ids = []
    for title in ("Kiln firing", "Kiln glazes", "Kiln repairs"):
        written = await call(client, "lithos_write", agent="a", title=title, content=f"{title}")
        ids.append(str(written["id"]))
    task = str((await call(client, "lithos_task_create", title="t", agent="agent-1"))["task_id"])
    got = await call(client, "lithos_retrieve", query="kiln", task_id=task, agent_id="agent-1")
    assert {r["id"] for r in got["results"]} >= set(ids)
    return task, ids


async def complete(client: Client, task: str, ids: list[str]) -> dict[str, Any]:
    done = await call(
        client,
        "lithos_task_complete",
        task_id=task,
        agent="agent-1",
        cited_nodes=ids[:2],
        misleading_nodes=ids[2:],
    )
    feedback: dict[str, Any] = done["feedback"]
    assert feedback["applied"] is True and feedback["edges_reinforced"]
    return feedback


@pytest.fixture
async def power_cut(data_dir: Path, tmp_path: Path) -> tuple[dict[str, Path], dict[str, Any]]:
    """A completed task with feedback; returns the learned-state copies from just before
    the completion and the learned state just after it."""
    app = make_app(data_dir)
    app.start(watch=False)
    try:
        async with Client(create_server(app)) as client:
            task, ids = await retrieve_in_task(client)
            copies = snapshot(data_dir, tmp_path / "before")
            await complete(client, task, ids)
    finally:
        app.close()
    after = learned(data_dir)
    assert len(after["applied"]) == 1 and after["edges"]
    return copies, after


def restart(data_dir: Path) -> LithosApp:
    app = make_app(data_dir)
    app.start(watch=False)
    return app


def test_feedback_lost_from_both_files_is_learned_again_once(
    data_dir: Path, power_cut: tuple[dict[str, Path], dict[str, Any]]
):
    copies, after = power_cut
    for copy in copies.values():
        put_back(data_dir, copy)
    assert learned(data_dir) != after  # the cut took the learning back
    app = restart(data_dir)
    try:
        report = app.feedback_replay
        assert report is not None
        assert (report.stats_reapplied, report.graph_reapplied) == (1, 1)
    finally:
        app.close()
    assert learned(data_dir) == after
    app = restart(data_dir)  # a second start finds nothing to do
    try:
        assert app.feedback_replay is not None
        assert (app.feedback_replay.stats_reapplied, app.feedback_replay.graph_reapplied) == (0, 0)
        assert app.feedback_replay.examined == 1
    finally:
        app.close()
    assert learned(data_dir) == after


@pytest.mark.parametrize(("lost", "reapplied"), [("edges", (0, 1)), ("stats", (1, 0))])
def test_feedback_lost_from_one_file_is_learned_again_by_that_file_alone(
    data_dir: Path,
    power_cut: tuple[dict[str, Path], dict[str, Any]],
    lost: str,
    reapplied: tuple[int, int],
):
    copies, after = power_cut
    put_back(data_dir, copies[lost])
    app = restart(data_dir)
    try:
        report = app.feedback_replay
        assert report is not None
        assert (report.stats_reapplied, report.graph_reapplied) == reapplied
    finally:
        app.close()
    assert learned(data_dir) == after  # nothing counted twice


def test_feedback_the_graph_learned_before_its_ledger_recorded_it_is_left_alone(
    data_dir: Path, power_cut: tuple[dict[str, Path], dict[str, Any]]
):
    _, after = power_cut
    edges = sqlite3.connect(data_dir / ".lithos" / "edges.db")
    # As an edges.db from before the ledger kept feedback keys: none, and recording from now.
    edges.execute("DELETE FROM reinforcements WHERE key LIKE 'feedback:%'")
    edges.execute("UPDATE ledger_epochs SET since = '2999-01-01T00:00:00.000000Z'")
    edges.commit()
    edges.close()
    app = restart(data_dir)
    try:
        assert app.feedback_replay is not None
        assert (app.feedback_replay.stats_reapplied, app.feedback_replay.graph_reapplied) == (0, 0)
    finally:
        app.close()
    assert learned(data_dir) == after


async def test_only_the_completion_itself_waits_for_the_disk(data_dir: Path):
    app = make_app(data_dir)
    app.start(watch=False)
    traces: dict[str, list[str]] = {"coordination": [], "stats": []}
    databases = {"coordination": app.coordination_db, "stats": app.stats_store.db}
    try:
        async with Client(create_server(app)) as client:
            task, ids = await retrieve_in_task(client)
            for name, db in databases.items():
                db.call(lambda conn, log=traces[name]: conn.set_trace_callback(log.append))
            await complete(client, task, ids)
            for db in databases.values():
                db.call(lambda conn: conn.set_trace_callback(None))
    finally:
        app.close()
    relaxed = "PRAGMA synchronous=NORMAL"
    assert relaxed not in traces["coordination"]
    assert any("task_feedback" in sql for sql in traces["coordination"])
    applied = next(i for i, sql in enumerate(traces["stats"]) if "feedback_applied" in sql)
    assert relaxed in traces["stats"][:applied]


def test_a_transaction_that_need_not_wait_for_the_disk_commits_without_fsync(tmp_path: Path):
    db = Database(tmp_path / "x.db")
    seen: list[int] = []

    def insert(conn: sqlite3.Connection) -> None:
        seen.append(conn.execute("PRAGMA synchronous").fetchone()[0])
        conn.execute("INSERT INTO t VALUES (1)")

    try:
        db.call(lambda conn: conn.execute("CREATE TABLE t (v)"))
        db.call(insert, durable=False)
        db.call(lambda conn: seen.append(conn.execute("PRAGMA synchronous").fetchone()[0]))
        assert seen == [1, 2]  # NORMAL for that transaction, FULL again after it
        assert db.call(lambda conn: conn.execute("SELECT v FROM t").fetchone()[0]) == 1
    finally:
        db.close()

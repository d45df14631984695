"""The coordination schema and its SQL, against a real SQLite file."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lithos.domain.coordination import Claim, Finding, Task, TaskFeedback
from lithos.store.coordination import COORDINATION_MIGRATIONS, CoordinationStore
from lithos.store.sqlite import Database

NOW = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@pytest.fixture
def store(db: Database) -> CoordinationStore:
    return CoordinationStore(db)


def task(task_id: str, *, tags: tuple[str, ...] = (), at: datetime = NOW) -> Task:
    return Task(task_id, "Title", None, "open", "alice", at, tags, at)


def claim(task_id: str, aspect: str, agent: str, minutes: int) -> Claim:
    return Claim(task_id, agent, aspect, NOW, NOW + timedelta(minutes=minutes))


def migrations_applied(db: Database) -> list[str]:
    rows = db.call(lambda conn: conn.execute("SELECT name FROM schema_migrations").fetchall())
    return [row[0] for row in rows]


def test_opening_records_every_migration(db: Database) -> None:
    assert migrations_applied(db) == [m.name for m in COORDINATION_MIGRATIONS]


def test_reopening_applies_no_migration_twice_and_keeps_rows(db_path: Path) -> None:
    first = Database(db_path, COORDINATION_MIGRATIONS)
    first.call(lambda conn: CoordinationStore(first).insert_task(conn, task("task-1")))
    first.close()
    reopened = Database(db_path, COORDINATION_MIGRATIONS)
    try:
        assert migrations_applied(reopened) == [m.name for m in COORDINATION_MIGRATIONS]
        kept = reopened.call(lambda conn: CoordinationStore(reopened).get_task(conn, "task-1"))
        assert kept == task("task-1")
    finally:
        reopened.close()


def test_a_task_round_trips_through_its_row(db: Database, store: CoordinationStore) -> None:
    original = task("task-1", tags=("api", "research"))
    db.call(lambda conn: store.insert_task(conn, original))
    assert db.call(lambda conn: store.get_task(conn, "task-1")) == original


def test_timestamps_are_stored_as_sortable_utc_text(db: Database, store: CoordinationStore) -> None:
    db.call(lambda conn: store.insert_task(conn, task("task-1")))
    stored = db.call(lambda conn: conn.execute("SELECT created_at FROM tasks").fetchone()[0])
    assert stored == "2026-01-05T09:00:00.000000Z"


def test_two_rows_for_one_task_aspect_are_rejected(db: Database, store: CoordinationStore) -> None:
    db.call(lambda conn: store.insert_task(conn, task("task-1")))

    def insert_twice(conn: sqlite3.Connection) -> None:
        for agent in ("alice", "bob"):
            conn.execute(
                "INSERT INTO claims (task_id, agent, aspect, claimed_at, expires_at)"
                " VALUES ('task-1', ?, 'research', 'a', 'b')",
                (agent,),
            )

    with pytest.raises(sqlite3.IntegrityError):
        db.call(insert_twice)


def test_put_claim_replaces_the_row_on_its_aspect(db: Database, store: CoordinationStore) -> None:
    db.call(lambda conn: store.insert_task(conn, task("task-1")))
    db.call(lambda conn: store.put_claim(conn, claim("task-1", "research", "alice", 5)))
    db.call(lambda conn: store.put_claim(conn, claim("task-1", "research", "bob", 9)))
    held = db.call(lambda conn: store.get_claim(conn, "task-1", "research"))
    assert held == claim("task-1", "research", "bob", 9)


def test_a_claim_on_a_missing_task_is_rejected(db: Database, store: CoordinationStore) -> None:
    with pytest.raises(sqlite3.IntegrityError):
        db.call(lambda conn: store.put_claim(conn, claim("task-x", "research", "alice", 5)))


def test_live_claims_leave_out_expired_ones(db: Database, store: CoordinationStore) -> None:
    db.call(lambda conn: store.insert_task(conn, task("task-1")))
    db.call(lambda conn: store.put_claim(conn, claim("task-1", "old", "alice", 5)))
    db.call(lambda conn: store.put_claim(conn, claim("task-1", "new", "bob", 15)))
    later = NOW + timedelta(minutes=10)
    live = db.call(lambda conn: store.live_claims(conn, ["task-1"], later))
    assert [c.aspect for c in live] == ["new"]


def test_count_live_claims_leaves_out_expired_ones(db: Database, store: CoordinationStore) -> None:
    db.call(lambda conn: store.insert_task(conn, task("task-1")))
    db.call(lambda conn: store.put_claim(conn, claim("task-1", "old", "alice", 5)))
    db.call(lambda conn: store.put_claim(conn, claim("task-1", "new", "bob", 15)))
    later = NOW + timedelta(minutes=10)
    assert db.call(lambda conn: store.count_live_claims(conn, later)) == 1


def test_delete_task_claims_removes_every_claim_of_the_task(
    db: Database, store: CoordinationStore
) -> None:
    for task_id in ("task-1", "task-2"):
        db.call(lambda conn, t=task_id: store.insert_task(conn, task(t)))
        db.call(lambda conn, t=task_id: store.put_claim(conn, claim(t, "research", "alice", 5)))
    assert db.call(lambda conn: store.delete_task_claims(conn, "task-1")) == 1
    assert db.call(lambda conn: store.get_claim(conn, "task-2", "research")) is not None


def test_list_tasks_requires_every_tag(db: Database, store: CoordinationStore) -> None:
    db.call(lambda conn: store.insert_task(conn, task("task-1", tags=("a", "b"))))
    db.call(lambda conn: store.insert_task(conn, task("task-2", tags=("a",))))
    found = db.call(lambda conn: store.list_tasks(conn, tags=["a", "b"]))
    assert [t.id for t in found] == ["task-1"]


def test_list_tasks_since_includes_the_boundary(db: Database, store: CoordinationStore) -> None:
    db.call(lambda conn: store.insert_task(conn, task("task-1", at=NOW)))
    db.call(lambda conn: store.insert_task(conn, task("task-2", at=NOW + timedelta(seconds=1))))
    found = db.call(lambda conn: store.list_tasks(conn, since=NOW + timedelta(seconds=1)))
    assert [t.id for t in found] == ["task-2"]


def test_list_findings_after_excludes_the_boundary(db: Database, store: CoordinationStore) -> None:
    db.call(lambda conn: store.insert_task(conn, task("task-1")))
    for n in range(3):
        at = NOW + timedelta(seconds=n)
        finding = Finding(f"finding-{n}", "task-1", "bob", f"s{n}", None, at)
        db.call(lambda conn, f=finding: store.insert_finding(conn, f))
    found = db.call(lambda conn: store.list_findings(conn, "task-1", NOW + timedelta(seconds=1)))
    assert [f.id for f in found] == ["finding-2"]


def test_feedback_keeps_none_apart_from_empty_lists(db: Database, store: CoordinationStore) -> None:
    db.call(lambda conn: store.insert_task(conn, task("task-1")))
    given = TaskFeedback("task-1", "alice", (), None, None, NOW)
    db.call(lambda conn: store.insert_feedback(conn, given))
    assert db.call(lambda conn: store.feedback(conn, "task-1")) == [given]

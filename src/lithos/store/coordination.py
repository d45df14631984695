"""SQLite storage of the coordination database: agents, tasks, claims, findings, feedback.

All SQL of coordination lives here. Each method is synchronous and takes the connection of
the transaction it runs in, so a service can compose several of them into one atomic unit
of work with :meth:`CoordinationStore.run` (one ``BEGIN IMMEDIATE`` transaction).

Timestamps are stored as the fixed-width UTC strings of
:func:`lithos.domain.coordination.format_timestamp`, so text comparison is time comparison.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar, cast

from lithos.domain.coordination import Agent, Claim, Finding, Task, TaskFeedback, TaskStatus
from lithos.domain.timestamps import format_timestamp, parse_timestamp
from lithos.store.sqlite import Database, Migration

T = TypeVar("T")

COORDINATION_MIGRATIONS: list[Migration] = [
    Migration(
        "coordination_0001_initial",
        """
        CREATE TABLE agents (
          id TEXT PRIMARY KEY,
          name TEXT,
          type TEXT,
          first_seen_at TEXT NOT NULL,
          last_seen_at TEXT NOT NULL,
          metadata JSON NOT NULL DEFAULT '{}'
        );
        CREATE TABLE tasks (
          id TEXT PRIMARY KEY,
          title TEXT NOT NULL,
          description TEXT,
          status TEXT NOT NULL DEFAULT 'open'
            CHECK (status IN ('open', 'completed', 'cancelled')),
          created_by TEXT NOT NULL,
          created_at TEXT NOT NULL,
          tags JSON NOT NULL DEFAULT '[]',
          outcome TEXT,
          updated_at TEXT NOT NULL,
          closed_at TEXT,
          closed_by TEXT,
          cancel_reason TEXT
        );
        CREATE INDEX tasks_status_created ON tasks(status, created_at);
        CREATE TABLE claims (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          task_id TEXT NOT NULL REFERENCES tasks(id),
          agent TEXT NOT NULL,
          aspect TEXT NOT NULL,
          claimed_at TEXT NOT NULL,
          expires_at TEXT NOT NULL,
          UNIQUE(task_id, aspect)
        );
        CREATE INDEX claims_expires ON claims(expires_at);
        CREATE TABLE findings (
          id TEXT PRIMARY KEY,
          task_id TEXT NOT NULL REFERENCES tasks(id),
          agent TEXT NOT NULL,
          summary TEXT NOT NULL,
          knowledge_id TEXT,
          created_at TEXT NOT NULL
        );
        CREATE INDEX findings_task_created ON findings(task_id, created_at);
        CREATE TABLE task_feedback (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          task_id TEXT NOT NULL REFERENCES tasks(id),
          agent TEXT NOT NULL,
          cited_nodes JSON,
          misleading_nodes JSON,
          receipt_id TEXT,
          created_at TEXT NOT NULL
        );
        CREATE INDEX task_feedback_task ON task_feedback(task_id)
        """,
    ),
    Migration(
        "coordination_0002_feedback_created",
        "CREATE INDEX task_feedback_created ON task_feedback(created_at)",
    ),
]


class AgentStore:
    """Rows of the ``agents`` table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work(conn)`` as one transaction and return its result."""
        return await self._db.run(work)

    def touch(self, conn: sqlite3.Connection, agent_id: str, now: datetime) -> None:
        """Insert the agent seen at ``now``, or move its ``last_seen_at`` to ``now``."""
        stamp = format_timestamp(now)
        conn.execute(
            "INSERT INTO agents (id, first_seen_at, last_seen_at) VALUES (?, ?, ?)"
            " ON CONFLICT(id) DO UPDATE SET last_seen_at = excluded.last_seen_at",
            (agent_id, stamp, stamp),
        )

    def get(self, conn: sqlite3.Connection, agent_id: str) -> Agent | None:
        row = conn.execute("SELECT * FROM agents WHERE id = ?", (agent_id,)).fetchone()
        return None if row is None else _agent(row)

    def save(self, conn: sqlite3.Connection, agent: Agent) -> None:
        """Insert or fully replace ``agent``."""
        conn.execute(
            "INSERT OR REPLACE INTO agents"
            " (id, name, type, first_seen_at, last_seen_at, metadata)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (
                agent.id,
                agent.name,
                agent.type,
                format_timestamp(agent.first_seen_at),
                format_timestamp(agent.last_seen_at),
                json.dumps(agent.metadata),
            ),
        )

    def list(
        self, conn: sqlite3.Connection, type: str | None, active_since: datetime | None
    ) -> Sequence[Agent]:
        """Agents of ``type`` seen at or after ``active_since``, most recently seen first."""
        sql, params = "SELECT * FROM agents WHERE 1 = 1", []
        if type is not None:
            sql += " AND type = ?"
            params.append(type)
        if active_since is not None:
            sql += " AND last_seen_at >= ?"
            params.append(format_timestamp(active_since))
        rows = conn.execute(sql + " ORDER BY last_seen_at DESC, id", params).fetchall()
        return [_agent(row) for row in rows]

    def count(self, conn: sqlite3.Connection) -> int:
        return int(conn.execute("SELECT COUNT(*) FROM agents").fetchone()[0])


class CoordinationStore:
    """Rows of the ``tasks``, ``claims``, ``findings`` and ``task_feedback`` tables."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work(conn)`` as one transaction and return its result."""
        return await self._db.run(work)

    async def run_read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work(conn)``, which only reads a few rows, as one read transaction on the
        event loop itself (:meth:`Database.run_read`)."""
        return await self._db.run_read(work)

    # tasks

    def insert_task(self, conn: sqlite3.Connection, task: Task) -> None:
        conn.execute(
            "INSERT INTO tasks (id, title, description, status, created_by, created_at, tags,"
            " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                task.id,
                task.title,
                task.description,
                task.status,
                task.created_by,
                format_timestamp(task.created_at),
                json.dumps(list(task.tags)),
                format_timestamp(task.updated_at),
            ),
        )

    def get_task(self, conn: sqlite3.Connection, task_id: str) -> Task | None:
        row = conn.execute("SELECT * FROM tasks WHERE id = ?", (task_id,)).fetchone()
        return None if row is None else _task(row)

    def update_task(self, conn: sqlite3.Connection, task: Task) -> None:
        """Write the mutable metadata of ``task``: title, description, tags, updated_at."""
        conn.execute(
            "UPDATE tasks SET title = ?, description = ?, tags = ?, updated_at = ? WHERE id = ?",
            (
                task.title,
                task.description,
                json.dumps(list(task.tags)),
                format_timestamp(task.updated_at),
                task.id,
            ),
        )

    def close_task(self, conn: sqlite3.Connection, task: Task) -> None:
        """Write the closing fields of ``task``: status, outcome, closed_*, cancel_reason."""
        closed_at = None if task.closed_at is None else format_timestamp(task.closed_at)
        conn.execute(
            "UPDATE tasks SET status = ?, outcome = ?, closed_at = ?, closed_by = ?,"
            " cancel_reason = ?, updated_at = ? WHERE id = ?",
            (
                task.status,
                task.outcome,
                closed_at,
                task.closed_by,
                task.cancel_reason,
                format_timestamp(task.updated_at),
                task.id,
            ),
        )

    def list_tasks(
        self,
        conn: sqlite3.Connection,
        *,
        created_by: str | None = None,
        status: TaskStatus | None = None,
        tags: Sequence[str] = (),
        since: datetime | None = None,
    ) -> Sequence[Task]:
        """Tasks matching every given filter (all of ``tags``), oldest first."""
        sql, params = "SELECT * FROM tasks WHERE 1 = 1", cast(list[Any], [])
        if created_by is not None:
            sql += " AND created_by = ?"
            params.append(created_by)
        if status is not None:
            sql += " AND status = ?"
            params.append(status)
        for tag in tags:
            sql += " AND EXISTS (SELECT 1 FROM json_each(tasks.tags) WHERE value = ?)"
            params.append(tag)
        if since is not None:
            sql += " AND created_at >= ?"
            params.append(format_timestamp(since))
        rows = conn.execute(sql + " ORDER BY created_at, id", params).fetchall()
        return [_task(row) for row in rows]

    def count_open_tasks(self, conn: sqlite3.Connection) -> int:
        return int(conn.execute("SELECT COUNT(*) FROM tasks WHERE status = 'open'").fetchone()[0])

    # claims

    def get_claim(self, conn: sqlite3.Connection, task_id: str, aspect: str) -> Claim | None:
        """The claim row on (task, aspect), live or expired."""
        row = conn.execute(
            "SELECT * FROM claims WHERE task_id = ? AND aspect = ?", (task_id, aspect)
        ).fetchone()
        return None if row is None else _claim(row)

    def put_claim(self, conn: sqlite3.Connection, claim: Claim) -> None:
        """Insert ``claim``, replacing whatever row held its (task, aspect)."""
        conn.execute(
            "INSERT INTO claims (task_id, agent, aspect, claimed_at, expires_at)"
            " VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT(task_id, aspect) DO UPDATE SET agent = excluded.agent,"
            " claimed_at = excluded.claimed_at, expires_at = excluded.expires_at",
            (
                claim.task_id,
                claim.agent,
                claim.aspect,
                format_timestamp(claim.claimed_at),
                format_timestamp(claim.expires_at),
            ),
        )

    def delete_claim(self, conn: sqlite3.Connection, task_id: str, aspect: str) -> None:
        conn.execute("DELETE FROM claims WHERE task_id = ? AND aspect = ?", (task_id, aspect))

    def delete_task_claims(self, conn: sqlite3.Connection, task_id: str) -> int:
        """Delete every claim on the task, live or expired; return how many rows went."""
        return conn.execute("DELETE FROM claims WHERE task_id = ?", (task_id,)).rowcount

    def live_claims(
        self, conn: sqlite3.Connection, task_ids: Sequence[str], now: datetime
    ) -> Sequence[Claim]:
        """Unexpired claims on the given tasks, ordered by task, then aspect."""
        if not task_ids:
            return []
        marks = ", ".join("?" for _ in task_ids)
        rows = conn.execute(
            f"SELECT * FROM claims WHERE task_id IN ({marks}) AND expires_at > ?"
            " ORDER BY task_id, aspect",
            [*task_ids, format_timestamp(now)],
        ).fetchall()
        return [_claim(row) for row in rows]

    def count_live_claims(self, conn: sqlite3.Connection, now: datetime) -> int:
        """Unexpired claims on open tasks."""
        row = conn.execute(
            "SELECT COUNT(*) FROM claims JOIN tasks ON tasks.id = claims.task_id"
            " WHERE tasks.status = 'open' AND claims.expires_at > ?",
            (format_timestamp(now),),
        ).fetchone()
        return int(row[0])

    # findings and feedback

    def insert_finding(self, conn: sqlite3.Connection, finding: Finding) -> None:
        conn.execute(
            "INSERT INTO findings (id, task_id, agent, summary, knowledge_id, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (
                finding.id,
                finding.task_id,
                finding.agent,
                finding.summary,
                finding.knowledge_id,
                format_timestamp(finding.created_at),
            ),
        )

    def list_findings(
        self, conn: sqlite3.Connection, task_id: str, after: datetime | None
    ) -> Sequence[Finding]:
        """Findings of the task created strictly after ``after``, oldest first."""
        sql, params = "SELECT * FROM findings WHERE task_id = ?", [task_id]
        if after is not None:
            sql += " AND created_at > ?"
            params.append(format_timestamp(after))
        rows = conn.execute(sql + " ORDER BY created_at, id", params).fetchall()
        return [_finding(row) for row in rows]

    def insert_feedback(self, conn: sqlite3.Connection, feedback: TaskFeedback) -> None:
        conn.execute(
            "INSERT INTO task_feedback"
            " (task_id, agent, cited_nodes, misleading_nodes, receipt_id, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (
                feedback.task_id,
                feedback.agent,
                _json_or_null(feedback.cited_nodes),
                _json_or_null(feedback.misleading_nodes),
                feedback.receipt_id,
                format_timestamp(feedback.created_at),
            ),
        )

    def feedback_since(
        self, conn: sqlite3.Connection, since: datetime | None
    ) -> Sequence[TaskFeedback]:
        """Feedback bound to a receipt and recorded at or after ``since`` (all when None),
        oldest first."""
        sql, params = "SELECT * FROM task_feedback WHERE receipt_id IS NOT NULL", []
        if since is not None:
            sql += " AND created_at >= ?"
            params.append(format_timestamp(since))
        return [_feedback(row) for row in conn.execute(sql + " ORDER BY id", params).fetchall()]

    def feedback(self, conn: sqlite3.Connection, task_id: str) -> Sequence[TaskFeedback]:
        """Feedback recorded for the task, oldest first."""
        rows = conn.execute(
            "SELECT * FROM task_feedback WHERE task_id = ? ORDER BY id", (task_id,)
        ).fetchall()
        return [_feedback(row) for row in rows]


def _json_or_null(values: tuple[str, ...] | None) -> str | None:
    return None if values is None else json.dumps(list(values))


def _tuple_or_none(text: str | None) -> tuple[str, ...] | None:
    return None if text is None else tuple(json.loads(text))


def _stamp(text: str | None) -> datetime | None:
    return None if text is None else parse_timestamp(text)


def _agent(row: sqlite3.Row) -> Agent:
    return Agent(
        id=row["id"],
        name=row["name"],
        type=row["type"],
        first_seen_at=parse_timestamp(row["first_seen_at"]),
        last_seen_at=parse_timestamp(row["last_seen_at"]),
        metadata=json.loads(row["metadata"] or "{}"),
    )


def _task(row: sqlite3.Row) -> Task:
    return Task(
        id=row["id"],
        title=row["title"],
        description=row["description"],
        status=row["status"],
        created_by=row["created_by"],
        created_at=parse_timestamp(row["created_at"]),
        tags=tuple(json.loads(row["tags"] or "[]")),
        updated_at=parse_timestamp(row["updated_at"]),
        outcome=row["outcome"],
        closed_at=_stamp(row["closed_at"]),
        closed_by=row["closed_by"],
        cancel_reason=row["cancel_reason"],
    )


def _claim(row: sqlite3.Row) -> Claim:
    return Claim(
        task_id=row["task_id"],
        agent=row["agent"],
        aspect=row["aspect"],
        claimed_at=parse_timestamp(row["claimed_at"]),
        expires_at=parse_timestamp(row["expires_at"]),
    )


def _finding(row: sqlite3.Row) -> Finding:
    return Finding(
        id=row["id"],
        task_id=row["task_id"],
        agent=row["agent"],
        summary=row["summary"],
        knowledge_id=row["knowledge_id"],
        created_at=parse_timestamp(row["created_at"]),
    )


def _feedback(row: sqlite3.Row) -> TaskFeedback:
    return TaskFeedback(
        task_id=row["task_id"],
        agent=row["agent"],
        cited_nodes=_tuple_or_none(row["cited_nodes"]),
        misleading_nodes=_tuple_or_none(row["misleading_nodes"]),
        receipt_id=row["receipt_id"],
        created_at=parse_timestamp(row["created_at"]),
    )

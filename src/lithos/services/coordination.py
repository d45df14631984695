"""Coordination use cases: tasks, TTL claims on task aspects, and findings.

Every method that changes state runs as ONE SQLite transaction (``BEGIN IMMEDIATE``), so
checking a claim and taking it cannot interleave with another claimer, in this process or
in another one sharing the database file. The calling agent is recorded (registered or its
``last_seen_at`` moved) last in that same transaction, so a call that fails leaves the agent
registry as it was.

Claim rules:

- A claim holds one ``aspect`` of one ``open`` task for ``ttl_minutes`` (default and maximum
  come from settings; larger requests are clamped to the maximum, values below 1 are
  rejected). Expiry is lazy: an expired claim is ignored by every read and replaced by the
  next claim on its aspect.
- Claiming an aspect whose live claim is held by another agent fails with ``claim_failed``.
  Claiming an aspect the same agent already holds succeeds and works like a renewal.
- Only the holder of a live claim may renew or release it; anyone else, or a claim that
  has expired, gets ``claim_not_found``.
- Completing or cancelling a task releases all its claims. Closed tasks cannot be claimed,
  updated, completed or cancelled again (``task_not_open``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, TypeVar

from lithos.domain.coordination import (
    TASK_STATUSES,
    Claim,
    Finding,
    Task,
    TaskFeedback,
    TaskStatus,
    clamp_ttl,
    new_finding_id,
    new_task_id,
    normalize_tags,
    require_text,
)
from lithos.domain.timestamps import format_timestamp, parse_timestamp, utc_now
from lithos.errors import ClaimFailed, ClaimNotFound, InvalidInput, TaskNotFound
from lithos.services.agents import AgentRegistry
from lithos.store.coordination import CoordinationStore
from lithos.store.sqlite import Database

T = TypeVar("T")
Transaction = Callable[[sqlite3.Connection], T]


class CoordinationService:
    """Tasks, claims and findings shared by all agents. Returns wire-shaped dicts."""

    def __init__(
        self,
        db: Database,
        agents: AgentRegistry,
        default_ttl_minutes: int,
        max_ttl_minutes: int,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._store = CoordinationStore(db)
        self._agents = agents
        self._default_ttl = default_ttl_minutes
        self._max_ttl = max_ttl_minutes
        self._clock = clock

    # tasks

    async def create_task(
        self,
        title: str,
        agent: str,
        description: str | None = None,
        tags: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """Create an open task. Returns ``{"task_id": "task-<12 hex>"}``.

        Raises ``InvalidInput`` when ``title`` or ``agent`` is blank.
        """
        title = require_text("title", title)
        agent = require_text("agent", agent)
        now = self._clock()
        task = Task(
            id=new_task_id(),
            title=title,
            description=description,
            status="open",
            created_by=agent,
            created_at=now,
            tags=normalize_tags(tags),
            updated_at=now,
        )
        await self._store.run(self._acting(agent, lambda conn: self._store.insert_task(conn, task)))
        return {"task_id": task.id}

    async def update_task(
        self,
        task_id: str,
        agent: str,
        title: str | None = None,
        description: str | None = None,
        tags: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """Change the title, description and/or tags (tags replace) of an open task.

        Returns ``{"success": True, "message": ...}``. Raises ``InvalidInput`` when nothing
        to change is given or ``title`` is blank, ``TaskNotFound``, ``TaskNotOpen``.
        """
        if title is None and description is None and tags is None:
            raise InvalidInput("Give at least one of title, description or tags")
        new_title = None if title is None else require_text("title", title)
        agent = require_text("agent", agent)

        def work(conn: sqlite3.Connection) -> None:
            task = self._open_task(conn, task_id)
            updated = replace(
                task,
                title=task.title if new_title is None else new_title,
                description=task.description if description is None else description,
                tags=task.tags if tags is None else normalize_tags(tags),
                updated_at=self._clock(),
            )
            self._store.update_task(conn, updated)

        await self._store.run(self._acting(agent, work))
        return {"success": True, "message": f"Task {task_id} updated"}

    async def complete(
        self,
        task_id: str,
        agent: str,
        outcome: str | None = None,
        cited_nodes: Sequence[str] | None = None,
        misleading_nodes: Sequence[str] | None = None,
        receipt_id: str | None = None,
    ) -> dict[str, Any]:
        """Mark an open task completed, release all its claims, keep ``outcome``.

        When any of ``cited_nodes``, ``misleading_nodes`` or ``receipt_id`` is given, they
        are recorded as retrieval feedback (see :meth:`feedback`); ``None`` means none given.
        Returns ``{"success": True}``. Raises ``TaskNotFound``, ``TaskNotOpen``.
        """
        agent = require_text("agent", agent)
        wants_feedback = not (
            cited_nodes is None and misleading_nodes is None and receipt_id is None
        )

        def work(conn: sqlite3.Connection) -> None:
            now = self._close(conn, task_id, agent, "completed", outcome=outcome)
            if wants_feedback:
                feedback = TaskFeedback(
                    task_id=task_id,
                    agent=agent,
                    cited_nodes=None if cited_nodes is None else tuple(cited_nodes),
                    misleading_nodes=None if misleading_nodes is None else tuple(misleading_nodes),
                    receipt_id=receipt_id,
                    created_at=now,
                )
                self._store.insert_feedback(conn, feedback)

        await self._store.run(self._acting(agent, work))
        return {"success": True}

    async def cancel(self, task_id: str, agent: str, reason: str | None = None) -> dict[str, Any]:
        """Mark an open task cancelled (for good) and release all its claims.

        Returns ``{"success": True}``. Raises ``TaskNotFound``, ``TaskNotOpen``.
        """
        agent = require_text("agent", agent)
        await self._store.run(
            self._acting(
                agent,
                lambda conn: self._close(conn, task_id, agent, "cancelled", cancel_reason=reason),
            )
        )
        return {"success": True}

    async def list_tasks(
        self,
        agent: str | None = None,
        status: TaskStatus | None = None,
        tags: Sequence[str] | None = None,
        since: str | None = None,
    ) -> dict[str, Any]:
        """``{"tasks": [...]}`` oldest first, filtered by every argument given.

        ``agent`` is the creator, ``tags`` must all be present, ``since`` (ISO 8601) keeps
        tasks created at or after it. Raises ``InvalidInput`` on a bad status or timestamp.
        """
        if status is not None and status not in TASK_STATUSES:
            raise InvalidInput(f"status must be one of {', '.join(TASK_STATUSES)}")
        after = None if since is None else parse_timestamp(since, "since")
        tasks = await self._store.run(
            lambda conn: self._store.list_tasks(
                conn,
                created_by=agent,
                status=status,
                tags=normalize_tags(tags),
                since=after,
            )
        )
        return {"tasks": [task.to_dict() for task in tasks]}

    async def status(self, task_id: str | None = None) -> dict[str, Any]:
        """``{"tasks": [{id, title, status, claims: [...]}]}`` with live claims only.

        With ``task_id``: that task, whatever its status (``TaskNotFound`` if unknown).
        Without: every open task.
        """

        def work(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            if task_id is None:
                tasks = self._store.list_tasks(conn, status="open")
            else:
                tasks = [self._task(conn, task_id)]
            claims = self._store.live_claims(conn, [t.id for t in tasks], self._clock())
            return [
                {
                    "id": task.id,
                    "title": task.title,
                    "status": task.status,
                    "claims": [c.to_dict() for c in claims if c.task_id == task.id],
                }
                for task in tasks
            ]

        return {"tasks": await self._store.run(work)}

    async def counts(self) -> dict[str, int]:
        """``{"active_tasks": open tasks, "open_claims": live claims on open tasks,
        "agents": known agents}``, read in one transaction on the event loop itself (three
        counts over indexes: cheaper than the hand-offs to the database thread and back)."""

        def work(conn: sqlite3.Connection) -> dict[str, int]:
            return {
                "active_tasks": self._store.count_open_tasks(conn),
                "open_claims": self._store.count_live_claims(conn, self._clock()),
                "agents": self._agents.count_in(conn),
            }

        return await self._store.run_read(work)

    async def feedback_since(self, since: datetime | None) -> Sequence[TaskFeedback]:
        """Feedback bound to a receipt, recorded at or after ``since`` (all when None)."""
        return await self._store.run(lambda conn: self._store.feedback_since(conn, since))

    async def feedback(self, task_id: str) -> Sequence[TaskFeedback]:
        """Retrieval feedback recorded when the task was completed (empty when none)."""
        return await self._store.run(lambda conn: self._store.feedback(conn, task_id))

    # claims

    async def claim(
        self, task_id: str, aspect: str, agent: str, ttl_minutes: int | None = None
    ) -> dict[str, Any]:
        """Take ``aspect`` of an open task for ``ttl_minutes`` (clamped to the maximum).

        Succeeds when the aspect is free, its claim expired, or ``agent`` already holds it
        (then the expiry moves to now + ttl). Returns ``{"success": True, "expires_at"}``.
        Raises ``ClaimFailed`` when another agent holds a live claim, ``TaskNotFound``,
        ``TaskNotOpen``, ``InvalidInput`` (blank aspect, ttl below 1).
        """
        aspect = require_text("aspect", aspect)
        ttl = clamp_ttl(ttl_minutes, self._default_ttl, self._max_ttl)
        agent = require_text("agent", agent)

        def work(conn: sqlite3.Connection) -> datetime:
            self._open_task(conn, task_id)
            now = self._clock()
            held = self._store.get_claim(conn, task_id, aspect)
            if held is not None and held.is_live(now):
                if held.agent != agent:
                    raise ClaimFailed(
                        f"Aspect {aspect!r} of task {task_id} is claimed by {held.agent} until"
                        f" {format_timestamp(held.expires_at)}",
                        holder=held.agent,
                        expires_at=format_timestamp(held.expires_at),
                    )
                claimed_at = held.claimed_at
            else:
                claimed_at = now
            expires_at = now + timedelta(minutes=ttl)
            self._store.put_claim(conn, Claim(task_id, agent, aspect, claimed_at, expires_at))
            return expires_at

        expires_at = await self._store.run(self._acting(agent, work))
        return {"success": True, "expires_at": format_timestamp(expires_at)}

    async def renew(
        self, task_id: str, aspect: str, agent: str, ttl_minutes: int | None = None
    ) -> dict[str, Any]:
        """Move the expiry of the caller's live claim to now + ``ttl_minutes`` (clamped).

        Returns ``{"success": True, "new_expires_at"}``. Raises ``ClaimNotFound`` when
        ``agent`` holds no live claim on the aspect, ``TaskNotFound``, ``InvalidInput``.
        """
        aspect = require_text("aspect", aspect)
        ttl = clamp_ttl(ttl_minutes, self._default_ttl, self._max_ttl)
        agent = require_text("agent", agent)

        def work(conn: sqlite3.Connection) -> datetime:
            now = self._clock()
            held = self._held_claim(conn, task_id, aspect, agent, now)
            renewed = replace(held, expires_at=now + timedelta(minutes=ttl))
            self._store.put_claim(conn, renewed)
            return renewed.expires_at

        expires_at = await self._store.run(self._acting(agent, work))
        return {"success": True, "new_expires_at": format_timestamp(expires_at)}

    async def release(self, task_id: str, aspect: str, agent: str) -> dict[str, Any]:
        """Give up the caller's live claim so another agent can take the aspect.

        Returns ``{"success": True}``. Raises ``ClaimNotFound`` when ``agent`` holds no
        live claim on the aspect, ``TaskNotFound``.
        """
        aspect = require_text("aspect", aspect)
        agent = require_text("agent", agent)

        def work(conn: sqlite3.Connection) -> None:
            self._held_claim(conn, task_id, aspect, agent, self._clock())
            self._store.delete_claim(conn, task_id, aspect)

        await self._store.run(self._acting(agent, work))
        return {"success": True}

    # findings

    async def post_finding(
        self, task_id: str, agent: str, summary: str, knowledge_id: str | None = None
    ) -> dict[str, Any]:
        """Attach a finding to a task of any status. Returns ``{"finding_id": ...}``.

        ``knowledge_id`` is stored as given. Raises ``TaskNotFound``, ``InvalidInput``
        (blank summary).
        """
        summary = require_text("summary", summary)
        agent = require_text("agent", agent)

        def work(conn: sqlite3.Connection) -> str:
            self._task(conn, task_id)
            finding = Finding(
                new_finding_id(), task_id, agent, summary, knowledge_id, self._clock()
            )
            self._store.insert_finding(conn, finding)
            return finding.id

        return {"finding_id": await self._store.run(self._acting(agent, work))}

    async def list_findings(self, task_id: str, since: str | None = None) -> dict[str, Any]:
        """``{"findings": [...]}`` of the task, oldest first.

        ``since`` (ISO 8601) keeps findings created strictly after it, so the last seen
        ``created_at`` works as a polling cursor. Raises ``TaskNotFound``, ``InvalidInput``.
        """
        after = None if since is None else parse_timestamp(since, "since")

        def work(conn: sqlite3.Connection) -> Sequence[Finding]:
            self._task(conn, task_id)
            return self._store.list_findings(conn, task_id, after)

        findings = await self._store.run(work)
        return {"findings": [finding.to_dict() for finding in findings]}

    # rules shared by the transactions above

    def _acting(self, agent: str, work: Callable[[sqlite3.Connection], T]) -> Transaction[T]:
        """``work`` followed, in the same transaction, by recording that ``agent`` acted: when
        ``work`` raises, the agent is neither registered nor touched."""

        def run(conn: sqlite3.Connection) -> T:
            result = work(conn)
            self._agents.seen(conn, agent)
            return result

        return run

    def _task(self, conn: sqlite3.Connection, task_id: str) -> Task:
        task = self._store.get_task(conn, task_id)
        if task is None:
            raise TaskNotFound(f"Task {task_id} does not exist", task_id=task_id)
        return task

    def _open_task(self, conn: sqlite3.Connection, task_id: str) -> Task:
        task = self._task(conn, task_id)
        task.require_open()
        return task

    def _held_claim(
        self, conn: sqlite3.Connection, task_id: str, aspect: str, agent: str, now: datetime
    ) -> Claim:
        self._task(conn, task_id)
        held = self._store.get_claim(conn, task_id, aspect)
        if held is None or held.agent != agent or not held.is_live(now):
            raise ClaimNotFound(
                f"{agent} holds no live claim on aspect {aspect!r} of task {task_id}",
                task_id=task_id,
                aspect=aspect,
            )
        return held

    def _close(
        self,
        conn: sqlite3.Connection,
        task_id: str,
        agent: str,
        status: TaskStatus,
        outcome: str | None = None,
        cancel_reason: str | None = None,
    ) -> datetime:
        task = self._open_task(conn, task_id)
        now = self._clock()
        closed = replace(
            task,
            status=status,
            outcome=outcome,
            cancel_reason=cancel_reason,
            closed_at=now,
            closed_by=agent,
            updated_at=now,
        )
        self._store.close_task(conn, closed)
        self._store.delete_task_claims(conn, task_id)
        return now

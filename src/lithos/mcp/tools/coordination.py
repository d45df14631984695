"""Coordination tools: tasks, TTL claims on task aspects, and findings."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from lithos.domain.coordination import TaskStatus
from lithos.mcp.tools.types import AgentId, IsoTime, TagList

if TYPE_CHECKING:
    from lithos.app import LithosApp

TaskId = Annotated[str, Field(min_length=1, max_length=100)]
Title = Annotated[str, Field(min_length=1, max_length=300, pattern=r"\S")]
Description = Annotated[str, Field(max_length=20_000)]
Aspect = Annotated[str, Field(min_length=1, max_length=200, pattern=r"\S")]
Summary = Annotated[str, Field(min_length=1, max_length=20_000, pattern=r"\S")]
Reason = Annotated[str, Field(max_length=2_000)]
TtlMinutes = Annotated[int, Field(ge=1)]
NodeIds = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=200)]], Field(max_length=1000)
]


def register(server: FastMCP, app: LithosApp) -> None:
    @server.tool
    async def lithos_task_create(
        title: Title,
        agent: AgentId,
        description: Description | None = None,
        tags: TagList | None = None,
    ) -> dict[str, Any]:
        """Create an open task other agents can claim aspects of. Returns {task_id}."""
        return await app.coordination.create_task(title, agent, description, tags)

    @server.tool
    async def lithos_task_update(
        task_id: TaskId,
        agent: AgentId,
        title: Title | None = None,
        description: Description | None = None,
        tags: TagList | None = None,
    ) -> dict[str, Any]:
        """Change an open task's title, description and/or tags (tags replace the old ones);
        give at least one. Returns {success, message}. Errors: task_not_found,
        task_not_open, invalid_input."""
        return await app.coordination.update_task(task_id, agent, title, description, tags)

    @server.tool
    async def lithos_task_claim(
        task_id: TaskId,
        aspect: Aspect,
        agent: AgentId,
        ttl_minutes: TtlMinutes | None = None,
    ) -> dict[str, Any]:
        """Claim one aspect (free-form, e.g. "research" or "impl:module-a") of an open task
        for ttl_minutes (default 60, capped at the server maximum, 480 by default).
        Re-claiming an aspect you hold extends it; an expired claim can be taken by anyone.
        Returns {success, expires_at}. Errors: claim_failed (another agent holds it; see
        details.holder), task_not_found, task_not_open."""
        return await app.coordination.claim(task_id, aspect, agent, ttl_minutes)

    @server.tool
    async def lithos_task_renew(
        task_id: TaskId,
        aspect: Aspect,
        agent: AgentId,
        ttl_minutes: TtlMinutes | None = None,
    ) -> dict[str, Any]:
        """Extend your live claim to now + ttl_minutes (default 60, capped). Renew before it
        expires: an expired claim cannot be renewed. Returns {success, new_expires_at}.
        Errors: claim_not_found (not yours, expired or never claimed), task_not_found."""
        return await app.coordination.renew(task_id, aspect, agent, ttl_minutes)

    @server.tool
    async def lithos_task_release(
        task_id: TaskId, aspect: Aspect, agent: AgentId
    ) -> dict[str, Any]:
        """Give up your live claim so another agent can take the aspect. Returns {success}.
        Errors: claim_not_found, task_not_found."""
        return await app.coordination.release(task_id, aspect, agent)

    @server.tool
    async def lithos_task_complete(
        task_id: TaskId,
        agent: AgentId,
        outcome: Description | None = None,
        cited_nodes: NodeIds | None = None,
        misleading_nodes: NodeIds | None = None,
        receipt_id: Annotated[str | None, Field(max_length=200)] = None,
    ) -> dict[str, Any]:
        """Mark an open task completed and release all its claims. `outcome` summarises the
        result. `cited_nodes` / `misleading_nodes` are ids of retrieved documents that
        helped / misled (omit for no feedback); `receipt_id` binds them to a lithos_retrieve
        receipt. Returns {success}. Errors: task_not_found, task_not_open."""
        return await app.coordination.complete(
            task_id, agent, outcome, cited_nodes, misleading_nodes, receipt_id
        )

    @server.tool
    async def lithos_task_cancel(
        task_id: TaskId, agent: AgentId, reason: Reason | None = None
    ) -> dict[str, Any]:
        """Cancel an open task for good (it cannot be reopened) and release all its claims.
        Returns {success}. Errors: task_not_found, task_not_open."""
        return await app.coordination.cancel(task_id, agent, reason)

    @server.tool
    async def lithos_task_list(
        agent: AgentId | None = None,
        status: TaskStatus | None = None,
        tags: TagList | None = None,
        since: IsoTime | None = None,
    ) -> dict[str, Any]:
        """List tasks, oldest first. `agent` = creator; `tags` must all match; `since` (ISO
        8601) keeps tasks created at or after it. Returns {tasks: [{id, title, description,
        status, created_by, created_at, tags, outcome, closed_at, ...}]}."""
        return await app.coordination.list_tasks(agent, status, tags, since)

    @server.tool
    async def lithos_task_status(task_id: TaskId | None = None) -> dict[str, Any]:
        """Live (unexpired) claims of one task, or of every open task when task_id is
        omitted. Returns {tasks: [{id, title, status, claims: [{agent, aspect, claimed_at,
        expires_at}]}]}. Errors: task_not_found."""
        return await app.coordination.status(task_id)

    @server.tool
    async def lithos_finding_post(
        task_id: TaskId,
        agent: AgentId,
        summary: Summary,
        knowledge_id: Annotated[str | None, Field(max_length=200)] = None,
    ) -> dict[str, Any]:
        """Report a result on a task, optionally linking the id of a note you wrote.
        Returns {finding_id}. Errors: task_not_found."""
        return await app.coordination.post_finding(task_id, agent, summary, knowledge_id)

    @server.tool
    async def lithos_finding_list(task_id: TaskId, since: IsoTime | None = None) -> dict[str, Any]:
        """Findings of a task, oldest first. `since` (ISO 8601) keeps findings created strictly
        after it: pass the last created_at you saw to get only new ones.
        Returns {findings: [{id, task_id, agent, summary, knowledge_id, created_at}]}.
        Errors: task_not_found."""
        return await app.coordination.list_findings(task_id, since)

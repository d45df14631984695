"""Coordination tools: tasks, TTL claims on task aspects, and findings."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, cast

from pydantic import Field

from lithos.domain.coordination import TaskStatus
from lithos.mcp.registry import ToolRegistry
from lithos.mcp.tools.results import (
    Claimed,
    Completed,
    Done,
    FeedbackResult,
    FindingList,
    FindingPosted,
    Renewed,
    TaskCreated,
    TaskList,
    TaskStatusResult,
)
from lithos.mcp.tools.types import READ_ONLY, AgentId, IsoTime, TagList, tool_hints

if TYPE_CHECKING:
    from lithos.app import LithosApp

TaskId = Annotated[str, Field(min_length=1, max_length=100, description="the task's id")]
Title = Annotated[
    str, Field(min_length=1, max_length=300, pattern=r"\S", description="a short title")
]
Description = Annotated[str, Field(max_length=20_000)]
Aspect = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        pattern=r"\S",
        description="the part of the task, free-form (e.g. 'research', 'impl:module-a')",
    ),
]
Summary = Annotated[
    str, Field(min_length=1, max_length=20_000, pattern=r"\S", description="what you found")
]
Reason = Annotated[str, Field(max_length=2_000)]
TtlMinutes = Annotated[
    int | None,
    Field(ge=1, description="minutes the claim lasts (default 60, capped by the server)"),
]
NodeIds = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=200)]], Field(max_length=1000)
]
Agent = Annotated[AgentId, Field(description="your agent id")]
TaskTags = Annotated[TagList | None, Field(description="tags; replace the old ones")]


def register(server: ToolRegistry, app: LithosApp) -> None:
    @server.tool(annotations=tool_hints())
    async def lithos_task_create(
        title: Title,
        agent: Annotated[AgentId, Field(description="your agent id (the task's creator)")],
        description: Annotated[
            Description | None, Field(description="what needs doing, in detail")
        ] = None,
        tags: Annotated[TagList | None, Field(description="tags for finding the task")] = None,
    ) -> TaskCreated:
        """Create an open task other agents can claim aspects of. Returns {task_id}."""
        return cast(
            TaskCreated, await app.coordination.create_task(title, agent, description, tags)
        )

    @server.tool(annotations=tool_hints(destructive=True, idempotent=True))
    async def lithos_task_update(
        task_id: TaskId,
        agent: Agent,
        title: Annotated[Title | None, Field(description="a new title")] = None,
        description: Annotated[Description | None, Field(description="a new description")] = None,
        tags: TaskTags = None,
    ) -> Done:
        """Change an open task's title, description and/or tags (tags replace the old ones);
        give at least one. Returns {success, message}. Errors: task_not_found,
        task_not_open, invalid_input."""
        result = await app.coordination.update_task(task_id, agent, title, description, tags)
        return cast(Done, result)

    @server.tool(annotations=tool_hints())
    async def lithos_task_claim(
        task_id: TaskId, aspect: Aspect, agent: Agent, ttl_minutes: TtlMinutes = None
    ) -> Claimed:
        """Claim one aspect (free-form, e.g. "research" or "impl:module-a") of an open task
        for ttl_minutes (default 60, capped at the server maximum, 480 by default).
        Re-claiming an aspect you hold extends it; an expired claim can be taken by anyone.
        Returns {success, expires_at}. Errors: claim_failed (another agent holds it; see
        details.holder), task_not_found, task_not_open."""
        return cast(Claimed, await app.coordination.claim(task_id, aspect, agent, ttl_minutes))

    @server.tool(annotations=tool_hints())
    async def lithos_task_renew(
        task_id: TaskId, aspect: Aspect, agent: Agent, ttl_minutes: TtlMinutes = None
    ) -> Renewed:
        """Extend your live claim to now + ttl_minutes (default 60, capped). Renew before it
        expires: an expired claim cannot be renewed. Returns {success, new_expires_at}.
        Errors: claim_not_found (not yours, expired or never claimed), task_not_found."""
        return cast(Renewed, await app.coordination.renew(task_id, aspect, agent, ttl_minutes))

    @server.tool(annotations=tool_hints(destructive=True, idempotent=True))
    async def lithos_task_release(task_id: TaskId, aspect: Aspect, agent: Agent) -> Done:
        """Give up your live claim so another agent can take the aspect. Returns {success}.
        Errors: claim_not_found, task_not_found."""
        return cast(Done, await app.coordination.release(task_id, aspect, agent))

    @server.tool(annotations=tool_hints(destructive=True))
    async def lithos_task_complete(
        task_id: TaskId,
        agent: Agent,
        outcome: Annotated[Description | None, Field(description="what came of the task")] = None,
        cited_nodes: Annotated[
            NodeIds | None, Field(description="ids of retrieved notes that helped")
        ] = None,
        misleading_nodes: Annotated[
            NodeIds | None, Field(description="ids of retrieved notes that misled")
        ] = None,
        receipt_id: Annotated[
            str | None,
            Field(max_length=200, description="the lithos_retrieve receipt the ids came from"),
        ] = None,
    ) -> Completed:
        """Mark an open task completed and release all its claims. `outcome` summarises the
        result. `cited_nodes` / `misleading_nodes` are ids of notes lithos_retrieve returned
        that helped / misled (omit both for no feedback); they count against `receipt_id`
        (which must be this task's) or else your latest lithos_retrieve receipt for this
        task; its other notes count as ignored, ids it did not return are dropped. Returns
        {success, feedback?: {receipt_id, cited, ignored, misleading, quarantined, applied,
        edges_reinforced, edges_weakened, scout_weights}}: cited notes are joined by
        reinforced related_to edges, edges that pulled a misleading note in weaken, and the
        exploration scouts whose results were in the receipt move their learned weight
        (`scout_weights`: the moved weights now, see lithos_scout_weights).
        Errors: task_not_found, task_not_open, receipt_not_found (the task stays open)."""
        done = await app.feedback.complete(
            task_id, agent, outcome, cited_nodes, misleading_nodes, receipt_id
        )
        result = Completed(success=done.success)
        if done.feedback is not None:
            f = done.feedback
            result["feedback"] = FeedbackResult(
                receipt_id=f.receipt_id,
                cited=list(f.cited),
                ignored=list(f.ignored),
                misleading=list(f.misleading),
                quarantined=list(f.quarantined),
                applied=f.applied,
                edges_reinforced=list(f.edges_reinforced),
                edges_weakened=f.edges_weakened,
                scout_weights=list(f.scout_weights),
            )
        return result

    @server.tool(annotations=tool_hints(destructive=True))
    async def lithos_task_cancel(
        task_id: TaskId,
        agent: Agent,
        reason: Annotated[Reason | None, Field(description="why the task is dropped")] = None,
    ) -> Done:
        """Cancel an open task for good (it cannot be reopened) and release all its claims.
        Returns {success}. Errors: task_not_found, task_not_open."""
        return cast(Done, await app.coordination.cancel(task_id, agent, reason))

    @server.tool(annotations=READ_ONLY)
    async def lithos_task_list(
        agent: Annotated[AgentId | None, Field(description="only tasks this agent created")] = None,
        status: Annotated[TaskStatus | None, Field(description="only tasks in this state")] = None,
        tags: Annotated[
            TagList | None, Field(description="tags; every one given must match")
        ] = None,
        since: Annotated[
            IsoTime | None, Field(description="ISO 8601: only tasks created at or after it")
        ] = None,
    ) -> TaskList:
        """List tasks, oldest first. `agent` = creator; `tags` must all match; `since` (ISO
        8601) keeps tasks created at or after it. Returns {tasks: [{id, title, description,
        status, created_by, created_at, tags, outcome, closed_at, ...}]}."""
        return cast(TaskList, await app.coordination.list_tasks(agent, status, tags, since))

    @server.tool(annotations=READ_ONLY)
    async def lithos_task_status(
        task_id: Annotated[
            TaskId | None, Field(description="one task; omit for every open task")
        ] = None,
    ) -> TaskStatusResult:
        """Live (unexpired) claims of one task, or of every open task when task_id is
        omitted. Returns {tasks: [{id, title, status, claims: [{agent, aspect, claimed_at,
        expires_at}]}]}. Errors: task_not_found."""
        return cast(TaskStatusResult, await app.coordination.status(task_id))

    @server.tool(annotations=tool_hints())
    async def lithos_finding_post(
        task_id: TaskId,
        agent: Agent,
        summary: Summary,
        knowledge_id: Annotated[
            str | None, Field(max_length=200, description="id of a note holding the details")
        ] = None,
    ) -> FindingPosted:
        """Report a result on a task, optionally linking the id of a note you wrote.
        Returns {finding_id}. Errors: task_not_found."""
        result = await app.coordination.post_finding(task_id, agent, summary, knowledge_id)
        return cast(FindingPosted, result)

    @server.tool(annotations=READ_ONLY)
    async def lithos_finding_list(
        task_id: TaskId,
        since: Annotated[
            IsoTime | None, Field(description="ISO 8601: only findings created after it")
        ] = None,
    ) -> FindingList:
        """Findings of a task, oldest first. `since` (ISO 8601) keeps findings created strictly
        after it: pass the last created_at you saw to get only new ones.
        Returns {findings: [{id, task_id, agent, summary, knowledge_id, created_at}]}.
        Errors: task_not_found."""
        return cast(FindingList, await app.coordination.list_findings(task_id, since))

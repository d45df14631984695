"""Values and rules of multi-agent coordination: agents, tasks, claims and findings.

Pure: no I/O. Every timestamp is an aware UTC ``datetime`` in memory and one fixed-width
ISO 8601 string on disk and on the wire (``2026-11-23T07:40:00.123456Z``), so that string
order is time order and SQL can compare timestamps as text.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, get_args

from lithos.domain.timestamps import format_timestamp
from lithos.errors import InvalidInput, TaskNotOpen

TaskStatus = Literal["open", "completed", "cancelled"]
TASK_STATUSES: tuple[str, ...] = get_args(TaskStatus)


def clamp_ttl(requested: int | None, default: int, maximum: int) -> int:
    """The claim duration in minutes: ``default`` when None, at most ``maximum``.

    Raises :class:`InvalidInput` when ``requested`` is below 1.
    """
    if requested is None:
        return min(default, maximum)
    if requested < 1:
        raise InvalidInput(f"ttl_minutes must be at least 1, got {requested}")
    return min(requested, maximum)


def require_text(field: str, value: str) -> str:
    """``value`` stripped of surrounding whitespace; :class:`InvalidInput` when blank."""
    stripped = value.strip()
    if not stripped:
        raise InvalidInput(f"{field} must not be empty")
    return stripped


def normalize_tags(tags: Sequence[str] | None) -> tuple[str, ...]:
    """Tags stripped, blanks dropped, duplicates removed, first occurrence order kept."""
    seen: dict[str, None] = {}
    for tag in tags or ():
        stripped = tag.strip()
        if stripped:
            seen.setdefault(stripped, None)
    return tuple(seen)


def new_task_id() -> str:
    """A fresh task id: ``task-`` followed by 12 hex digits."""
    return f"task-{uuid.uuid4().hex[:12]}"


def new_finding_id() -> str:
    """A fresh finding id: ``finding-`` followed by 12 hex digits."""
    return f"finding-{uuid.uuid4().hex[:12]}"


@dataclass(frozen=True)
class Agent:
    """An agent known to Lithos, registered explicitly or on first use."""

    id: str
    name: str | None
    type: str | None
    first_seen_at: datetime
    last_seen_at: datetime
    metadata: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """The ``lithos_agent_info`` wire shape."""
        return {
            "id": self.id,
            "name": self.name,
            "type": self.type,
            "first_seen_at": format_timestamp(self.first_seen_at),
            "last_seen_at": format_timestamp(self.last_seen_at),
            "metadata": dict(self.metadata),
        }

    def to_summary(self) -> dict[str, Any]:
        """The ``lithos_agent_list`` item shape."""
        return {
            "id": self.id,
            "name": self.name,
            "type": self.type,
            "last_seen_at": format_timestamp(self.last_seen_at),
        }


@dataclass(frozen=True)
class Task:
    """A unit of shared work. Only an ``open`` task can be claimed, updated or closed."""

    id: str
    title: str
    description: str | None
    status: TaskStatus
    created_by: str
    created_at: datetime
    tags: tuple[str, ...]
    updated_at: datetime
    outcome: str | None = None
    closed_at: datetime | None = None
    closed_by: str | None = None
    cancel_reason: str | None = None

    def require_open(self) -> None:
        """Raise :class:`TaskNotOpen` unless the task is open."""
        if self.status != "open":
            raise TaskNotOpen(f"Task {self.id} is {self.status}", task_id=self.id)

    def to_dict(self) -> dict[str, Any]:
        """The ``lithos_task_list`` item shape."""
        return {
            "id": self.id,
            "title": self.title,
            "description": self.description,
            "status": self.status,
            "created_by": self.created_by,
            "created_at": format_timestamp(self.created_at),
            "tags": list(self.tags),
            "updated_at": format_timestamp(self.updated_at),
            "outcome": self.outcome,
            "closed_at": None if self.closed_at is None else format_timestamp(self.closed_at),
            "closed_by": self.closed_by,
            "cancel_reason": self.cancel_reason,
        }


@dataclass(frozen=True)
class Claim:
    """One agent's time-limited hold on one aspect of a task."""

    task_id: str
    agent: str
    aspect: str
    claimed_at: datetime
    expires_at: datetime

    def is_live(self, now: datetime) -> bool:
        """True while the claim has not expired; a claim expiring exactly at ``now`` is dead."""
        return self.expires_at > now

    def to_dict(self) -> dict[str, Any]:
        """The claim shape inside ``lithos_task_status``."""
        return {
            "agent": self.agent,
            "aspect": self.aspect,
            "claimed_at": format_timestamp(self.claimed_at),
            "expires_at": format_timestamp(self.expires_at),
        }


@dataclass(frozen=True)
class Finding:
    """A result an agent reported on a task, optionally pointing at a knowledge item."""

    id: str
    task_id: str
    agent: str
    summary: str
    knowledge_id: str | None
    created_at: datetime

    def to_dict(self) -> dict[str, Any]:
        """The ``lithos_finding_list`` item shape."""
        return {
            "id": self.id,
            "task_id": self.task_id,
            "agent": self.agent,
            "summary": self.summary,
            "knowledge_id": self.knowledge_id,
            "created_at": format_timestamp(self.created_at),
        }


@dataclass(frozen=True)
class TaskFeedback:
    """Retrieval feedback given when a task was completed; ``None`` lists mean no feedback."""

    task_id: str
    agent: str
    cited_nodes: tuple[str, ...] | None
    misleading_nodes: tuple[str, ...] | None
    receipt_id: str | None
    created_at: datetime

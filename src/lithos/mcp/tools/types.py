"""Argument types and tool annotations shared by the tool groups; FastMCP validates arguments
from the handlers' signatures and publishes each Field description in the input schema."""

from __future__ import annotations

from typing import Annotated

from mcp.types import ToolAnnotations
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from lithos.domain.metadata import NoteType
from lithos.domain.scope import Scope
from lithos.domain.timestamps import format_timestamp, parse_timestamp
from lithos.errors import InvalidInput


def _iso_time(value: str) -> str:
    """Accept any ISO 8601 date or time; normalise to UTC ``...Z`` so it compares as text."""
    try:
        return format_timestamp(parse_timestamp(value))
    except InvalidInput as exc:
        raise ValueError(exc.message) from exc


AgentId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        pattern=r"\S",
        description="your agent id, the same on every call (e.g. 'claude-code-research')",
    ),
]
NoteId = Annotated[str, Field(min_length=1, max_length=64, description="a note's id (a UUID)")]
TagList = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=200)]], Field(max_length=100)
]
IsoTime = Annotated[str, AfterValidator(_iso_time)]
TagFilter = Annotated[TagList | None, Field(description="tags; every one given must match")]
PathPrefix = Annotated[
    str | None,
    Field(max_length=500, description="only notes under this folder of the knowledge base"),
]

CallerAgent = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=200,
        description="your agent id: your own agent_private notes become visible",
    ),
]
CallerTask = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=200,
        description="your task id: notes scoped to that task become visible",
    ),
]
NoteTypes = Annotated[
    list[NoteType] | None, Field(max_length=6, description="only notes of any of these types")
]
Namespaces = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=200)]] | None,
    Field(max_length=50, description="only notes in any of these namespaces"),
]


class SummariesArg(BaseModel):
    """Summaries of a note, both optional."""

    model_config = ConfigDict(extra="forbid")
    short: str | None = Field(default=None, max_length=2000, description="one line")
    long: str | None = Field(default=None, max_length=20000, description="a paragraph or so")


def caller_scope(agent_id: str | None, task_id: str | None) -> Scope:
    """The visibility scope of a caller who gave these ids."""
    return Scope(agent_id=agent_id, task_id=task_id)


def tool_hints(
    *, read_only: bool = False, destructive: bool = False, idempotent: bool = False
) -> ToolAnnotations:
    """MCP tool hints. Lithos only touches its own knowledge base: never the open world."""
    return ToolAnnotations(
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


READ_ONLY = tool_hints(read_only=True, idempotent=True)

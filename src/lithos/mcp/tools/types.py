"""Argument types and tool annotations shared by the tool groups; FastMCP validates arguments
from the handlers' signatures and publishes each Field description in the input schema."""

from __future__ import annotations

from typing import Annotated

from mcp.types import ToolAnnotations
from pydantic import AfterValidator, Field

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

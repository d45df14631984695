"""Argument types shared by the tool groups; FastMCP validates them from the signatures."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, Field


def _iso_time(value: str) -> str:
    """Accept any ISO 8601 date or time; normalise to UTC ``...Z`` so it compares as text."""
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"not an ISO 8601 date/time: {value!r}") from exc
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


AgentId = Annotated[str, Field(min_length=1, max_length=200, pattern=r"\S")]
NoteId = Annotated[str, Field(min_length=1, max_length=64)]
TagList = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=200)]], Field(max_length=100)
]
IsoTime = Annotated[str, AfterValidator(_iso_time)]

"""Argument types shared by the tool groups; FastMCP validates them from the signatures."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from lithos.domain.timestamps import format_timestamp, parse_timestamp
from lithos.errors import InvalidInput


def _iso_time(value: str) -> str:
    """Accept any ISO 8601 date or time; normalise to UTC ``...Z`` so it compares as text."""
    try:
        return format_timestamp(parse_timestamp(value))
    except InvalidInput as exc:
        raise ValueError(exc.message) from exc


AgentId = Annotated[str, Field(min_length=1, max_length=200, pattern=r"\S")]
NoteId = Annotated[str, Field(min_length=1, max_length=64)]
TagList = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=200)]], Field(max_length=100)
]
IsoTime = Annotated[str, AfterValidator(_iso_time)]

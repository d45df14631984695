"""Timestamps: aware UTC datetimes in memory, one fixed-width ISO 8601 string on disk and on the
wire (``2026-11-23T07:40:00.123456Z``), so that string order is time order and SQL and
frontmatter values compare as text."""

from __future__ import annotations

from datetime import UTC, datetime

from lithos.errors import InvalidInput


def utc_now() -> datetime:
    """The current time as an aware UTC datetime (the default clock)."""
    return datetime.now(UTC)


def format_timestamp(moment: datetime) -> str:
    """Render ``moment`` as fixed-width UTC ISO 8601 with microseconds and ``Z``.

    A naive ``moment`` is taken to be UTC already.
    """
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.isoformat(timespec="microseconds") + "Z"


def parse_timestamp(text: str, field: str = "timestamp") -> datetime:
    """Parse an ISO 8601 date or datetime into an aware UTC datetime.

    Accepts ``Z`` or numeric offsets; a value without an offset is taken as UTC.
    Raises :class:`InvalidInput` naming ``field`` when ``text`` is not ISO 8601.
    """
    try:
        moment = datetime.fromisoformat(text.strip())
    except (ValueError, AttributeError) as error:
        raise InvalidInput(
            f"{field} must be an ISO 8601 datetime such as 2026-01-31T09:00:00Z, got {text!r}"
        ) from error
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def now_iso() -> str:
    """The current time, formatted."""
    return format_timestamp(utc_now())

"""Note metadata: the frontmatter fields the cognitive retrieval layer reads (LCMA-DESIGN 4.2).

Every field has a default, so a note written before these fields existed reads as an active,
shared observation in its folder's namespace. A default is never written into a file unless
someone set it: :class:`NoteMetadata` remembers which keys a file or a writer declared.

A value in a file that does not validate (a person's typo) is not lost: the parser leaves the
raw key and value to the note's unknown keys, which are written back verbatim, and the field
reads as its default, except ``access_scope``, which fails closed to ``agent_private``.
Pure values and rules, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, date, datetime
from typing import Any, Literal, get_args

from lithos.domain.timestamps import format_timestamp, parse_timestamp
from lithos.errors import InvalidInput

NoteType = Literal[
    "observation", "agent_finding", "summary", "concept", "task_record", "hypothesis"
]
AccessScope = Literal["shared", "project", "task", "agent_private"]
NoteStatus = Literal["active", "archived", "quarantined"]

NOTE_TYPES: tuple[str, ...] = get_args(NoteType)
ACCESS_SCOPES: tuple[str, ...] = get_args(AccessScope)
NOTE_STATUSES: tuple[str, ...] = get_args(NoteStatus)

ROOT_NAMESPACE = "default"
MAX_TEXT = 2000
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

# Frontmatter keys owned by this module, in the order they are written.
METADATA_KEYS = (
    "schema_version",
    "note_type",
    "namespace",
    "access_scope",
    "task_id",
    "status",
    "entities",
    "summaries",
    "source_url",
    "derived_from_ids",
    "expires_at",
)


@dataclass(frozen=True)
class Summaries:
    short: str | None = None
    long: str | None = None

    def as_dict(self) -> dict[str, str]:
        return {k: v for k, v in (("short", self.short), ("long", self.long)) if v is not None}


@dataclass(frozen=True)
class NoteMetadata:
    """The LCMA metadata of one note. ``namespace`` None means "the note's folder"."""

    note_type: NoteType = "observation"
    namespace: str | None = None
    access_scope: AccessScope = "shared"
    task_id: str | None = None
    status: NoteStatus = "active"
    schema_version: int = 1
    entities: tuple[str, ...] = ()
    summaries: Summaries = Summaries()
    source_url: str | None = None
    derived_from_ids: tuple[str, ...] = ()
    expires_at: str | None = None
    # Keys present in the file or set by a writer: written back even when equal to the default.
    declared: frozenset[str] = field(default=frozenset(), compare=False)

    def namespace_for(self, path: str) -> str:
        """The effective namespace of a note stored at ``path``."""
        return self.namespace or default_namespace(path)


@dataclass(frozen=True)
class MetadataChange:
    """Fields a writer asked to set; ``None`` means "not given". An empty string clears an
    optional text field (``namespace`` then follows the folder again); an empty list clears
    a list."""

    note_type: str | None = None
    namespace: str | None = None
    access_scope: str | None = None
    task_id: str | None = None
    status: str | None = None
    schema_version: int | None = None
    entities: list[str] | None = None
    summaries: Mapping[str, str | None] | None = None
    source_url: str | None = None
    derived_from_ids: list[str] | None = None
    expires_at: str | None = None


def default_namespace(path: str) -> str:
    """A note's folder path ("procedures/ops"), or ``default`` for a note at the root."""
    folder = path.rpartition("/")[0]
    return folder or ROOT_NAMESPACE


def parse_metadata(raw: Mapping[str, Any]) -> tuple[NoteMetadata, dict[str, Any]]:
    """Read the metadata keys of a frontmatter mapping.

    Returns the metadata and the keys whose values did not validate, raw, for the caller to
    keep with the note's unknown keys. Never raises.
    """
    values: dict[str, Any] = {}
    rejected: dict[str, Any] = {}
    for key in METADATA_KEYS:
        if key not in raw:
            continue
        try:
            values[key] = _PARSERS[key](raw[key])
        except (InvalidInput, ValueError, TypeError):
            rejected[key] = raw[key]
    if "access_scope" in rejected:
        values["access_scope"] = "agent_private"  # fail closed: a typo must not publish a note
    declared = frozenset(k for k in values if k not in rejected)
    return NoteMetadata(**values, declared=declared), rejected


def render_metadata(meta: NoteMetadata) -> dict[str, Any]:
    """The frontmatter keys to write: every declared key and every non-default value."""
    default = NoteMetadata()
    out: dict[str, Any] = {}
    for key in METADATA_KEYS:
        value = getattr(meta, key)
        if key not in meta.declared and value == getattr(default, key):
            continue
        if value is None:
            continue
        if isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, Summaries):
            value = value.as_dict()
        out[key] = value
    return out


def check_change(change: MetadataChange) -> None:
    """Raise InvalidInput naming the field for any given value that does not validate."""
    _parsed(change)


def _parsed(change: MetadataChange) -> dict[str, Any]:
    updates: dict[str, Any] = {}
    for item in fields(MetadataChange):
        given = getattr(change, item.name)
        if given is None:
            continue
        if given == "" and item.name in _CLEARABLE:
            updates[item.name] = None
        else:
            updates[item.name] = _PARSERS[item.name](given)
    return updates


def apply_change(meta: NoteMetadata, change: MetadataChange) -> NoteMetadata:
    """``meta`` with ``change`` applied and the changed keys declared.

    Raises InvalidInput naming the field for any value that does not validate, and for a
    ``task`` note left without a ``task_id``.
    """
    updates = _parsed(change)
    if not updates:
        return meta
    changed = replace(meta, **updates)
    declared = meta.declared | {k for k, v in updates.items() if v is not None}
    declared -= {k for k, v in updates.items() if v is None}
    changed = replace(changed, declared=declared)
    if changed.access_scope == "task" and not changed.task_id:
        raise InvalidInput("access_scope 'task' needs a task_id")
    return changed


def metadata_as_dict(meta: NoteMetadata, path: str) -> dict[str, Any]:
    """Every field with its effective value, for callers that read a note."""
    return {
        "note_type": meta.note_type,
        "namespace": meta.namespace_for(path),
        "access_scope": meta.access_scope,
        "task_id": meta.task_id,
        "status": meta.status,
        "schema_version": meta.schema_version,
        "entities": list(meta.entities),
        "summaries": meta.summaries.as_dict(),
        "source_url": meta.source_url,
        "derived_from_ids": list(meta.derived_from_ids),
        "expires_at": meta.expires_at,
    }


# -- one parser per key: the value as stored, or InvalidInput --------------------------------


def _choice(name: str, allowed: tuple[str, ...]) -> Any:
    def parse(value: Any) -> str:
        text = str(value).strip() if isinstance(value, str) else None
        if text not in allowed:
            raise InvalidInput(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
        return text

    return parse


def _text(name: str, limit: int = 200) -> Any:
    def parse(value: Any) -> str:
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise InvalidInput(f"{name} must be text; got {value!r}")
        text = str(value).strip()
        if not text or len(text) > limit or _CONTROL.search(text):
            raise InvalidInput(f"{name} must be 1-{limit} printable characters; got {value!r}")
        return text

    return parse


def _namespace(value: Any) -> str:
    text = _text("namespace")(value).strip("/")
    if not text or any(not part.strip() for part in text.split("/")):
        raise InvalidInput(f"namespace must be a path like 'project/lithos'; got {value!r}")
    return text


def _schema_version(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(f"schema_version must be a whole number >= 1; got {value!r}")
    return value


def _entities(value: Any) -> tuple[str, ...]:
    items = value if isinstance(value, list | tuple) else [value]
    parse = _text("entities item", MAX_TEXT)
    return tuple(dict.fromkeys(parse(item) for item in items))


def _summaries(value: Any) -> Summaries:
    if not isinstance(value, Mapping) or set(value) - {"short", "long"}:
        raise InvalidInput("summaries must be a mapping with 'short' and/or 'long'")
    parse = _text("summary", 20_000)
    return Summaries(
        short=None if value.get("short") is None else parse(value["short"]),
        long=None if value.get("long") is None else parse(value["long"]),
    )


def _url(value: Any) -> str:
    text = _text("source_url", MAX_TEXT)(value)
    if not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$", text):
        raise InvalidInput(f"source_url must be an absolute URL; got {value!r}")
    return text


def _note_ids(value: Any) -> tuple[str, ...]:
    items = value if isinstance(value, list | tuple) else [value]
    ids = []
    for item in items:
        text = str(item).strip().lower()
        if not _UUID.match(text):
            raise InvalidInput(f"derived_from_ids must hold note ids (UUIDs); got {item!r}")
        ids.append(text)
    return tuple(dict.fromkeys(ids))


def _timestamp(value: Any) -> str:
    if isinstance(value, datetime):
        return format_timestamp(value)
    if isinstance(value, date):  # YAML reads an unquoted 2026-01-31 as a date
        return format_timestamp(datetime(value.year, value.month, value.day, tzinfo=UTC))
    if not isinstance(value, str):
        raise InvalidInput(f"expires_at must be an ISO 8601 time; got {value!r}")
    return format_timestamp(parse_timestamp(value, "expires_at"))


_PARSERS: dict[str, Any] = {
    "note_type": _choice("note_type", NOTE_TYPES),
    "namespace": _namespace,
    "access_scope": _choice("access_scope", ACCESS_SCOPES),
    "task_id": _text("task_id"),
    "status": _choice("status", NOTE_STATUSES),
    "schema_version": _schema_version,
    "entities": _entities,
    "summaries": _summaries,
    "source_url": _url,
    "derived_from_ids": _note_ids,
    "expires_at": _timestamp,
}
_CLEARABLE = frozenset({"namespace", "task_id", "source_url", "expires_at"})

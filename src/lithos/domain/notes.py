"""Notes: the Markdown-with-frontmatter file format (spec 3.2), slugs (3.3) and text rules.

Pure functions and values, no I/O.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from lithos.domain.frontmatter import FrontmatterError, dump_frontmatter, load_frontmatter
from lithos.domain.metadata import (
    METADATA_KEYS,
    AccessScope,
    NoteMetadata,
    NoteStatus,
    NoteType,
    parse_metadata,
    render_metadata,
)
from lithos.domain.timestamps import format_timestamp, now_iso
from lithos.errors import InvalidInput

# Frontmatter keys Lithos owns, in the order it writes them (then the metadata keys of
# domain.metadata). Any other key a person adds is kept.
CORE_KEYS = (
    "id",
    "title",
    "created_at",
    "updated_at",
    "author",
    "contributors",
    "tags",
    "confidence",
    "aliases",
    "source",
    "supersedes",
)
KNOWN_KEYS = CORE_KEYS + METADATA_KEYS

FRONTMATTER_BLOCK = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@dataclass(frozen=True)
class Note:
    """One knowledge note as it lives in its file. ``path`` is relative to knowledge/."""

    id: str
    title: str
    content: str
    path: str
    author: str
    created_at: str
    updated_at: str
    contributors: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    confidence: float = 1.0
    aliases: tuple[str, ...] = ()
    source: str | None = None
    supersedes: str | None = None
    metadata: NoteMetadata = field(default_factory=NoteMetadata)
    extra: dict[str, Any] = field(default_factory=dict)

    def with_changes(self, **changes: Any) -> Note:
        return replace(self, **changes)

    @property
    def note_type(self) -> NoteType:
        return self.metadata.note_type

    @property
    def namespace(self) -> str:
        return self.metadata.namespace_for(self.path)

    @property
    def access_scope(self) -> AccessScope:
        return self.metadata.access_scope

    @property
    def task_id(self) -> str | None:
        return self.metadata.task_id

    @property
    def status(self) -> NoteStatus:
        return self.metadata.status


def new_id() -> str:
    return str(uuid.uuid4())


def is_valid_id(value: str) -> bool:
    return bool(_UUID.match(value))


def require_valid_id(value: str) -> str:
    """Return the id lower-cased, or raise InvalidInput for anything that is not a UUID."""
    normalised = value.strip().lower()
    if not is_valid_id(normalised):
        raise InvalidInput(f"malformed id {value!r}: expected a UUID")
    return normalised


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def version_of(file_hash: str) -> str:
    """The version agents see: a short prefix of the file's content hash."""
    return file_hash[:16]


def slugify(title: str, max_length: int = 80) -> str:
    """URL-safe, lower-case, hyphenated; never empty (falls back to ``note``)."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_title.lower()).strip("-")
    slug = slug[:max_length].rstrip("-")
    return slug or "note"


# Characters Obsidian refuses in a note name or that would break a [[link]] to it (# ^ [ ] |),
# and those Windows or macOS refuse in a file name.
_UNSAFE_IN_NAME = re.compile(r'[\x00-\x1f\x7f*"\\/<>:|?#^\[\]]+')
_WINDOWS_RESERVED = re.compile(r"^(con|prn|aux|nul|com[1-9]|lpt[1-9])$", re.IGNORECASE)


def title_file_stem(title: str, max_bytes: int = 200) -> str:
    """The title as a file name (without ``.md``), so Obsidian shows the title and resolves
    ``[[Title]]`` to the file. Characters no file name or link may hold become spaces; the
    name is cut at a word boundary to fit ``max_bytes`` of UTF-8; never empty."""
    name = _UNSAFE_IN_NAME.sub(" ", unicodedata.normalize("NFC", title))
    name = re.sub(r"\s+", " ", name).strip().lstrip(". ")
    if len(name.encode()) > max_bytes:
        cut = name.encode()[:max_bytes].decode("utf-8", "ignore")
        name = cut.rsplit(" ", 1)[0] if " " in cut else cut
    name = name.rstrip(". ")
    if _WINDOWS_RESERVED.match(name):
        name += "_"
    return name or "Untitled"


def split_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """Split a file into (frontmatter mapping, body). No frontmatter gives ({}, text).

    Raises FrontmatterError when a frontmatter block exists but is not a YAML mapping or is
    beyond the parsing limits (size, nesting, aliases; see :mod:`lithos.domain.frontmatter`).
    """
    match = FRONTMATTER_BLOCK.match(text)
    if not match:
        return {}, text
    data = load_frontmatter(match.group(1)) or {}
    if not isinstance(data, dict):
        raise FrontmatterError("frontmatter must be a YAML mapping")
    return data, text[match.end() :]


def parse_note(text: str, path: str, fallback_time: str | None = None) -> Note:
    """Build a Note from a file's text. Missing keys get sensible values; ``id`` may be "".

    A file written by a person may lack every key: the title then comes from the first
    ``# heading`` or the filename, and the caller assigns an id.
    """
    return note_from_parts(split_frontmatter(text), path, fallback_time)


def note_id_of(meta: dict[str, Any]) -> str:
    """The id a frontmatter mapping gives its note, as :func:`parse_note` reads it ("" for
    none)."""
    return _text(meta.get("id")).lower()


def note_from_parts(
    parts: tuple[dict[str, Any], str], path: str, fallback_time: str | None = None
) -> Note:
    """:func:`parse_note` of a text already split by :func:`split_frontmatter`."""
    meta, body = parts
    stamp = fallback_time or now_iso()
    title = _text(meta.get("title")) or _heading(body) or _stem(path)
    metadata, rejected = parse_metadata(meta)
    extra = {k: v for k, v in meta.items() if k not in KNOWN_KEYS or k in rejected}
    return Note(
        id=note_id_of(meta),
        title=title,
        content=body.lstrip("\n"),
        path=path,
        author=_text(meta.get("author")) or "unknown",
        created_at=_time(meta.get("created_at")) or stamp,
        updated_at=_time(meta.get("updated_at")) or _time(meta.get("created_at")) or stamp,
        contributors=_strings(meta.get("contributors")),
        tags=_strings(meta.get("tags")),
        confidence=_confidence(meta.get("confidence")),
        aliases=_strings(meta.get("aliases")),
        source=_text(meta.get("source")) or None,
        supersedes=_text(meta.get("supersedes")) or None,
        metadata=metadata,
        extra=extra,
    )


def render_note(note: Note) -> str:
    """The file text of a note: YAML frontmatter then the Markdown body."""
    header = dump_frontmatter(frontmatter_of(note))
    body = note.content if note.content.endswith("\n") else note.content + "\n"
    return f"---\n{header}---\n\n{body}"


def frontmatter_of(note: Note) -> dict[str, Any]:
    """The frontmatter mapping Lithos writes for a note, in its own key order."""
    meta: dict[str, Any] = {
        "id": note.id,
        "title": note.title,
        "created_at": note.created_at,
        "updated_at": note.updated_at,
        "author": note.author,
    }
    if note.contributors:
        meta["contributors"] = list(note.contributors)
    meta["tags"] = list(note.tags)
    meta["confidence"] = note.confidence
    if note.aliases:
        meta["aliases"] = list(note.aliases)
    if note.source:
        meta["source"] = note.source
    if note.supersedes:
        meta["supersedes"] = note.supersedes
    meta.update(render_metadata(note.metadata))
    meta.update(note.extra)
    return meta


def truncate(content: str, max_length: int) -> tuple[str, bool]:
    """Cut at the last paragraph, else sentence, else word boundary at or before max_length."""
    if len(content) <= max_length:
        return content, False
    window = content[:max_length]
    for pattern in (r"\n\s*\n", r"[.!?](?=\s)", r"\s"):
        ends = [
            m.end() if pattern != r"\n\s*\n" else m.start() for m in re.finditer(pattern, window)
        ]
        ends = [e for e in ends if e > 0]
        if ends:
            return window[: ends[-1]].rstrip(), True
    return window, True


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _strings(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    seen: dict[str, None] = {}
    for item in items:
        text = _text(item)
        if text:
            seen.setdefault(text, None)
    return tuple(seen)


def _time(value: Any) -> str:
    if isinstance(value, datetime):
        return format_timestamp(value)
    return _text(value)


def _confidence(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 1.0
    return min(1.0, max(0.0, number))


def _heading(body: str) -> str:
    match = re.search(r"^#\s+(.+?)\s*#*\s*$", body, re.MULTILINE)
    return match.group(1).strip() if match else ""


def _stem(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name[:-3] if name.endswith(".md") else name

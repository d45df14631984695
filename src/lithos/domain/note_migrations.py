"""Note schema versions: the named, ordered migrations of a note's frontmatter.

A note records the frontmatter schema it follows in ``schema_version`` (absent means 1). Each
:class:`NoteMigration` takes a note from the version before it to its ``to_version`` by naming
the frontmatter keys to set or remove; :func:`plan_note` chains the migrations a note needs and
renders the result with :func:`~lithos.domain.frontmatter_edit.edit_frontmatter`, so every line
of the file the migrations do not change (unknown keys, comments, quoting, key order, the body)
stays exactly as written. Migrations are code, registered here in order, like the SQLite
migrations of the stores: the same code runs on every machine and is tested. Whether a note
was migrated is recorded in the note itself (its ``schema_version``), so it travels with the
file.

Pure values and rules, no I/O.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lithos.domain.frontmatter_edit import REMOVE, edit_frontmatter
from lithos.domain.notes import FRONTMATTER_BLOCK, KNOWN_KEYS, split_frontmatter
from lithos.errors import InvalidInput

Changes = dict[str, Any]  # frontmatter key -> new value, or REMOVE
_URL = re.compile(r"^https?://\S+$", re.IGNORECASE)


@dataclass(frozen=True)
class NoteMigration:
    """Takes a note's frontmatter to ``to_version``: ``change`` reads the frontmatter as the
    earlier migrations left it and returns the keys to set (or remove with ``REMOVE``)."""

    name: str
    to_version: int
    change: Callable[[Mapping[str, Any]], Changes]


def source_url_from_source(meta: Mapping[str, Any]) -> Changes:
    """Version 2 gives provenance its own key: ``source_url`` (an absolute URL, which the
    retrieval scouts and filters read) beside ``source`` (a task id or free text, as version 1
    had it). A version-1 ``source`` that is a web address, as Obsidian's Web Clipper writes it,
    is copied to ``source_url``; ``source`` itself is kept, since other tools read it."""
    source = meta.get("source")
    if "source_url" in meta or not isinstance(source, str) or not _URL.match(source.strip()):
        return {}
    return {"source_url": source.strip()}


# In order; a note at version v runs every migration whose to_version is above v.
NOTE_MIGRATIONS: tuple[NoteMigration, ...] = (
    NoteMigration("0002_source_url_from_source", 2, source_url_from_source),
)
CURRENT_SCHEMA_VERSION = NOTE_MIGRATIONS[-1].to_version


@dataclass(frozen=True)
class FieldChange:
    """One frontmatter key a migration changes; ``None`` for a key absent before or after."""

    key: str
    before: Any
    after: Any


@dataclass(frozen=True)
class MigrationPlan:
    """What migrating one note would change: its new text and the keys that differ."""

    path: str
    from_version: int
    to_version: int
    migrations: tuple[str, ...]
    fields: tuple[FieldChange, ...]
    text: str

    def diff(self, before: str) -> str:
        """A unified diff from ``before`` (the file's text when planned) to :attr:`text`."""
        lines = difflib.unified_diff(
            before.splitlines(keepends=True),
            self.text.splitlines(keepends=True),
            f"a/{self.path}",
            f"b/{self.path}",
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def schema_version(meta: Mapping[str, Any]) -> int:
    """The note's schema version: 1 when absent. Raises InvalidInput for a value that is not
    a whole number >= 1 (a person's typo is theirs to fix, not ours to overwrite)."""
    value = meta.get("schema_version", 1)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(f"schema_version must be a whole number >= 1; got {value!r}")
    return value


def plan_note(text: str, path: str) -> MigrationPlan | None:
    """The migration of the note ``text`` to :data:`CURRENT_SCHEMA_VERSION`, or None when it
    is at (or above) that version or has no frontmatter (then it has no schema to migrate and
    reads with current defaults). Raises FrontmatterError for frontmatter that is not a YAML
    mapping and InvalidInput for a malformed ``schema_version``."""
    if FRONTMATTER_BLOCK.match(text) is None:
        return None
    meta, _ = split_frontmatter(text)
    version = schema_version(meta)
    if version >= CURRENT_SCHEMA_VERSION:
        return None
    working = dict(meta)
    changes: Changes = {}
    names = []
    for migration in NOTE_MIGRATIONS:
        if migration.to_version <= version:
            continue
        step = migration.change(working)
        for key, value in step.items():
            if value is REMOVE:
                working.pop(key, None)
            else:
                working[key] = value
        changes.update(step)
        names.append(migration.name)
    changes["schema_version"] = CURRENT_SCHEMA_VERSION
    fields = tuple(
        FieldChange(key, meta.get(key), None if value is REMOVE else value)
        for key, value in changes.items()
    )
    return MigrationPlan(
        path=path,
        from_version=version,
        to_version=CURRENT_SCHEMA_VERSION,
        migrations=tuple(names),
        fields=fields,
        text=edit_frontmatter(text, changes, KNOWN_KEYS),
    )

"""``lithos migrate``: bring every note's frontmatter to the current schema version.

Plans are made from the files as they are (domain/note_migrations.py); applying writes each
changed file atomically, then brings the indexes in step with it. A note at the current
version, a file without frontmatter and a file Lithos cannot parse are never written.

Each run that changed files is also recorded, for people, in
``.lithos/migrations/registry.json``: the current version, the registered migrations and the
runs (time, files migrated). The record is informational: what decides whether a note needs a
migration is its own ``schema_version``, which travels with the file.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from lithos.domain.frontmatter import FrontmatterError
from lithos.domain.note_migrations import (
    CURRENT_SCHEMA_VERSION,
    NOTE_MIGRATIONS,
    MigrationPlan,
    plan_note,
)
from lithos.errors import InvalidInput
from lithos.store.markdown import KnowledgeFiles

log = logging.getLogger("lithos.migrate")


@dataclass(frozen=True)
class PlannedNote:
    """A note that needs migrating: its plan and the text it was planned from."""

    plan: MigrationPlan
    before: str


@dataclass
class MigrationRun:
    """What a dry run found or a run did. ``skipped`` lists files left alone, with why."""

    current_version: int
    files: int = 0
    notes: list[PlannedNote] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    applied: bool = False


class NoteMigrator:
    """Plans and applies note migrations over the knowledge files. ``on_written`` is told the
    paths written, to bring the indexes in step (the indexer's ``sync_paths``)."""

    def __init__(
        self,
        files: KnowledgeFiles,
        record_dir: Path,
        on_written: Callable[[list[str]], object] | None = None,
    ) -> None:
        self.files = files
        self.record_dir = record_dir
        self._on_written = on_written

    def plan(self) -> MigrationRun:
        """What migrating would change, touching nothing."""
        run = MigrationRun(CURRENT_SCHEMA_VERSION)
        for info in self.files.scan():
            run.files += 1
            planned = self._plan(info.path, run)
            if planned is not None:
                run.notes.append(planned)
        return run

    def apply(self) -> MigrationRun:
        """Migrate every note below the current version; idempotent (a second run finds
        nothing to do)."""
        run = self.plan()
        planned, run.notes = run.notes, []
        for note in planned:
            # The file may have changed since it was planned: plan it again from what is there.
            current = self._plan(note.plan.path, run)
            if current is None:
                continue
            self.files.replace(current.plan.path, current.plan.text)
            run.notes.append(current)
        written = [note.plan.path for note in run.notes]
        if written and self._on_written is not None:
            self._on_written(written)
        run.applied = True
        if written:
            self._record(len(written))
        return run

    def _plan(self, path: str, run: MigrationRun) -> PlannedNote | None:
        try:
            text = self.files.read_text(path)
            plan = plan_note(text, path)
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else str(exc)
            run.skipped.append((path, f"unreadable: {reason}"))
            return None
        except (FrontmatterError, InvalidInput) as exc:
            run.skipped.append((path, str(getattr(exc, "message", exc))))
            return None
        return PlannedNote(plan, text) if plan is not None else None

    def _record(self, migrated: int) -> None:
        path = self.record_dir / "registry.json"
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            runs = list(record.get("runs", []))
        except (OSError, ValueError, AttributeError):
            runs = []
        at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        runs.append({"at": at, "migrated": migrated, "to_version": CURRENT_SCHEMA_VERSION})
        record = {
            "current_version": CURRENT_SCHEMA_VERSION,
            "migrations": _registry(),
            "runs": runs,
        }
        self.record_dir.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        os.replace(temporary, path)


def _registry() -> Sequence[dict[str, object]]:
    versions = [1, *(m.to_version for m in NOTE_MIGRATIONS)]
    return [
        {"from": before, "to": m.to_version, "name": m.name}
        for before, m in zip(versions, NOTE_MIGRATIONS, strict=False)
    ]

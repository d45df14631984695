"""How ``lithos migrate`` shows a migration run: a diff per file for people, JSON for scripts."""

from __future__ import annotations

from typing import Any

from lithos.services.migrate import MigrationRun


def render_migration(run: MigrationRun) -> str:
    """Per note: ``path: v1 -> v2 (migration names)``, then (for a dry run) the unified diff of
    the file; then each skipped file with the reason."""
    out = []
    for note in run.notes:
        plan = note.plan
        names = ", ".join(plan.migrations) or "version stamp"
        out.append(f"{plan.path}: v{plan.from_version} -> v{plan.to_version} ({names})\n")
        if not run.applied:
            out.append(plan.diff(note.before))
    for path, reason in run.skipped:
        out.append(f"{path}: skipped: {reason}\n")
    return "".join(out)


def migration_report(run: MigrationRun) -> dict[str, Any]:
    """The run as JSON: what changed (or would) per file, field by field."""
    return {
        "current_version": run.current_version,
        "applied": run.applied,
        "files": run.files,
        "notes": [
            {
                "path": note.plan.path,
                "from_version": note.plan.from_version,
                "to_version": note.plan.to_version,
                "migrations": list(note.plan.migrations),
                "fields": [
                    {"key": f.key, "before": f.before, "after": f.after} for f in note.plan.fields
                ],
            }
            for note in run.notes
        ],
        "skipped": [{"path": path, "reason": reason} for path, reason in run.skipped],
    }

"""Human-readable output of `lithos stats` (scripts use `--json`)."""

from __future__ import annotations

from typing import Any


def render_stats(stats: dict[str, Any]) -> str:
    indexes = stats["indexes"]
    rows = [
        ("notes", stats["documents"]),
        ("chunks", stats["chunks"]),
        ("tags", stats["tags"]),
        ("agents", stats["agents"]),
        ("active tasks", stats["active_tasks"]),
        ("open claims", stats["open_claims"]),
        ("files not indexed", stats["problems"]),
        ("full-text index", f"{indexes['fulltext_documents']} notes"),
        ("vector index", f"{indexes['vector_documents']} notes"),
        ("embedded chunks", indexes["embedded_chunks"]),
        ("pending chunks", indexes["pending_chunks"]),
        ("embedding model", indexes["embedding_model"]),
    ]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)

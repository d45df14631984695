"""Who is asking, and which notes they may see (the visibility rule of every listing).

One rule, applied by every search mode, list, links and retrieve:

- ``quarantined`` notes are never found (they stay readable by id);
- ``agent_private`` notes are seen only by their author (``agent_id == author``);
- ``task`` notes are seen only by a caller who passes their ``task_id``;
- ``shared`` and ``project`` notes, ``active`` or ``archived``, are seen by everyone.

Visibility governs discovery, not access: Lithos has no authentication (an agent id is what the
caller says it is) and reading a note by id or path is not filtered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Scope:
    """The caller's identity for visibility: its agent id and the task it works on."""

    agent_id: str | None = None
    task_id: str | None = None


class Visible(Protocol):
    """Anything carrying the fields the rule reads: a Note, a CatalogEntry, a candidate."""

    @property
    def author(self) -> str: ...

    @property
    def access_scope(self) -> str: ...

    @property
    def task_id(self) -> str | None: ...

    @property
    def status(self) -> str: ...


def is_visible(item: Visible, scope: Scope) -> bool:
    """Whether ``item`` may appear in the results of a caller with ``scope``."""
    if item.status == "quarantined":
        return False
    if item.access_scope == "agent_private":
        return scope.agent_id is not None and item.author == scope.agent_id
    if item.access_scope == "task":
        return scope.task_id is not None and item.task_id == scope.task_id
    return True

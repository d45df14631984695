"""The filter every listing and search takes: note fields to match plus the caller's scope.

One value travels from the tool handler through the service to each store, so that every
mode applies the same filter inside its own query rather than trimming a short list after.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lithos.domain.scope import Scope


@dataclass(frozen=True)
class SearchFilter:
    """Notes must match every field given. ``tags`` must all be present; ``note_types`` and
    ``namespaces`` match any of theirs; ``since`` compares with ``updated_at``.

    ``scope`` applies the visibility rule of :mod:`lithos.domain.scope`; the default, an
    anonymous caller, sees shared and project notes. ``None`` turns the rule off: only for
    Lithos's own maintenance, never for an agent's call.
    """

    tags: tuple[str, ...] = ()
    author: str | None = None
    path_prefix: str | None = None
    since: str | None = None
    note_types: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    scope: Scope | None = field(default_factory=Scope)

    @property
    def needs_catalog(self) -> bool:
        """Whether a store that cannot match these fields itself needs the catalog's ids."""
        return bool(self.since or self.note_types or self.namespaces)

    @property
    def narrows(self) -> bool:
        """Whether any field other than ``scope`` is given."""
        return bool(self.tags or self.author or self.path_prefix or self.needs_catalog)


def clean_prefix(path_prefix: str | None) -> str | None:
    """A path prefix as the stores hold paths: forward slashes, no leading ``./`` or ``/``."""
    if path_prefix is None:
        return None
    cleaned = path_prefix.strip().replace("\\", "/")
    while cleaned.startswith(("./", "/")):
        cleaned = cleaned[1:] if cleaned.startswith("/") else cleaned[2:]
    return cleaned or None

"""The one error tree of Lithos.

Every failure a caller can see is a :class:`LithosError` with a stable snake_case ``code``.
The MCP layer turns it into ``{"status": "error", "code": ..., "message": ...}`` in one place.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class LithosError(Exception):
    """Base of every expected Lithos failure."""

    code = "internal_error"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def envelope(self) -> dict[str, Any]:
        body: dict[str, Any] = {"status": "error", "code": self.code, "message": self.message}
        if self.details:
            body["details"] = self.details
        return body


class InvalidInput(LithosError):
    code = "invalid_input"


class InvalidPath(InvalidInput):
    code = "invalid_path"


class ContentTooLarge(InvalidInput):
    code = "content_too_large"


class DocNotFound(LithosError):
    code = "doc_not_found"


class NoteUnreadable(LithosError):
    """The file exists but is not a note Lithos can read (broken or over-limit frontmatter,
    too large, not UTF-8); it is listed among the problems of ``lithos validate``."""

    code = "note_unreadable"


class EdgeNotFound(LithosError):
    code = "edge_not_found"


class VersionConflict(LithosError):
    code = "version_conflict"


class TaskNotFound(LithosError):
    code = "task_not_found"


class TaskNotOpen(LithosError):
    code = "task_not_open"


class ClaimFailed(LithosError):
    code = "claim_failed"


class ClaimNotFound(LithosError):
    code = "claim_not_found"


class AgentNotFound(LithosError):
    code = "agent_not_found"


class IndexLocked(LithosError):
    code = "index_locked"


class StoreCorrupt(LithosError):
    """A store on disk cannot be opened, read or written: its file is damaged.

    ``location`` (kept out of the envelope, which must not show paths outside the knowledge
    directory) is the file or directory that failed, so its owner can tell which store it is.
    """

    code = "store_corrupt"

    def __init__(self, message: str, location: Path, **details: Any) -> None:
        super().__init__(message, **details)
        self.location = location


class IndexCorrupt(StoreCorrupt):
    """The full-text index cannot be opened, read or committed; it is rebuilt from the files."""

    code = "index_corrupt"


class IndexUnavailable(LithosError):
    """A derived index is being rebuilt (or failed to rebuild) and cannot answer yet."""

    code = "index_unavailable"


class StateCorrupt(LithosError):
    """Authoritative state (``.lithos/``) is damaged. Lithos never replaces it by itself."""

    code = "state_corrupt"


class ConfigError(LithosError):
    code = "config_error"


class DataDirNotFound(LithosError):
    """A command that reads a knowledge base was pointed at a directory that does not exist."""

    code = "data_dir_not_found"


class UnknownTool(LithosError):
    """A client called a tool name the server does not have."""

    code = "unknown_tool"


class LcmaDisabled(LithosError):
    """Cognitive retrieval is switched off (``lcma.enabled: false``)."""

    code = "lcma_disabled"


class ReceiptNotFound(LithosError):
    code = "receipt_not_found"

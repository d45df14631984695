"""The wire shapes of tool results, published to clients as each tool's output schema.

FastMCP derives a tool's ``outputSchema`` from its return annotation; these TypedDicts keep it
a described object instead of an open ``{"type": "object"}``. Keys a result may leave out are
``NotRequired``. A failure is the error envelope (``is_error`` set), which clients do not
validate against these schemas.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from pydantic import ConfigDict, with_config

# pydantic needs the typing_extensions TypedDict on Python < 3.12 to read these.
from typing_extensions import TypedDict

from lithos.domain.metadata import AccessScope, NoteStatus, NoteType
from lithos.domain.retrieval import ScoutWeight

# Keys a service adds before they are described here still reach the client: FastMCP
# serialises a result through its return type, which would otherwise drop unknown keys.
OPEN = ConfigDict(extra="allow")

# -- knowledge ----------------------------------------------------------------------------


@with_config(OPEN)
class WriteResult(TypedDict):
    status: Literal["created", "updated"]
    id: str
    path: str
    version: str
    indexing: Literal["done", "pending"]
    warnings: NotRequired[list[str]]


@with_config(OPEN)
class BatchItemResult(TypedDict):
    index: int
    status: Literal["created", "updated", "error"]
    id: NotRequired[str]
    path: NotRequired[str]
    version: NotRequired[str]
    indexing: NotRequired[Literal["done", "pending"]]
    warnings: NotRequired[list[str]]
    code: NotRequired[str]
    message: NotRequired[str]


@with_config(OPEN)
class WriteBatchResult(TypedDict):
    results: list[BatchItemResult]
    created: int
    updated: int
    failed: int


@with_config(OPEN)
class NoteRef(TypedDict):
    id: str
    title: str
    path: str


@with_config(OPEN)
class LinkItem(TypedDict):
    target: str
    id: str | None
    title: str | None
    status: str


@with_config(OPEN)
class NoteSummaries(TypedDict):
    short: NotRequired[str]
    long: NotRequired[str]


@with_config(OPEN)
class NoteMetadataOut(TypedDict):
    """Every field with its effective value, plus any frontmatter keys people added."""

    author: str
    contributors: list[str]
    created_at: str
    updated_at: str
    tags: list[str]
    confidence: float
    aliases: list[str]
    source: str | None
    supersedes: str | None
    note_type: NoteType
    namespace: str
    access_scope: AccessScope
    task_id: str | None
    status: NoteStatus
    schema_version: int
    entities: list[str]
    summaries: NoteSummaries
    source_url: str | None
    derived_from_ids: list[str]
    expires_at: str | None


@with_config(OPEN)
class ReadResult(TypedDict):
    id: str
    title: str
    path: str
    content: str
    truncated: bool
    version: str
    metadata: NoteMetadataOut
    links: list[LinkItem]


@with_config(OPEN)
class DeleteResult(TypedDict):
    success: bool
    id: str
    path: str
    indexing: Literal["done", "pending"]
    warnings: NotRequired[list[str]]


@with_config(OPEN)
class NoteSummary(TypedDict):
    id: str
    title: str
    path: str
    updated: str | None
    tags: list[str]
    author: str | None
    note_type: str
    namespace: str
    access_scope: str
    status: str


@with_config(OPEN)
class ListResult(TypedDict):
    items: list[NoteSummary]
    total: int


# -- search and graph -----------------------------------------------------------------------


@with_config(OPEN)
class SearchHit(TypedDict):
    id: str
    title: str
    path: str
    snippet: str
    score: NotRequired[float]
    similarity: NotRequired[float]
    fulltext_rank: NotRequired[int | None]
    semantic_rank: NotRequired[int | None]


@with_config(OPEN)
class SearchResult(TypedDict):
    results: list[SearchHit]
    mode: Literal["fulltext", "semantic", "hybrid"]
    pending_chunks: NotRequired[int]
    limit_capped_to: NotRequired[int]
    degraded: NotRequired[bool]
    warnings: NotRequired[list[str]]


@with_config(OPEN)
class LinksResult(TypedDict):
    id: str
    outgoing: NotRequired[list[NoteRef]]
    incoming: NotRequired[list[NoteRef]]


@with_config(OPEN)
class TagsResult(TypedDict):
    tags: dict[str, int]


# -- agents ---------------------------------------------------------------------------------


@with_config(OPEN)
class AgentRegistered(TypedDict):
    success: bool
    created: bool


@with_config(OPEN)
class AgentInfo(TypedDict):
    id: str
    name: str | None
    type: str | None
    first_seen_at: str
    last_seen_at: str
    metadata: dict[str, Any]


@with_config(OPEN)
class AgentSummary(TypedDict):
    id: str
    name: str | None
    type: str | None
    last_seen_at: str


@with_config(OPEN)
class AgentList(TypedDict):
    agents: list[AgentSummary]


# -- coordination ---------------------------------------------------------------------------


@with_config(OPEN)
class TaskCreated(TypedDict):
    task_id: str


@with_config(OPEN)
class Done(TypedDict):
    success: bool
    message: NotRequired[str]


@with_config(OPEN)
class Claimed(TypedDict):
    success: bool
    expires_at: str


@with_config(OPEN)
class Renewed(TypedDict):
    success: bool
    new_expires_at: str


@with_config(OPEN)
class TaskItem(TypedDict):
    id: str
    title: str
    description: str | None
    status: str
    created_by: str
    created_at: str
    tags: list[str]
    updated_at: str
    outcome: str | None
    closed_at: str | None
    closed_by: str | None
    cancel_reason: str | None


@with_config(OPEN)
class TaskList(TypedDict):
    tasks: list[TaskItem]


@with_config(OPEN)
class ClaimItem(TypedDict):
    agent: str
    aspect: str
    claimed_at: str
    expires_at: str


@with_config(OPEN)
class TaskClaims(TypedDict):
    id: str
    title: str
    status: str
    claims: list[ClaimItem]


@with_config(OPEN)
class TaskStatusResult(TypedDict):
    tasks: list[TaskClaims]


@with_config(OPEN)
class FindingPosted(TypedDict):
    finding_id: str


@with_config(OPEN)
class FindingItem(TypedDict):
    id: str
    task_id: str
    agent: str
    summary: str
    knowledge_id: str | None
    created_at: str


@with_config(OPEN)
class FindingList(TypedDict):
    findings: list[FindingItem]


# -- system ---------------------------------------------------------------------------------


# A count is None while the store it comes from is failed or being rebuilt (see `stores`).


@with_config(OPEN)
class IndexCounts(TypedDict):
    catalog_documents: int | None
    fulltext_documents: int | None
    vector_documents: int | None
    embedded_chunks: int | None
    pending_chunks: int | None
    # Chunks found only in an embedding space being retired, until embedded in the active one.
    migrating_chunks: int | None
    pending_index_updates: int
    embedding_model: str
    embedding_space: str
    retiring_spaces: list[str]


@with_config(OPEN)
class RebuildProgress(TypedDict):
    done: int
    total: int


@with_config(OPEN)
class StoreState(TypedDict):
    state: Literal["ok", "rebuilding", "failed"]
    reason: NotRequired[str]
    moved_to: NotRequired[str]
    progress: NotRequired[RebuildProgress]


@with_config(OPEN)
class StatsResult(TypedDict):
    documents: int | None
    chunks: int | None
    agents: int
    active_tasks: int
    open_claims: int
    tags: int | None
    indexes: IndexCounts
    stores: dict[str, StoreState]
    problems: int | None


class FeedbackResult(TypedDict):
    receipt_id: str
    cited: list[str]
    ignored: list[str]
    misleading: list[str]
    quarantined: list[str]
    applied: bool
    edges_reinforced: list[str]
    edges_weakened: int
    scout_weights: list[ScoutWeight]


class Completed(TypedDict):
    success: bool
    feedback: NotRequired[FeedbackResult]

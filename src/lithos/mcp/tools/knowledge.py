"""Knowledge tools: lithos_write, lithos_read, lithos_delete, lithos_list."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, cast

from pydantic import Field

from lithos.domain.filters import SearchFilter
from lithos.mcp.envelope import scrub_paths
from lithos.mcp.registry import ToolRegistry
from lithos.mcp.tools import note_fields as fields
from lithos.mcp.tools.results import (
    BatchItemResult,
    DeleteResult,
    ListResult,
    ReadResult,
    WriteBatchResult,
    WriteResult,
)
from lithos.mcp.tools.types import (
    READ_ONLY,
    AgentId,
    CallerAgent,
    CallerTask,
    IsoTime,
    Namespaces,
    NoteId,
    NoteTypes,
    PathPrefix,
    TagFilter,
    caller_scope,
    tool_hints,
)
from lithos.services.knowledge import WriteOutcome
from lithos.store.catalog import ListQuery

if TYPE_CHECKING:
    from lithos.app import LithosApp

NotePath = Annotated[
    str | None,
    Field(
        max_length=500, description="path relative to the knowledge base, e.g. 'python/asyncio.md'"
    ),
]


MAX_OFFSET = 2**63 - 1  # SQLite's largest integer
MAX_BATCH = 1000


def register(server: ToolRegistry, app: LithosApp) -> None:
    @server.tool(annotations=tool_hints(destructive=True))
    async def lithos_write(
        agent: AgentId,
        title: fields.Title = None,
        content: fields.Content = None,
        id: fields.TargetId = None,
        tags: fields.Tags = None,
        confidence: fields.Confidence = None,
        path: fields.Folder = None,
        source_task: fields.SourceTask = None,
        aliases: fields.Aliases = None,
        supersedes: fields.Supersedes = None,
        expected_version: fields.ExpectedVersion = None,
        note_type: fields.Kind = None,
        namespace: fields.Namespace = None,
        access_scope: fields.Scope = None,
        task_id: fields.TaskId = None,
        status: fields.Status = None,
        schema_version: fields.SchemaVersion = None,
        entities: fields.Entities = None,
        summaries: fields.Summaries = None,
        source_url: fields.SourceUrl = None,
        derived_from_ids: fields.DerivedFrom = None,
        expires_at: fields.ExpiresAt = None,
    ) -> WriteResult:
        """Create a note (omit `id`; `title` and `content` required) or update one (give `id`;
        only the fields you pass change). `path` is a subdirectory of the knowledge base.
        A title whose file name is taken gets a unique file name (see `warnings`); nothing is
        overwritten. Pass the `version` you read as `expected_version` to fail with
        `version_conflict` instead of overwriting someone else's newer change. Metadata
        fields (note_type, namespace, access_scope, task_id, status, entities, summaries,
        source_url, derived_from_ids, expires_at) are written only when given.
        Returns {status: created|updated, id, path, version, indexing}: `indexing` is
        `pending` when the note is saved but a search index update failed and is being retried
        (search may show the previous version for a while), else `done`."""
        note = fields.NoteFields.model_construct(
            title=title,
            content=content,
            id=id,
            tags=tags,
            confidence=confidence,
            path=path,
            source_task=source_task,
            aliases=aliases,
            supersedes=supersedes,
            expected_version=expected_version,
            note_type=note_type,
            namespace=namespace,
            access_scope=access_scope,
            task_id=task_id,
            status=status,
            schema_version=schema_version,
            entities=entities,
            summaries=summaries,
            source_url=source_url,
            derived_from_ids=derived_from_ids,
            expires_at=expires_at,
        )
        return cast(WriteResult, await app.knowledge.write(note.request(agent)))

    @server.tool(annotations=tool_hints(destructive=True))
    async def lithos_write_batch(
        agent: AgentId,
        notes: Annotated[
            list[fields.NoteFields],
            Field(
                min_length=1,
                max_length=MAX_BATCH,
                description=f"the notes to create or update (1 to {MAX_BATCH}), in order; "
                "each takes lithos_write's fields",
            ),
        ],
    ) -> WriteBatchResult:
        """Create or update many notes in one call (bulk ingest). Each item takes the fields
        of lithos_write and is checked whole and applied as lithos_write would; each gets its
        own outcome, in order: {index, status: created|updated, id, path, version, indexing}
        or {index, status: error, code, message}. A failed item changes nothing and does not
        stop the others; a malformed item (wrong type, unknown field) refuses the whole call.
        Every written note is searchable by full text when this returns; embedding follows
        in the background. Returns {results, created, updated, failed}."""
        outcomes = await app.knowledge.write_batch(agent, [n.request(agent) for n in notes])
        root = str(app.files.root)
        return {
            "results": [batch_item(i, outcome, root) for i, outcome in enumerate(outcomes)],
            "created": sum(o.status == "created" for o in outcomes),
            "updated": sum(o.status == "updated" for o in outcomes),
            "failed": sum(o.status == "error" for o in outcomes),
        }

    @server.tool(annotations=READ_ONLY)
    async def lithos_read(
        id: Annotated[NoteId | None, Field(description="the note's id; or give `path`")] = None,
        path: NotePath = None,
        max_length: Annotated[
            int | None, Field(ge=1, description="cut the content to about this many characters")
        ] = None,
    ) -> ReadResult:
        """Read a note by `id` or by `path` (relative to the knowledge base). `max_length`
        cuts the content at a paragraph or sentence boundary and sets `truncated`.
        Returns {id, title, path, content, truncated, version, metadata, links}."""
        return cast(
            ReadResult, await app.knowledge.read(note_id=id, path=path, max_length=max_length)
        )

    @server.tool(annotations=tool_hints(destructive=True, idempotent=True))
    async def lithos_delete(
        id: Annotated[NoteId, Field(description="id of the note to delete")],
        agent: Annotated[AgentId | None, Field(description="your agent id")] = None,
    ) -> DeleteResult:
        """Delete a note: its file and every index entry. Returns {success: true, id, path,
        indexing} (`indexing` as for lithos_write)."""
        return cast(DeleteResult, await app.knowledge.delete(id, agent))

    @server.tool(annotations=READ_ONLY)
    async def lithos_list(
        path_prefix: PathPrefix = None,
        tags: TagFilter = None,
        author: Annotated[AgentId | None, Field(description="only notes by this agent")] = None,
        since: Annotated[
            IsoTime | None, Field(description="ISO 8601: only notes updated at or after it")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=1000, description="at most this many notes")] = 50,
        offset: Annotated[
            int, Field(ge=0, le=MAX_OFFSET, description="skip this many notes (paging)")
        ] = 0,
        note_types: NoteTypes = None,
        namespaces: Namespaces = None,
        agent_id: CallerAgent = None,
        task_id: CallerTask = None,
    ) -> ListResult:
        """List notes the caller may see, newest update first. `tags` must all match;
        `since` is an ISO 8601 time (notes updated at or after it). Pass your `agent_id`
        (and `task_id`) to include your agent_private (and that task's) notes; quarantined
        notes are never listed. Returns {items: [{id, title, path, updated, tags, author,
        note_type, namespace, access_scope, status}], total}."""
        query = ListQuery(
            SearchFilter(
                path_prefix=path_prefix,
                tags=tuple(tags or ()),
                author=author,
                since=since,
                note_types=tuple(note_types or ()),
                namespaces=tuple(namespaces or ()),
                scope=caller_scope(agent_id, task_id),
            ),
            limit=limit,
            offset=offset,
        )
        return cast(ListResult, await app.knowledge.list(query))


def batch_item(index: int, outcome: WriteOutcome, root: str) -> BatchItemResult:
    """One item of a lithos_write_batch result; an error's message as the envelope shows it."""
    item: BatchItemResult = {"index": index, "status": outcome.status}
    if outcome.id is not None:
        item["id"] = outcome.id
    if outcome.path is not None:
        item["path"] = outcome.path
    if outcome.version is not None:
        item["version"] = outcome.version
    if outcome.indexing is not None:
        item["indexing"] = outcome.indexing
    if outcome.warnings:
        item["warnings"] = list(outcome.warnings)
    if outcome.code is not None:
        item["code"] = outcome.code
    if outcome.message is not None:
        item["message"] = scrub_paths(outcome.message, root)
    return item

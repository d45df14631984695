"""Knowledge tools: lithos_write, lithos_read, lithos_delete, lithos_list."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, cast

from fastmcp import FastMCP
from pydantic import Field

from lithos.domain.filters import SearchFilter
from lithos.domain.metadata import AccessScope, MetadataChange, NoteStatus, NoteType
from lithos.mcp.tools.results import DeleteResult, ListResult, ReadResult, WriteResult
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
    SummariesArg,
    TagFilter,
    TagList,
    caller_scope,
    tool_hints,
)
from lithos.services.knowledge import WriteRequest
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


def register(server: FastMCP, app: LithosApp) -> None:
    @server.tool(annotations=tool_hints(destructive=True))
    async def lithos_write(
        agent: AgentId,
        title: Annotated[
            str | None, Field(max_length=300, description="the note's title (required to create)")
        ] = None,
        content: Annotated[
            str | None,
            Field(description="Markdown body (required to create); replaces the old one"),
        ] = None,
        id: Annotated[
            NoteId | None, Field(description="id of the note to update; omit to create a note")
        ] = None,
        tags: Annotated[TagList | None, Field(description="tags; replace the old ones")] = None,
        confidence: Annotated[
            float | None, Field(ge=0.0, le=1.0, description="how sure you are, 0 to 1")
        ] = None,
        path: Annotated[
            str | None,
            Field(max_length=500, description="folder of the knowledge base to put the note in"),
        ] = None,
        source_task: Annotated[
            str | None, Field(max_length=500, description="id of the task this note came from")
        ] = None,
        aliases: Annotated[
            TagList | None, Field(description="other names [[wiki-links]] may use for the note")
        ] = None,
        supersedes: Annotated[
            NoteId | None, Field(description="id of a note this one replaces")
        ] = None,
        expected_version: Annotated[
            str | None,
            Field(max_length=64, description="the `version` you read; a newer note fails"),
        ] = None,
        note_type: Annotated[
            NoteType | None, Field(description="kind of note; default observation")
        ] = None,
        namespace: Annotated[
            str | None,
            Field(
                max_length=200,
                description="namespace like 'project/lithos'; default the note's folder "
                "('default' at the root); empty string: follow the folder again",
            ),
        ] = None,
        access_scope: Annotated[
            AccessScope | None,
            Field(
                description="who finds the note in search/list/links: shared (default), "
                "project, task (needs task_id), agent_private (its author only)"
            ),
        ] = None,
        task_id: Annotated[
            str | None,
            Field(max_length=200, description="the task a 'task'-scoped note belongs to"),
        ] = None,
        status: Annotated[
            NoteStatus | None,
            Field(
                description="active (default), archived (still found), quarantined (never "
                "found by search, still readable by id)"
            ),
        ] = None,
        schema_version: Annotated[
            int | None, Field(ge=1, le=1000, description="frontmatter schema version")
        ] = None,
        entities: Annotated[
            list[Annotated[str, Field(max_length=2000)]] | None,
            Field(max_length=200, description="named things the note is about"),
        ] = None,
        summaries: Annotated[
            SummariesArg | None, Field(description="{short, long} summaries of the note")
        ] = None,
        source_url: Annotated[
            str | None,
            Field(max_length=2000, description="absolute URL the knowledge came from"),
        ] = None,
        derived_from_ids: Annotated[
            list[NoteId] | None,
            Field(max_length=200, description="ids of the notes this one was derived from"),
        ] = None,
        expires_at: Annotated[
            str | None,
            Field(
                max_length=64,
                description="ISO 8601 time after which the note is stale; empty string clears",
            ),
        ] = None,
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
        request = WriteRequest(
            agent=agent,
            title=title,
            content=content,
            id=id,
            tags=tags,
            confidence=confidence,
            path=path,
            source=source_task,
            aliases=aliases,
            supersedes=supersedes,
            expected_version=expected_version,
            metadata=MetadataChange(
                note_type=note_type,
                namespace=namespace,
                access_scope=access_scope,
                task_id=task_id,
                status=status,
                schema_version=schema_version,
                entities=entities,
                summaries=None if summaries is None else summaries.model_dump(),
                source_url=source_url,
                derived_from_ids=derived_from_ids,
                expires_at=expires_at,
            ),
        )
        return cast(WriteResult, await app.knowledge.write(request))

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

"""Knowledge tools: lithos_write, lithos_read, lithos_delete, lithos_list."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from lithos.mcp.tools.types import AgentId, IsoTime, NoteId, TagList
from lithos.services.knowledge import WriteRequest
from lithos.store.catalog import ListQuery

if TYPE_CHECKING:
    from lithos.app import LithosApp


def register(server: FastMCP, app: LithosApp) -> None:
    @server.tool
    async def lithos_write(
        agent: AgentId,
        title: Annotated[str | None, Field(max_length=300)] = None,
        content: str | None = None,
        id: NoteId | None = None,
        tags: TagList | None = None,
        confidence: Annotated[float | None, Field(ge=0.0, le=1.0)] = None,
        path: Annotated[str | None, Field(max_length=500)] = None,
        source_task: Annotated[str | None, Field(max_length=500)] = None,
        aliases: TagList | None = None,
        supersedes: NoteId | None = None,
        expected_version: Annotated[str | None, Field(max_length=64)] = None,
    ) -> dict[str, Any]:
        """Create a note (omit `id`; `title` and `content` required) or update one (give `id`;
        only the fields you pass change). `path` is a subdirectory of the knowledge base.
        A title whose file name is taken gets a unique file name (see `warnings`); nothing is
        overwritten. Pass the `version` you read as `expected_version` to fail with
        `version_conflict` instead of overwriting someone else's newer change.
        Returns {status: created|updated, id, path, version}."""
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
        )
        return await app.knowledge.write(request)

    @server.tool
    async def lithos_read(
        id: NoteId | None = None,
        path: Annotated[str | None, Field(max_length=500)] = None,
        max_length: Annotated[int | None, Field(ge=1)] = None,
    ) -> dict[str, Any]:
        """Read a note by `id` or by `path` (relative to the knowledge base). `max_length`
        cuts the content at a paragraph or sentence boundary and sets `truncated`.
        Returns {id, title, path, content, truncated, version, metadata, links}."""
        return await app.knowledge.read(note_id=id, path=path, max_length=max_length)

    @server.tool
    async def lithos_delete(id: NoteId, agent: AgentId | None = None) -> dict[str, Any]:
        """Delete a note: its file and every index entry. Returns {success: true}."""
        return await app.knowledge.delete(id, agent)

    @server.tool
    async def lithos_list(
        path_prefix: Annotated[str | None, Field(max_length=500)] = None,
        tags: TagList | None = None,
        author: AgentId | None = None,
        since: IsoTime | None = None,
        limit: Annotated[int, Field(ge=1, le=1000)] = 50,
        offset: Annotated[int, Field(ge=0)] = 0,
    ) -> dict[str, Any]:
        """List notes, newest update first. `tags` must all match; `since` is an ISO 8601
        time (notes updated at or after it). Returns {items: [{id, title, path, updated,
        tags, author}], total}."""
        query = ListQuery(
            path_prefix=path_prefix,
            tags=tuple(tags or ()),
            author=author,
            since=since,
            limit=limit,
            offset=offset,
        )
        return await app.knowledge.list(query)

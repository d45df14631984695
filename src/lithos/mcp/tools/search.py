"""Search and graph tools: lithos_search, lithos_semantic, lithos_links, lithos_tags."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastmcp import FastMCP
from pydantic import Field

from lithos.domain.notes import require_valid_id
from lithos.mcp.tools.types import AgentId, NoteId, TagList

if TYPE_CHECKING:
    from lithos.app import LithosApp

Query = Annotated[str, Field(min_length=1, max_length=2000)]
Limit = Annotated[int, Field(ge=1, le=1000)]


def register(server: FastMCP, app: LithosApp) -> None:
    @server.tool
    async def lithos_search(
        query: Query,
        limit: Limit = 10,
        tags: TagList | None = None,
        author: AgentId | None = None,
        path_prefix: Annotated[str | None, Field(max_length=500)] = None,
        mode: Literal["fulltext", "semantic", "hybrid"] = "fulltext",
    ) -> dict[str, Any]:
        """Search notes. `fulltext` (default): BM25 with Tantivy query syntax — phrases
        "...", AND/OR/-, field queries like title:asyncio; unparseable queries fall back to
        plain terms. `semantic`: meaning-based over embedded chunks. `hybrid`: fusion of both,
        best for natural-language questions. Filters: `tags` (all must match), `author`,
        `path_prefix`. Returns {results: [{id, title, path, snippet, score}]}."""
        return await app.search.search(
            query, mode=mode, limit=limit, tags=tags or (), author=author, path_prefix=path_prefix
        )

    @server.tool
    async def lithos_semantic(
        query: Query,
        limit: Limit = 10,
        threshold: Annotated[float | None, Field(ge=0.0, le=1.0)] = None,
        tags: TagList | None = None,
    ) -> dict[str, Any]:
        """Semantic similarity search: notes whose best ~500-character chunk is closest in
        meaning to `query`, one result per note, similarity in [0, 1] at or above
        `threshold` (default from config, 0.3). Notes written moments ago may still be
        waiting to be embedded (`pending_chunks`). Returns {results: [{id, title, path,
        snippet, similarity}]}."""
        return await app.search.search(
            query, mode="semantic", limit=limit, threshold=threshold, tags=tags or ()
        )

    @server.tool
    async def lithos_links(
        id: NoteId,
        direction: Literal["outgoing", "incoming", "both"] = "both",
        depth: Annotated[int, Field(ge=1, le=3)] = 1,
    ) -> dict[str, Any]:
        """Notes linked from (`outgoing`) and to (`incoming`) a note by [[wiki-links]],
        up to `depth` hops (1-3), as flat de-duplicated lists of {id, title, path}."""
        note_id = require_valid_id(id)
        return await asyncio.to_thread(app.graph.links, note_id, direction, depth)

    @server.tool
    async def lithos_tags() -> dict[str, Any]:
        """Every tag with its number of notes. Returns {tags: {name: count}}."""
        return await asyncio.to_thread(app.search.tags)

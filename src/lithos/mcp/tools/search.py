"""Search and graph tools: lithos_search, lithos_semantic, lithos_links, lithos_tags."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Annotated, Literal, cast

from fastmcp import FastMCP
from pydantic import Field

from lithos.domain.notes import require_valid_id
from lithos.mcp.tools.results import LinksResult, SearchResult, TagsResult
from lithos.mcp.tools.types import READ_ONLY, AgentId, NoteId, PathPrefix, TagFilter

if TYPE_CHECKING:
    from lithos.app import LithosApp

Query = Annotated[str, Field(min_length=1, max_length=2000, description="what to look for")]
Limit = Annotated[int, Field(ge=1, le=1000, description="at most this many results")]


def register(server: FastMCP, app: LithosApp) -> None:
    @server.tool(annotations=READ_ONLY)
    async def lithos_search(
        query: Query,
        limit: Limit = 10,
        tags: TagFilter = None,
        author: Annotated[AgentId | None, Field(description="only notes by this agent")] = None,
        path_prefix: PathPrefix = None,
        mode: Annotated[
            Literal["fulltext", "semantic", "hybrid"],
            Field(description="fulltext (BM25), semantic (meaning) or hybrid (both fused)"),
        ] = "fulltext",
    ) -> SearchResult:
        """Search notes. `fulltext` (default): BM25 with Tantivy query syntax — phrases
        "...", AND/OR/-, field queries like title:asyncio; unparseable queries fall back to
        plain terms. `semantic`: meaning-based over embedded chunks. `hybrid`: fusion of both,
        best for natural-language questions. Filters: `tags` (all must match), `author`,
        `path_prefix`. Returns {results: [{id, title, path, snippet, score}]}."""
        result = await app.search.search(
            query, mode=mode, limit=limit, tags=tags or (), author=author, path_prefix=path_prefix
        )
        return cast(SearchResult, result)

    @server.tool(annotations=READ_ONLY)
    async def lithos_semantic(
        query: Query,
        limit: Limit = 10,
        threshold: Annotated[
            float | None,
            Field(ge=0.0, le=1.0, description="lowest similarity kept (default from config)"),
        ] = None,
        tags: TagFilter = None,
    ) -> SearchResult:
        """Semantic similarity search: notes whose best ~500-character chunk is closest in
        meaning to `query`, one result per note, similarity in [0, 1] at or above
        `threshold` (default from config, 0.3). Notes written moments ago may still be
        waiting to be embedded (`pending_chunks`). Returns {results: [{id, title, path,
        snippet, similarity}]}."""
        result = await app.search.search(
            query, mode="semantic", limit=limit, threshold=threshold, tags=tags or ()
        )
        return cast(SearchResult, result)

    @server.tool(annotations=READ_ONLY)
    async def lithos_links(
        id: Annotated[NoteId, Field(description="the note whose links to follow")],
        direction: Annotated[
            Literal["outgoing", "incoming", "both"],
            Field(description="links from the note, to it, or both"),
        ] = "both",
        depth: Annotated[int, Field(ge=1, le=3, description="hops to follow, 1 to 3")] = 1,
    ) -> LinksResult:
        """Notes linked from (`outgoing`) and to (`incoming`) a note by [[wiki-links]],
        up to `depth` hops (1-3), as flat de-duplicated lists of {id, title, path}."""
        note_id = require_valid_id(id)
        return cast(
            LinksResult, await asyncio.to_thread(app.graph.links, note_id, direction, depth)
        )

    @server.tool(annotations=READ_ONLY)
    async def lithos_tags() -> TagsResult:
        """Every tag with its number of notes. Returns {tags: {name: count}}."""
        return cast(TagsResult, await asyncio.to_thread(app.search.tags))

"""Search and graph tools: lithos_search, lithos_semantic, lithos_links, lithos_tags."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Annotated, Literal, cast

from pydantic import Field

from lithos.domain.filters import SearchFilter
from lithos.domain.metadata import NoteType
from lithos.domain.notes import require_valid_id
from lithos.domain.scope import Scope
from lithos.mcp.registry import ToolRegistry
from lithos.mcp.tools.results import LinksResult, SearchResult, TagsResult
from lithos.mcp.tools.types import (
    READ_ONLY,
    AgentId,
    CallerAgent,
    CallerTask,
    Namespaces,
    NoteId,
    NoteTypes,
    PathPrefix,
    TagFilter,
    caller_scope,
)

if TYPE_CHECKING:
    from lithos.app import LithosApp

Query = Annotated[str, Field(min_length=1, max_length=2000, description="what to look for")]
Limit = Annotated[
    int,
    Field(
        ge=1,
        le=1000,
        description="at most this many results; above search.max_results (default 50) the "
        "result is cut to it and says so in limit_capped_to",
    ),
]
Author = Annotated[AgentId | None, Field(description="only notes by this agent")]
Threshold = Annotated[
    float | None,
    Field(
        ge=0.0,
        le=1.0,
        description="lowest semantic similarity kept (semantic: default from config, 0.3; "
        "hybrid: default none)",
    ),
]


def register(server: ToolRegistry, app: LithosApp) -> None:
    @server.tool(annotations=READ_ONLY)
    async def lithos_search(
        query: Query,
        limit: Limit = 10,
        tags: TagFilter = None,
        author: Author = None,
        path_prefix: PathPrefix = None,
        mode: Annotated[
            Literal["fulltext", "semantic", "hybrid"],
            Field(description="fulltext (BM25), semantic (meaning) or hybrid (both fused)"),
        ] = "fulltext",
        threshold: Threshold = None,
        note_types: NoteTypes = None,
        namespaces: Namespaces = None,
        agent_id: CallerAgent = None,
        task_id: CallerTask = None,
    ) -> SearchResult:
        """Search the notes you may see. `fulltext` (default): BM25 with Tantivy query
        syntax — phrases "...", AND/OR/-, field queries like title:asyncio; unparseable
        queries fall back to plain terms. `semantic`: meaning-based over embedded chunks.
        `hybrid`: fusion of both, best for natural-language questions. Filters: `tags` (all
        must match), `author`, `path_prefix`, `note_types`, `namespaces`; pass your
        `agent_id`/`task_id` to find your agent_private and task notes.
        Returns {results: [{id, title, path, snippet, score}]}."""
        search_filter = _filter(
            tags, author, path_prefix, note_types, namespaces, caller_scope(agent_id, task_id)
        )
        result = await app.search.search(
            query, mode=mode, limit=limit, search_filter=search_filter, threshold=threshold
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
        author: Author = None,
        path_prefix: PathPrefix = None,
        note_types: NoteTypes = None,
        namespaces: Namespaces = None,
        agent_id: CallerAgent = None,
        task_id: CallerTask = None,
    ) -> SearchResult:
        """Semantic similarity search: notes whose best ~500-character chunk is closest in
        meaning to `query`, one result per note, similarity in [0, 1] at or above
        `threshold` (default from config, 0.3). Notes written moments ago may still be
        waiting to be embedded (`pending_chunks`). Returns {results: [{id, title, path,
        snippet, similarity}]}. Takes the same filters as lithos_search."""
        search_filter = _filter(
            tags, author, path_prefix, note_types, namespaces, caller_scope(agent_id, task_id)
        )
        result = await app.search.search(
            query, mode="semantic", limit=limit, threshold=threshold, search_filter=search_filter
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
        agent_id: CallerAgent = None,
        task_id: CallerTask = None,
    ) -> LinksResult:
        """Notes linked from (`outgoing`) and to (`incoming`) a note by [[wiki-links]],
        up to `depth` hops (1-3), as flat de-duplicated lists of {id, title, path}. Only
        notes you may see are listed or walked through."""
        note_id = require_valid_id(id)
        scope = caller_scope(agent_id, task_id)
        links = await asyncio.to_thread(app.graph.links, note_id, direction, depth, scope)
        return cast(LinksResult, links)

    @server.tool(annotations=READ_ONLY)
    async def lithos_tags(agent_id: CallerAgent = None, task_id: CallerTask = None) -> TagsResult:
        """Every tag with its number of notes you may see (quarantined notes, others'
        agent_private notes and other tasks' notes are not counted). Returns {tags: {name:
        count}}."""
        scope = caller_scope(agent_id, task_id)
        return cast(TagsResult, await asyncio.to_thread(app.search.tags, scope))


def _filter(
    tags: list[str] | None,
    author: str | None,
    path_prefix: str | None,
    note_types: list[NoteType] | None,
    namespaces: list[str] | None,
    scope: Scope,
) -> SearchFilter:
    return SearchFilter(
        tags=tuple(tags or ()),
        author=author,
        path_prefix=path_prefix,
        note_types=tuple(note_types or ()),
        namespaces=tuple(namespaces or ()),
        scope=scope,
    )

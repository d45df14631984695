"""Search use cases: full-text (Tantivy BM25), semantic (chunk vectors) and hybrid (fusion).

Full-text never touches the embedding model. Semantic search embeds only the query; the model
is warmed in the background at start-up, so the first query does not pay for loading it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Literal

from lithos.domain.chunks import best_per_note
from lithos.domain.embedding import Embedder
from lithos.domain.filters import SearchFilter
from lithos.domain.fusion import convex, reciprocal_rank
from lithos.errors import InvalidInput
from lithos.store.catalog import Catalog
from lithos.store.fulltext import FullTextIndex
from lithos.store.vectors import VectorStore

Mode = Literal["fulltext", "semantic", "hybrid"]
CANDIDATES = 100  # how deep each retriever goes before hybrid fusion


class SearchService:
    def __init__(
        self,
        catalog: Catalog,
        fulltext: FullTextIndex,
        vectors: VectorStore,
        embedder: Embedder,
        default_threshold: float,
        max_results: int,
        fusion: str = "convex",
        hybrid_alpha: float = 0.5,
        rrf_k: int = 60,
    ) -> None:
        self.catalog = catalog
        self.fulltext = fulltext
        self.vectors = vectors
        self.embedder = embedder
        self.default_threshold = default_threshold
        self.max_results = max_results
        self.fusion = fusion
        self.hybrid_alpha = hybrid_alpha
        self.rrf_k = rrf_k

    async def search(
        self,
        query: str,
        mode: Mode = "fulltext",
        limit: int = 10,
        tags: Sequence[str] = (),
        author: str | None = None,
        path_prefix: str | None = None,
        threshold: float | None = None,
    ) -> dict[str, Any]:
        """Ranked notes for ``query``; raises InvalidInput for an empty query."""
        if not query or not query.strip():
            raise InvalidInput("query must not be empty")
        limit = max(1, min(limit, self.max_results))
        if mode == "fulltext":
            hits = await asyncio.to_thread(
                self.fulltext_hits, query, limit, tags, author, path_prefix
            )
        elif mode == "semantic":
            hits = await asyncio.to_thread(
                self.semantic_hits, query, limit, threshold, tags, author, path_prefix
            )
        else:
            hits = await asyncio.to_thread(
                self.hybrid_hits, query, limit, tags, author, path_prefix
            )
        result: dict[str, Any] = {"results": hits, "mode": mode}
        if mode != "fulltext":
            pending = self.vectors.pending_count()
            if pending:
                result["pending_chunks"] = pending
        return result

    def fulltext_hits(
        self,
        query: str,
        limit: int,
        tags: Sequence[str] = (),
        author: str | None = None,
        path_prefix: str | None = None,
        syntax: bool = True,
        highlight: int | None = None,
    ) -> list[dict[str, Any]]:
        hits = self.fulltext.search(
            query,
            limit=limit,
            tags=tags,
            author=author,
            path_prefix=path_prefix,
            syntax=syntax,
            highlight=highlight,
        )
        return [
            {"id": h.id, "title": h.title, "path": h.path, "snippet": h.snippet, "score": h.score}
            for h in hits
        ]

    def semantic_hits(
        self,
        query: str,
        limit: int,
        threshold: float | None = None,
        tags: Sequence[str] = (),
        author: str | None = None,
        path_prefix: str | None = None,
    ) -> list[dict[str, Any]]:
        cutoff = self.default_threshold if threshold is None else threshold
        allowed = self._allowed(tags, author, path_prefix)
        vector = self.embedder.embed([query])[0]
        note_filter = None if allowed is None else allowed.__contains__
        chunk_hits = self.vectors.search(vector, limit * 4, note_filter)
        best = [hit for hit in best_per_note(chunk_hits, limit) if hit.similarity >= cutoff]
        entries = self.catalog.get_many([hit.note_id for hit in best])
        results = []
        for hit in best:
            entry = entries.get(hit.note_id)
            if entry is None:  # deleted since the vectors were read
                continue
            results.append(
                {
                    "id": entry.id,
                    "title": entry.title,
                    "path": entry.path,
                    "snippet": hit.text,
                    "similarity": round(float(hit.similarity), 4),
                }
            )
        return results

    def hybrid_hits(
        self,
        query: str,
        limit: int,
        tags: Sequence[str] = (),
        author: str | None = None,
        path_prefix: str | None = None,
    ) -> list[dict[str, Any]]:
        """Fusion of the full-text (query read as plain words) and semantic rankings."""
        text = self.fulltext_hits(
            query, CANDIDATES, tags, author, path_prefix, syntax=False, highlight=limit
        )
        semantic = self.semantic_hits(query, CANDIDATES, 0.0, tags, author, path_prefix)
        text_ranking = [(h["id"], h["score"]) for h in text]
        semantic_ranking = [(h["id"], h["similarity"]) for h in semantic]
        if self.fusion == "rrf":
            fused = reciprocal_rank(text_ranking, semantic_ranking, self.rrf_k)
        else:
            fused = convex(text_ranking, semantic_ranking, self.hybrid_alpha)
        text_rank = {h["id"]: rank for rank, h in enumerate(text, 1)}
        # Snippet: the highlighted text passage when it was built, else the best chunk.
        highlighted = {h["id"]: h for rank, h in enumerate(text, 1) if rank <= limit}
        by_id = {h["id"]: h for h in text} | {h["id"]: h for h in semantic} | highlighted
        semantic_rank = {h["id"]: rank for rank, h in enumerate(semantic, 1)}
        results = []
        for note_id, score in fused[:limit]:
            hit = by_id[note_id]
            result = {k: hit[k] for k in ("id", "title", "path", "snippet")}
            result["score"] = round(score, 6)
            result["fulltext_rank"] = text_rank.get(note_id)
            result["semantic_rank"] = semantic_rank.get(note_id)
            results.append(result)
        return results

    def _allowed(
        self, tags: Sequence[str], author: str | None, path_prefix: str | None
    ) -> set[str] | None:
        if not tags and not author and not path_prefix:
            return None
        return self.catalog.ids(
            SearchFilter(path_prefix=path_prefix, tags=tuple(tags), author=author, scope=None)
        )

    def tags(self) -> dict[str, Any]:
        return {"tags": self.catalog.tag_counts()}

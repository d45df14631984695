"""Search use cases: full-text (Tantivy BM25), semantic (chunk vectors) and hybrid (fusion).

Full-text never touches the embedding model. Semantic search embeds only the query; the model
is warmed in the background at start-up, so the first query does not pay for loading it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import Any, Literal

from lithos.domain.filters import SearchFilter, clean_prefix
from lithos.domain.fusion import convex, reciprocal_rank
from lithos.domain.scope import Scope
from lithos.domain.tags import filter_tags
from lithos.errors import IndexUnavailable, InvalidInput
from lithos.services.threads import LazyPool
from lithos.store.catalog import Catalog
from lithos.store.fulltext import FullTextIndex, TextRanking, id_key
from lithos.store.lifecycle import StoreKeeper
from lithos.store.vectors import RankedChunk, VectorStore

Mode = Literal["fulltext", "semantic", "hybrid"]
CANDIDATES = 100  # how deep each retriever goes before hybrid fusion
# A full-text search of at most this many results that waits on no other thread runs on the
# caller's event loop (see SearchService._held_hidden): about a millisecond of work, less
# than handing it to a worker thread and back, which holds the GIL as long in any case.
INLINE_RESULTS = 20
SEARCH_THREADS = 4  # full-text halves of hybrid searches running at once


class SearchService:
    def __init__(
        self,
        catalog: Catalog,
        fulltext: FullTextIndex,
        vectors: VectorStore,
        default_threshold: float,
        max_results: int,
        fusion: str = "convex",
        hybrid_alpha: float = 0.5,
        rrf_k: int = 60,
        stores: StoreKeeper | None = None,
    ) -> None:
        """``stores`` tells which indexes are being rebuilt (see :meth:`search`)."""
        self.catalog = catalog
        self.fulltext = fulltext
        self.vectors = vectors
        self.default_threshold = default_threshold
        self.max_results = max_results
        self.fusion = fusion
        self.hybrid_alpha = hybrid_alpha
        self.rrf_k = rrf_k
        self._pool = LazyPool(SEARCH_THREADS, "lithos-search")
        self._stores = stores

    async def search(
        self,
        query: str,
        mode: Mode = "fulltext",
        limit: int = 10,
        search_filter: SearchFilter | None = None,
        threshold: float | None = None,
    ) -> dict[str, Any]:
        """Ranked notes for ``query`` that pass ``search_filter`` (default: an anonymous
        caller's view), at most ``search.max_results`` of them; a larger ``limit`` is cut to
        it and the result says so in ``limit_capped_to``.

        ``threshold`` is the lowest semantic similarity kept: in semantic mode it defaults to
        ``search.semantic_threshold``; in hybrid mode it defaults to none and drops weaker
        semantic candidates before fusion. Raises InvalidInput for an empty query.

        While an index is being rebuilt (it holds only some notes): a mode that needs only
        that index raises :class:`~lithos.errors.IndexUnavailable` with its progress, and
        hybrid answers from the other retriever alone, marked ``degraded`` with a warning.
        """
        if not query or not query.strip():
            raise InvalidInput("query must not be empty")
        search_filter = _cleaned(search_filter or SearchFilter())
        capped = max(1, min(limit, self.max_results))
        # Every mode filters by the catalog (who may see a note): a half-filled one would
        # leak notes it does not know are private.
        self._require("catalog")
        missing: IndexUnavailable | None = None
        if mode == "fulltext":
            self._require("fulltext")
            held = self._held_hidden(query, capped, search_filter)
            if held is not None:
                hits = self.fulltext_hits(query, capped, search_filter, hidden=held)
            else:
                hits = await asyncio.to_thread(self.fulltext_hits, query, capped, search_filter)
        elif mode == "semantic":
            self._require("vectors")
            hits = await asyncio.to_thread(
                self.semantic_hits, query, capped, threshold, search_filter
            )
        else:
            missing = self._missing_retriever()
            hits = await asyncio.to_thread(
                self.hybrid_hits,
                query,
                capped,
                search_filter,
                threshold or 0.0,
                missing.details["index"] if missing else None,
            )
        result: dict[str, Any] = {"results": hits, "mode": mode}
        if missing is not None:
            result["degraded"] = True
            result["warnings"] = [f"{missing.message}; these results are from the other one only"]
        if capped < limit:
            result["limit_capped_to"] = capped
        if mode != "fulltext":
            pending = self.vectors.pending_count()
            if pending:
                result["pending_chunks"] = pending
        return result

    def fulltext_hits(
        self,
        query: str,
        limit: int,
        search_filter: SearchFilter | None = None,
        syntax: bool = True,
        highlight: int | None = None,
        hidden: AbstractSet[str] | None = None,
    ) -> list[dict[str, Any]]:
        """The ``limit`` best BM25 hits that pass ``search_filter``, filtered inside the
        query: tags, author and path by the index, the rest by ids from the catalog;
        ``hidden``: the scope's hidden ids, if read already."""
        ranking = self._text_ranking(query, limit, search_filter or SearchFilter(), syntax, hidden)
        hits = self.fulltext.hits(ranking, highlight=highlight)
        return [
            {"id": h.id, "title": h.title, "path": h.path, "snippet": h.snippet, "score": h.score}
            for h in hits
        ]

    def _text_ranking(
        self,
        query: str,
        limit: int,
        search_filter: SearchFilter,
        syntax: bool = True,
        hidden: AbstractSet[str] | None = None,
    ) -> TextRanking:
        """The ``limit`` best full-text documents passing ``search_filter``, unread (see
        :meth:`FullTextIndex.rank`); ``hidden``: the caller's hidden ids, if read already."""
        only_ids, exclude_ids = self._id_filter(search_filter, hidden)
        return self.fulltext.rank(
            query,
            limit=limit,
            tags=search_filter.tags,
            author=search_filter.author,
            path_prefix=search_filter.path_prefix,
            syntax=syntax,
            only_ids=only_ids,
            exclude_ids=exclude_ids,
        )

    def semantic_hits(
        self,
        query: str,
        limit: int,
        threshold: float | None = None,
        search_filter: SearchFilter | None = None,
    ) -> list[dict[str, Any]]:
        """The ``limit`` notes whose best chunk is most similar to ``query``, at or above
        ``threshold``, among the notes that pass ``search_filter``."""
        cutoff = self.default_threshold if threshold is None else threshold
        note_filter = self._note_filter(search_filter or SearchFilter())
        vectors = self.vectors.embed_query(query)
        best = self.vectors.search_notes(vectors, limit, note_filter, cutoff)
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
        search_filter: SearchFilter | None = None,
        threshold: float = 0.0,
        without: str | None = None,
    ) -> list[dict[str, Any]]:
        """Fusion of the full-text (query read as plain words) and semantic rankings;
        ``without`` (``fulltext`` or ``vectors``) leaves one retriever out.

        The two retrievers run at once: full-text on a search thread, the query embedding and
        the vector ranking here (ONNX Runtime, NumPy and Tantivy all release the GIL). Both
        rank without reading a stored document or a chunk text (notes are named by
        :func:`id_key`); only the ``limit`` fused notes are read: their full-text documents
        (with highlighted snippets), or for the notes full-text did not return, their best
        chunk and catalog entry."""
        search_filter = search_filter or SearchFilter()
        # Both halves leave out what the caller may not see: read it once for both.
        hidden = None
        if search_filter.scope is not None and not search_filter.narrows:
            hidden = self.catalog.hidden_ids(search_filter.scope)
        text_future = None
        if without != "fulltext":
            # The query read as plain words (syntax=False), CANDIDATES deep.
            text_future = self._pool.get().submit(
                self._text_ranking, query, CANDIDATES, search_filter, False, hidden
            )
        semantic: list[RankedChunk] = []
        try:
            if without != "vectors":
                note_filter = self._note_filter(search_filter, hidden)
                vectors = self.vectors.embed_query(query)
                # Exact similarities for the notes that can be shown; the tail only anchors
                # the normalisation and ranks notes full-text found too.
                semantic = self.vectors.rank_notes(
                    vectors, CANDIDATES, note_filter, threshold, exact=limit
                )
        finally:
            ranking = text_future.result() if text_future is not None else None
        text_scores = ranking.scores() if ranking is not None else []
        by_key = {id_key(chunk.note_id): chunk for chunk in semantic}
        semantic_scores = [(key, chunk.similarity) for key, chunk in by_key.items()]
        if self.fusion == "rrf":
            fused = reciprocal_rank(text_scores, semantic_scores, self.rrf_k)[:limit]
        else:
            fused = convex(text_scores, semantic_scores, self.hybrid_alpha)[:limit]
        text_rank = {key: rank for rank, (key, _) in enumerate(text_scores, 1)}
        semantic_rank = {key: rank for rank, key in enumerate(by_key, 1)}
        shown = {key for key, _ in fused}
        found = shown & text_rank.keys() if ranking is not None else set()
        # Notes only the semantic half found: their best chunk is the snippet.
        wanted = [by_key[key] for key in shown if key not in text_rank and key in by_key]
        # The shown full-text documents are read on a search thread while those chunks are
        # read; here when there are none (a hop to another thread costs more than it saves).
        read_future = None
        if ranking is not None and found and wanted:
            read_future = self._pool.get().submit(self.fulltext.hits, ranking, found)
        passages = {hit.note_id: hit.text for hit in self.vectors.texts(wanted)}
        entries = self.catalog.get_many(list(passages))
        if read_future is not None:
            read = read_future.result()
        else:
            read = self.fulltext.hits(ranking, found) if ranking is not None and found else []
        texts = {id_key(hit.id): hit for hit in read}
        results = []
        for key, score in fused:
            hit, chunk = texts.get(key), by_key.get(key)
            if hit is not None:
                note_id, title, path, snippet = hit.id, hit.title, hit.path, hit.snippet
            elif chunk is not None and chunk.note_id in entries:
                entry = entries[chunk.note_id]
                note_id, title, path, snippet = (
                    entry.id,
                    entry.title,
                    entry.path,
                    passages[entry.id],
                )
            else:  # deleted or changed since it was ranked
                continue
            results.append(
                {
                    "id": note_id,
                    "title": title,
                    "path": path,
                    "snippet": snippet,
                    "score": round(score, 6),
                    "fulltext_rank": text_rank.get(key),
                    "semantic_rank": semantic_rank.get(key),
                }
            )
        return results

    def _held_hidden(
        self, query: str, limit: int, search_filter: SearchFilter
    ) -> AbstractSet[str] | None:
        """The scope's hidden ids when a full-text search of ``query`` can run on the
        caller's thread without waiting on another one (the ids held in memory, no catalog
        query, no commit first, a short result), else None."""
        if limit > INLINE_RESULTS or search_filter.needs_catalog:
            return None
        if search_filter.scope is None:
            hidden: AbstractSet[str] | None = frozenset()
        else:
            hidden = self.catalog.hidden_ids_held(search_filter.scope)
        if hidden is None or not self.fulltext.never_commits(query):
            return None
        return hidden

    def _require(self, index: str) -> None:
        if self._stores is not None:
            self._stores.require(index)

    def _missing_retriever(self) -> IndexUnavailable | None:
        """Why one of hybrid's two indexes cannot answer, if one cannot; raises when
        neither can."""
        missing = []
        for index in ("fulltext", "vectors"):
            try:
                self._require(index)
            except IndexUnavailable as exc:
                missing.append(exc)
        if len(missing) == 2:
            raise missing[0]
        return missing[0] if missing else None

    def close(self) -> None:
        """Stop the search threads (after the running searches finish)."""
        self._pool.close()

    def tags(self, scope: Scope | None = None) -> dict[str, Any]:
        """Notes per tag, counting only the notes ``scope`` may see (default: anonymous)."""
        return {"tags": self.catalog.tag_counts(scope or Scope())}

    def _id_filter(
        self, search_filter: SearchFilter, hidden: AbstractSet[str] | None = None
    ) -> tuple[set[str] | None, Collection[str]]:
        """(ids a store must keep to, or None; ids it must leave out) for the parts of the
        filter a store cannot check from its own fields. The hidden set is usually small;
        ``hidden``, when given, is the scope's, read already."""
        if search_filter.needs_catalog:
            return self.catalog.ids(search_filter), ()
        if search_filter.scope is None:
            return None, ()
        if hidden is None:
            hidden = self.catalog.hidden_ids(search_filter.scope)
        return None, hidden

    def _note_filter(
        self, search_filter: SearchFilter, hidden: AbstractSet[str] | None = None
    ) -> Callable[[str], bool] | None:
        if search_filter.narrows:
            return self.catalog.ids(search_filter).__contains__
        if search_filter.scope is None:
            return None
        if hidden is None:
            hidden = self.catalog.hidden_ids(search_filter.scope)
        return (lambda note_id: note_id not in hidden) if hidden else None


def _cleaned(search_filter: SearchFilter) -> SearchFilter:
    """The filter with its path prefix normalised and ``#tag`` read as ``tag``."""
    prefix = clean_prefix(search_filter.path_prefix)
    tags = filter_tags(search_filter.tags)
    if prefix == search_filter.path_prefix and tags == tuple(search_filter.tags):
        return search_filter
    return replace(search_filter, path_prefix=prefix, tags=tags)

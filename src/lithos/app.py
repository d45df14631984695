"""The composition root: the one place that reads settings and builds every store and service.

``LithosApp(config)`` opens nothing; ``open()`` opens the stores and services, ``start()``
verifies the indexes against the files and starts the background workers, ``close()`` stops
and closes everything. The CLI and the MCP server both go through this class.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from lithos.config import LithosConfig
from lithos.domain.edges import DecayCurve, DecayPolicy, EdgeRules
from lithos.domain.embedding import Embedder
from lithos.domain.timestamps import utc_now
from lithos.runtime import release_free_memory
from lithos.services.agents import AgentRegistry
from lithos.services.conflicts import ConflictService
from lithos.services.coordination import CoordinationService
from lithos.services.edge_projection import FrontmatterEdges
from lithos.services.edges import EdgeService
from lithos.services.embedding import EmbeddingWorker
from lithos.services.graph import LinkGraph
from lithos.services.indexing import Indexer, Progress, ReconcileReport
from lithos.services.knowledge import KnowledgeService
from lithos.services.related import RelatedService
from lithos.services.search import SearchService
from lithos.services.watcher import KnowledgeWatcher
from lithos.store.catalog import Catalog
from lithos.store.coordination import COORDINATION_MIGRATIONS
from lithos.store.edges import SqliteEdgeStore
from lithos.store.embedder import create_embedder
from lithos.store.fulltext import FullTextIndex
from lithos.store.markdown import KnowledgeFiles
from lithos.store.sqlite import Database
from lithos.store.vectors import VectorStore

log = logging.getLogger("lithos")
FRONTMATTER_ALLOWANCE = 64_000


class LithosApp:
    def __init__(
        self,
        config: LithosConfig,
        embedder: Embedder | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        """``clock`` is the time LCMA's learned state sees (edge decay); tests set it."""
        self.config = config
        self._embedder = embedder
        self.clock = clock
        self._opened = False
        self.watcher: KnowledgeWatcher | None = None
        self.last_reconcile: ReconcileReport | None = None

    # -- lifecycle ----------------------------------------------------------------------

    def open(self, read_only: bool = False) -> LithosApp:
        """Open every store. ``read_only`` leaves the full-text writer to a running server
        (for CLI search, stats and validate); such an app must not be started."""
        cfg = self.config
        data = cfg.data_dir
        # A note file holds up to max_content_bytes of content plus its frontmatter.
        self.max_file_bytes = cfg.storage.max_content_bytes + FRONTMATTER_ALLOWANCE
        self.files = KnowledgeFiles(cfg.knowledge_dir)
        self.coordination_db = Database(
            data / ".lithos" / "coordination.db", COORDINATION_MIGRATIONS
        )
        self.catalog = Catalog(data / ".index" / "catalog.db")
        if read_only:
            self.fulltext = FullTextIndex(data / ".tantivy", read_only=True)
        else:
            self.fulltext, rebuilt = FullTextIndex.open_or_rebuild(data / ".tantivy")
            if rebuilt:
                log.warning("the full-text index was unreadable and is rebuilt from the files")
        self.embedder = self._embedder or create_embedder(
            cfg.search.embedding_model, threads=cfg.search.embedding_threads
        )
        self.vectors = VectorStore(
            data / ".vectors" / "vectors.db", self.embedder.model_id, self.embedder.dimension
        )
        self.embedding = EmbeddingWorker(
            self.vectors, self.embedder, batch_size=cfg.search.embedding_batch_size
        )
        self.graph = LinkGraph(self.catalog)
        self.edge_store = SqliteEdgeStore.open(data / ".lithos" / "edges.db", _edge_rules(cfg))
        self.edge_projection = FrontmatterEdges(
            self.edge_store,
            self.graph,
            self.catalog,
            self.files,
            self.clock,
            human_weight=cfg.lcma.edges.human_weight,
        )
        self.indexer = Indexer(
            self.files,
            self.catalog,
            self.fulltext,
            self.vectors,
            self.embedding.notify,
            chunk_size=cfg.search.chunk_size,
            chunk_max=cfg.search.chunk_max,
            max_file_bytes=self.max_file_bytes,
            listeners=[self.graph, self.edge_projection],
        )
        self.agents = AgentRegistry(self.coordination_db)
        self.coordination = CoordinationService(
            self.coordination_db,
            self.agents,
            default_ttl_minutes=cfg.coordination.claim_default_ttl_minutes,
            max_ttl_minutes=cfg.coordination.claim_max_ttl_minutes,
        )
        self.knowledge = KnowledgeService(
            self.files, self.indexer, self.graph, self.agents, cfg.storage.max_content_bytes
        )
        self.edges = EdgeService(
            self.edge_store,
            self.catalog,
            self.graph,
            clock=self.clock,
            link_strength=cfg.lcma.edges.link_strength,
        )
        self.conflicts = ConflictService(
            self.edge_store, self.knowledge, self.catalog, self.files, self.clock
        )
        self.related = RelatedService(self.graph, self.catalog, self.edge_store, self.clock)
        self.search = SearchService(
            self.catalog,
            self.fulltext,
            self.vectors,
            self.embedder,
            default_threshold=cfg.search.semantic_threshold,
            max_results=cfg.search.max_results,
            fusion=cfg.search.hybrid_fusion,
            hybrid_alpha=cfg.search.hybrid_alpha,
            rrf_k=cfg.search.rrf_k,
        )
        self._opened = True
        return self

    def start(
        self, watch: bool | None = None, embed: bool = True, progress: Progress | None = None
    ) -> ReconcileReport:
        """Verify and repair every index against the files, then start background work."""
        if not self._opened:
            self.open()
        self.last_reconcile = self.reconcile(
            clear=self.config.index.rebuild_on_start, progress=progress
        )
        release_free_memory()  # verifying every file leaves freed buffers behind
        self.edges.purge_removed(timedelta(days=self.config.lcma.edges.removed_grace_days))
        if embed:
            self.embedding.start()
        if watch if watch is not None else self.config.server.watch_files:
            self.watcher = KnowledgeWatcher(self.indexer, self.config.index.watch_debounce_ms)
            self.watcher.start()
        return self.last_reconcile

    def reconcile(self, clear: bool = False, progress: Progress | None = None) -> ReconcileReport:
        report = self.indexer.reconcile(clear=clear, progress=progress)
        log.info("index check: %s", report.as_dict())
        return report

    def close(self) -> None:
        if not self._opened:
            return
        if self.watcher is not None:
            self.watcher.stop()
        self.embedding.stop()
        self.fulltext.close()
        self.vectors.close()
        self.catalog.close()
        self.coordination_db.close()
        self.edge_store.close()
        self._opened = False

    # -- system -------------------------------------------------------------------------

    async def stats(self) -> dict[str, Any]:
        """Exact counts, plus per-index counts so drift would be visible."""
        counts = await self.coordination.counts()
        vectors, documents, tags, fulltext, problems = await asyncio.gather(
            asyncio.to_thread(self.vectors.counts),
            asyncio.to_thread(self.catalog.count),
            asyncio.to_thread(self.catalog.tag_counts),
            asyncio.to_thread(self.fulltext.count),
            asyncio.to_thread(self.catalog.problems),
        )
        return {
            "documents": documents,
            "chunks": vectors.chunks,
            "agents": await self.agents.count(),
            "active_tasks": counts["active_tasks"],
            "open_claims": counts["open_claims"],
            "tags": len(tags),
            "indexes": {
                "catalog_documents": documents,
                "fulltext_documents": fulltext,
                "vector_documents": vectors.notes,
                "embedded_chunks": vectors.embedded_chunks,
                "pending_chunks": vectors.pending_chunks,
                "embedding_model": self.embedder.model_id,
            },
            "problems": len(problems),
        }

    def health(self) -> dict[str, Any]:
        return {
            "status": "ok" if self._opened else "starting",
            "components": {
                "knowledge_dir": str(self.files.root) if self._opened else None,
                "watcher": "running" if self.watcher is not None else "off",
                "embedding_worker": "running"
                if self._opened and self.embedding.is_alive()
                else "off",
            },
        }


def _edge_rules(config: LithosConfig) -> EdgeRules:
    edges = config.lcma.edges
    curves: dict[str, DecayCurve] = {
        edge_type: DecayCurve(half_life, edges.floor[edge_type])
        for edge_type, half_life in edges.half_life_days.items()
    }
    return EdgeRules(
        initial_weight=edges.initial_weight,
        reinforce_step=edges.reinforce_step,
        decay=DecayPolicy(curves),
    )

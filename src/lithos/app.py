"""The composition root: the one place that reads settings and builds every store and service.

``LithosApp(config)`` opens nothing; ``open()`` opens the stores and services, ``start()``
verifies the indexes against the files and starts the background workers, ``close()`` stops
and closes everything. The CLI and the MCP server both go through this class.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from lithos.config import LithosConfig
from lithos.domain.edges import DecayCurve, DecayPolicy, EdgeRules
from lithos.domain.embedding import Embedder, EmbeddingSpace, space_of
from lithos.domain.memory import ConceptRules, ConsolidationRules, SalienceDecay
from lithos.domain.retrieval import (
    EXPLORATION_SCOUTS,
    GraphLearning,
    LearningRules,
    ScoutLearning,
)
from lithos.domain.timestamps import utc_now
from lithos.errors import LithosError
from lithos.lazy_numpy import after_import
from lithos.retrieval.analogy import FrameIndex
from lithos.retrieval.feedback import ReplayReport, TaskCompletion
from lithos.runtime import release_free_memory, set_blas_threads
from lithos.services.agents import AgentRegistry
from lithos.services.committer import FullTextCommitter
from lithos.services.concepts import ConceptService
from lithos.services.conflicts import ConflictService
from lithos.services.consolidation import ConsolidationService, ConsolidationWorker
from lithos.services.coordination import CoordinationService
from lithos.services.edge_projection import FrontmatterEdges
from lithos.services.edges import EdgeService
from lithos.services.embedding import EmbeddingWorker
from lithos.services.graph import LinkGraph
from lithos.services.importer import Importer
from lithos.services.indexing import Indexer, Progress, ReconcileReport
from lithos.services.knowledge import KnowledgeService
from lithos.services.migrate import NoteMigrator
from lithos.services.related import RelatedService
from lithos.services.repair import RepairWorker
from lithos.services.search import SearchService
from lithos.services.watcher import KnowledgeWatcher
from lithos.store.catalog import Catalog
from lithos.store.coordination import COORDINATION_MIGRATIONS
from lithos.store.edges import EDGE_MIGRATIONS, SqliteEdgeStore
from lithos.store.embedder import create_embedder, embedder_for
from lithos.store.fulltext import FullTextIndex, writer_lock_is_held
from lithos.store.identities import IDENTITY_MIGRATIONS, IdentityMap
from lithos.store.lifecycle import (
    Health,
    OnCorrupt,
    StoreKeeper,
    StoreStatus,
    open_authoritative,
    overall_health,
)
from lithos.store.markdown import KnowledgeFiles
from lithos.store.memory import MEMORY_MIGRATIONS, SqliteMemoryStore
from lithos.store.sqlite import Database, Migration
from lithos.store.stats import STATS_MIGRATIONS, StatsStore
from lithos.store.vectors import VectorStore

if TYPE_CHECKING:
    from lithos.retrieval.concepts import ConceptGateway
    from lithos.retrieval.service import RetrievalService

log = logging.getLogger("lithos")
FRONTMATTER_ALLOWANCE = 64_000
COORDINATION_HOLDS = "tasks, claims, findings and the agent registry"
EDGES_HOLDS = "the typed edges agents and people added, with their learned weights"
IDENTITIES_HOLDS = "the note ids of files that carry none (people's own files)"
STATS_HOLDS = "retrieval receipts, salience, feedback and task working memory"


@dataclass(frozen=True)
class StateFile:
    """An authoritative database, ``.lithos/<name>.db``: what it holds (said when it is
    damaged, since it cannot be rebuilt) and its migrations."""

    holds: str
    migrations: tuple[Migration, ...]
    # Its write-ahead log checkpointed by a timer thread instead of the commit that fills it
    # (Database's checkpoint_aside), for a file written on a request's path.
    checkpoint_aside: bool = False


# Every authoritative store, in one table: each is opened from here (LithosApp._open_state)
# and listed from here in /health and lithos_stats.
AUTHORITATIVE: dict[str, StateFile] = {
    "coordination": StateFile(COORDINATION_HOLDS, tuple(COORDINATION_MIGRATIONS)),
    "identities": StateFile(IDENTITIES_HOLDS, tuple(IDENTITY_MIGRATIONS)),
    "edges": StateFile(EDGES_HOLDS, tuple(EDGE_MIGRATIONS)),
    # Every lithos_retrieve writes a receipt (~29 pages of log), so SQLite's own checkpoint
    # fell in one retrieve of every ~35 and added 7-12 ms to it.
    "stats": StateFile(STATS_HOLDS, (*STATS_MIGRATIONS, *MEMORY_MIGRATIONS), checkpoint_aside=True),
}
DERIVED = frozenset({"catalog", "fulltext", "vectors"})
# The start-up index check: not started, running (beside serving, or in start()), ended.
IndexCheckState = Literal["off", "running", "done", "failed"]
T = TypeVar("T")


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
        self.repair: RepairWorker | None = None
        self.consolidation_worker: ConsolidationWorker | None = None
        self.last_reconcile: ReconcileReport | None = None
        self.feedback_replay: ReplayReport | None = None
        # The start-up index check when it runs beside serving (start(check_in_background)).
        self._checker: threading.Thread | None = None
        self._checked = threading.Event()
        self.index_check: IndexCheckState = "off"
        # Background work start(defer_background=True) left to begin_background(); None
        # once closed.
        self._deferred: list[Callable[[], None]] | None = []
        self._deferred_lock = threading.Lock()
        # The retrieval pipeline, built on first use (the retrieval property).
        self._retrieval: RetrievalService | None = None
        self._retrieval_lock = threading.Lock()

    # -- lifecycle ----------------------------------------------------------------------

    def open(self, read_only: bool = False) -> LithosApp:
        """Open every store. ``read_only`` leaves the full-text writer to a running server
        (for CLI search, stats and validate); such an app must not be started."""
        cfg = self.config
        data = cfg.data_dir
        # A note file holds up to max_content_bytes of content plus its frontmatter.
        self.max_file_bytes = cfg.storage.max_content_bytes + FRONTMATTER_ALLOWANCE
        self.files = KnowledgeFiles(cfg.knowledge_dir)
        # Derived like the indexes: what the MCP server built its tools' schemas from last time.
        self.tool_schemas_path = data / ".index" / "tool-schemas.json"
        # Process-wide, like the malloc settings; numpy (and its BLAS) loads on first use.
        after_import(partial(set_blas_threads, cfg.search.blas_threads))
        self.coordination_db = self._open_state("coordination")
        self.identities = IdentityMap(self._open_state("identities"))
        self.embedder = self._embedder or create_embedder(
            cfg.search.embedding_model,
            threads=cfg.search.embedding_threads,
            batch_size=cfg.search.embedding_batch_size,
        )
        # The indexer's lock: a broken store is swapped for an empty one only between updates.
        lock = threading.RLock()
        self.stores = StoreKeeper(data, lock)
        self._open_derived(read_only)
        self.embedding = EmbeddingWorker(
            self.vectors,
            self.embedder,
            batch_size=cfg.search.embedding_batch_size,
            migrate=cfg.search.space_migration == "lazy",
        )
        self.graph = LinkGraph(self.catalog)
        self.edge_store = SqliteEdgeStore(self._open_state("edges"), _edge_rules(cfg))
        self.edge_projection = FrontmatterEdges(
            self.edge_store,
            self.graph,
            self.catalog,
            self.files,
            self.clock,
            human_weight=cfg.lcma.edges.human_weight,
        )
        self.frames = FrameIndex(self.catalog, self.files)
        self.indexer = Indexer(
            self.files,
            self.catalog,
            self.fulltext,
            self.vectors,
            self.identities,
            self.embedding.notify,
            chunk_size=cfg.search.chunk_size,
            chunk_max=cfg.search.chunk_max,
            max_file_bytes=self.max_file_bytes,
            listeners=[self.graph, self.edge_projection, self.frames],
            lock=lock,
            adopt_files=cfg.storage.adopt_files,
        )
        self.committer = FullTextCommitter(
            self.indexer,
            interval=cfg.index.commit_interval_ms / 1000,
            max_pending=cfg.index.commit_max_pending,
        )
        self.migrator = NoteMigrator(
            self.files, data / ".lithos" / "migrations", on_written=self.indexer.sync_paths
        )
        self.agents = AgentRegistry(self.coordination_db)
        self.coordination = CoordinationService(
            self.coordination_db,
            self.agents,
            default_ttl_minutes=cfg.coordination.claim_default_ttl_minutes,
            max_ttl_minutes=cfg.coordination.claim_max_ttl_minutes,
        )
        self.knowledge = KnowledgeService(
            self.files,
            self.indexer,
            self.graph,
            self.agents,
            cfg.storage.max_content_bytes,
            file_names=cfg.storage.file_names,
            catalog_ready=partial(self.stores.require, "catalog"),
        )
        self.importer = Importer(self.files, self.indexer, self.max_file_bytes)
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
            default_threshold=cfg.search.semantic_threshold,
            max_results=cfg.search.max_results,
            fusion=cfg.search.hybrid_fusion,
            hybrid_alpha=cfg.search.hybrid_alpha,
            rrf_k=cfg.search.rrf_k,
            stores=self.stores,
        )
        stats_db = self._open_state("stats")
        self.stats_store = StatsStore(stats_db, _learning_rules(cfg), _scout_learning(cfg))
        self.memory_store = SqliteMemoryStore(stats_db)
        self.consolidation = ConsolidationService(
            self.memory_store,
            self.edge_store,
            self.catalog,
            _consolidation_rules(cfg),
            _salience_decay(cfg),
            salience_ceiling=cfg.lcma.salience_ceiling,
            clock=self.clock,
            decay_batch=cfg.lcma.consolidation.decay_batch,
        )
        self.concepts = ConceptService(
            self.memory_store,
            self.knowledge,
            self.catalog,
            self.graph,
            _concept_rules(cfg),
            folder=cfg.lcma.concepts.folder,
            clock=self.clock,
        )
        self._retrieval = None
        self._deferred = []
        self.feedback = TaskCompletion(
            self.coordination,
            self.stats_store,
            self.knowledge,
            self.edges,
            _graph_learning(cfg),
            clock=self.clock,
            on_complete=self._task_completed,
        )
        self._opened = True
        return self

    def _open_state(self, name: str) -> Database:
        """Open the authoritative database ``name`` of :data:`AUTHORITATIVE`; a damaged one
        stops start-up (:class:`~lithos.errors.StateCorrupt`)."""
        data, state = self.config.data_dir, AUTHORITATIVE[name]
        path = data / ".lithos" / f"{name}.db"
        return open_authoritative(
            path, state.migrations, state.holds, data, checkpoint_aside=state.checkpoint_aside
        )

    def _open_derived(self, read_only: bool) -> None:
        """Open the catalog, full-text and vector stores. Read-only (beside a running server,
        which owns their repair) a damaged one raises; otherwise it is moved aside and opened
        empty, to be refilled from the files by :meth:`start` or :meth:`reconcile`."""
        data = self.config.data_dir
        catalog_path = data / ".index" / "catalog.db"
        vectors_path = data / ".vectors" / "vectors.db"
        space = space_of(self.embedder)
        self._space_embedders: dict[EmbeddingSpace, Embedder] = {space: self.embedder}

        def vector_store(report: OnCorrupt | None = None, sole_writer: bool = False) -> VectorStore:
            return VectorStore(
                vectors_path,
                space.model_id,
                space.dimension,
                report,
                revision=space.revision,
                embedders=self._space_embedder,
                compact=self.config.search.compact_vectors,
                shortlist=self.config.search.vector_shortlist,
                sole_writer=sole_writer,
            )

        tantivy = data / ".tantivy"
        if read_only:
            self.catalog = Catalog(catalog_path)
            self.fulltext = FullTextIndex(tantivy, read_only=True)
            self.vectors = vector_store()
            return
        stores = self.stores
        self.catalog = stores.open(
            "catalog",
            catalog_path.parent,
            lambda report: Catalog(catalog_path, report, sole_writer=True),
        )
        self.fulltext = stores.open(
            "fulltext",
            tantivy,
            lambda report: FullTextIndex(tantivy, on_corrupt=report),
            in_use=lambda: writer_lock_is_held(tantivy),
        )
        # Opened after the full-text index, whose writer lock keeps other writers out.
        self.vectors = stores.open(
            "vectors",
            vectors_path.parent,
            lambda report: vector_store(report, sole_writer=True),
        )

    def _space_embedder(self, space: EmbeddingSpace) -> Embedder | None:
        """The embedder of ``space`` (the configured one, or a known model's), kept once made
        so its model loads once."""
        embedder = self._space_embedders.get(space)
        if embedder is None:
            embedder = embedder_for(space)
            if embedder is not None:
                self._space_embedders[space] = embedder
        return embedder

    @property
    def retrieval(self) -> RetrievalService:
        """The retrieval pipeline (lithos_retrieve and its receipts), built by the first
        caller, from any thread: its modules are imported then (~10 ms of CPU), not before
        the server answers its first call. Concurrent first callers get the same one."""
        service = self._retrieval
        if service is None:
            with self._retrieval_lock:
                service = self._retrieval
                if service is None:
                    service = self._retrieval = self.build_retrieval()
        return service

    @retrieval.setter
    def retrieval(self, service: RetrievalService) -> None:
        self._retrieval = service

    def build_retrieval(self) -> RetrievalService:
        """The retrieval pipeline over the open stores, from the current ``lcma`` settings
        (the evaluation rebuilds it after tuning them)."""
        from lithos.retrieval import scouts
        from lithos.retrieval.analogy import AnalogyScout
        from lithos.retrieval.expansion import (
            CoactivationScout,
            ExpansionScout,
            GraphScout,
            NeighbourProvider,
            ProvenanceScout,
            SourceUrlScout,
            TypedEdgeNeighbours,
            WikiLinkNeighbours,
        )
        from lithos.retrieval.exploration import ExplorationSettings, NoveltyScout, RandomScout
        from lithos.retrieval.rank import RerankWeights
        from lithos.retrieval.service import RetrievalService, RetrievalSettings
        from lithos.retrieval.temperature import TemperatureSettings
        from lithos.retrieval.terrace import Interpreter, LlmSettings

        lcma = self.config.lcma
        depth = lcma.expansion_depth
        self.stats_store.scouts = _scout_learning(self.config)
        settings = RetrievalSettings(
            enabled=lcma.enabled,
            scout_depth=lcma.scout_depth,
            weights=RerankWeights(
                scout_weights=lcma.scout_weights,
                note_type_priors=lcma.note_type_priors,
                note_type_weight=lcma.note_type_weight,
                salience_weight=lcma.salience_weight,
                usage_weight=lcma.usage_weight,
                query_class_weight=lcma.query_class_weight,
                ignored_weight=lcma.ignored_weight,
                misleading_weight=lcma.misleading_weight,
                default_salience=lcma.salience_default,
                misleading_limit=lcma.quarantine_after_misleading,
                focus_seeds=lcma.focus_seeds,
                focus_weight=lcma.focus_weight,
            ),
            mmr_lambda=lcma.mmr_lambda,
            mmr_similarity_floor=lcma.mmr_similarity_floor,
            mmr_window=lcma.mmr_window,
            temperature=TemperatureSettings(
                top_k=lcma.temperature_top_k,
                link_weight=lcma.temperature_link_weight,
                edge_strength=dict(lcma.temperature_edge_strength),
                threshold=lcma.exploration.threshold,
            ),
            exploration=ExplorationSettings(
                enabled=lcma.exploration.enabled,
                novelty_k=lcma.exploration.novelty_k,
                random_k=lcma.exploration.random_k,
                slots=lcma.exploration.slots,
                seed=lcma.exploration.seed,
            ),
        )
        hot = lcma.llm.hot_threshold
        llm = LlmSettings(
            **lcma.llm.model_dump(exclude={"hot_threshold"}),
            hot_threshold=lcma.exploration.threshold if hot is None else hot,
        )
        phase_a: list[scouts.Scout] = [
            scouts.VectorScout(
                self.vectors,
                scouts.VectorCalibration(
                    floor=lcma.vector_floor,
                    ceiling=lcma.vector_ceiling,
                    note_weight=lcma.vector_note_weight,
                    share=lcma.adaptive_share,
                ),
                ready=partial(self.stores.require_all, ("catalog", "vectors")),
            ),
            scouts.LexicalScout(
                self.fulltext,
                self.graph,
                lcma.lexical_saturation,
                lcma.adaptive_share,
                ready=partial(self.stores.require_all, ("catalog", "fulltext")),
            ),
            scouts.ExactAliasScout(self.graph),
            scouts.TagsRecencyScout(self.catalog, lcma.recency_half_life_days),
            scouts.FreshnessScout(self.catalog, lcma.recency_half_life_days),
            scouts.TaskContextScout(self.stats_store),
        ]
        neighbours: list[NeighbourProvider] = [
            WikiLinkNeighbours(self.graph),
            TypedEdgeNeighbours(self.edges, depth, lcma.graph_provenance_weights),
        ]
        phase_b: list[ExpansionScout] = [
            ProvenanceScout(self.catalog, depth),
            GraphScout(neighbours, depth),
            CoactivationScout(self.stats_store, depth),
            SourceUrlScout(self.catalog, depth),
            AnalogyScout(self.frames, self.catalog, self.edges, depth),
        ]
        return RetrievalService(
            settings,
            phase_a,
            phase_b,
            self.catalog,
            self.graph,
            self.edges,
            self.vectors,
            self.embedder,
            self.stats_store,
            clock=self.clock,
            exploration=[
                NoveltyScout(self.vectors, self.stats_store, lcma.exploration.novelty_k),
                RandomScout(lcma.exploration.random_k, lcma.exploration.seed),
            ],
            interpreter=Interpreter(llm) if llm.enabled else None,
            concepts=self._concept_gateway(),
            detect=self.conflicts.detect_among,
        )

    def _concept_gateway(self) -> ConceptGateway | None:
        concepts = self.config.lcma.concepts
        if not concepts.enabled:
            return None
        from lithos.retrieval.concepts import ConceptGateway

        return ConceptGateway(
            self.memory_store,
            _concept_rules(self.config),
            salience_cap=concepts.salience_cap,
            salience_weight=self.config.lcma.salience_weight,
        )

    def _task_completed(self, task_id: str) -> None:
        if self.consolidation_worker is not None:
            self.consolidation_worker.enqueue(task_id)

    def start(
        self,
        watch: bool | None = None,
        embed: bool = True,
        progress: Progress | None = None,
        check_in_background: bool = False,
        defer_background: bool = False,
    ) -> ReconcileReport | None:
        """Verify and repair every index against the files, then start background work;
        returns the index check's report.

        With ``check_in_background`` (``lithos serve``) the check runs on a thread of its own
        once the workers and the watcher are started, so the caller can serve at once (see
        :meth:`wait_checked`); returns ``None`` then. Not when the catalog must be filled
        first (rebuilt, re-derived, or ``index.rebuild_on_start``): reads, lists and every
        search filter depend on it, so that check runs before this returns.

        With ``defer_background`` the check beside serving and the embedding worker (which
        first loads the model and the search matrices) wait for :meth:`begin_background`, so
        that they do not share the cores with the server's own start-up; every other worker
        and the watcher start here as usual."""
        if not self._opened:
            self.open()
        clear = self.config.index.rebuild_on_start
        skip = self._refilled_while_serving(clear)
        background = check_in_background and self._catalog_serves_as_is(clear)
        if background:
            self._repair_marked()
        else:
            self._check(clear, progress, skip)
        self.edges.purge_removed(timedelta(days=self.config.lcma.edges.removed_grace_days))
        self.feedback_replay = self._replay_feedback()
        self.repair = RepairWorker(self.stores, self.indexer)
        if not background:
            self.repair.start()
        self.committer.start()
        if embed:
            self._later(defer_background, self.embedding.start)
        memory = self.config.lcma.consolidation
        if memory.enabled:
            self.consolidation_worker = ConsolidationWorker(
                self.consolidation,
                timedelta(minutes=memory.interval_minutes),
                after=self.concepts.form if self.config.lcma.concepts.enabled else None,
            )
            self.consolidation_worker.start()
        if watch if watch is not None else self.config.server.watch_files:
            self.watcher = KnowledgeWatcher(self.indexer, self.config.index.watch_debounce_ms)
            self.watcher.start()
        if background:
            # After the watcher: an edit the check has passed already is the watcher's, and
            # the watcher's batches wait on the indexer lock the check holds.
            self.index_check = "running"
            self._checker = threading.Thread(
                target=self._check_beside_serving, args=(skip,), name="lithos-check", daemon=True
            )
            self._later(defer_background, self._checker.start)
        return self.last_reconcile

    def _later(self, defer: bool, begin: Callable[[], None]) -> None:
        if not defer:
            begin()
            return
        with self._deferred_lock:
            if self._deferred is not None:
                self._deferred.append(begin)

    def begin_background(self) -> None:
        """Start the background work :meth:`start` deferred (``defer_background``), in the
        order it was deferred; a no-op when none waits, or once the app is closed. Safe from
        any thread, more than once."""
        with self._deferred_lock:
            if self._deferred is None:
                return
            deferred, self._deferred = self._deferred, []
            for begin in deferred:
                begin()

    def wait_checked(self, timeout: float | None = None) -> bool:
        """Wait until the start-up index check has ended (at once when it ran in
        :meth:`start`); ``False`` if ``timeout`` seconds pass first."""
        return self._checked.wait(timeout)

    def _check(self, clear: bool, progress: Progress | None, skip: frozenset[str]) -> None:
        self.index_check = "running"
        try:
            self.last_reconcile = self.reconcile(
                clear=clear, progress=progress, skip=skip, trust_stat=True
            )
        except BaseException:
            self.index_check = "failed"
            raise
        finally:
            self._checked.set()
        self.index_check = "done"
        release_free_memory()  # verifying every file leaves freed buffers behind

    def _repair_marked(self) -> None:
        """Before serving: index the files of writes a kill cut short (few), so that what a
        write acknowledged is searchable from the first call; the check beside serving
        covers every other file."""
        try:
            repaired = self.indexer.repair_marked()
        except Exception:  # a broken store is reported; the check beside serving repairs it
            log.exception("could not index the files of interrupted writes before serving")
        else:
            if repaired:
                log.info("indexed %d files of interrupted writes before serving", repaired)

    def _check_beside_serving(self, skip: frozenset[str]) -> None:
        try:
            self._check(False, None, skip)
        except Exception:  # a broken derived store was moved aside and is refilled below
            log.exception("the start-up index check failed; the watcher and repairs go on")
        assert self.repair is not None
        self.repair.start()  # refills the stores found broken, as after a check in start()

    def _catalog_serves_as_is(self, clear: bool) -> bool:
        """Whether the catalog can answer before the index check: it was made by a check
        with the current code (a new or emptied one has recorded nothing yet), is not being
        rebuilt, and is not about to be emptied and re-derived."""
        if clear or "catalog" in self.stores.rebuilding():
            return False
        return self.catalog.derivation() == self.indexer.derivations()["catalog"]

    def _replay_feedback(self) -> ReplayReport | None:
        """Learn again from feedback a power cut took from the learned state (see
        TaskCompletion.replay). A failure here is logged, never fatal: answering comes first."""
        try:
            with ThreadPoolExecutor(1, thread_name_prefix="lithos-replay") as one:
                # Its own event loop on its own thread: start() may run inside a running loop.
                return one.submit(asyncio.run, self.feedback.replay()).result()
        except Exception:
            log.exception("could not replay retrieval feedback into the learned state")
            return None

    def reconcile(
        self,
        clear: bool = False,
        progress: Progress | None = None,
        skip: frozenset[str] = frozenset(),
        trust_stat: bool = False,
    ) -> ReconcileReport:
        """Verify every index against the files and repair what differs; a derived store
        found broken on the way is moved aside and rebuilt. The stores in ``skip`` (being
        rebuilt) are left to the repair worker, which refills them while Lithos serves.
        ``trust_stat`` (start-up) takes a file whose modification time and size are those
        indexed as unchanged without reading it; ``lithos reindex`` reads every file."""
        report = self.stores.run(
            lambda: self.indexer.reconcile(
                clear=clear, progress=progress, skip=skip, trust_stat=trust_stat
            ),
            only=DERIVED - skip,
        )
        log.info("index check: %s", report.as_dict())
        return report

    def _refilled_while_serving(self, clear: bool) -> frozenset[str]:
        """The stores found broken at opening that are refilled in the background once
        Lithos serves: the full-text and vector stores. A broken catalog is rebuilt before
        serving, because reads, lists, updates and every search filter depend on it
        (docs/failure-modes.md)."""
        rebuilding = self.stores.rebuilding()
        if clear or "catalog" in rebuilding:
            return frozenset()
        return rebuilding & {"fulltext", "vectors"}

    def close(self) -> None:
        if not self._opened:
            return
        with self._deferred_lock:  # what begin_background() has not started never starts
            self._deferred = None
        if self._checker is not None and self._checker.ident is not None:
            self._checker.join()  # it uses every derived store until it ends
        self._checker = None
        if self.watcher is not None:
            self.watcher.stop()
        if self.repair is not None:
            self.repair.stop()
        if self.consolidation_worker is not None:
            self.consolidation_worker.stop()
            self.consolidation_worker = None
        self.embedding.stop()
        self.search.close()
        with self._retrieval_lock:  # one being built is closed once it is
            if self._retrieval is not None:
                self._retrieval.close()
        self.committer.stop()  # commits what writes staged, ending their marks
        try:
            self.indexer.forget_finished_marks()
        except LithosError as exc:  # a broken catalog: start-up re-checks every file anyway
            log.warning("could not forget the marks of finished writes: %s", exc.message)
        self.fulltext.close()
        self.vectors.close()
        self.catalog.close()
        self.identities.close()
        self.coordination_db.close()
        self.edge_store.close()
        self.stats_store.close()
        self._opened = False

    # -- system -------------------------------------------------------------------------

    async def stats(self) -> dict[str, Any]:
        """Exact counts, plus per-index counts so drift would be visible. A count whose store
        is broken or being rebuilt is None; ``stores`` says which and why."""
        # No hop while nothing was written: the coordination counts are read on the event
        # loop, a sole writer's catalog and vector sizes are held in memory (after a write,
        # one hop to each store's thread, in turn), and the full-text count reads the searcher
        # already open. Awaited in turn rather than gathered: tasks would cost more than they
        # overlap.
        counts = await self.coordination.counts()
        catalog = await _unless_broken(self.catalog.sizes())
        vectors = await _unless_broken(self.vectors.sizes())
        fulltext = _or_none(self.fulltext.count)
        documents = catalog.notes if catalog else None
        return {
            "documents": documents,
            "chunks": vectors.chunks if vectors else None,
            "agents": counts["agents"],
            "active_tasks": counts["active_tasks"],
            "open_claims": counts["open_claims"],
            "tags": catalog.tags if catalog else None,
            "indexes": {
                "catalog_documents": documents,
                "fulltext_documents": fulltext,
                "vector_documents": vectors.notes if vectors else None,
                "embedded_chunks": vectors.embedded_chunks if vectors else None,
                "pending_chunks": vectors.pending_chunks if vectors else None,
                "migrating_chunks": vectors.migrating_chunks if vectors else None,
                "pending_index_updates": len(self.indexer.deferred()),
                "embedding_model": self.embedder.model_id,
                "embedding_space": self.vectors.space.id,
                "retiring_spaces": [s.id for s in self.vectors.searched_spaces()[1:]],
            },
            "stores": self.store_states(),
            "problems": catalog.problems if catalog else None,
        }

    def store_states(self) -> dict[str, Any]:
        """Each store's state (ok, rebuilding, failed with a reason)."""
        # Authoritative stores either opened cleanly or stopped start-up: they are ok here.
        states = {name: StoreStatus() for name in AUTHORITATIVE}
        states.update(self.stores.statuses())
        return {name: status.as_dict() for name, status in states.items()}

    def health(self) -> dict[str, Any]:
        """``status`` is ``ok`` when every store is ok and no index update is pending,
        ``degraded`` while Lithos serves but repairs something by itself (a store
        ``rebuilding``, updates pending), ``failed`` when a store is ``failed`` (it could not
        be repaired yet: see its reason), ``starting`` before the stores are open."""
        if not self._opened:
            status: Health = "starting"
        else:
            status = overall_health(self.stores.statuses().values(), self.indexer.deferred())
        return {
            "status": status,
            "stores": self.store_states() if self._opened else {},
            "components": {
                "knowledge_dir": str(self.files.root) if self._opened else None,
                "repair_worker": "running"
                if self.repair is not None and self.repair.is_alive()
                else "off",
                "watcher": "running" if self.watcher is not None else "off",
                "consolidation_worker": "running"
                if self.consolidation_worker is not None and self.consolidation_worker.is_alive()
                else "off",
                "embedding_worker": "running"
                if self._opened and self.embedding.is_alive()
                else "off",
                "index_check": self.index_check,
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


async def _unless_broken(count: Awaitable[T]) -> T | None:
    """A count, or None when its store is broken or being rebuilt (reported in ``stores``)."""
    try:
        return await count
    except LithosError as exc:
        log.debug("count unavailable: %s", exc.message)
        return None


def _or_none(count: Callable[[], T]) -> T | None:
    """:func:`_unless_broken` for a count read on this thread."""
    try:
        return count()
    except LithosError as exc:
        log.debug("count unavailable: %s", exc.message)
        return None


def _consolidation_rules(cfg: LithosConfig) -> ConsolidationRules:
    c = cfg.lcma.consolidation
    return ConsolidationRules(
        min_activations=c.min_activations,
        max_items=c.max_items,
        stale_after_hours=c.stale_after_hours,
        promotion_salience_boost=c.promotion_salience_boost,
        ledger_days=c.ledger_days,
    )


def _concept_rules(cfg: LithosConfig) -> ConceptRules:
    c = cfg.lcma.concepts
    return ConceptRules(
        min_size=c.min_size,
        max_size=c.max_size,
        min_coactivation=c.min_coactivation,
        min_density=c.min_density,
        repeat_penalty=c.repeat_penalty,
        max_repeat_penalty=c.max_repeat_penalty,
        repeat_window_hours=c.repeat_window_hours,
        gateway=c.gateway,
    )


def _salience_decay(cfg: LithosConfig) -> SalienceDecay:
    decay = cfg.lcma.decay
    curves: dict[str, DecayCurve] = {
        note_type: DecayCurve(half_life, decay.salience_floor[note_type])
        for note_type, half_life in decay.salience_half_life_days.items()
    }
    return SalienceDecay(curves, concept_cap=cfg.lcma.concepts.salience_cap)


def _learning_rules(cfg: LithosConfig) -> LearningRules:
    lcma = cfg.lcma
    return LearningRules(
        default_salience=lcma.salience_default,
        salience_floor=lcma.salience_floor,
        salience_ceiling=lcma.salience_ceiling,
        cited_salience_boost=lcma.cited_salience_boost,
        cited_class_boost=lcma.cited_class_boost,
        ignored_class_penalty=lcma.ignored_class_penalty,
        chronic_ignored_after=lcma.chronic_ignored_after,
        chronic_ignored_salience_penalty=lcma.chronic_ignored_salience_penalty,
        misleading_class_penalty=lcma.misleading_class_penalty,
        misleading_salience_penalty=lcma.misleading_salience_penalty,
        quarantine_after_misleading=lcma.quarantine_after_misleading,
        prior_bound=lcma.prior_bound,
    )


def _scout_learning(cfg: LithosConfig) -> ScoutLearning:
    lcma, exploration = cfg.lcma, cfg.lcma.exploration
    return ScoutLearning(
        start={s: lcma.scout_weights.get(s, 0.0) for s in EXPLORATION_SCOUTS},
        enabled=exploration.learn,
        floor=exploration.weight_floor,
        ceiling=exploration.weight_ceiling,
        cited_step=exploration.cited_step,
        ignored_step=exploration.ignored_step,
        misleading_step=exploration.misleading_step,
    )


def _graph_learning(cfg: LithosConfig) -> GraphLearning:
    lcma = cfg.lcma
    return GraphLearning(
        max_cited_notes=lcma.cited_edge_notes,
        start_weight=lcma.cited_edge_weight,
        step=lcma.cited_edge_step,
        misleading_step=lcma.misleading_edge_penalty,
    )

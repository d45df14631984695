"""``lithos_retrieve``: the two-phase scout pipeline, Terrace 1 rerank, and its receipt.

Phase A scouts run concurrently; the best ``max_context_nodes`` of their merged pool seed the
Phase B scouts, which also run concurrently. A scout that raises is reported in
``failed_scouts`` (the result is ``degraded``), never fatal. Every call, failed or not,
leaves one receipt, written in one small transaction before the answer returns.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial

from lithos.domain.embedding import Embedder, QueryVectors
from lithos.domain.filters import SearchFilter, clean_prefix
from lithos.domain.retrieval import (
    EXPLORATION_SCOUTS,
    QUERY_CLASSES,
    Candidate,
    CoactivationPartner,
    ConflictEdge,
    NodeStats,
    QueryClass,
    Receipt,
    ReceiptNode,
    ReceiptQuery,
    Retrieval,
    RetrievalQuery,
    RetrievedNote,
    ScoutHit,
    ScoutWeight,
    classify_query,
    new_receipt_id,
)
from lithos.domain.scope import Scope, is_visible
from lithos.domain.tags import filter_tags
from lithos.domain.timestamps import format_timestamp, utc_now
from lithos.errors import DocNotFound, InvalidInput, LcmaDisabled, LithosError, ReceiptNotFound
from lithos.retrieval import rank
from lithos.retrieval.concepts import ConceptGateway
from lithos.retrieval.context import Eligibility, ScoutContext
from lithos.retrieval.expansion import ExpansionScout, Seed
from lithos.retrieval.exploration import ExplorationScout, ExplorationSettings, reserve_slots
from lithos.retrieval.scouts import Describer, Scout
from lithos.retrieval.temperature import Heat, TemperatureSettings, Thermometer
from lithos.retrieval.terrace import (
    FOLLOWUP,
    TERRACE_TWO,
    Interpreter,
    TerraceFailed,
    should_follow_up,
    should_use_llm_pass,
)
from lithos.services.edges import EdgeService
from lithos.services.graph import LinkGraph
from lithos.services.threads import LazyPool
from lithos.store.catalog import Catalog, CatalogEntry
from lithos.store.stats import StatsStore
from lithos.store.vectors import VectorStore

log = logging.getLogger("lithos.retrieval")
# lithos_node_stats: the partners shown, counted over the note's latest receipts.
PARTNERS = 10
PARTNER_WINDOW = 1000
# Threads the scouts of all retrievals share: a retrieval runs on one thread and hands each
# scout but none of its own work to these (docs/concurrency.md).
SCOUT_THREADS = 8


@dataclass(frozen=True)
class RetrievalSettings:
    enabled: bool
    scout_depth: int
    weights: rank.RerankWeights
    mmr_lambda: float
    mmr_similarity_floor: float
    mmr_window: int
    temperature: TemperatureSettings
    exploration: ExplorationSettings


@dataclass
class _Run:
    """What one call has gathered so far, for its receipt."""

    fired: list[str]
    failed: list[str]
    timings: dict[str, float]
    considered: int = 0


class RetrievalService:
    def __init__(
        self,
        settings: RetrievalSettings,
        phase_a: Sequence[Scout],
        phase_b: Sequence[ExpansionScout],
        catalog: Catalog,
        graph: LinkGraph,
        edges: EdgeService,
        vectors: VectorStore,
        embedder: Embedder,
        stats: StatsStore,
        exploration: Sequence[ExplorationScout] = (),
        interpreter: Interpreter | None = None,
        clock: Callable[[], datetime] = utc_now,
        concepts: ConceptGateway | None = None,
        detect: Callable[[Sequence[str]], object] | None = None,
    ) -> None:
        """``concepts`` damps concept notes and keeps them with their specifics; ``detect``
        flags likely contradictions among notes (ConflictService.detect_among), run on the
        results whenever an answer carries its conflicts."""
        self.settings = settings
        self.phase_a = list(phase_a)
        self.describers = [s for s in self.phase_a if isinstance(s, Describer)]
        self.phase_b = list(phase_b)
        self.catalog = catalog
        self.graph = graph
        self.edges = edges
        self.vectors = vectors
        self.embedder = embedder
        self.stats = stats
        self.exploration = list(exploration)
        self.interpreter = interpreter
        self.thermometer = Thermometer(settings.temperature, edges)
        self.clock = clock
        self.concepts = concepts
        self.detect = detect
        self._scouts = LazyPool(SCOUT_THREADS, "lithos-scout")

    def close(self) -> None:
        """Stop the scout threads (after the running retrievals' scouts finish)."""
        self._scouts.close()

    async def retrieve(self, query: RetrievalQuery) -> Retrieval:
        """Ranked, explained notes for ``query``. Raises ``LcmaDisabled`` when retrieval is
        switched off and ``InvalidInput`` for an empty query; a receipt is written either way."""
        now = self.clock()
        run = _Run(fired=[], failed=[], timings={})
        receipt_id = new_receipt_id(now)
        started = time.perf_counter()
        try:
            if not self.settings.enabled:
                raise LcmaDisabled("cognitive retrieval is disabled (lcma.enabled: false)")
            if not query.query.strip():
                raise InvalidInput("query must not be empty")
            retrieval, nodes = await self._pipeline(query, now, run, receipt_id)
        except Exception as exc:
            code = exc.code if isinstance(exc, LithosError) else "internal_error"
            run.timings["total"] = _ms(started)
            await self.stats.record(self._receipt(receipt_id, query, now, run, code=code))
            raise
        run.timings["total"] = _ms(started)
        receipt = self._receipt(
            receipt_id,
            query,
            now,
            run,
            nodes=nodes,
            temperature=retrieval.temperature,
            terrace=retrieval.terrace_reached,
        )
        await self.stats.record(receipt)
        return retrieval

    async def receipt(self, receipt_id: str) -> Receipt:
        found = await self.stats.receipt(receipt_id)
        if found is None:
            raise ReceiptNotFound(f"no receipt {receipt_id}")
        return found

    async def receipts(self, query: ReceiptQuery) -> list[Receipt]:
        return await self.stats.receipts(query)

    async def scout_weights(self, query_class: QueryClass | None = None) -> list[ScoutWeight]:
        """Each exploration scout's weight per query class (only ``query_class`` if given):
        learned from feedback, or the starting weight where none moved it yet."""
        classes = QUERY_CLASSES if query_class is None else (query_class,)
        return await asyncio.to_thread(self.stats.scout_weight_table, EXPLORATION_SCOUTS, classes)

    async def node_stats(self, node_id: str, scope: Scope | None = None) -> NodeStats:
        """What has been learned about a note, with its co-activation partners that ``scope``
        may see; defaults for a note never retrieved. Raises ``DocNotFound`` for an id that
        is neither a note nor in the statistics, or a note ``scope`` may not see."""
        return await asyncio.to_thread(self._node_stats, node_id, scope or Scope())

    def _node_stats(self, node_id: str, scope: Scope) -> NodeStats:
        entry = self.catalog.get(node_id)
        if entry is not None and entry.status != "quarantined" and not is_visible(entry, scope):
            raise DocNotFound(f"no note with id {node_id}")
        found = self.stats.node_stats([node_id]).get(node_id)
        if found is None:
            if entry is None:
                raise DocNotFound(f"no note with id {node_id}")
            found = NodeStats(node_id, salience=self.settings.weights.default_salience)
        hidden = self.catalog.hidden_ids(scope)
        rows = self.stats.partners(node_id, PARTNER_WINDOW, PARTNERS + len(hidden))
        entries = self.catalog.get_many([r[0] for r in rows if r[0] not in hidden])
        partners = tuple(
            CoactivationPartner(note, entries[note].title, retrieved, cited)
            for note, retrieved, cited in rows
            if note in entries
        )[:PARTNERS]
        return replace(found, coactivation=partners)

    # -- the pipeline ---------------------------------------------------------------------------

    async def _pipeline(
        self, query: RetrievalQuery, now: datetime, run: _Run, receipt_id: str
    ) -> tuple[Retrieval, list[ReceiptNode]]:
        # Terrace 0 and 1 run on one worker thread, handing only the scouts to the scout
        # threads: a hop through the event loop for each step cost more than most steps.
        retrieval, nodes, ctx, heat, kept = await asyncio.to_thread(
            self._terrace_one_answer, query, now, run, receipt_id
        )
        if self.interpreter is not None:
            clock = time.perf_counter()
            step = _TerraceStep(self.interpreter, ctx, heat, run, kept, receipt_id)
            interpreted = await self._terrace_two(step, retrieval)
            if interpreted is not retrieval:
                retrieval, nodes = interpreted, _receipt_nodes(interpreted.results)
                run.timings["terrace_2"] = _ms(clock)
        return retrieval, nodes

    def _terrace_one_answer(
        self, query: RetrievalQuery, now: datetime, run: _Run, receipt_id: str
    ) -> tuple[Retrieval, list[ReceiptNode], ScoutContext, Heat, dict[str, Candidate]]:
        """Phase A, Phase B, temperature (and exploration) and Terrace 1; also the context,
        the heat and an unranked copy of the pool (empty without an interpreter) for
        Terrace 2."""
        clock = time.perf_counter()
        eligibility = self._eligibility(query)
        ctx = ScoutContext(query, eligibility, now, self.settings.scout_depth, self._embed)
        pool: dict[str, Candidate] = {}
        first: list[tuple[str, Callable[[], list[ScoutHit]]]] = [
            (s.name, partial(s.find, ctx)) for s in self.phase_a
        ]
        self._run_scouts(first, pool, run)
        run.timings["phase_a"] = _ms(clock)
        clock = time.perf_counter()
        seeds = self._seeds(pool, query.seeds)
        if seeds:
            second: list[tuple[str, Callable[[], list[ScoutHit]]]] = [
                (s.name, partial(s.expand, ctx, seeds)) for s in self.phase_b
            ]
            self._run_scouts(second, pool, run)
        run.timings["phase_b"] = _ms(clock)
        # Terrace 1 ranks by what was learned about the pool's notes: read on the statistics'
        # thread while the temperature is measured (exploration, when it runs, adds to it).
        learned = _Learned(frozenset(pool), self.stats.start_node_stats(list(pool)))
        heat = self._explore(pool, ctx, run)
        run.considered = len(pool)
        clock = time.perf_counter()
        # Terrace 1 annotates the candidates it ranks; a follow-up reranks a clean copy.
        kept = _copied(pool) if self.interpreter is not None else {}
        # Without exploration the pool is as the temperature scored it: no evidence to redo.
        scored = not self._explores(heat)
        retrieval, nodes = self._terrace_one(pool, ctx, run, receipt_id, heat, learned, scored)
        run.timings["rerank"] = _ms(clock)
        return retrieval, nodes, ctx, heat, kept

    async def _terrace_two(self, step: _TerraceStep, retrieval: Retrieval) -> Retrieval:
        """The language model's pass when :func:`should_use_llm_pass` asks for it, then its
        follow-up queries when :func:`should_follow_up` asks for them; on any failure the
        answer so far, marked degraded with ``terrace_2`` among the failures."""
        ctx, model = step.ctx, step.interpreter
        conflicts = retrieval.conflicts
        if conflicts is None:
            ids = [r.id for r in retrieval.results]
            conflicts = await asyncio.to_thread(self._conflicts, ids, ctx)
        wanted = should_use_llm_pass(
            ctx.query_class, step.heat.temperature, bool(conflicts), model.settings
        )
        if not wanted or not retrieval.results:
            return retrieval
        try:
            first = await model.interpret(ctx.query.query, retrieval.results)
        except TerraceFailed as exc:
            return _failed(step.run, retrieval, exc)
        answer = replace(retrieval, results=first.results, terrace_reached=2)
        followups = should_follow_up(first, step.heat.temperature, model.settings)
        if not followups:
            return answer
        clock = time.perf_counter()
        widened = await self._follow_up(step, followups)
        step.run.timings["followup"] = _ms(clock)
        try:
            second = await model.interpret(ctx.query.query, widened.results)
        except TerraceFailed as exc:
            return _failed(step.run, answer, exc)
        return replace(widened, results=second.results, terrace_reached=2)

    async def _follow_up(self, step: _TerraceStep, followups: Sequence[str]) -> Retrieval:
        """LCMA-DESIGN 5.4's targeted follow-ups: the Phase A scouts run for each of the
        model's queries; what they find joins the pool as ``scout_followup`` evidence (its
        evidence score for that query) and Terrace 1 reranks the pool for the original query."""
        hits: list[ScoutHit] = []
        for text in followups:
            ctx = ScoutContext(
                replace(step.ctx.query, query=text),
                step.ctx.eligibility,
                step.ctx.now,
                step.ctx.depth,
                self._embed,
            )
            found: dict[str, Candidate] = {}
            jobs: list[tuple[str, Callable[[], list[ScoutHit]]]] = [
                (s.name, partial(s.find, ctx)) for s in self.phase_a
            ]
            quiet = _Run(fired=[], failed=[], timings={})
            await asyncio.to_thread(self._run_scouts, jobs, found, quiet)
            rank.score_evidence(found, self.settings.weights.scout_weights)
            reason = f"follow-up: found for the model's follow-up query '{text}'"
            hits += [
                ScoutHit(c.note_id, min(1.0, c.score), reason)
                for c in rank.ranked(found)[: ctx.depth]
            ]
        rank.merge(step.pool, FOLLOWUP, hits)
        step.run.fired.append(FOLLOWUP)
        step.run.considered = len(step.pool)
        widened, _ = await asyncio.to_thread(
            self._terrace_one, step.pool, step.ctx, step.run, step.receipt_id, step.heat
        )
        return widened

    def _explore(self, pool: dict[str, Candidate], ctx: ScoutContext, run: _Run) -> Heat:
        """Measure the temperature of the best candidates so far; when hot, let the
        exploration scouts add to the pool (Terrace 1 then reranks all of it)."""
        clock = time.perf_counter()
        top, heat = self._measure(pool)
        run.timings["temperature"] = _ms(clock)
        if self._explores(heat):
            clock = time.perf_counter()
            shown = top[: ctx.query.limit]  # exploration looks beyond what would be shown
            jobs: list[tuple[str, Callable[[], list[ScoutHit]]]] = [
                (s.name, partial(s.explore, ctx, shown, dict(pool))) for s in self.exploration
            ]
            self._run_scouts(jobs, pool, run)
            run.timings["exploration"] = _ms(clock)
        return heat

    def _explores(self, heat: Heat) -> bool:
        """Whether the exploration scouts run at this temperature."""
        return heat.hot and self.settings.exploration.enabled and bool(self.exploration)

    def _measure(self, pool: dict[str, Candidate]) -> tuple[list[str], Heat]:
        """The best candidates by evidence so far, and their temperature."""
        rank.score_evidence(pool, self.settings.weights.scout_weights)
        best = rank.ranked(pool)[: self.settings.temperature.top_k]
        top = [c.note_id for c in best]
        scores = {c.note_id: c.score for c in best}
        return top, self.thermometer.measure(top, self.vectors.note_vectors(top), scores)

    def _run_scouts(
        self,
        jobs: Sequence[tuple[str, Callable[[], list[ScoutHit]]]],
        pool: dict[str, Candidate],
        run: _Run,
    ) -> None:
        """Run ``jobs`` concurrently on the scout threads and merge their hits into ``pool``
        in the order of ``jobs``; a job that raises is logged and listed as failed."""
        executor = self._scouts.get()
        futures = [executor.submit(job) for _, job in jobs]
        for (name, _), future in zip(jobs, futures, strict=True):
            error = future.exception()
            if error is not None:
                log.warning("%s failed: %r", name, error, exc_info=error)
                run.failed.append(name)
                continue
            run.fired.append(name)
            rank.merge(pool, name, future.result())

    def _embed(self, text: str) -> QueryVectors:
        return self.vectors.embed_query(text)

    def _eligibility(self, query: RetrievalQuery) -> Eligibility:
        scope = Scope(agent_id=query.agent_id, task_id=query.task_id)
        search_filter = SearchFilter(
            tags=filter_tags(query.tags),
            path_prefix=clean_prefix(query.path_prefix),
            namespaces=query.namespace_filter,
            scope=scope,
        )
        allowed = None
        if search_filter.narrows:
            allowed = frozenset(self.catalog.ids(search_filter))
        hidden = frozenset(self.catalog.hidden_ids(scope))
        return Eligibility(filter=search_filter, allowed=allowed, hidden=hidden)

    def _seeds(self, pool: dict[str, Candidate], count: int) -> list[Seed]:
        rank.score_evidence(pool, self.settings.weights.scout_weights)
        top = rank.ranked(pool)[:count]
        titles = self.graph.titles(c.note_id for c in top)
        return [Seed(c.note_id, titles.get(c.note_id, c.note_id), c.score) for c in top]

    def _terrace_one(
        self,
        pool: dict[str, Candidate],
        ctx: ScoutContext,
        run: _Run,
        receipt_id: str,
        heat: Heat,
        learned: _Learned | None = None,
        scored: bool = False,
    ) -> tuple[Retrieval, list[ReceiptNode]]:
        """``learned``: the statistics of (some of) the pool's notes, already being read;
        ``scored``: the candidates' scores hold their evidence under the settings' weights."""
        cfg = self.settings
        # From the link graph, in step with the catalog: no database round trip.
        note_types = self.graph.note_types(pool)
        pool = {k: c for k, c in pool.items() if k in note_types}  # deleted since a scout ran
        if learned is None:
            stats = self.stats.node_stats(list(pool))
        else:
            stats = learned.read()
            unread = [k for k in pool if k not in learned.ids]
            if unread:
                stats |= self.stats.node_stats(unread)
        pool_vectors = self.vectors.note_vectors(pool) if cfg.weights.focus_weight else None
        ordered = rank.rerank(
            pool,
            self._weights(ctx, heat),
            note_types,
            stats,
            ctx.query_class,
            pool_vectors,
            cfg.mmr_similarity_floor,
            scored,
        )
        if self.concepts is not None:
            ordered = self.concepts.damp(ordered, note_types, stats, ctx.now)
        window = ordered[: cfg.mmr_window]
        vectors = (
            {c.note_id: pool_vectors[c.note_id] for c in window if c.note_id in pool_vectors}
            if pool_vectors is not None
            else self.vectors.note_vectors(c.note_id for c in window)
        )
        ordered = rank.diversify(
            ordered, vectors, cfg.mmr_lambda, cfg.mmr_similarity_floor, cfg.mmr_window
        )
        if heat.hot and cfg.exploration.enabled and cfg.exploration.slots:
            ordered = reserve_slots(
                ordered, ctx.query.limit, cfg.exploration.slots, heat.describe()
            )
        final = ordered[: ctx.query.limit]
        if self.concepts is not None:
            final = self.concepts.join(ordered, ctx.query.limit, self.graph.titles)
        # The shown notes' catalog rows are read on a scout thread while the scouts
        # describe them here (highlighting snippets is the larger part of Terrace 1).
        shown = self._scouts.get().submit(self._catalog_rows, [c.note_id for c in final])
        self._describe(ctx, final)
        entries, sources = shown.result()
        final = [c for c in final if c.note_id in entries]  # deleted a moment ago
        ids = [c.note_id for c in final]
        leads = self.vectors.lead_texts(c.note_id for c in final if not c.snippet)
        results = tuple(
            self._result(c, entries[c.note_id], stats, leads, sources, ctx.now) for c in final
        )
        nodes = _receipt_nodes(results)
        retrieval = Retrieval(
            results=results,
            temperature=heat.temperature,
            terrace_reached=1,
            receipt_id=receipt_id,
            degraded=bool(run.failed),
            failed_scouts=tuple(run.failed),
            conflicts=(
                self._conflicts(ids, ctx, detect=True)
                if ctx.query.surfaces_conflicts(ctx.query_class)
                else None
            ),
        )
        return retrieval, nodes

    def _catalog_rows(
        self, note_ids: list[str]
    ) -> tuple[dict[str, CatalogEntry], dict[str, list[str]]]:
        """The catalog entries of ``note_ids`` that exist, and their ``derived_from_ids``."""
        return self.catalog.get_many(note_ids), self.catalog.derived_from(note_ids)

    def _describe(self, ctx: ScoutContext, shown: Sequence[Candidate]) -> None:
        """Let the scouts that explain only what is shown complete their reasons; one that
        fails leaves its brief reason (the answer does not depend on it)."""
        for scout in self.describers:
            try:
                scout.describe(ctx, shown)
            except Exception:  # an explanation never fails a retrieval
                log.warning("%s could not describe its results", scout, exc_info=True)

    def _weights(self, ctx: ScoutContext, heat: Heat) -> rank.RerankWeights:
        """Terrace 1's weights, with the exploration scouts' weights that feedback taught for
        this query class when they ran."""
        weights = self.settings.weights
        if not self._explores(heat):
            return weights
        learned = self.stats.scout_weights(ctx.query_class)
        if not learned:
            return weights
        return replace(weights, scout_weights={**weights.scout_weights, **learned})

    def _conflicts(
        self, ids: list[str], ctx: ScoutContext, detect: bool = False
    ) -> tuple[ConflictEdge, ...]:
        """Contradiction edges touching the results whose other note the caller may see;
        with ``detect``, likely contradictions among the results are flagged first (as
        ``unreviewed`` candidates: never resolved here). A failing detector only logs."""
        if detect and self.detect is not None:
            try:
                self.detect(ids)
            except Exception:  # flagging candidates never fails a retrieval
                log.exception("contradiction detection failed; answering without it")
        found: dict[str, ConflictEdge] = {}
        for n in self.edges.neighbours(ids, types=["contradicts"], exclude_seeds=False):
            e = n.edge
            if ctx.eligibility.allows(e.from_id) and ctx.eligibility.allows(e.to_id):
                state = e.conflict_state or "unreviewed"
                found.setdefault(e.edge_id, ConflictEdge(e.edge_id, e.from_id, e.to_id, state))
        return tuple(found.values())

    def _result(
        self,
        c: Candidate,
        entry: CatalogEntry,
        stats: dict[str, NodeStats],
        leads: dict[str, str],
        sources: dict[str, list[str]],
        now: datetime,
    ) -> RetrievedNote:
        learned = stats.get(c.note_id)
        salience = learned.salience if learned else self.settings.weights.default_salience
        snippet = c.snippet or leads.get(c.note_id, "")
        return RetrievedNote(
            id=c.note_id,
            title=entry.title,
            snippet=snippet[:300],
            score=round(c.score, 6),
            path=entry.path,
            source_url=entry.source_url or "",
            updated_at=entry.updated_at,
            is_stale=entry.expires_at is not None and entry.expires_at < format_timestamp(now),
            derived_from_ids=tuple(sources.get(c.note_id, ())),
            reasons=tuple(c.reasons),
            scouts=tuple(c.scouts),
            salience=round(salience, 4),
        )

    def _receipt(
        self,
        receipt_id: str,
        query: RetrievalQuery,
        now: datetime,
        run: _Run,
        code: str | None = None,
        nodes: Sequence[ReceiptNode] = (),
        temperature: float | None = None,
        terrace: int = 0,
    ) -> Receipt:
        return Receipt(
            id=receipt_id,
            created_at=format_timestamp(now),
            query=query.query,
            query_class=classify_query(query.query),
            arguments=query.arguments(),
            agent_id=query.agent_id,
            task_id=query.task_id,
            status="error" if code else "ok",
            error_code=code,
            scouts_fired=tuple(run.fired),
            scouts_failed=tuple(run.failed),
            candidates_considered=run.considered,
            final_nodes=tuple(nodes),
            temperature=temperature,
            terrace_reached=terrace,
            timings_ms=dict(run.timings),
        )


@dataclass(frozen=True)
class _TerraceStep:
    """What Terrace 2 works with: the model, the call so far, and an unranked copy of the
    pool for a follow-up."""

    interpreter: Interpreter
    ctx: ScoutContext
    heat: Heat
    run: _Run
    pool: dict[str, Candidate]
    receipt_id: str


@dataclass(frozen=True)
class _Learned:
    """A read of the statistics of the notes ``ids`` under way; ``read`` waits for it."""

    ids: frozenset[str]
    read: Callable[[], dict[str, NodeStats]]


def _failed(run: _Run, answer: Retrieval, exc: TerraceFailed) -> Retrieval:
    log.warning("terrace 2 failed, answering without it: %s", exc)
    run.failed.append(TERRACE_TWO)
    return replace(answer, degraded=True, failed_scouts=tuple(run.failed))


def _copied(pool: dict[str, Candidate]) -> dict[str, Candidate]:
    return {
        k: replace(c, evidence=dict(c.evidence), reasons=list(c.reasons)) for k, c in pool.items()
    }


def _receipt_nodes(results: Sequence[RetrievedNote]) -> list[ReceiptNode]:
    return [ReceiptNode(r.id, i, r.score, r.reasons, r.scouts) for i, r in enumerate(results, 1)]


def _ms(since: float) -> float:
    return round(1000 * (time.perf_counter() - since), 3)

"""Completing a task with retrieval feedback: the learning half of LCMA (LCMA-DESIGN 5.6).

The feedback is bound to one receipt: the one named, which must belong to the task, or else
the task's latest successful receipt retrieved by the completing agent. Only notes that
receipt returned count; the rest of its notes were ignored. Cited notes gain salience and
are recorded as cited together (the co-activation the coactivation scout reads); ignored and
misleading notes lose first on the receipt's query class; repeatedly misleading notes are
quarantined through the knowledge service, which writes ``status: quarantined`` into the
note's frontmatter as an explicit, agent-caused change. The graph learns too: ``related_to``
edges between cited notes are reinforced and edges that pulled a misleading note in weaken
(``.lithos/edges.db``, one transaction after the statistics' one).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from lithos.domain.metadata import MetadataChange
from lithos.domain.retrieval import (
    Feedback,
    GraphLearning,
    Receipt,
    ScoutWeight,
    split_feedback,
)
from lithos.domain.timestamps import format_timestamp, utc_now
from lithos.errors import DocNotFound, ReceiptNotFound
from lithos.services.coordination import CoordinationService
from lithos.services.edges import EdgeService
from lithos.services.knowledge import KnowledgeService, WriteRequest
from lithos.store.stats import StatsStore

log = logging.getLogger("lithos.retrieval")


@dataclass(frozen=True)
class FeedbackOutcome:
    """What a completion's feedback did: the receipt it was bound to and how that receipt's
    notes were counted. ``applied`` is false when the receipt's feedback was given before."""

    receipt_id: str
    cited: tuple[str, ...]
    ignored: tuple[str, ...]
    misleading: tuple[str, ...]
    quarantined: tuple[str, ...]
    applied: bool
    edges_reinforced: tuple[str, ...] = ()
    edges_weakened: int = 0
    scout_weights: tuple[ScoutWeight, ...] = ()


@dataclass(frozen=True)
class ReplayReport:
    """What :meth:`TaskCompletion.replay` found: feedback looked at, and how much of it had
    to be applied again to the statistics and to the graph."""

    examined: int
    stats_reapplied: int
    graph_reapplied: int


# Completions that overlap may record their feedback a little before an earlier one is applied.
REPLAY_MARGIN = timedelta(minutes=10)


@dataclass(frozen=True)
class Completion:
    success: bool
    feedback: FeedbackOutcome | None


class TaskCompletion:
    def __init__(
        self,
        coordination: CoordinationService,
        stats: StatsStore,
        knowledge: KnowledgeService,
        edges: EdgeService,
        graph_rules: GraphLearning,
        clock: Callable[[], datetime] = utc_now,
        on_complete: Callable[[str], None] | None = None,
    ) -> None:
        """``on_complete(task_id)`` runs after each completion (consolidation queues the
        task); it must not block."""
        self.coordination = coordination
        self.stats = stats
        self.knowledge = knowledge
        self.edges = edges
        self.graph_rules = graph_rules
        self.clock = clock
        self.on_complete = on_complete

    async def complete(
        self,
        task_id: str,
        agent: str,
        outcome: str | None = None,
        cited_nodes: Sequence[str] | None = None,
        misleading_nodes: Sequence[str] | None = None,
        receipt_id: str | None = None,
    ) -> Completion:
        """Complete the task and learn from the feedback given with it.

        Raises ``ReceiptNotFound`` (the task stays open) when ``receipt_id`` names no receipt
        of this task; ``TaskNotFound`` and ``TaskNotOpen`` as completing does. Feedback with no
        receipt to bind to is kept on the task and teaches nothing.
        """
        wants = not (cited_nodes is None and misleading_nodes is None and receipt_id is None)
        receipt = await self._receipt(task_id, agent, receipt_id) if wants else None
        bound = receipt.id if receipt is not None else receipt_id
        await self.coordination.complete(
            task_id, agent, outcome, cited_nodes, misleading_nodes, bound
        )
        if receipt is None:
            self._completed(task_id)
            return Completion(success=True, feedback=None)
        feedback = split_feedback(
            receipt, task_id, agent, cited_nodes or (), misleading_nodes or ()
        )
        outcome_ = await self._learn(feedback, format_timestamp(self.clock()))
        self._completed(task_id)
        return Completion(success=True, feedback=outcome_)

    async def _learn(self, feedback: Feedback, now: str, graph: bool = True) -> FeedbackOutcome:
        """Apply ``feedback`` to the statistics, the graph (unless ``graph`` is false: it
        learned from this receipt before) and the exploration weights, each once per receipt.
        Neither transaction waits for the disk; coordination.db holds the feedback durably."""
        quarantine = await self.stats.apply(feedback, now)
        quarantined = [] if quarantine is None else await self._quarantine(quarantine, feedback)
        reinforced: tuple[str, ...] = ()
        weakened = 0
        scouts: tuple[ScoutWeight, ...] = ()
        if quarantine is not None and graph:  # first application of this receipt's feedback
            learned = await asyncio.to_thread(self.edges.learn, feedback, self.graph_rules)
            reinforced = tuple(e.edge_id for e in learned.reinforced)
            weakened = learned.weakened
        if quarantine is not None:
            scouts = await asyncio.to_thread(self._scout_weights, feedback)
        return FeedbackOutcome(
            receipt_id=feedback.receipt_id,
            cited=feedback.cited,
            ignored=feedback.ignored,
            misleading=feedback.misleading,
            quarantined=tuple(quarantined),
            applied=quarantine is not None,
            edges_reinforced=reinforced,
            edges_weakened=weakened,
            scout_weights=scouts,
        )

    async def replay(self) -> ReplayReport:
        """Apply feedback that coordination.db recorded durably but the learned state lost.

        A completion's feedback is learned in transactions that do not wait for the disk
        (stats.db, then edges.db): a kill keeps them, a power cut may take the latest back.
        Commits within one SQLite file survive in order, so what was lost is newer than the
        last application that survived: only feedback recorded since then (less a margin for
        completions that overlapped) is looked at. Idempotent; run at start-up."""
        last = await asyncio.to_thread(self.stats.last_applied_at)
        since = None if last is None else last - REPLAY_MARGIN
        # Every row returned is bound to a receipt (feedback_since asks for that).
        recorded = [
            (f, f.receipt_id)
            for f in await self.coordination.feedback_since(since)
            if f.receipt_id is not None
        ]
        ids = [receipt_id for _, receipt_id in recorded]
        applied = await asyncio.to_thread(self.stats.applied, ids)
        learned = await asyncio.to_thread(self.edges.learned, ids)
        epoch = await asyncio.to_thread(self.edges.learning_recorded_since)
        stats_redone = graph_redone = 0
        for row, receipt_id in recorded:
            if receipt_id in learned and receipt_id in applied:
                continue
            receipt = await self.stats.receipt(receipt_id)
            if receipt is None:
                continue  # its receipt is gone: nothing to bind the feedback to
            feedback = split_feedback(
                receipt,
                row.task_id,
                row.agent,
                row.cited_nodes or (),
                row.misleading_nodes or (),
            )
            # Feedback older than the graph's record of what it learned from is left alone.
            graph = receipt_id not in learned and epoch is not None and row.created_at >= epoch
            if receipt_id not in applied:
                await self._learn(feedback, format_timestamp(row.created_at), graph)
                stats_redone += 1
            elif graph:
                await asyncio.to_thread(self.edges.learn, feedback, self.graph_rules)
            graph_redone += graph
        if stats_redone or graph_redone:
            log.warning(
                "re-applied retrieval feedback lost from the learned state: %d to the "
                "statistics, %d to the graph",
                stats_redone,
                graph_redone,
            )
        return ReplayReport(len(recorded), stats_redone, graph_redone)

    def _scout_weights(self, feedback: Feedback) -> tuple[ScoutWeight, ...]:
        """The weights this feedback moved, as they are now."""
        if not self.stats.scouts.enabled or not feedback.explored:
            return ()
        moved = [t.scout for t in feedback.explored]
        return tuple(self.stats.scout_weight_table(moved, (feedback.query_class,)))

    def _completed(self, task_id: str) -> None:
        if self.on_complete is not None:
            self.on_complete(task_id)

    async def _receipt(self, task_id: str, agent: str, receipt_id: str | None) -> Receipt | None:
        if receipt_id is None:
            return await self.stats.latest_receipt(task_id, agent)
        receipt = await self.stats.receipt(receipt_id)
        if receipt is None or receipt.task_id != task_id:
            raise ReceiptNotFound(f"no receipt {receipt_id} for task {task_id}")
        return receipt

    async def _quarantine(self, note_ids: Sequence[str], feedback: Feedback) -> list[str]:
        agent = feedback.agent_id
        done = []
        for note_id in note_ids:
            entry = self.knowledge.catalog.get(note_id)
            if entry is not None and entry.status == "quarantined":
                continue  # already out of results: no need to write the file again
            change = MetadataChange(status="quarantined")
            try:
                await self.knowledge.write(WriteRequest(agent=agent, id=note_id, metadata=change))
            except DocNotFound:
                log.info("misleading note %s was deleted before it could be quarantined", note_id)
                continue
            done.append(note_id)
        return done

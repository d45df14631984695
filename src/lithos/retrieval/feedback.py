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
from datetime import datetime

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
        quarantine = await self.stats.apply(feedback, format_timestamp(self.clock()))
        quarantined = [] if quarantine is None else await self._quarantine(quarantine, agent)
        reinforced: tuple[str, ...] = ()
        weakened = 0
        scouts: tuple[ScoutWeight, ...] = ()
        if quarantine is not None:  # first application of this receipt's feedback
            learned = await asyncio.to_thread(self.edges.learn, feedback, self.graph_rules)
            reinforced = tuple(e.edge_id for e in learned.reinforced)
            weakened = learned.weakened
            scouts = await asyncio.to_thread(self._scout_weights, feedback)
        self._completed(task_id)
        return Completion(
            success=True,
            feedback=FeedbackOutcome(
                receipt_id=receipt.id,
                cited=feedback.cited,
                ignored=feedback.ignored,
                misleading=feedback.misleading,
                quarantined=tuple(quarantined),
                applied=quarantine is not None,
                edges_reinforced=reinforced,
                edges_weakened=weakened,
                scout_weights=scouts,
            ),
        )

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

    async def _quarantine(self, note_ids: Sequence[str], agent: str) -> list[str]:
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

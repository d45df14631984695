"""Working memory -> long-term memory (LCMA-DESIGN 5.7) and the decay of unused salience.

:meth:`ConsolidationService.consolidate` turns what one task did into lasting memory:
``related_to`` edges among notes the task retrieved at least ``min_activations`` times grow
one step, hypotheses the task cited (and nothing contradicts) are promoted once, and the
task's working memory is evicted once it is stale. Every change goes through a ledger in
the same transaction, so consolidating a task again changes nothing more.

:meth:`ConsolidationService.sweep` is the scheduled pass: it consolidates tasks whose working
memory went stale (a completion hook that never ran, a task abandoned), then lets unused
salience decay in small batches, each its own short transaction, guarded by the values it
read so a request that changes a note in between wins.

:class:`ConsolidationWorker` runs both on one background thread: a completed task is queued
and consolidated within moments, the sweep runs every ``interval``. Both block on SQLite, so
they are never called on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from datetime import datetime, timedelta

from lithos.domain.edges import EdgeUpsert, idle_days
from lithos.domain.memory import (
    CONSOLIDATION_ACTOR,
    ConsolidationReport,
    ConsolidationRules,
    SalienceDecay,
    WorkingItem,
    recurring_pairs,
    reinforcement_key,
)
from lithos.domain.metadata import ROOT_NAMESPACE
from lithos.domain.timestamps import format_timestamp, parse_timestamp, utc_now
from lithos.services.background import BackgroundWorker
from lithos.store.catalog import Catalog, CatalogEntry
from lithos.store.edges import EdgeStore
from lithos.store.memory import MemoryStore, SalienceUpdate

log = logging.getLogger("lithos.memory")
Clock = Callable[[], datetime]
STALE_TASKS_PER_SWEEP = 100
LEDGER_PRUNE_BATCH = 5_000
MIN_SALIENCE_CHANGE = 0.001  # smaller changes wait for the next sweep (decay composes exactly)


@dataclass(frozen=True)
class SweepReport:
    consolidated: tuple[ConsolidationReport, ...] = ()
    decayed: int = 0  # notes whose salience the sweep lowered
    visited: int = 0  # notes with statistics the decay pass looked at
    batches: int = 0


class ConsolidationService:
    def __init__(
        self,
        memory: MemoryStore,
        edges: EdgeStore,
        catalog: Catalog,
        rules: ConsolidationRules,
        decay: SalienceDecay,
        salience_ceiling: float,
        clock: Clock = utc_now,
        decay_batch: int = 200,
    ) -> None:
        self.memory = memory
        self.edges = edges
        self.catalog = catalog
        self.rules = rules
        self.decay = decay
        self.salience_ceiling = salience_ceiling
        self.clock = clock
        self.decay_batch = decay_batch

    # -- one task -----------------------------------------------------------------------------

    def consolidate(self, task_id: str) -> ConsolidationReport:
        """Consolidate the task's working memory (idempotent; see the module docstring)."""
        now = self.clock()
        recurring = self.memory.recurring(task_id, self.rules.min_activations, self.rules.max_items)
        entries = self.catalog.get_many([item.node_id for item in recurring])
        live = [item for item in recurring if item.node_id in entries]  # deleted since
        reinforced = self._reinforce(task_id, live, entries, now)
        promoted = self._promote(task_id, now)
        stale = format_timestamp(now - timedelta(hours=self.rules.stale_after_hours))
        evicted = self.memory.evict(task_id, stale)
        report = ConsolidationReport(
            task_id=task_id,
            recurring=tuple(item.node_id for item in live),
            reinforced=reinforced,
            promoted=tuple(promoted),
            evicted=evicted,
        )
        if report.changed:
            log.info(
                "consolidated task %s: %d edges reinforced, %d hypotheses promoted, %d evicted",
                task_id,
                len(reinforced),
                len(promoted),
                evicted,
            )
        return report

    def _reinforce(
        self,
        task_id: str,
        items: list[WorkingItem],
        entries: dict[str, CatalogEntry],
        now: datetime,
    ) -> tuple[tuple[str, str], ...]:
        activations = {item.node_id: item.activations for item in items}
        requests = []
        for a, b in recurring_pairs(items):
            space_a, space_b = entries[a].namespace, entries[b].namespace
            evidence = (
                f"used together in task {task_id}"
                f" (retrieved {activations[a]} and {activations[b]} times)"
            )
            request = EdgeUpsert(
                from_id=a,
                to_id=b,
                type="related_to",
                namespace=space_a if space_a == space_b else ROOT_NAMESPACE,
                provenance="rule",
                actor=CONSOLIDATION_ACTOR,
                evidence=(evidence,),
            )
            requests.append((reinforcement_key(task_id, (a, b)), request))
        edges = self.edges.reinforce_once(requests, now) if requests else []
        return tuple((e.from_id, e.to_id) for e in edges)

    def _promote(self, task_id: str, now: datetime) -> list[str]:
        """Hypotheses the task cited, never marked misleading by it, that no open or lost
        contradiction stands against."""
        cited, misleading = self.memory.task_outcomes(task_id)
        entries = self.catalog.get_many(sorted(cited - misleading))
        hypotheses = [n for n, e in entries.items() if e.note_type == "hypothesis"]
        confirmed = [n for n in hypotheses if not self._contradicted(n, now)]
        if not confirmed:
            return []
        boost = self.rules.promotion_salience_boost
        return self.memory.promote(
            confirmed, task_id, boost, self.salience_ceiling, format_timestamp(now)
        )

    def _contradicted(self, note_id: str, now: datetime) -> bool:
        edges = self.edges.touching([note_id], now, types=["contradicts"])
        if any(e.conflict_state in (None, "unreviewed") for e in edges):
            return True
        lost = [e.edge_id for e in edges if e.conflict_state in ("superseded", "refuted")]
        for events in self.edges.history(lost).values():
            winner = events[-1].winner_id if events else None
            if winner is not None and winner != note_id:
                return True
        return False

    # -- the scheduled pass -----------------------------------------------------------------------

    def sweep(self, stopping: threading.Event | None = None) -> SweepReport:
        """Consolidate and evict stale tasks, decay unused salience in batches, and forget old
        ledger keys. ``stopping`` ends the decay pass between batches."""
        now = self.clock()
        stale = format_timestamp(now - timedelta(hours=self.rules.stale_after_hours))
        reports = tuple(
            self.consolidate(task) for task in self.memory.stale_tasks(stale, STALE_TASKS_PER_SWEEP)
        )
        visited, decayed, batches = self.decay_salience(now, stopping)
        self.edges.prune_ledger(now - timedelta(days=self.rules.ledger_days), LEDGER_PRUNE_BATCH)
        return SweepReport(reports, decayed, visited, batches)

    def decay_salience(
        self, now: datetime, stopping: threading.Event | None = None
    ) -> tuple[int, int, int]:
        """Bring every note's stored salience down its type's curve to ``now``, ``decay_batch``
        notes per transaction. Returns (visited, lowered, batches)."""
        after, visited, lowered, batches = "", 0, 0, 0
        stamp = format_timestamp(now)
        while stopping is None or not stopping.is_set():
            rows = self.memory.salience_batch(after, self.decay_batch)
            if not rows:
                break
            batches += 1
            visited += len(rows)
            after = rows[-1].node_id
            entries = self.catalog.get_many([r.node_id for r in rows])
            updates = []
            for row in rows:
                entry = entries.get(row.node_id)
                if entry is None:
                    continue  # a deleted note: its statistics wait in case it comes back
                idle = 0.0 if row.anchor is None else idle_days(parse_timestamp(row.anchor), now)
                value = self.decay.salience(entry.note_type, row.salience, idle)
                if row.anchor is None or abs(value - row.salience) >= MIN_SALIENCE_CHANGE:
                    updates.append(
                        SalienceUpdate(row.node_id, row.salience, row.anchor, value, stamp)
                    )
            if updates:
                lowered += sum(1 for u in updates if u.salience < u.read_salience)
                self.memory.set_salience(updates)
        return visited, lowered, batches


class ConsolidationWorker(BackgroundWorker):
    """Consolidates completed tasks as they are queued, and runs the sweep (and then
    ``after_sweep``, concept formation) every ``interval``; queued tasks are followed by
    ``after_sweep`` too, so concepts form with consolidation."""

    thread_name = "lithos-consolidation"

    def __init__(
        self,
        service: ConsolidationService,
        interval: timedelta,
        after: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        super().__init__()
        self.service = service
        self.interval = interval
        self.after = after
        self._queue: deque[str] = deque()
        self._busy = False
        self._rounds = 0
        self._state = threading.Condition()  # guards the queue, busy and rounds

    def enqueue(self, task_id: str) -> None:
        """Consolidate this task soon (never blocks)."""
        with self._state:
            self._queue.append(task_id)
        self.notify()

    def sweep_now(self) -> None:
        """Run the scheduled pass as soon as possible."""
        with self._state:
            self._queue.append("")  # "" asks for a sweep
        self.notify()

    @property
    def rounds(self) -> int:
        """Rounds of work finished so far."""
        return self._rounds

    def wait_idle(self, timeout: float) -> bool:
        """Wait until everything queued so far has been done; False on timeout."""
        with self._state:
            return self._state.wait_for(lambda: not self._queue and not self._busy, timeout)

    def _run(self) -> None:
        first = True  # sweep at start: a short-lived (stdio) server may never reach interval
        while not self._stopping.is_set():
            woke = self._wake.wait(self.interval.total_seconds())
            self._wake.clear()
            if self._stopping.is_set():
                return
            with self._state:
                tasks = list(dict.fromkeys(self._queue))
                self._queue.clear()
                self._busy = True
            try:
                self._work(tasks, sweep=first or not woke or "" in tasks)
                first = False
            except Exception:
                log.exception("consolidation round failed; it runs again next time")
            finally:
                with self._state:
                    self._busy = False
                    self._rounds += 1
                    self._state.notify_all()

    def _work(self, tasks: Collection[str], sweep: bool) -> None:
        for task in tasks:
            if task:
                self.service.consolidate(task)
        if sweep:
            report = self.service.sweep(self._stopping)
            log.info(
                "memory sweep: %d stale tasks, salience of %d of %d notes decayed",
                len(report.consolidated),
                report.decayed,
                report.visited,
            )
        if self.after is not None and (sweep or tasks):
            asyncio.run(_awaited(self.after))


async def _awaited(make: Callable[[], Awaitable[object]]) -> None:
    await make()

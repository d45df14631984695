"""LCMA's learned state in ``.lithos/stats.db``: receipts, node statistics, per-query-class
priors, task working memory and the exploration scouts' learned weights.

This state is authoritative, not derived: it cannot be rebuilt from the notes, so it is
backed up with ``knowledge/`` and never wiped. Every change is one conditional upsert (no
read-check-write), so a second process or a PostgreSQL backend would stay correct, and each
public method is one transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime

from lithos.domain.retrieval import (
    QUERY_CLASSES,
    Feedback,
    LearningRules,
    NodeStats,
    Outcome,
    QueryClass,
    Receipt,
    ReceiptQuery,
    ScoutLearning,
    ScoutWeight,
    WorkingMemoryItem,
)
from lithos.domain.timestamps import parse_timestamp
from lithos.store import receipts
from lithos.store.sqlite import Database, Migration

STATS_SQL = """
CREATE TABLE node_stats (
    node_id TEXT PRIMARY KEY,
    salience REAL NOT NULL,
    retrieval_count INTEGER NOT NULL DEFAULT 0,
    cited_count INTEGER NOT NULL DEFAULT 0,
    ignored_count INTEGER NOT NULL DEFAULT 0,
    misleading_count INTEGER NOT NULL DEFAULT 0,
    last_retrieved_at TEXT,
    last_used_at TEXT
);
CREATE TABLE query_class_priors (
    node_id TEXT NOT NULL,
    query_class TEXT NOT NULL,
    prior REAL NOT NULL,
    PRIMARY KEY (node_id, query_class)
);
CREATE TABLE working_memory (
    task_id TEXT NOT NULL,
    node_id TEXT NOT NULL,
    agent_id TEXT,
    activations INTEGER NOT NULL,
    first_at TEXT NOT NULL,
    last_at TEXT NOT NULL,
    last_receipt_id TEXT NOT NULL,
    PRIMARY KEY (task_id, node_id)
);
CREATE TABLE feedback_applied (
    receipt_id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    applied_at TEXT NOT NULL
)
"""

SCOUT_WEIGHTS_SQL = """
CREATE TABLE scout_weights (
    scout TEXT NOT NULL,
    query_class TEXT NOT NULL,
    weight REAL NOT NULL,
    cited INTEGER NOT NULL DEFAULT 0,
    ignored INTEGER NOT NULL DEFAULT 0,
    misleading INTEGER NOT NULL DEFAULT 0,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (scout, query_class)
)
"""

STATS_MIGRATIONS = (
    Migration("0001_receipts", receipts.RECEIPTS_SQL),
    Migration("0002_node_stats", STATS_SQL),
    Migration("0003_scout_weights", SCOUT_WEIGHTS_SQL),
    Migration(
        "0004_feedback_applied_at",
        "CREATE INDEX feedback_applied_at ON feedback_applied(applied_at)",
    ),
)


class StatsStore:
    """Learned retrieval state behind one :class:`Database`; safe from any thread."""

    def __init__(
        self, db: Database, rules: LearningRules, scouts: ScoutLearning | None = None
    ) -> None:
        """``db`` must have been opened with :data:`STATS_MIGRATIONS`. ``scouts`` is how
        feedback moves the exploration scouts' weights (default: fixed, never learned)."""
        self.db = db
        self.rules = rules
        self.scouts = scouts if scouts is not None else ScoutLearning(enabled=False)

    def close(self) -> None:
        self.db.close()

    # -- a retrieval ------------------------------------------------------------------------

    async def record(self, receipt: Receipt) -> None:
        """Write the receipt; for a successful one also count each returned note as retrieved
        and put it in the task's working memory. One transaction, which the retrieval does not
        wait on the disk for: it survives a kill at once and a power cut about a second later
        (:meth:`Database.call`, ``durable=False``)."""

        def write(conn: sqlite3.Connection) -> None:
            receipts.insert(conn, receipt)
            if receipt.status != "ok" or not receipt.final_nodes:
                return
            now, ids = receipt.created_at, receipt.node_ids
            conn.executemany(
                "INSERT INTO node_stats(node_id, salience, retrieval_count, last_retrieved_at)"
                " VALUES (?, ?, 1, ?) ON CONFLICT(node_id) DO UPDATE SET"
                " retrieval_count = retrieval_count + 1,"
                " last_retrieved_at = excluded.last_retrieved_at",
                [(n, self.rules.default_salience, now) for n in ids],
            )
            if receipt.task_id is not None:
                conn.executemany(
                    "INSERT INTO working_memory(task_id, node_id, agent_id, activations,"
                    " first_at, last_at, last_receipt_id) VALUES (?, ?, ?, 1, ?, ?, ?)"
                    " ON CONFLICT(task_id, node_id) DO UPDATE SET"
                    " activations = activations + 1, last_at = excluded.last_at,"
                    " agent_id = excluded.agent_id, last_receipt_id = excluded.last_receipt_id",
                    [(receipt.task_id, n, receipt.agent_id, now, now, receipt.id) for n in ids],
                )

        await self.db.run(write, durable=False)

    # -- reads --------------------------------------------------------------------------------

    async def receipt(self, receipt_id: str) -> Receipt | None:
        return await self.db.run(lambda conn: receipts.get(conn, receipt_id))

    async def latest_receipt(self, task_id: str, agent_id: str) -> Receipt | None:
        return await self.db.run(lambda conn: receipts.latest(conn, task_id, agent_id))

    async def receipts(self, query: ReceiptQuery) -> list[Receipt]:
        return await self.db.run(lambda conn: receipts.query(conn, query))

    def node_stats(self, node_ids: Sequence[str]) -> dict[str, NodeStats]:
        """Stats of the notes that have any; others have none yet (default salience)."""
        return self.start_node_stats(node_ids)()

    def start_node_stats(self, node_ids: Sequence[str]) -> Callable[[], dict[str, NodeStats]]:
        """Queue :meth:`node_stats`'s read on the database thread and return at once a
        function that waits for its result: the caller works meanwhile."""
        ids = list(dict.fromkeys(node_ids))
        if not ids:
            return dict
        marks = ",".join("?" * len(ids))

        def read(conn: sqlite3.Connection) -> dict[str, NodeStats]:
            priors: dict[str, dict[str, float]] = {}
            for node, query_class, prior in conn.execute(
                f"SELECT node_id, query_class, prior FROM query_class_priors"
                f" WHERE node_id IN ({marks})",
                ids,
            ):
                priors.setdefault(node, {})[query_class] = prior
            rows = conn.execute(f"SELECT * FROM node_stats WHERE node_id IN ({marks})", ids)
            return {
                row["node_id"]: NodeStats(
                    node_id=row["node_id"],
                    salience=row["salience"],
                    retrieval_count=row["retrieval_count"],
                    cited_count=row["cited_count"],
                    ignored_count=row["ignored_count"],
                    misleading_count=row["misleading_count"],
                    last_retrieved_at=row["last_retrieved_at"],
                    last_used_at=row["last_used_at"],
                    query_class_priors=priors.get(row["node_id"], {}),
                )
                for row in rows
            }

        return self.db.start(read)

    def working_memory(self, task_id: str, limit: int) -> list[WorkingMemoryItem]:
        """The notes a task has been shown, most activated then most recent first."""
        rows = self.db.call(
            lambda conn: conn.execute(
                "SELECT node_id, activations, last_at FROM working_memory WHERE task_id = ?"
                " ORDER BY activations DESC, last_at DESC LIMIT ?",
                (task_id, limit),
            ).fetchall()
        )
        return [WorkingMemoryItem(r[0], r[1], r[2]) for r in rows]

    def partners(self, node_id: str, window: int, limit: int) -> list[tuple[str, int, int]]:
        return self.db.call(lambda conn: receipts.partners(conn, node_id, window, limit))

    def cited_together(self, seeds: Sequence[str], limit: int) -> list[tuple[str, str, int]]:
        return self.db.call(lambda conn: receipts.cited_together(conn, seeds, limit))

    # -- feedback -----------------------------------------------------------------------------

    async def apply(self, feedback: Feedback, now: str) -> list[str] | None:
        """Apply a task's feedback on one receipt, once (LCMA-DESIGN 5.6). Returns the notes
        whose misleading count reached the quarantine threshold, or ``None`` when this
        receipt's feedback was applied before (nothing changes)."""

        def write(conn: sqlite3.Connection) -> list[str] | None:
            first = conn.execute(
                "INSERT INTO feedback_applied(receipt_id, task_id, agent_id, applied_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT(receipt_id) DO NOTHING",
                (feedback.receipt_id, feedback.task_id, feedback.agent_id, now),
            ).rowcount
            if not first:
                return None
            outcomes: list[tuple[str, Outcome]] = [
                *((n, "cited") for n in feedback.cited),
                *((n, "ignored") for n in feedback.ignored),
                *((n, "misleading") for n in feedback.misleading),
            ]
            receipts.set_outcomes(conn, feedback.receipt_id, outcomes)
            self._cite(conn, feedback, now)
            self._ignore(conn, feedback)
            self._learn_scouts(conn, feedback, now)
            return self._mislead(conn, feedback)

        # Not waiting for the disk: coordination.db holds this feedback durably (the task's
        # completion) and TaskCompletion.replay applies what a power cut took back.
        return await self.db.run(write, durable=False)

    def applied(self, receipt_ids: Sequence[str]) -> set[str]:
        """Which of these receipts' feedback has been applied."""
        if not receipt_ids:
            return set()
        marks = ", ".join("?" * len(receipt_ids))
        sql = f"SELECT receipt_id FROM feedback_applied WHERE receipt_id IN ({marks})"
        return {row[0] for row in self.db.call(lambda c: c.execute(sql, receipt_ids).fetchall())}

    def last_applied_at(self) -> datetime | None:
        """When feedback was last applied (None: never)."""
        row = self.db.call(
            lambda conn: conn.execute("SELECT max(applied_at) FROM feedback_applied").fetchone()
        )
        return None if row[0] is None else parse_timestamp(row[0])

    def _learn_scouts(self, conn: sqlite3.Connection, feedback: Feedback, now: str) -> None:
        rules = self.scouts
        if not rules.enabled:
            return
        conn.executemany(
            "INSERT INTO scout_weights(scout, query_class, weight, cited, ignored, misleading,"
            " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT(scout, query_class) DO UPDATE SET"
            " weight = MAX(?, MIN(?, weight + ?)), cited = cited + excluded.cited,"
            " ignored = ignored + excluded.ignored,"
            " misleading = misleading + excluded.misleading, updated_at = excluded.updated_at",
            [
                (
                    t.scout,
                    feedback.query_class,
                    rules.bounded(rules.initial(t.scout) + rules.delta(t)),
                    t.cited,
                    t.ignored,
                    t.misleading,
                    now,
                    rules.floor,
                    rules.ceiling,
                    rules.delta(t),
                )
                for t in feedback.explored
            ],
        )

    # -- exploration scouts' weights ----------------------------------------------------------

    def scout_weights(self, query_class: str) -> dict[str, float]:
        """Each exploration scout's weight for ``query_class``: learned where feedback moved
        it, else its starting weight (both within the current bounds); empty when learning
        is off (the configured weights apply)."""
        if not self.scouts.enabled:
            return {}
        rows = self.db.call(
            lambda conn: conn.execute(
                "SELECT scout, weight FROM scout_weights WHERE query_class = ?", (query_class,)
            ).fetchall()
        )
        learned = {scout: self.scouts.bounded(weight) for scout, weight in rows}
        return {s: learned.get(s, self.scouts.initial(s)) for s in self.scouts.start} | learned

    def scout_weight_table(
        self, scouts: Sequence[str], query_classes: Sequence[QueryClass] = QUERY_CLASSES
    ) -> list[ScoutWeight]:
        """Every scout of ``scouts`` for every class of ``query_classes``: learned where
        feedback moved it, else its starting weight."""
        rows = self.db.call(lambda conn: conn.execute("SELECT * FROM scout_weights").fetchall())
        learned = {(r["scout"], r["query_class"]): r for r in rows} if self.scouts.enabled else {}
        table = []
        for scout in scouts:
            for query_class in query_classes:
                row = learned.get((scout, query_class))
                if row is None:
                    table.append(ScoutWeight(scout, query_class, self.scouts.initial(scout), False))
                    continue
                table.append(
                    ScoutWeight(
                        scout,
                        query_class,
                        self.scouts.bounded(row["weight"]),
                        True,
                        row["cited"],
                        row["ignored"],
                        row["misleading"],
                        row["updated_at"],
                    )
                )
        return table

    def _cite(self, conn: sqlite3.Connection, feedback: Feedback, now: str) -> None:
        r = self.rules
        start = _clamp(r.default_salience + r.cited_salience_boost, r)
        conn.executemany(
            "INSERT INTO node_stats(node_id, salience, cited_count, last_used_at)"
            " VALUES (?, ?, 1, ?) ON CONFLICT(node_id) DO UPDATE SET"
            " salience = MAX(?, MIN(?, salience + ?)), cited_count = cited_count + 1,"
            " last_used_at = excluded.last_used_at",
            [
                (n, start, now, r.salience_floor, r.salience_ceiling, r.cited_salience_boost)
                for n in feedback.cited
            ],
        )
        self._move_priors(conn, feedback.cited, feedback.query_class, r.cited_class_boost)

    def _ignore(self, conn: sqlite3.Connection, feedback: Feedback) -> None:
        r = self.rules
        # Salience falls only once a note is ignored chronically (more often than cited and
        # more than chronic_ignored_after times); before that only the query class learns.
        conn.executemany(
            "INSERT INTO node_stats(node_id, salience, ignored_count) VALUES (?, ?, 1)"
            " ON CONFLICT(node_id) DO UPDATE SET ignored_count = ignored_count + 1,"
            " salience = CASE WHEN ignored_count + 1 > ? AND ignored_count + 1 > cited_count"
            " THEN MAX(?, MIN(?, salience - ?)) ELSE salience END",
            [
                (
                    n,
                    r.default_salience,
                    r.chronic_ignored_after,
                    r.salience_floor,
                    r.salience_ceiling,
                    r.chronic_ignored_salience_penalty,
                )
                for n in feedback.ignored
            ],
        )
        self._move_priors(conn, feedback.ignored, feedback.query_class, -r.ignored_class_penalty)

    def _mislead(self, conn: sqlite3.Connection, feedback: Feedback) -> list[str]:
        r = self.rules
        start = _clamp(r.default_salience - r.misleading_salience_penalty, r)
        quarantine = []
        for node in feedback.misleading:
            (count,) = conn.execute(
                "INSERT INTO node_stats(node_id, salience, misleading_count) VALUES (?, ?, 1)"
                " ON CONFLICT(node_id) DO UPDATE SET misleading_count = misleading_count + 1,"
                " salience = MAX(?, MIN(?, salience - ?)) RETURNING misleading_count",
                (node, start, r.salience_floor, r.salience_ceiling, r.misleading_salience_penalty),
            ).fetchone()
            if count >= r.quarantine_after_misleading:
                quarantine.append(node)
        self._move_priors(
            conn, feedback.misleading, feedback.query_class, -r.misleading_class_penalty
        )
        return quarantine

    def _move_priors(
        self, conn: sqlite3.Connection, nodes: Sequence[str], query_class: str, delta: float
    ) -> None:
        bound = self.rules.prior_bound
        conn.executemany(
            "INSERT INTO query_class_priors(node_id, query_class, prior) VALUES (?, ?, ?)"
            " ON CONFLICT(node_id, query_class) DO UPDATE SET"
            " prior = MAX(?, MIN(?, prior + ?))",
            [(n, query_class, max(-bound, min(bound, delta)), -bound, bound, delta) for n in nodes],
        )


def _clamp(value: float, rules: LearningRules) -> float:
    return max(rules.salience_floor, min(rules.salience_ceiling, value))

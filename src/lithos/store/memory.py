"""Living memory's learned state in ``.lithos/stats.db``: promotions of hypotheses, the decay
clock of salience, and the concept notes Lithos formed.

Authoritative, like the rest of ``stats.db``. :class:`MemoryStore` is what the services use;
:class:`SqliteMemoryStore` implements it over the stats database. Every write is conditional
(``ON CONFLICT``, or an ``UPDATE`` guarded by the values read) so two workers, or a request
racing the sweep, never lose an update; each method is one transaction.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from lithos.domain.memory import CoactivationPair, Concept, WorkingItem
from lithos.store.sqlite import Database, Migration

MEMORY_MIGRATIONS = (
    Migration(
        "memory_0001_consolidation_decay_concepts",
        """
        ALTER TABLE node_stats ADD COLUMN salience_at TEXT;
        CREATE INDEX working_memory_last ON working_memory(task_id, last_at);
        CREATE TABLE hypothesis_promotions (
            node_id TEXT PRIMARY KEY,
            task_id TEXT NOT NULL,
            promoted_at TEXT NOT NULL
        );
        CREATE TABLE concepts (
            concept_key TEXT PRIMARY KEY,
            concept_id TEXT UNIQUE,
            namespace TEXT NOT NULL,
            title TEXT NOT NULL,
            members TEXT NOT NULL,
            written_hash TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE TABLE concept_members (
            concept_key TEXT NOT NULL REFERENCES concepts(concept_key) ON DELETE CASCADE,
            node_id TEXT NOT NULL,
            PRIMARY KEY (concept_key, node_id)
        );
        CREATE INDEX concept_members_node ON concept_members(node_id)
        """,
    ),
)

# When a note's salience was last set: the sweep's own stamp, else its last use or retrieval.
_ANCHOR = "coalesce(salience_at, last_used_at, last_retrieved_at)"


@dataclass(frozen=True)
class SalienceRow:
    node_id: str
    salience: float
    anchor: str | None  # when the stored salience was last set (None: unknown, no decay)


@dataclass(frozen=True)
class SalienceUpdate:
    """Set ``salience`` as of ``at``, but only if the row still holds what was read."""

    node_id: str
    read_salience: float
    read_anchor: str | None
    salience: float
    at: str


@dataclass(frozen=True)
class ConceptClaim:
    concept_key: str
    namespace: str
    title: str
    members: tuple[str, ...]


class MemoryStore(Protocol):
    def recurring(self, task_id: str, min_activations: int, limit: int) -> list[WorkingItem]: ...
    def stale_tasks(self, before: str, limit: int) -> list[str]: ...
    def evict(self, task_id: str, before: str) -> int: ...
    def task_outcomes(self, task_id: str) -> tuple[set[str], set[str]]: ...
    def promote(
        self, node_ids: Sequence[str], task_id: str, boost: float, ceiling: float, at: str
    ) -> list[str]: ...
    def salience_batch(self, after: str, limit: int) -> list[SalienceRow]: ...
    def set_salience(self, updates: Sequence[SalienceUpdate]) -> int: ...
    def coactivation(self, min_count: int, limit: int) -> list[CoactivationPair]: ...
    def concepts(self) -> list[Concept]: ...
    def concept_titles(self) -> dict[str, str]: ...
    def claim_concept(self, claim: ConceptClaim, at: str) -> bool: ...
    def concept_written(
        self, key: str, concept_id: str, members: Sequence[str], written_hash: str, at: str
    ) -> None: ...
    def concept_links(self, note_ids: Sequence[str]) -> list[tuple[str, str]]: ...
    def recent_retrievals(self, node_ids: Sequence[str], since: str) -> dict[str, int]: ...


class SqliteMemoryStore:
    """:class:`MemoryStore` over the stats database (opened with :data:`MEMORY_MIGRATIONS`)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    # -- working memory ---------------------------------------------------------------------

    def recurring(self, task_id: str, min_activations: int, limit: int) -> list[WorkingItem]:
        rows = self._db.call(
            lambda conn: conn.execute(
                "SELECT node_id, activations FROM working_memory"
                " WHERE task_id = ? AND activations >= ?"
                " ORDER BY activations DESC, node_id LIMIT ?",
                (task_id, min_activations, limit),
            ).fetchall()
        )
        return [WorkingItem(r[0], r[1]) for r in rows]

    def stale_tasks(self, before: str, limit: int) -> list[str]:
        """Tasks whose working memory has not been touched since ``before``."""
        rows = self._db.call(
            lambda conn: conn.execute(
                "SELECT task_id FROM working_memory GROUP BY task_id"
                " HAVING max(last_at) < ? ORDER BY max(last_at), task_id LIMIT ?",
                (before, limit),
            ).fetchall()
        )
        return [r[0] for r in rows]

    def evict(self, task_id: str, before: str) -> int:
        """Drop the task's working memory if none of it was touched since ``before`` (a task
        that came back to life in the meantime keeps it)."""
        return self._db.call(
            lambda conn: (
                conn.execute(
                    "DELETE FROM working_memory WHERE task_id = ? AND NOT EXISTS ("
                    " SELECT 1 FROM working_memory w WHERE w.task_id = ? AND w.last_at >= ?)",
                    (task_id, task_id, before),
                ).rowcount
            )
        )

    def task_outcomes(self, task_id: str) -> tuple[set[str], set[str]]:
        """Notes the task's feedback cited, and notes it marked misleading."""
        rows = self._db.call(
            lambda conn: conn.execute(
                "SELECT n.node_id, n.outcome FROM receipts r"
                " JOIN receipt_nodes n ON n.receipt_id = r.id"
                " WHERE r.task_id = ? AND n.outcome IN ('cited', 'misleading')",
                (task_id,),
            ).fetchall()
        )
        cited = {r[0] for r in rows if r[1] == "cited"}
        misleading = {r[0] for r in rows if r[1] == "misleading"}
        return cited, misleading

    def promote(
        self, node_ids: Sequence[str], task_id: str, boost: float, ceiling: float, at: str
    ) -> list[str]:
        """Promote each hypothesis once, ever: record it and raise its salience by ``boost``
        (up to ``ceiling``). Returns the notes promoted now."""

        def work(conn: sqlite3.Connection) -> list[str]:
            done = []
            for node in node_ids:
                first = conn.execute(
                    "INSERT INTO hypothesis_promotions(node_id, task_id, promoted_at)"
                    " VALUES (?, ?, ?) ON CONFLICT(node_id) DO NOTHING",
                    (node, task_id, at),
                ).rowcount
                if not first:
                    continue
                conn.execute(
                    "UPDATE node_stats SET salience = min(?, salience + ?) WHERE node_id = ?",
                    (ceiling, boost, node),
                )
                done.append(node)
            return done

        return self._db.call(work)

    # -- salience decay ---------------------------------------------------------------------

    def salience_batch(self, after: str, limit: int) -> list[SalienceRow]:
        """Up to ``limit`` notes with statistics whose id sorts after ``after``."""
        rows = self._db.call(
            lambda conn: conn.execute(
                f"SELECT node_id, salience, {_ANCHOR} FROM node_stats"
                " WHERE node_id > ? ORDER BY node_id LIMIT ?",
                (after, limit),
            ).fetchall()
        )
        return [SalienceRow(r[0], r[1], r[2]) for r in rows]

    def set_salience(self, updates: Sequence[SalienceUpdate]) -> int:
        """Apply each update whose row is unchanged since it was read; returns how many."""

        def work(conn: sqlite3.Connection) -> int:
            applied = 0
            for u in updates:
                applied += conn.execute(
                    "UPDATE node_stats SET salience = ?, salience_at = ?"
                    f" WHERE node_id = ? AND salience = ? AND {_ANCHOR} IS ?",
                    (u.salience, u.at, u.node_id, u.read_salience, u.read_anchor),
                ).rowcount
            return applied

        return self._db.call(work)

    # -- concepts ---------------------------------------------------------------------------

    def coactivation(self, min_count: int, limit: int) -> list[CoactivationPair]:
        """Pairs of notes cited together in at least ``min_count`` receipts, most first."""
        rows = self._db.call(
            lambda conn: conn.execute(
                "SELECT a.node_id, b.node_id, COUNT(*) AS n FROM receipt_nodes a"
                " JOIN receipt_nodes b ON b.receipt_id = a.receipt_id AND a.node_id < b.node_id"
                " WHERE a.outcome = 'cited' AND b.outcome = 'cited'"
                " GROUP BY a.node_id, b.node_id HAVING n >= ?"
                " ORDER BY n DESC, a.node_id, b.node_id LIMIT ?",
                (min_count, limit),
            ).fetchall()
        )
        return [CoactivationPair(r[0], r[1], r[2]) for r in rows]

    def concepts(self) -> list[Concept]:
        rows = self._db.call(
            lambda conn: conn.execute(
                "SELECT * FROM concepts WHERE concept_id IS NOT NULL ORDER BY concept_key"
            ).fetchall()
        )
        return [_concept(r) for r in rows]

    def concept_titles(self) -> dict[str, str]:
        """Every claimed concept's title by key, written or not yet (a crash between claiming
        and writing leaves one to adopt)."""
        rows = self._db.call(
            lambda conn: conn.execute("SELECT concept_key, title FROM concepts").fetchall()
        )
        return {r[0]: r[1] for r in rows}

    def claim_concept(self, claim: ConceptClaim, at: str) -> bool:
        """Reserve a new concept for this cluster; False when it was claimed before."""
        return bool(
            self._db.call(
                lambda conn: (
                    conn.execute(
                        "INSERT INTO concepts(concept_key, namespace, title, members, created_at,"
                        " updated_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                        (
                            claim.concept_key,
                            claim.namespace,
                            claim.title,
                            json.dumps(list(claim.members)),
                            at,
                            at,
                        ),
                    ).rowcount
                )
            )
        )

    def concept_written(
        self, key: str, concept_id: str, members: Sequence[str], written_hash: str, at: str
    ) -> None:
        """Record the concept's note, its members now and the file version Lithos wrote."""

        def work(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE concepts SET concept_id = ?, members = ?, written_hash = ?,"
                " updated_at = ? WHERE concept_key = ?",
                (concept_id, json.dumps(list(members)), written_hash, at, key),
            )
            conn.execute("DELETE FROM concept_members WHERE concept_key = ?", (key,))
            conn.executemany(
                "INSERT INTO concept_members(concept_key, node_id) VALUES (?, ?)",
                [(key, m) for m in members],
            )

        self._db.call(work)

    def concept_links(self, note_ids: Sequence[str]) -> list[tuple[str, str]]:
        """``(concept_id, member_id)`` for every concept among ``note_ids`` or having a
        member among them."""
        ids = list(dict.fromkeys(note_ids))
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        rows = self._db.call(
            lambda conn: conn.execute(
                "SELECT c.concept_id, m.node_id FROM concepts c"
                " JOIN concept_members m ON m.concept_key = c.concept_key"
                f" WHERE c.concept_id IN ({marks}) OR c.concept_key IN ("
                f"  SELECT concept_key FROM concept_members WHERE node_id IN ({marks}))"
                " ORDER BY c.concept_id, m.node_id",
                [*ids, *ids],
            ).fetchall()
        )
        return [(r[0], r[1]) for r in rows]

    def recent_retrievals(self, node_ids: Sequence[str], since: str) -> dict[str, int]:
        ids = list(dict.fromkeys(node_ids))
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self._db.call(
            lambda conn: conn.execute(
                "SELECT n.node_id, COUNT(*) FROM receipt_nodes n"
                " JOIN receipts r ON r.id = n.receipt_id"
                f" WHERE n.node_id IN ({marks}) AND r.created_at >= ? GROUP BY n.node_id",
                [*ids, since],
            ).fetchall()
        )
        return {r[0]: r[1] for r in rows}


def _concept(row: Any) -> Concept:
    return Concept(
        concept_id=row["concept_id"],
        cluster_key=row["concept_key"],
        namespace=row["namespace"],
        members=tuple(json.loads(row["members"])),
        written_hash=row["written_hash"],
    )

"""The edge store: LCMA's typed, weighted edges, their conflicts and the frontmatter declarations.

``.lithos/edges.db`` is authoritative learned state (never rebuilt from the files, backed up with
``knowledge/``), except ``edge_declarations``, which mirrors what people wrote in frontmatter.
:class:`EdgeStore` is the interface the services use; :class:`SqliteEdgeStore` is its SQLite
implementation. Every method is one transaction. Writes never read first and then write: an
upsert is one ``INSERT ... ON CONFLICT DO UPDATE`` whose reinforcement is computed from the row's
own decayed weight, so two agents reinforcing the same edge at once both count. A ``rule``
upsert (feedback reinforcing an edge) never relabels an existing edge's provenance or actor.

Edges of a deleted note are marked (``removed_at``) rather than dropped, so a note that comes
back under the same id (a file renamed in two steps) keeps what was learned about it; marked
edges are invisible to every read and purged after a grace period.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, cast

from lithos.domain.edges import (
    MAX_EVIDENCE,
    Conflict,
    ConflictEvent,
    ConflictFilter,
    ConflictResolution,
    Declaration,
    DeclaredEdges,
    Edge,
    EdgeFilter,
    EdgeRules,
    EdgeUpsert,
)
from lithos.domain.links import normalise_target
from lithos.domain.timestamps import format_timestamp, parse_timestamp, utc_now
from lithos.store.sqlite import Database, Migration

EDGE_MIGRATIONS: list[Migration] = [
    Migration(
        "edges_0001_initial",
        """
        CREATE TABLE edges (
          edge_id TEXT PRIMARY KEY,
          from_id TEXT NOT NULL,
          to_id TEXT NOT NULL,
          type TEXT NOT NULL CHECK (type IN ('related_to', 'supports', 'contradicts',
            'is_example_of', 'depends_on', 'analogy_to', 'refines')),
          weight REAL NOT NULL CHECK (weight >= 0 AND weight <= 1),
          namespace TEXT NOT NULL,
          provenance TEXT NOT NULL CHECK (provenance IN ('human', 'agent', 'rule', 'inferred')),
          actor TEXT,
          evidence JSON NOT NULL DEFAULT '[]',
          conflict_state TEXT CHECK (conflict_state IN ('unreviewed', 'accepted_dual',
            'superseded', 'refuted', 'merged')),
          created_at TEXT NOT NULL,
          updated_at TEXT NOT NULL,
          last_used_at TEXT NOT NULL,
          removed_at TEXT,
          UNIQUE (from_id, to_id, type, namespace)
        );
        CREATE INDEX edges_to ON edges(to_id);
        CREATE INDEX edges_type_namespace ON edges(type, namespace);
        CREATE INDEX edges_namespace ON edges(namespace);
        CREATE INDEX edges_removed ON edges(removed_at) WHERE removed_at IS NOT NULL;
        CREATE INDEX edges_conflicts ON edges(conflict_state) WHERE conflict_state IS NOT NULL;
        CREATE TABLE conflict_events (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          edge_id TEXT NOT NULL,
          state TEXT NOT NULL,
          actor TEXT,
          winner_id TEXT,
          note TEXT,
          at TEXT NOT NULL
        );
        CREATE INDEX conflict_events_edge ON conflict_events(edge_id, id);
        CREATE TABLE edge_declarations (
          source_id TEXT NOT NULL,
          position INTEGER NOT NULL,
          type TEXT NOT NULL,
          target TEXT NOT NULL,
          target_key TEXT NOT NULL,
          PRIMARY KEY (source_id, position)
        );
        CREATE INDEX edge_declarations_key ON edge_declarations(target_key)
        """,
    ),
    Migration(
        "edges_0002_declaration_sources",
        """
        CREATE TABLE declaration_sources (
          source_id TEXT PRIMARY KEY,
          content_hash TEXT NOT NULL,
          namespace TEXT NOT NULL,
          actor TEXT
        )
        """,
    ),
    Migration(
        "edges_0003_reinforcement_ledger",
        """
        CREATE TABLE reinforcements (
          key TEXT PRIMARY KEY,
          at TEXT NOT NULL
        );
        CREATE INDEX reinforcements_at ON reinforcements(at)
        """,
    ),
    Migration("edges_0004_feedback_ledger_epoch", lambda conn: _ledger_epoch(conn, "feedback:")),
]


def _ledger_epoch(conn: sqlite3.Connection, prefix: str) -> None:
    """Remember from when on the ledger records keys starting with ``prefix``: a key missing
    from before then says nothing (it was never written)."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS ledger_epochs (prefix TEXT PRIMARY KEY, since TEXT NOT NULL)"
    )
    conn.execute(
        "INSERT INTO ledger_epochs(prefix, since) VALUES (?, ?) ON CONFLICT DO NOTHING",
        (prefix, format_timestamp(utc_now())),
    )


# The weight as of :now, from the stored weight and the days since last use.
_CURRENT = (
    "lithos_edge_weight(edges.type, edges.provenance, edges.weight,"
    " julianday(:now) - julianday(edges.last_used_at))"
)

_EVIDENCE_MERGE = f"""
    CASE WHEN excluded.evidence = '[]' THEN edges.evidence ELSE (
      SELECT json_group_array(value) FROM (
        SELECT value, src, k FROM (
          SELECT value, src, k FROM (
            SELECT value, 0 AS src, key AS k FROM json_each(edges.evidence)
             WHERE value NOT IN (SELECT value FROM json_each(excluded.evidence))
            UNION ALL
            SELECT value, 1 AS src, key AS k FROM json_each(excluded.evidence))
          ORDER BY src DESC, k DESC LIMIT {MAX_EVIDENCE})
        ORDER BY src, k)) END"""

_UPSERT = f"""
    INSERT INTO edges (edge_id, from_id, to_id, type, weight, namespace, provenance, actor,
                       evidence, conflict_state, created_at, updated_at, last_used_at)
    VALUES (:edge_id, :from_id, :to_id, :type, :initial, :namespace, :provenance, :actor,
            :evidence, :conflict_state, :now, :now, :now)
    ON CONFLICT (from_id, to_id, type, namespace) DO UPDATE SET
      weight = CASE
        WHEN edges.removed_at IS NOT NULL THEN :initial
        WHEN :explicit IS NOT NULL THEN :explicit
        ELSE min(1.0, {_CURRENT} + :step) END,
      provenance = CASE WHEN edges.removed_at IS NULL AND (edges.provenance = 'human'
                             OR excluded.provenance = 'rule')
                        THEN edges.provenance ELSE excluded.provenance END,
      actor = CASE WHEN edges.removed_at IS NULL AND excluded.provenance = 'rule'
                   THEN edges.actor ELSE excluded.actor END,
      evidence = {_EVIDENCE_MERGE},
      conflict_state = CASE WHEN edges.removed_at IS NOT NULL THEN excluded.conflict_state
                            ELSE coalesce(edges.conflict_state, excluded.conflict_state) END,
      updated_at = excluded.updated_at,
      last_used_at = excluded.last_used_at,
      removed_at = NULL
    RETURNING *, weight AS current_weight
"""


class EdgeStore(Protocol):
    """What the services need of an edge store. Times are aware UTC datetimes; ``now`` is
    passed in so a whole operation sees one instant (and tests can set it)."""

    def upsert(self, requests: Sequence[EdgeUpsert], now: datetime) -> list[Edge]:
        """Create or reinforce each edge (see :class:`EdgeUpsert`); a new ``contradicts`` edge
        opens a conflict in state ``unreviewed``."""
        ...

    def reinforce_once(
        self, requests: Sequence[tuple[str, EdgeUpsert]], now: datetime
    ) -> list[Edge]:
        """Upsert each edge whose ledger ``key`` has never been applied, recording the key in
        the same transaction; returns the edges changed now (none on a repeat)."""
        ...

    def prune_ledger(self, before: datetime, limit: int) -> int:
        """Forget up to ``limit`` ledger keys applied before ``before``."""
        ...

    def get(self, edge_id: str, now: datetime) -> Edge | None: ...

    def find(self, query: EdgeFilter, now: datetime) -> list[Edge]:
        """Matching edges, strongest first."""
        ...

    def touching(
        self,
        note_ids: Sequence[str],
        now: datetime,
        namespaces: Sequence[str] | None = None,
        types: Sequence[str] | None = None,
        both_ends: bool = False,
    ) -> list[Edge]:
        """Edges with one end (or, with ``both_ends``, both ends) in ``note_ids``, strongest
        first."""
        ...

    def mark_used(self, edge_ids: Sequence[str], now: datetime) -> int:
        """Start the decay clock again from ``now`` at the edges' current weights."""
        ...

    def learn(
        self,
        reinforce: Sequence[EdgeUpsert],
        weaken: Sequence[tuple[str, Sequence[str]]],
        step: float,
        now: datetime,
        once: str | None = None,
    ) -> tuple[list[Edge], int]:
        """One transaction of feedback: upsert ``reinforce``; for each ``(note, others)`` of
        ``weaken`` lower by ``step`` every edge between ``note`` and one of ``others`` that
        neither a person made (``human``) nor records a contradiction. Returns the reinforced
        edges and how many were weakened.

        With ``once``, a ledger key recorded in the same transaction: a repeat changes nothing
        and returns ``([], 0)``. The commit does not wait for the disk (it survives a kill,
        not a power cut): the feedback it learns from is durable elsewhere and is replayed."""
        ...

    def ledger_keys(self, keys: Sequence[str]) -> set[str]:
        """Which of ``keys`` the ledger holds."""
        ...

    def ledger_since(self, prefix: str) -> datetime | None:
        """From when on the ledger records keys starting with ``prefix`` (None: it does not)."""
        ...

    def remove_note(self, note_id: str, now: datetime) -> int:
        """Mark every edge of the note removed and drop its declarations; returns the count."""
        ...

    def restore(self, note_ids: Sequence[str] | None, is_live: Callable[[str], bool]) -> int:
        """Unmark removed edges touching ``note_ids`` (any, when None) whose both ends are
        live notes again."""
        ...

    def purge_removed(self, before: datetime, limit: int) -> int: ...

    def resolve(self, decision: ConflictResolution, now: datetime) -> Conflict | None:
        """Set a conflict's state and append it to the history; None for no such conflict."""
        ...

    def conflicts(self, query: ConflictFilter, now: datetime) -> list[Conflict]: ...

    def history(self, edge_ids: Sequence[str]) -> dict[str, tuple[ConflictEvent, ...]]:
        """Each conflict's events, oldest first."""
        ...

    def source_hashes(self) -> dict[str, str]:
        """The file version whose frontmatter was last read, by note."""
        ...

    def declarations(self, source_ids: Sequence[str] | None = None) -> dict[str, DeclaredEdges]:
        """Declarations by source note (every source with any when ``source_ids`` is None)."""
        ...

    def set_declarations(
        self, declared: Sequence[DeclaredEdges], record_all: bool = False
    ) -> list[str]:
        """Record what each note declares now; returns the notes whose declarations changed.

        Only changes are written (a note declaring nothing new costs no write), unless
        ``record_all``, which also records each note's file version as read."""
        ...

    def sources_declaring(self, target_keys: Iterable[str]) -> list[str]:
        """Notes with a declaration whose normalised target is one of ``target_keys``."""
        ...

    def sync_declared(
        self, source_id: str, desired: Sequence[EdgeUpsert], now: datetime
    ) -> tuple[int, int]:
        """Make the human edges from ``source_id`` exactly ``desired``; (added, removed)."""
        ...

    def close(self) -> None: ...


class SqliteEdgeStore:
    """:class:`EdgeStore` over one SQLite file."""

    def __init__(self, db: Database, rules: EdgeRules) -> None:
        self._db = db
        self._rules = rules
        db.call(self._register_functions)

    @classmethod
    def open(cls, path: Path, rules: EdgeRules) -> SqliteEdgeStore:
        return cls(Database(path, EDGE_MIGRATIONS), rules)

    def close(self) -> None:
        self._db.close()

    def _register_functions(self, conn: sqlite3.Connection) -> None:
        conn.create_function("lithos_edge_weight", 4, self._rules.decay.weight, deterministic=True)

    # -- edges ----------------------------------------------------------------------------

    def upsert(self, requests: Sequence[EdgeUpsert], now: datetime) -> list[Edge]:
        stamp = format_timestamp(now)

        def work(conn: sqlite3.Connection) -> list[Edge]:
            edges = []
            for request in requests:
                row = conn.execute(_UPSERT, self._params(request, stamp)).fetchone()
                edge = _edge(row)
                if edge.type == "contradicts":
                    _open_conflict(conn, edge, request.actor, stamp)
                edges.append(edge)
            return edges

        return self._db.call(work)

    def reinforce_once(
        self, requests: Sequence[tuple[str, EdgeUpsert]], now: datetime
    ) -> list[Edge]:
        stamp = format_timestamp(now)

        def work(conn: sqlite3.Connection) -> list[Edge]:
            edges = []
            for key, request in requests:
                if _record_once(conn, key, stamp):
                    row = conn.execute(_UPSERT, self._params(request, stamp)).fetchone()
                    edges.append(_edge(row))
            return edges

        return self._db.call(work)

    def prune_ledger(self, before: datetime, limit: int) -> int:
        return self._db.call(
            lambda conn: (
                conn.execute(
                    "DELETE FROM reinforcements WHERE key IN (SELECT key FROM reinforcements"
                    " WHERE at < ? LIMIT ?)",
                    (format_timestamp(before), limit),
                ).rowcount
            )
        )

    def get(self, edge_id: str, now: datetime) -> Edge | None:
        rows = self._select("edges.edge_id = :edge_id", {"edge_id": edge_id}, now, limit=1)
        return rows[0] if rows else None

    def find(self, query: EdgeFilter, now: datetime) -> list[Edge]:
        where: list[str] = ["1 = 1"]
        params: dict[str, Any] = {}
        for column in ("from_id", "to_id", "type", "namespace"):
            value = getattr(query, column)
            if value is not None:
                where.append(f"edges.{column} = :{column}")
                params[column] = value
        where.extend(_excluding(query.hidden, params))
        return self._select(" AND ".join(where), params, now, limit=query.limit)

    def touching(
        self,
        note_ids: Sequence[str],
        now: datetime,
        namespaces: Sequence[str] | None = None,
        types: Sequence[str] | None = None,
        both_ends: bool = False,
    ) -> list[Edge]:
        if not note_ids:
            return []
        params: dict[str, Any] = {}
        ids = _placeholders("id", note_ids, params)
        joiner = " AND " if both_ends else " OR "
        where = [f"(edges.from_id IN ({ids}){joiner}edges.to_id IN ({ids}))"]
        if namespaces is not None:
            # Unary + keeps the planner on the endpoint indexes: a type or namespace matches
            # far more edges than a handful of notes do.
            where.append(f"+edges.namespace IN ({_placeholders('ns', namespaces, params)})")
        if types is not None:
            where.append(f"+edges.type IN ({_placeholders('type', types, params)})")
        return self._select(" AND ".join(where), params, now, limit=None)

    def mark_used(self, edge_ids: Sequence[str], now: datetime) -> int:
        if not edge_ids:
            return 0
        params: dict[str, Any] = {"now": format_timestamp(now)}
        ids = _placeholders("id", edge_ids, params)
        sql = (
            f"UPDATE edges SET weight = {_CURRENT}, last_used_at = :now"
            f" WHERE edge_id IN ({ids}) AND removed_at IS NULL"
        )
        return self._db.call(lambda conn: conn.execute(sql, params).rowcount)

    def learn(
        self,
        reinforce: Sequence[EdgeUpsert],
        weaken: Sequence[tuple[str, Sequence[str]]],
        step: float,
        now: datetime,
        once: str | None = None,
    ) -> tuple[list[Edge], int]:
        stamp = format_timestamp(now)

        def work(conn: sqlite3.Connection) -> tuple[list[Edge], int]:
            if once is not None and not _record_once(conn, once, stamp):
                return [], 0
            edges = [
                _edge(conn.execute(_UPSERT, self._params(r, stamp)).fetchone()) for r in reinforce
            ]
            weakened = 0
            for note_id, others in weaken:
                if not others:
                    continue
                params: dict[str, Any] = {"note": note_id, "now": stamp, "step": step}
                ids = _placeholders("id", others, params)
                weakened += conn.execute(
                    f"UPDATE edges SET weight = max(0.0, {_CURRENT} - :step),"
                    " last_used_at = :now, updated_at = :now"
                    " WHERE removed_at IS NULL AND provenance != 'human'"
                    " AND type != 'contradicts'"
                    f" AND ((from_id = :note AND to_id IN ({ids}))"
                    f" OR (to_id = :note AND from_id IN ({ids})))",
                    params,
                ).rowcount
            return edges, weakened

        return self._db.call(work, durable=once is None)

    def ledger_keys(self, keys: Sequence[str]) -> set[str]:
        if not keys:
            return set()
        params: dict[str, Any] = {}
        sql = f"SELECT key FROM reinforcements WHERE key IN ({_placeholders('k', keys, params)})"
        return {row[0] for row in self._db.call(lambda conn: conn.execute(sql, params).fetchall())}

    def ledger_since(self, prefix: str) -> datetime | None:
        row = self._db.call(
            lambda conn: conn.execute(
                "SELECT since FROM ledger_epochs WHERE prefix = ?", (prefix,)
            ).fetchone()
        )
        return None if row is None else parse_timestamp(row[0])

    def remove_note(self, note_id: str, now: datetime) -> int:
        def work(conn: sqlite3.Connection) -> int:
            conn.execute("DELETE FROM edge_declarations WHERE source_id = ?", (note_id,))
            conn.execute("DELETE FROM declaration_sources WHERE source_id = ?", (note_id,))
            return conn.execute(
                "UPDATE edges SET removed_at = ? WHERE (from_id = ? OR to_id = ?)"
                " AND removed_at IS NULL",
                (format_timestamp(now), note_id, note_id),
            ).rowcount

        return self._db.call(work)

    def restore(self, note_ids: Sequence[str] | None, is_live: Callable[[str], bool]) -> int:
        params: dict[str, Any] = {}
        sql = "SELECT edge_id, from_id, to_id FROM edges WHERE removed_at IS NOT NULL"
        if note_ids is not None:
            if not note_ids:
                return 0
            ids = _json_values("ids", note_ids, params)
            sql += f" AND (from_id IN ({ids}) OR to_id IN ({ids}))"

        def work(conn: sqlite3.Connection) -> int:
            rows = conn.execute(sql, params).fetchall()
            back = [r["edge_id"] for r in rows if is_live(r["from_id"]) and is_live(r["to_id"])]
            conn.executemany(
                "UPDATE edges SET removed_at = NULL WHERE edge_id = ?", [(e,) for e in back]
            )
            return len(back)

        return self._db.call(work)

    def purge_removed(self, before: datetime, limit: int) -> int:
        return self._db.call(
            lambda conn: (
                conn.execute(
                    "DELETE FROM edges WHERE edge_id IN (SELECT edge_id FROM edges"
                    " WHERE removed_at IS NOT NULL AND removed_at < ? LIMIT ?)",
                    (format_timestamp(before), limit),
                ).rowcount
            )
        )

    def _select(
        self, where: str, params: dict[str, Any], now: datetime, limit: int | None
    ) -> list[Edge]:
        sql = (
            f"SELECT edges.*, {_CURRENT} AS current_weight FROM edges"
            f" WHERE edges.removed_at IS NULL AND {where}"
            " ORDER BY current_weight DESC, edges.edge_id"
        )
        bound = {**params, "now": format_timestamp(now)}
        if limit is not None:
            sql += " LIMIT :limit"
            bound["limit"] = limit
        rows = self._db.call(lambda conn: conn.execute(sql, bound).fetchall())
        return [_edge(row) for row in rows]

    # -- conflicts ------------------------------------------------------------------------

    def resolve(self, decision: ConflictResolution, now: datetime) -> Conflict | None:
        stamp = format_timestamp(now)
        edge_id = decision.edge_id

        def work(conn: sqlite3.Connection) -> Conflict | None:
            changed = conn.execute(
                "UPDATE edges SET conflict_state = ?, actor = ?, updated_at = ?"
                " WHERE edge_id = ? AND type = 'contradicts' AND removed_at IS NULL",
                (decision.resolution, decision.resolver, stamp, edge_id),
            ).rowcount
            if not changed:
                return None
            conn.execute(
                "INSERT INTO conflict_events (edge_id, state, actor, winner_id, note, at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    edge_id,
                    decision.resolution,
                    decision.resolver,
                    decision.winner_id,
                    decision.note,
                    stamp,
                ),
            )
            found = self._conflicts(conn, "edges.edge_id = :edge_id", {"edge_id": edge_id}, now)
            return found[0]

        return self._db.call(work)

    def conflicts(self, query: ConflictFilter, now: datetime) -> list[Conflict]:
        where: list[str] = ["edges.type = 'contradicts'"]
        params: dict[str, Any] = {}
        if query.state is not None:
            where.append("edges.conflict_state = :state")
            params["state"] = query.state
        if query.namespace is not None:
            where.append("edges.namespace = :namespace")
            params["namespace"] = query.namespace
        if query.note_id is not None:
            where.append("(edges.from_id = :note_id OR edges.to_id = :note_id)")
            params["note_id"] = query.note_id
        where.extend(_excluding(query.hidden, params))
        params["limit"] = query.limit
        return self._db.call(
            lambda conn: self._conflicts(conn, " AND ".join(where), params, now, limited=True)
        )

    def history(self, edge_ids: Sequence[str]) -> dict[str, tuple[ConflictEvent, ...]]:
        return self._db.call(lambda conn: _history(conn, edge_ids))

    def _conflicts(
        self,
        conn: sqlite3.Connection,
        where: str,
        params: dict[str, Any],
        now: datetime,
        limited: bool = False,
    ) -> list[Conflict]:
        sql = (
            f"SELECT edges.*, {_CURRENT} AS current_weight FROM edges"
            f" WHERE edges.removed_at IS NULL AND {where}"
            " ORDER BY edges.updated_at DESC, edges.edge_id"
        )
        if limited:
            sql += " LIMIT :limit"
        rows = conn.execute(sql, {**params, "now": format_timestamp(now)}).fetchall()
        edges = [_edge(row) for row in rows]
        history = _history(conn, [e.edge_id for e in edges])
        return [Conflict(e, history.get(e.edge_id, ())) for e in edges]

    # -- frontmatter declarations ---------------------------------------------------------

    def source_hashes(self) -> dict[str, str]:
        return self._db.call(
            lambda conn: {
                r[0]: r[1]
                for r in conn.execute("SELECT source_id, content_hash FROM declaration_sources")
            }
        )

    def declarations(self, source_ids: Sequence[str] | None = None) -> dict[str, DeclaredEdges]:
        params: dict[str, Any] = {}
        where = ""
        if source_ids is not None:
            if not source_ids:
                return {}
            where = f" WHERE s.source_id IN ({_placeholders('id', source_ids, params)})"
        sql = (
            "SELECT s.source_id, s.content_hash, s.namespace, s.actor, d.type, d.target"
            " FROM declaration_sources s JOIN edge_declarations d ON d.source_id = s.source_id"
            f"{where} ORDER BY s.source_id, d.position"
        )
        rows = self._db.call(lambda conn: conn.execute(sql, params).fetchall())
        found: dict[str, DeclaredEdges] = {}
        for row in rows:
            known = found.get(row["source_id"]) or DeclaredEdges(
                row["source_id"], row["content_hash"], row["namespace"], row["actor"]
            )
            item = Declaration(row["type"], row["target"])
            found[row["source_id"]] = replace(known, items=(*known.items, item))
        return found

    def set_declarations(
        self, declared: Sequence[DeclaredEdges], record_all: bool = False
    ) -> list[str]:
        def work(conn: sqlite3.Connection) -> list[str]:
            changed = []
            for new in declared:
                old = conn.execute(
                    "SELECT content_hash, namespace, actor FROM declaration_sources"
                    " WHERE source_id = ?",
                    (new.source_id,),
                ).fetchone()
                items = conn.execute(
                    "SELECT type, target FROM edge_declarations WHERE source_id = ?"
                    " ORDER BY position",
                    (new.source_id,),
                ).fetchall()
                before = tuple(Declaration(r["type"], r["target"]) for r in items)
                origin = None if old is None else (old["namespace"], old["actor"])
                same = before == new.items and (not new.items or origin == _origin(new))
                if same and not (record_all and (old is None or old[0] != new.content_hash)):
                    continue
                conn.execute(
                    "INSERT INTO declaration_sources (source_id, content_hash, namespace, actor)"
                    " VALUES (?, ?, ?, ?) ON CONFLICT (source_id) DO UPDATE SET"
                    " content_hash = excluded.content_hash, namespace = excluded.namespace,"
                    " actor = excluded.actor",
                    (new.source_id, new.content_hash, new.namespace, new.actor),
                )
                if same:
                    continue
                changed.append(new.source_id)
                conn.execute("DELETE FROM edge_declarations WHERE source_id = ?", (new.source_id,))
                conn.executemany(
                    "INSERT INTO edge_declarations (source_id, position, type, target, target_key)"
                    " VALUES (?, ?, ?, ?, ?)",
                    [
                        (new.source_id, i, d.type, d.target, normalise_target(d.target))
                        for i, d in enumerate(new.items)
                    ],
                )
            return changed

        return self._db.call(work)

    def sources_declaring(self, target_keys: Iterable[str]) -> list[str]:
        keys = sorted(set(target_keys))
        if not keys:
            return []
        params: dict[str, Any] = {}
        sql = (
            "SELECT DISTINCT source_id FROM edge_declarations"
            f" WHERE target_key IN ({_json_values('keys', keys, params)}) ORDER BY source_id"
        )
        return self._db.call(lambda conn: [r[0] for r in conn.execute(sql, params)])

    def sync_declared(
        self, source_id: str, desired: Sequence[EdgeUpsert], now: datetime
    ) -> tuple[int, int]:
        stamp = format_timestamp(now)

        def work(conn: sqlite3.Connection) -> tuple[int, int]:
            rows = conn.execute(
                "SELECT edge_id, to_id, type, namespace FROM edges"
                " WHERE from_id = ? AND provenance = 'human' AND removed_at IS NULL",
                (source_id,),
            ).fetchall()
            existing = {(source_id, r["to_id"], r["type"], r["namespace"]): r for r in rows}
            wanted = {request.key for request in desired}
            added = 0
            for request in desired:
                if request.key in existing:
                    continue
                edge = _edge(conn.execute(_UPSERT, self._params(request, stamp)).fetchone())
                if edge.type == "contradicts":
                    _open_conflict(conn, edge, request.actor, stamp)
                added += 1
            stale = [r["edge_id"] for key, r in existing.items() if key not in wanted]
            conn.executemany("DELETE FROM edges WHERE edge_id = ?", [(e,) for e in stale])
            return added, len(stale)

        return self._db.call(work)

    def _params(self, request: EdgeUpsert, stamp: str) -> dict[str, Any]:
        evidence = list(dict.fromkeys(e for e in request.evidence if e))[-MAX_EVIDENCE:]
        initial = request.weight
        if initial is None:
            initial = request.start_weight
        if initial is None:
            initial = self._rules.initial_weight
        step = self._rules.reinforce_step if request.step is None else request.step
        return {
            "edge_id": f"edge-{uuid.uuid4().hex}",
            "from_id": request.from_id,
            "to_id": request.to_id,
            "type": request.type,
            "initial": initial,
            "explicit": request.weight,
            "namespace": request.namespace,
            "provenance": request.provenance,
            "actor": request.actor,
            "evidence": json.dumps(evidence),
            "conflict_state": "unreviewed" if request.type == "contradicts" else None,
            "now": stamp,
            "step": step,
        }


def _origin(declared: DeclaredEdges) -> tuple[str, str | None]:
    return (declared.namespace, declared.actor)


def _open_conflict(conn: sqlite3.Connection, edge: Edge, actor: str | None, stamp: str) -> None:
    """Record the opening of the edge's conflict once, however often it is asserted."""
    conn.execute(
        "INSERT INTO conflict_events (edge_id, state, actor, at)"
        " SELECT ?, 'unreviewed', ?, ?"
        " WHERE NOT EXISTS (SELECT 1 FROM conflict_events WHERE edge_id = ?)",
        (edge.edge_id, actor, stamp, edge.edge_id),
    )


def _history(
    conn: sqlite3.Connection, edge_ids: Sequence[str]
) -> dict[str, tuple[ConflictEvent, ...]]:
    if not edge_ids:
        return {}
    params: dict[str, Any] = {}
    sql = (
        "SELECT * FROM conflict_events"
        f" WHERE edge_id IN ({_placeholders('id', edge_ids, params)}) ORDER BY id"
    )
    found: dict[str, list[ConflictEvent]] = {}
    for row in conn.execute(sql, params):
        found.setdefault(row["edge_id"], []).append(
            ConflictEvent(
                state=row["state"],
                actor=row["actor"],
                at=parse_timestamp(row["at"]),
                winner_id=row["winner_id"],
                note=row["note"],
            )
        )
    return {k: tuple(v) for k, v in found.items()}


def _excluding(hidden: frozenset[str], params: dict[str, Any]) -> list[str]:
    """Conditions leaving out edges that touch any ``hidden`` note."""
    if not hidden:
        return []
    marks = _placeholders("hidden", sorted(hidden), params)
    return [f"edges.from_id NOT IN ({marks})", f"edges.to_id NOT IN ({marks})"]


def _record_once(conn: sqlite3.Connection, key: str, stamp: str) -> bool:
    """Record ``key`` in the reinforcement ledger; False when it was there already."""
    return bool(
        conn.execute(
            "INSERT INTO reinforcements(key, at) VALUES (?, ?) ON CONFLICT DO NOTHING", (key, stamp)
        ).rowcount
    )


def _json_values(name: str, values: Iterable[str], params: dict[str, Any]) -> str:
    """A subquery of ``values`` bound as one JSON parameter: for the long lists of a batch (a
    thousand named parameters cost SQLite a scan of the names for each one bound)."""
    params[name] = json.dumps(list(values))
    return f"SELECT value FROM json_each(:{name})"


def _placeholders(prefix: str, values: Iterable[str], params: dict[str, Any]) -> str:
    names = []
    for i, value in enumerate(values):
        name = f"{prefix}{i}"
        params[name] = value
        names.append(f":{name}")
    return ", ".join(names)


def _edge(row: sqlite3.Row) -> Edge:
    return Edge(
        edge_id=row["edge_id"],
        from_id=row["from_id"],
        to_id=row["to_id"],
        type=row["type"],
        weight=round(float(row["current_weight"]), 6),
        stored_weight=float(row["weight"]),
        namespace=row["namespace"],
        provenance=row["provenance"],
        actor=row["actor"],
        evidence=tuple(cast(list[str], json.loads(row["evidence"]))),
        conflict_state=row["conflict_state"],
        created_at=parse_timestamp(row["created_at"]),
        updated_at=parse_timestamp(row["updated_at"]),
        last_used_at=parse_timestamp(row["last_used_at"]),
    )

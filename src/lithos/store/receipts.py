"""Retrieval receipts in ``.lithos/stats.db``: one row per ``lithos_retrieve`` call plus one
row per note it returned (which is also how notes retrieved or cited together are found, in
O(k) rows per call rather than O(k^2) pairs).

Functions take the connection of a transaction that :class:`~lithos.store.stats.StatsStore`
opens, so a receipt and the statistics it changes commit together.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from lithos.domain.retrieval import Outcome, Receipt, ReceiptNode, ReceiptQuery

RECEIPTS_SQL = """
CREATE TABLE receipts (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    agent_id TEXT,
    task_id TEXT,
    query TEXT NOT NULL,
    query_class TEXT NOT NULL,
    status TEXT NOT NULL,
    error_code TEXT,
    body TEXT NOT NULL
);
CREATE INDEX receipts_created ON receipts(created_at);
CREATE INDEX receipts_task ON receipts(task_id, agent_id, created_at);
CREATE INDEX receipts_agent ON receipts(agent_id, created_at);
CREATE TABLE receipt_nodes (
    receipt_id TEXT NOT NULL REFERENCES receipts(id) ON DELETE CASCADE,
    node_id TEXT NOT NULL,
    rank INTEGER NOT NULL,
    score REAL NOT NULL,
    outcome TEXT,
    PRIMARY KEY (receipt_id, node_id)
);
CREATE INDEX receipt_nodes_node ON receipt_nodes(node_id, outcome)
"""


def insert(conn: sqlite3.Connection, receipt: Receipt) -> None:
    conn.execute(
        "INSERT INTO receipts(id, created_at, agent_id, task_id, query, query_class, status,"
        " error_code, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            receipt.id,
            receipt.created_at,
            receipt.agent_id,
            receipt.task_id,
            receipt.query,
            receipt.query_class,
            receipt.status,
            receipt.error_code,
            json.dumps(_body(receipt)),
        ),
    )
    conn.executemany(
        "INSERT INTO receipt_nodes(receipt_id, node_id, rank, score) VALUES (?, ?, ?, ?)",
        [(receipt.id, n.id, n.rank, n.score) for n in receipt.final_nodes],
    )


def get(conn: sqlite3.Connection, receipt_id: str) -> Receipt | None:
    row = conn.execute("SELECT * FROM receipts WHERE id = ?", (receipt_id,)).fetchone()
    return None if row is None else _with_outcomes(conn, [row])[0]


def latest(conn: sqlite3.Connection, task_id: str, agent_id: str) -> Receipt | None:
    """The newest successful receipt of ``task_id`` retrieved by ``agent_id``."""
    row = conn.execute(
        "SELECT * FROM receipts WHERE task_id = ? AND agent_id = ? AND status = 'ok'"
        " ORDER BY created_at DESC, rowid DESC LIMIT 1",
        (task_id, agent_id),
    ).fetchone()
    return None if row is None else _with_outcomes(conn, [row])[0]


def query(conn: sqlite3.Connection, q: ReceiptQuery) -> list[Receipt]:
    """Receipts matching every filter, newest first."""
    clauses: list[str] = []
    params: list[object] = []
    for column, value in (("agent_id", q.agent_id), ("task_id", q.task_id)):
        if value is not None:
            clauses.append(f"r.{column} = ?")
            params.append(value)
    if q.since is not None:
        clauses.append("r.created_at >= ?")
        params.append(q.since)
    if q.note_id is not None:
        clauses.append(
            "EXISTS (SELECT 1 FROM receipt_nodes n WHERE n.receipt_id = r.id AND n.node_id = ?)"
        )
        params.append(q.note_id)
    where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
    sql = f"SELECT r.* FROM receipts r {where} ORDER BY r.created_at DESC, r.rowid DESC LIMIT ?"
    rows = conn.execute(sql, [*params, q.limit]).fetchall()
    return _with_outcomes(conn, rows)


def set_outcomes(
    conn: sqlite3.Connection, receipt_id: str, outcomes: Sequence[tuple[str, Outcome]]
) -> None:
    conn.executemany(
        "UPDATE receipt_nodes SET outcome = ? WHERE receipt_id = ? AND node_id = ?",
        [(outcome, receipt_id, node) for node, outcome in outcomes],
    )


def cited_together(
    conn: sqlite3.Connection, seeds: Sequence[str], limit: int
) -> list[tuple[str, str, int]]:
    """``(note, seed, receipts)``: notes cited in the same receipts as a seed, most often
    first; each note paired with the seed it was cited with most."""
    if not seeds:
        return []
    marks = ",".join("?" * len(seeds))
    rows = conn.execute(
        "SELECT b.node_id, a.node_id, COUNT(*) AS n FROM receipt_nodes a"
        " JOIN receipt_nodes b ON b.receipt_id = a.receipt_id AND b.node_id != a.node_id"
        f" WHERE a.node_id IN ({marks}) AND a.outcome = 'cited' AND b.outcome = 'cited'"
        " GROUP BY b.node_id, a.node_id ORDER BY n DESC, b.node_id LIMIT ?",
        [*seeds, limit * 4],
    ).fetchall()
    best: dict[str, tuple[str, str, int]] = {}
    for note, seed, count in rows:
        if note not in seeds and note not in best:
            best[note] = (note, seed, int(count))
    return list(best.values())[:limit]


def partners(
    conn: sqlite3.Connection, node_id: str, window: int, limit: int
) -> list[tuple[str, int, int]]:
    """``(note, co_retrieved, co_cited)``: the notes returned in the same receipts as
    ``node_id`` among its latest ``window`` receipts, most often co-cited, then most often
    co-retrieved, first. Read from the receipts' rows (one per returned note), so recording
    co-activation costs no row per pair."""
    rows = conn.execute(
        "WITH mine AS (SELECT receipt_id, outcome FROM receipt_nodes WHERE node_id = ?"
        " ORDER BY rowid DESC LIMIT ?)"
        " SELECT b.node_id, COUNT(*) AS co_retrieved,"
        " SUM(mine.outcome = 'cited' AND b.outcome = 'cited') AS co_cited"
        " FROM mine JOIN receipt_nodes b ON b.receipt_id = mine.receipt_id"
        " WHERE b.node_id != ? GROUP BY b.node_id"
        " ORDER BY co_cited DESC, co_retrieved DESC, b.node_id LIMIT ?",
        (node_id, window, node_id, limit),
    ).fetchall()
    return [(r[0], int(r[1]), int(r[2] or 0)) for r in rows]


def _body(receipt: Receipt) -> dict[str, object]:
    return {
        "arguments": receipt.arguments,
        "scouts_fired": list(receipt.scouts_fired),
        "scouts_failed": list(receipt.scouts_failed),
        "candidates_considered": receipt.candidates_considered,
        "final_nodes": [
            {
                "id": n.id,
                "rank": n.rank,
                "score": n.score,
                "reasons": list(n.reasons),
                "scouts": list(n.scouts),
            }
            for n in receipt.final_nodes
        ],
        "temperature": receipt.temperature,
        "terrace_reached": receipt.terrace_reached,
        "timings_ms": receipt.timings_ms,
    }


def _with_outcomes(conn: sqlite3.Connection, rows: Sequence[sqlite3.Row]) -> list[Receipt]:
    """The receipts of ``rows``, each node with the outcome its task's feedback gave it."""
    outcomes: dict[tuple[str, str], Outcome] = {}
    ids = [row["id"] for row in rows]
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        marks = ",".join("?" * len(part))
        for receipt_id, node_id, outcome in conn.execute(
            "SELECT receipt_id, node_id, outcome FROM receipt_nodes"
            f" WHERE receipt_id IN ({marks}) AND outcome IS NOT NULL",
            part,
        ):
            outcomes[(receipt_id, node_id)] = outcome
    return [_receipt(row, outcomes) for row in rows]


def _receipt(row: sqlite3.Row, outcomes: dict[tuple[str, str], Outcome]) -> Receipt:
    body = json.loads(row["body"])
    return Receipt(
        id=row["id"],
        created_at=row["created_at"],
        query=row["query"],
        query_class=row["query_class"],
        arguments=body["arguments"],
        agent_id=row["agent_id"],
        task_id=row["task_id"],
        status=row["status"],
        error_code=row["error_code"],
        scouts_fired=tuple(body["scouts_fired"]),
        scouts_failed=tuple(body["scouts_failed"]),
        candidates_considered=body["candidates_considered"],
        final_nodes=tuple(
            ReceiptNode(
                id=n["id"],
                rank=n["rank"],
                score=n["score"],
                reasons=tuple(n["reasons"]),
                scouts=tuple(n["scouts"]),
                outcome=outcomes.get((row["id"], n["id"])),
            )
            for n in body["final_nodes"]
        ),
        temperature=body["temperature"],
        terrace_reached=body["terrace_reached"],
        timings_ms=body["timings_ms"],
    )

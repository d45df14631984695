"""`lithos audit`: read retrieval receipts from the command line.

``lithos audit RECEIPT_ID`` shows one call in full; ``lithos audit --note ID`` lists the calls
that returned a note, with that note's rank, score, outcome and reasons ("why was this
returned?"); otherwise the latest calls, filtered by ``--agent``, ``--task`` and ``--since``.
``--json`` prints the receipts as the ``lithos_receipts`` tool returns them. Reads
``.lithos/stats.db`` (and the catalog for titles) beside a running server; writes nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Sequence
from dataclasses import asdict

from lithos.app import STATS_HOLDS
from lithos.config import LithosConfig
from lithos.domain.notes import require_valid_id
from lithos.domain.retrieval import LearningRules, Receipt, ReceiptNode, ReceiptQuery
from lithos.domain.timestamps import parse_timestamp
from lithos.errors import InvalidInput, ReceiptNotFound
from lithos.store.catalog import Catalog
from lithos.store.lifecycle import open_authoritative
from lithos.store.stats import STATS_MIGRATIONS, StatsStore


def add_parser(commands: argparse._SubParsersAction, shared: list[argparse.ArgumentParser]) -> None:
    audit = commands.add_parser(
        "audit", help="read retrieval receipts: why lithos_retrieve returned what", parents=shared
    )
    audit.add_argument("receipt_id", nargs="?", help="one receipt in full")
    audit.add_argument("--note", help="the calls that returned this note id, and why")
    audit.add_argument("--agent", help="only this agent's calls")
    audit.add_argument("--task", help="only calls for this task")
    audit.add_argument("--since", help="only calls at or after this ISO 8601 time")
    audit.add_argument("--limit", type=int, default=20, help="most receipts (default 20)")
    audit.add_argument("--json", action="store_true", help="print JSON for scripts")


def run(config: LithosConfig, args: argparse.Namespace) -> int:
    query = _query(args)
    path = config.data_dir / ".lithos" / "stats.db"
    if not path.exists():  # nothing retrieved yet: do not create the store just to read it
        if args.receipt_id:
            raise ReceiptNotFound(f"no receipt {args.receipt_id}")
        found: list[Receipt] = []
    else:
        db = open_authoritative(path, STATS_MIGRATIONS, STATS_HOLDS, config.data_dir)
        store = StatsStore(db, LearningRules())
        try:
            found = asyncio.run(_read(store, args.receipt_id, query))
        finally:
            store.close()
    if args.json:
        payload = asdict(found[0]) if args.receipt_id else [asdict(r) for r in found]
        print(json.dumps(payload, indent=2))
        return 0
    titles = _titles(config, found)
    if args.receipt_id:
        print(render_receipt(found[0], titles))
    elif query.note_id is not None:
        print(render_note(found, query.note_id, titles))
    else:
        print(render_list(found))
    return 0


def _query(args: argparse.Namespace) -> ReceiptQuery:
    filters = (args.note, args.agent, args.task, args.since)
    if args.receipt_id and any(f is not None for f in filters):
        raise InvalidInput("give a receipt id or filters (--note, --agent, --task, --since)")
    if not 1 <= args.limit <= 10_000:
        raise InvalidInput("--limit must be between 1 and 10000")
    if args.since is not None:
        try:
            parse_timestamp(args.since)
        except ValueError as exc:
            raise InvalidInput(f"--since is not an ISO 8601 time: {args.since}") from exc
    note = None if args.note is None else require_valid_id(args.note)
    return ReceiptQuery(
        agent_id=args.agent, task_id=args.task, note_id=note, since=args.since, limit=args.limit
    )


async def _read(store: StatsStore, receipt_id: str | None, query: ReceiptQuery) -> list[Receipt]:
    if receipt_id is None:
        return await store.receipts(query)
    found = await store.receipt(receipt_id)
    if found is None:
        raise ReceiptNotFound(f"no receipt {receipt_id}")
    return [found]


def _titles(config: LithosConfig, receipts: Sequence[Receipt]) -> dict[str, str]:
    path = config.data_dir / ".index" / "catalog.db"
    ids = list({n.id for r in receipts for n in r.final_nodes})
    if not ids or not path.exists():
        return {}
    catalog = Catalog(path)
    try:
        return {k: entry.title for k, entry in catalog.get_many(ids).items()}
    finally:
        catalog.close()


def render_receipt(receipt: Receipt, titles: dict[str, str]) -> str:
    timings = ", ".join(f"{k} {v:.1f} ms" for k, v in receipt.timings_ms.items())
    status = receipt.status if receipt.error_code is None else f"error ({receipt.error_code})"
    arguments = ", ".join(f"{k}={v}" for k, v in receipt.arguments.items() if v not in (None, []))
    lines = [
        f"receipt     {receipt.id}",
        f"time        {receipt.created_at}",
        f"status      {status}",
        f"query       {receipt.query!r} (class {receipt.query_class})",
        f"arguments   {arguments or '-'}",
        f"agent       {receipt.agent_id or '-'}",
        f"task        {receipt.task_id or '-'}",
        f"scouts      {', '.join(receipt.scouts_fired) or '-'}",
        f"failed      {', '.join(receipt.scouts_failed) or '-'}",
        f"considered  {receipt.candidates_considered} candidates",
        f"temperature {'-' if receipt.temperature is None else receipt.temperature}"
        f" (terrace {receipt.terrace_reached})",
        f"timings     {timings or '-'}",
        "",
    ]
    if not receipt.final_nodes:
        return "\n".join([*lines, "no results"])
    lines.append(f"{'#':>3}  {'score':>8}  {'outcome':<10}  note")
    for node in receipt.final_nodes:
        lines += _node_lines(node, titles)
    return "\n".join(lines)


def render_note(receipts: Sequence[Receipt], note_id: str, titles: dict[str, str]) -> str:
    """Each call that returned the note: when, who, the query, and that note's rank and why."""
    if not receipts:
        return f"no receipt returned {note_id}"
    lines = [f"{len(receipts)} receipts returned {titles.get(note_id, note_id)} ({note_id})", ""]
    for receipt in receipts:
        node = next(n for n in receipt.final_nodes if n.id == note_id)
        who = f"agent {receipt.agent_id or '-'}, task {receipt.task_id or '-'}"
        lines.append(f"{receipt.created_at}  {receipt.id}  {who}  query {receipt.query!r}")
        lines.append(
            f"    rank {node.rank} of {len(receipt.final_nodes)}, score {node.score:.4f},"
            f" {node.outcome or 'no feedback'}; scouts {', '.join(node.scouts)}"
        )
        lines += [f"    why: {reason}" for reason in node.reasons]
    return "\n".join(lines)


def render_list(receipts: Sequence[Receipt]) -> str:
    if not receipts:
        return "no receipts"
    header = ("time", "receipt", "agent", "task", "status", "results", "query")
    rows = [
        (
            r.created_at,
            r.id,
            r.agent_id or "-",
            r.task_id or "-",
            r.status if r.error_code is None else r.error_code,
            str(len(r.final_nodes)),
            repr(r.query[:60]),
        )
        for r in receipts
    ]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header) - 1)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1]
        for row in (header, *rows)
    )


def _node_lines(node: ReceiptNode, titles: dict[str, str]) -> list[str]:
    title = titles.get(node.id)
    name = f"{title} ({node.id})" if title else node.id
    lines = [f"{node.rank:>3}  {node.score:>8.4f}  {node.outcome or '-':<10}  {name}"]
    lines.append(f"{'':>25}scouts: {', '.join(node.scouts)}")
    lines += [f"{'':>25}why: {reason}" for reason in node.reasons]
    return lines

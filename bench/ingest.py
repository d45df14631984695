"""Bulk ingest: lithos_write_batch through MCP and ``lithos import`` of a folder on disk.

The first N pages of the real corpora (bench/corpus.py) are loaded three ways, each into a
fresh data directory, and every way ends with the notes searchable by full text:

- ``batch_mcp``: ``lithos serve --transport http`` in a subprocess, one MCP client session
  sending ``lithos_write_batch`` calls of ``--batch-size`` notes; the server's embedding worker
  runs alongside, as it does for a user, so the server CPU it reports includes embedding work.
- ``batch_mcp_no_embed``: the same through bench/floor_server.py with the embedding worker
  off: the server CPU of the calls alone.
- ``batch_in_process``: the same calls on ``KnowledgeService.write_batch`` in this process with
  no embedding worker and no MCP: the cost of the write path alone.
- ``import``: ``Importer.import_folder`` (what ``lithos import`` runs) of the pages as a folder
  of Markdown files, in this process, no embedding.

Each reports notes/s (wall clock) and CPU milliseconds per note (process CPU time: user +
system, every thread), with the load average at the start, since the machine is shared; the
import also splits its CPU into user and system time. Every way's files stay until the run
ends: on an ext4 without a journal (this machine's), creating a file right after thousands
were deleted nearby costs the kernel a scan of the recently freed inodes, which made the
import, measured after the others were deleted, pay for their clean-up (bench/NOTES.md).

    .venv/bin/python bench/ingest.py                  # 2,000 notes
    .venv/bin/python bench/ingest.py --notes 10000
    .venv/bin/python bench/ingest.py --quick --out /tmp/x
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fastmcp import Client

from bench import corpus, machine, workload
from bench.machine import log
from bench.server import Server
from lithos.app import LithosApp
from lithos.config import load_config
from lithos.services.knowledge import WriteRequest

WAYS = {
    "batch_mcp": "lithos_write_batch over MCP",
    "batch_mcp_no_embed": "lithos_write_batch over MCP, no embedding",
    "batch_in_process": "write_batch in-process",
    "import": "import of a folder",
}


def note_batches(pages: list[corpus.Page], size: int) -> list[list[dict[str, str]]]:
    notes = []
    for page in pages:
        title, body = corpus.title_and_body(page)
        notes.append({"title": title, "content": body, "path": str(Path(page.path).parent)})
    return [notes[start : start + size] for start in range(0, len(notes), size)]


def rates(notes: int, seconds: float, cpu_seconds: float) -> dict[str, Any]:
    return {
        "notes": notes,
        "seconds": round(seconds, 2),
        "notes_per_s": round(notes / seconds, 1),
        "cpu_ms_per_note": round(1000 * cpu_seconds / notes, 3),
        "load_average": os.getloadavg()[0],
    }


async def batch_mcp(url: str, batches: list[list[dict[str, str]]], server: Server) -> float:
    async with Client(url) as client:
        for notes in batches:
            done = await workload.call(client, "lithos_write_batch", {"agent": "b", "notes": notes})
            if done["failed"]:
                raise workload.ToolError(f"lithos_write_batch: {done['results'][:3]}")
    return server.cpu_seconds()


def measure_mcp(
    batches: list[list[dict[str, str]]], root: Path, embed: bool = True
) -> dict[str, Any]:
    load = os.getloadavg()[0]
    with Server(root / "mcp", floor=not embed, json_response=True, embed=embed) as server:
        cpu_before = server.cpu_seconds()
        started = time.perf_counter()
        cpu_after = asyncio.run(batch_mcp(server.url, batches, server))
        seconds = time.perf_counter() - started
    notes = sum(len(b) for b in batches)
    return {**rates(notes, seconds, cpu_after - cpu_before), "load_average": load}


def open_app(data_dir: Path) -> LithosApp:
    app = LithosApp(load_config(data_dir=data_dir, overrides={"server.watch_files": False}))
    app.open()
    app.start(watch=False, embed=False)
    return app


def measure_in_process(batches: list[list[dict[str, str]]], root: Path) -> dict[str, Any]:
    load = os.getloadavg()[0]
    app = open_app(root / "inproc")
    try:
        cpu, started = time.process_time(), time.perf_counter()
        for notes in batches:
            requests = [WriteRequest(agent="b", **note) for note in notes]  # type: ignore[arg-type]
            outcomes = asyncio.run(app.knowledge.write_batch("b", requests))
            assert all(outcome.status == "created" for outcome in outcomes)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        app.close()
    return {**rates(sum(len(b) for b in batches), seconds, cpu), "load_average": load}


def measure_import(pages: list[corpus.Page], root: Path) -> dict[str, Any]:
    corpus.copy_into(pages, root / "vault")
    load = os.getloadavg()[0]
    app = open_app(root / "imported")
    try:
        times, started = os.times(), time.perf_counter()
        report = app.importer.import_folder(root / "vault", "imported")
        seconds, after = time.perf_counter() - started, os.times()
        searchable = app.fulltext.count()
    finally:
        app.close()
    user, system = after.user - times.user, after.system - times.system
    return {
        **rates(report.imported, seconds, user + system),
        # The kernel's share moves with the file system's state (see bench/NOTES.md).
        "cpu_user_ms_per_note": round(1000 * user / report.imported, 3),
        "cpu_system_ms_per_note": round(1000 * system / report.imported, 3),
        "load_average": load,
        "fulltext_documents": searchable,
        "skipped": {s.path: s.reason for s in report.skipped},  # corpus files with bad YAML
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=100, help="notes per batch call")
    parser.add_argument("--quick", action="store_true", help="200 notes (CI)")
    parser.add_argument(
        "--ways", default=",".join(WAYS), help=f"comma-separated subset of {', '.join(WAYS)}"
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    args = parser.parse_args(argv)
    if args.quick:
        args.notes = 200
    result: dict[str, Any] = {"quick": args.quick, "batch_size": args.batch_size}
    with tempfile.TemporaryDirectory(prefix="lithos-ingest-") as tmp:
        root = Path(tmp)
        pages = corpus.unpack(root / "corpus")[: args.notes]
        batches = note_batches(pages, args.batch_size)
        ways = [way for way in WAYS if way in args.ways.split(",")]
        for way in ways:
            log(f"{len(pages)} notes: {WAYS[way]}")
            if way == "import":
                result[way] = measure_import(pages, root)
            elif way == "batch_in_process":
                result[way] = measure_in_process(batches, root)
            else:
                result[way] = measure_mcp(batches, root, embed=way == "batch_mcp")
    name = "ingest-quick" if args.quick else "ingest"
    path = machine.write_result(args.out, name, result)
    log(f"wrote {path}")
    for way in ways:
        figures = result[way]
        print(
            f"{way}: {figures['notes_per_s']} notes/s, {figures['cpu_ms_per_note']} ms CPU/note "
            f"(load {figures['load_average']:.2f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

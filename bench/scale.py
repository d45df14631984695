"""Lithos at 1,000, 10,000 and 100,000 notes of real text (bench/scale_corpus.py).

For each size N the first N composed notes are written as a folder of Markdown files and
loaded by ``lithos import`` (a subprocess, timed: notes/s and CPU ms a note, full-text
searchable at the end). Every chunk then gets a SYNTHETIC vector (a random unit vector seeded
by the chunk's hash, as ``bench/perf.py --synthetic-vectors`` does): embedding 100,000 notes
(~345,000 chunks) would take days on this machine, and the cost of vector search depends on
the number and dimension of the vectors, not on what they mean. Search quality from such
vectors means nothing; query embedding is real (the shipped model). Then, in this process on
the imported data directory:

- full-text, semantic and hybrid search through ``SearchService.search`` (p50/p95/p99 ms);
  semantic and hybrid with threshold 0, so each returns 10 notes as with real vectors (random
  vectors score near 0 and the default threshold would return nothing, skipping the reads);
- the phases of each (median ms): Tantivy's search inside full-text; the query embedding and
  the vector ranking inside semantic; the rest is the service around them (filters, catalog
  reads, chunk texts);
- ``lithos_write`` through ``KnowledgeService.write`` (bench/write_latency.py's ``run``: creates
  and updates, background full-text commits, each written note searched right after);

and through ``lithos serve --transport http`` in a subprocess: start-up with every index present
to the first answered tool call, and resident memory after start-up and after a round of every
frequent tool call (bench/workload.py) over MCP.

    .venv/bin/python bench/scale.py                      # 1,000, 10,000 and 100,000 notes
    .venv/bin/python bench/scale.py --sizes 100000 --merge
    .venv/bin/python bench/scale.py --quick --out /tmp/x # 300 notes, few calls (smoke test)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import corpus, machine, scale_corpus, workload, write_latency
from bench.machine import log
from bench.perf import fill_synthetic
from bench.server import LITHOS, Server
from lithos.app import LithosApp
from lithos.config import load_config
from lithos.services.search import Mode

# Targets of the scale section at 100,000 notes (ms, s, MB); writes: "unchanged from 10,000".
TARGETS = {
    "fulltext_p95_ms": 5.0,
    "semantic_p95_ms": 30.0,
    "first_call_with_indexes_s": 3.0,
    "rss_mb_after_calls": 1024.0,
}


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def import_vault(size: int, root: Path) -> tuple[Path, dict[str, Any]]:
    """Write the first ``size`` notes and load them with ``lithos import``; returns the data
    directory and the figures."""
    vault = root / "vault"
    started = time.perf_counter()
    notes = scale_corpus.write_vault(size, vault)
    written = time.perf_counter() - started
    data_dir = root / "data"
    load = os.getloadavg()[0]
    cpu, started = cpu_of_children(), time.perf_counter()
    command = [str(LITHOS), "--data-dir", str(data_dir), "import", str(vault)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds, cpu = time.perf_counter() - started, cpu_of_children() - cpu
    if done.returncode != 0:
        raise RuntimeError(f"lithos import failed: {done.stderr[-2000:]}")
    shutil.rmtree(vault)
    return data_dir, {
        "vault_written_s": round(written, 1),
        "markdown_mb": round(sum(len(n.text.encode()) for n in notes) / 2**20, 1),
        "import_s": round(seconds, 1),
        "import_notes_per_s": round(size / seconds, 1),
        "import_cpu_ms_per_note": round(1000 * cpu / size, 2),
        "load_at_import": round(load, 2),
    }


def samples_of(calls: int, fn: Callable[[str], object]) -> list[float]:
    """Milliseconds of ``fn(query)`` over ``calls`` queries of the workload, after a warm-up."""

    async def call(query: str) -> object:
        return fn(query)

    return asyncio.run(timed_calls(calls, call))


async def timed_calls(calls: int, fn: Callable[[str], Awaitable[object]]) -> list[float]:
    """Like :func:`samples_of` for a coroutine, every call on one event loop (as served)."""
    await fn("warm up")
    samples = []
    for i in range(calls):
        query = workload.QUERIES[i % len(workload.QUERIES)]
        started = time.perf_counter()
        await fn(query)
        samples.append(1000 * (time.perf_counter() - started))
    return samples


def median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples), 3)


def searches(app: LithosApp, calls: int) -> dict[str, Any]:
    """Latency of each search mode through the service, and of its phases."""

    def service(mode: Mode) -> list[float]:
        threshold = None if mode == "fulltext" else 0.0
        return asyncio.run(
            timed_calls(calls, lambda q: app.search.search(q, mode=mode, threshold=threshold))
        )

    def rank(query: str) -> object:
        return app.vectors.rank_notes(vectors[query], 10)

    modes: tuple[Mode, ...] = ("fulltext", "semantic", "hybrid")
    totals = {mode: service(mode) for mode in modes}
    tantivy = samples_of(calls, lambda q: app.fulltext.search(q, limit=10))
    embed = samples_of(calls, app.vectors.embed_query)
    vectors = {q: app.vectors.embed_query(q) for q in [*workload.QUERIES, "warm up"]}
    ranked = samples_of(calls, rank)
    fulltext, semantic = median_ms(totals["fulltext"]), median_ms(totals["semantic"])
    return {
        "latency_ms": {mode: workload.percentiles(s) for mode, s in totals.items()},
        "phases_median_ms": {
            "fulltext": {
                "tantivy_search": median_ms(tantivy),
                "service_rest": round(fulltext - median_ms(tantivy), 3),
            },
            "semantic": {
                "embed_query": median_ms(embed),
                "vector_rank": median_ms(ranked),
                "service_rest": round(semantic - median_ms(embed) - median_ms(ranked), 3),
            },
        },
    }


def in_process(data_dir: Path, size: int, args: argparse.Namespace) -> dict[str, Any]:
    """Synthetic vectors for every chunk, then search and write latencies in this process."""
    config = load_config(data_dir=data_dir, overrides={"server.watch_files": False})
    app = LithosApp(config).open()
    try:
        started = time.perf_counter()
        app.start(watch=False, embed=False)
        checked = time.perf_counter() - started
        started = time.perf_counter()
        fill_synthetic(app)
        counts = app.vectors.counts()
        filled = time.perf_counter() - started
        started = time.perf_counter()
        app.vectors.warm()
        result: dict[str, Any] = {
            "synthetic_vectors": True,
            "chunks": counts.chunks,
            "chunks_per_note": round(counts.chunks / max(1, counts.notes), 2),
            "fulltext_documents": app.fulltext.count(),
            "startup_check_in_process_s": round(checked, 2),
            "synthetic_fill_s": round(filled, 1),
            "matrix_load_s": round(time.perf_counter() - started, 2),
            "matrix_mb": round(app.vectors.matrix_bytes() / 2**20, 1),
            "load_at_searches": round(os.getloadavg()[0], 2),
        }
        result.update(searches(app, args.calls))
        log(f"size {size}: lithos_write in-process")
        extra = args.pages[: args.write_calls * 2]
        result["write"] = write_latency.run(app, extra, args.write_calls, "s")
    finally:
        app.close()
    return result


def served(data_dir: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Start-up with indexes to the first answered call, and resident memory, over MCP."""
    with Server(data_dir) as server:
        first_call = server.first_call_s()
        result: dict[str, Any] = {
            "load_at_startup": round(os.getloadavg()[0], 2),
            "startup_with_indexes_s": round(server.startup_s, 2),
            "first_call_with_indexes_s": round(first_call, 2),
            "rss_mb_started": server.rss_mb(),
        }
        ids = asyncio.run(_note_ids(server.url))
        result["mcp_latency_ms"] = asyncio.run(
            workload.tool_latencies(server.url, ids, args.mcp_calls, threshold=0.0)
        )
        result["rss_mb_after_calls"] = server.rss_mb()
    return result


async def _note_ids(url: str) -> list[str]:
    from fastmcp import Client

    async with Client(url) as client:
        listed = await workload.call(client, "lithos_list", {"limit": 200})
    return [item["id"] for item in listed["items"]]


def measure_size(size: int, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    log(f"size {size}: writing the vault and running lithos import")
    data_dir, imported = import_vault(size, root)
    result: dict[str, Any] = {
        "notes": size,
        "measured": {k: machine.describe()[k] for k in ("date", "commit")},
        "import": imported,
    }
    log(f"size {size}: synthetic vectors, searches in-process ({imported})")
    result.update(in_process(data_dir, size, args))
    log(f"size {size}: lithos serve: start-up with indexes, memory")
    result.update(served(data_dir, args))
    result["verdicts"] = verdicts(result) if size >= 100_000 else {}
    shutil.rmtree(data_dir)
    return result


def verdicts(size: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Met or missed for each 100,000-note target that has a fixed number."""
    measured = {
        "fulltext_p95_ms": size["latency_ms"]["fulltext"]["p95"],
        "semantic_p95_ms": size["latency_ms"]["semantic"]["p95"],
        "first_call_with_indexes_s": size["first_call_with_indexes_s"],
        "rss_mb_after_calls": size["rss_mb_after_calls"],
    }
    return {
        name: {"measured": measured[name], "target": target, "met": measured[name] < target}
        for name, target in TARGETS.items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--quick", action="store_true", help="300 notes, few calls (CI)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    parser.add_argument("--calls", type=int, default=100, help="timed searches per mode")
    parser.add_argument("--write-calls", type=int, default=60, help="creates and updates each")
    parser.add_argument("--mcp-calls", type=int, default=20, help="timed calls per tool")
    parser.add_argument("--merge", action="store_true", help="keep other sizes in the output")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.calls, args.write_calls, args.mcp_calls = [300], 10, 5, 3
    name = "scale-quick" if args.quick else "scale"
    previous = args.out / f"{name}.json"
    kept = []
    if args.merge and previous.exists():
        earlier = json.loads(previous.read_text())["sizes"]
        kept = [s for s in earlier if s["notes"] not in args.sizes]
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="lithos-scale-") as tmp:
        args.pages = corpus.unpack(Path(tmp) / "corpus")  # what the timed writes write
        for size in args.sizes:
            root = Path(tmp) / f"size-{size}"
            root.mkdir()
            results.append(measure_size(size, root, args))
            merged = sorted(kept + results, key=lambda s: s["notes"])
            path = machine.write_result(args.out, name, {"quick": args.quick, "sizes": merged})
            log(f"wrote {path}")
    for size in results:
        latency = size["latency_ms"]
        print(
            f"{size['notes']} notes ({size['chunks']} chunks): fulltext p95 "
            f"{latency['fulltext']['p95']} ms, semantic p95 {latency['semantic']['p95']} ms, "
            f"first call {size['first_call_with_indexes_s']} s, RSS {size['rss_mb_after_calls']} "
            f"MB, write p95 {size['write']['create_ms']['p95']} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

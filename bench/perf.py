"""Performance of Lithos on the real PowerShell + tldr corpora, at several corpus sizes.

For each size N the first N pages (bench/corpus.py) are dropped into a fresh knowledge
directory and served by ``lithos serve --transport http`` in a subprocess; every call goes
through a real MCP client over streamable HTTP. Measured: start-up (no indexes / indexes
present), ingest (files + full-text notes/s, embedding chunks/s, lithos_write notes/s), per-tool
latency p50/p95/p99, resident memory, hand-edit-to-searchable time, and throughput with 1, 10
and 50 concurrent agent sessions. Vectors are cached between runs (bench/cache.py).

    .venv/bin/python bench/perf.py                       # sizes 1000 3000 10000
    .venv/bin/python bench/perf.py --sizes 1000 3000
    .venv/bin/python bench/perf.py --quick --out /tmp/x  # CI smoke run, no timing asserts
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from fastmcp import Client

from bench import cache, corpus, machine, workload
from bench.machine import log
from bench.server import Server
from lithos.app import LithosApp
from lithos.config import load_config
from lithos.domain.retrieval import RetrievalQuery
from lithos.services.search import Mode

# Random vectors for --synthetic-vectors live apart from the real embedding cache.
SYNTHETIC = cache.DEFAULT.with_name("synthetic-vectors.db")


def prepare_vectors(
    pages: list[corpus.Page], scratch: Path, timeout: float, calls: int, synthetic: bool = False
) -> dict[str, Any]:
    """Index ``pages`` in-process from files alone (timed: files + full-text ingest), then embed
    every chunk into the cache (2 threads) on this scratch copy, so the measured data directory
    still starts without indexes. Returns both rates and in-process search latencies.

    With ``synthetic``, chunks get deterministic random unit vectors instead (kept in their
    own cache file, never in the real one): latency depends on the number and dimension of
    vectors, not on what they mean, and embedding 10,000 notes takes over half an hour here.
    The result says so; search quality from such vectors means nothing."""
    data_dir = scratch / "prep"
    corpus.copy_into(pages, data_dir / "knowledge")
    store = SYNTHETIC if synthetic else cache.DEFAULT
    seeded = cache.seed(data_dir, store)
    overrides = {"search.embedding_threads": 2, "search.embedding_batch_size": 32}
    app = LithosApp(load_config(data_dir=data_dir, overrides=overrides)).open()
    try:
        started = time.perf_counter()
        app.start(watch=False, embed=False)
        reconcile = time.perf_counter() - started
        pending = app.vectors.counts().pending_chunks
        started = time.perf_counter()
        if synthetic:
            fill_synthetic(app)
        app.embedding.start()
        deadline = started + timeout
        while not app.embedding.wait_idle(60) and time.perf_counter() < deadline:
            counts = app.vectors.counts()
            log(f"embedding {counts.embedded_chunks}/{counts.chunks} chunks")
            cache.save(data_dir, store)
        seconds = time.perf_counter() - started
        left = app.vectors.counts().pending_chunks
        # As a steady server: the matrix snapshot saved, so the embedding worker's save
        # (SNAPSHOT_SETTLE after the matrices were read or changed) cannot run beside the loop.
        app.vectors.save_snapshot()
        searches = in_process_searches(app, calls, 0.0 if synthetic else None)
    finally:
        app.close()
    cache.save(data_dir, store)
    shutil.rmtree(data_dir)
    done = pending - left
    return {
        "synthetic_vectors": synthetic,
        "reconcile_no_indexes_s": round(reconcile, 2),
        "files_fulltext_notes_per_s": round(len(pages) / reconcile, 1),
        "cached_vectors_before": seeded,
        "chunks_embedded": done,
        "seconds": round(seconds, 1),
        "chunks_per_s": (
            round(done / seconds, 1) if done >= 100 and seconds > 0 and not synthetic else None
        ),
        "chunks_left_unembedded": left,
        "search_in_process_ms": searches,
    }


def fill_synthetic(app: LithosApp, batch: int = 2048) -> None:
    """Give every pending chunk a random unit vector seeded by its hash (the same chunk text
    always gets the same vector)."""
    dimension = app.vectors.dimension
    while chunks := app.vectors.pending(batch, migrate=False):
        items = []
        for chunk_hash, _ in chunks:
            rng = np.random.default_rng(int(chunk_hash[:16], 16))
            vector = rng.standard_normal(dimension).astype(np.float32)
            items.append((chunk_hash, vector / np.linalg.norm(vector)))
        app.vectors.store_embeddings(items)


def in_process_searches(
    app: LithosApp, calls: int, threshold: float | None = None
) -> dict[str, dict[str, float]]:
    """p50/p95/p99 ms of each search mode and of lithos_retrieve's pipeline called on the
    services themselves (no MCP, no client), all on one event loop as the server runs them;
    each retrieve writes its receipt as the tool's would. ``threshold`` is passed to semantic
    and hybrid search (0.0 with synthetic vectors, whose similarities sit near 0: the default
    threshold would leave semantic search nothing to read). Each mode also reports the mean
    number of results (``results``), so modes are compared at equal work."""

    async def timed(mode: Mode) -> dict[str, float]:
        cutoff = None if mode == "fulltext" else threshold
        await app.search.search("warm up", mode=mode, threshold=cutoff)
        samples, found = [], 0
        for i in range(calls):
            query = workload.QUERIES[i % len(workload.QUERIES)]
            started = time.perf_counter()
            result = await app.search.search(query, mode=mode, threshold=cutoff)
            samples.append(1000 * (time.perf_counter() - started))
            found += len(result["results"])
        return {**workload.percentiles(samples), "results": round(found / len(samples), 1)}

    async def retrieve() -> dict[str, float]:
        await app.retrieval.retrieve(RetrievalQuery("warm up"))
        samples = []
        for i in range(calls):
            query = workload.QUERIES[i % len(workload.QUERIES)]
            started = time.perf_counter()
            await app.retrieval.retrieve(RetrievalQuery(query, agent_id="bench"))
            samples.append(1000 * (time.perf_counter() - started))
        return workload.percentiles(samples)

    modes: tuple[Mode, ...] = ("fulltext", "semantic", "hybrid")
    timings = {mode: asyncio.run(timed(mode)) for mode in modes}
    timings["retrieve"] = asyncio.run(retrieve())
    return timings


async def wait_embedded(url: str, timeout: float) -> dict[str, Any]:
    async with Client(url) as client:
        deadline = time.perf_counter() + timeout
        while True:
            stats = await workload.call(client, "lithos_stats", {})
            pending = stats["indexes"]["pending_chunks"]
            if not pending or time.perf_counter() > deadline:
                return {
                    "documents": stats["documents"],
                    "chunks": stats["chunks"],
                    "pending": pending,
                }
            await asyncio.sleep(1)


async def note_ids(url: str, count: int) -> list[str]:
    async with Client(url) as client:
        listed = await workload.call(client, "lithos_list", {"limit": min(count, 1000)})
    return [item["id"] for item in listed["items"]]


async def hand_edits(url: str, knowledge: Path, edits: int) -> dict[str, Any]:
    """Append a new word to a file on disk; time until lithos_search finds it (ms)."""
    files = sorted(knowledge.rglob("*.md"))[:edits]
    samples = []
    async with Client(url) as client:
        for file in files:
            word = "handedit" + uuid.uuid4().hex[:12]
            started = time.perf_counter()
            with file.open("a", encoding="utf-8") as handle:
                handle.write(f"\n\nEdited by hand: {word}\n")
            while time.perf_counter() - started < 30:
                found = await workload.call(client, "lithos_search", {"query": word})
                if found["results"]:
                    samples.append(1000 * (time.perf_counter() - started))
                    break
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.3)
    return {
        "median_ms": round(statistics.median(samples), 1) if samples else None,
        "max_ms": round(max(samples), 1) if samples else None,
        "found": len(samples),
        "edits": len(files),
    }


async def write_through_tool(url: str, pages: list[corpus.Page]) -> dict[str, Any]:
    """Ingest ``pages`` one lithos_write call at a time (one agent session)."""
    async with Client(url) as client:
        started = time.perf_counter()
        for page in pages:
            title, body = corpus.title_and_body(page)
            folder = str(Path(page.path).parent)
            args = {"agent": "bench", "title": title, "content": body, "path": folder}
            await workload.call(client, "lithos_write", args)
        seconds = time.perf_counter() - started
    return {
        "notes": len(pages),
        "seconds": round(seconds, 2),
        "notes_per_s": round(len(pages) / seconds, 1),
    }


def measure_size(pages: list[corpus.Page], root: Path, args: argparse.Namespace) -> dict[str, Any]:
    size = len(pages)
    result: dict[str, Any] = {
        "notes": size,
        "powershell_pages": sum(p.source == "powershell" for p in pages),
        "tldr_pages": sum(p.source == "tldr" for p in pages),
        "measured": {k: machine.describe()[k] for k in ("date", "commit")},
    }
    log(f"size {size}: embedding into the vector cache")
    result["embedding"] = prepare_vectors(
        pages, root, args.embed_timeout, args.in_process_calls, args.synthetic_vectors
    )
    if args.in_process_only:
        return result

    data_dir = root / "data"
    corpus.copy_into(pages, data_dir / "knowledge")
    cache.seed(data_dir, SYNTHETIC if args.synthetic_vectors else cache.DEFAULT)
    log(f"size {size}: cold start (no indexes)")
    with Server(data_dir) as server:
        result["startup_no_indexes_s"] = round(server.startup_s, 2)
        # Chunks the cache step left unembedded (--embed-timeout) stay pending: say so.
        result["index"] = asyncio.run(wait_embedded(server.url, 120))
        ids = asyncio.run(note_ids(server.url, size))
        result["rss_mb_loaded"] = server.rss_mb()
        log(f"size {size}: tool latencies")
        threshold = 0.0 if args.synthetic_vectors else None
        latencies = workload.tool_latencies(server.url, ids, args.calls, threshold)
        result["latency_ms"] = asyncio.run(latencies)
        result["rss_mb_after_searches"] = server.rss_mb()
        result["concurrency"] = []
        for sessions in args.sessions:
            log(f"size {size}: {sessions} concurrent sessions")
            run = workload.concurrent_mix(
                server.url, ids, sessions, args.session_calls, args.seconds
            )
            result["concurrency"].append(asyncio.run(run))
        result["rss_mb_after_concurrency"] = server.rss_mb()

    log(f"size {size}: warm start (indexes present), hand edits")
    result["hand_edit"] = {}
    for debounce in (500, 100):
        env = {"LITHOS_INDEX__WATCH_DEBOUNCE_MS": str(debounce)}
        with Server(data_dir, watch=True, env=env) as server:
            if debounce == 500:
                result["first_call_with_indexes_s"] = round(server.first_call_s(), 2)
                result["startup_with_indexes_s"] = round(server.startup_s, 2)
                result["load_at_startup"] = os.getloadavg()[0]
            edits = hand_edits(server.url, data_dir / "knowledge", args.edits)
            result["hand_edit"][f"debounce_{debounce}ms"] = asyncio.run(edits)
    # The floor of that start-up: FastMCP alone, one trivial tool, the same client and call.
    with Server(data_dir, bare=True) as server:
        result["first_call_floor_s"] = round(server.first_call_s(), 2)
    shutil.rmtree(data_dir)

    log(f"size {size}: lithos_write ingest")
    tool_dir = root / "tool"
    with Server(tool_dir) as server:
        result["write_ingest"] = asyncio.run(
            write_through_tool(server.url, pages[: args.write_cap])
        )
    shutil.rmtree(tool_dir)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="200 notes, few calls (CI)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 3000, 10000])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    parser.add_argument("--calls", type=int, default=50, help="timed calls per tool")
    parser.add_argument(
        "--in-process-calls",
        type=int,
        default=200,
        help="timed calls per search mode in the in-process loop (cheap: p95 needs many)",
    )
    parser.add_argument(
        "--in-process-only",
        action="store_true",
        help="only the set-up and the in-process search loop (no server); own output file",
    )
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 10, 50])
    parser.add_argument("--session-calls", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=20, help="time bound per session loop")
    parser.add_argument("--edits", type=int, default=7)
    parser.add_argument("--write-cap", type=int, default=500, help="notes ingested via tool")
    parser.add_argument("--embed-timeout", type=float, default=4 * 3600)
    parser.add_argument("--merge", action="store_true", help="keep other sizes in the output")
    parser.add_argument(
        "--synthetic-vectors",
        action="store_true",
        help="random unit vectors instead of embedding (latency only; labelled in the output)",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.calls, args.session_calls, args.seconds = [200], 5, 10, 5
        args.in_process_calls = 20
        args.sessions, args.edits, args.write_cap = [1, 10], 3, 50

    name = "perf-quick" if args.quick else "perf"
    if args.in_process_only:
        name += "-in-process"
    previous = args.out / f"{name}.json"
    kept = []
    if args.merge and previous.exists():
        kept = [
            s for s in json.loads(previous.read_text())["sizes"] if s["notes"] not in args.sizes
        ]
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="lithos-perf-") as tmp:
        pages = corpus.unpack(Path(tmp) / "corpus")
        for size in args.sizes:
            root = Path(tmp) / f"size-{size}"
            root.mkdir()
            results.append(measure_size(pages[:size], root, args))
            merged = sorted(kept + results, key=lambda size: size["notes"])
            path = machine.write_result(args.out, name, {"quick": args.quick, "sizes": merged})
            log(f"wrote {path}")
    if args.in_process_only:
        for size in results:
            searches = size["embedding"]["search_in_process_ms"]
            print(f"{size['notes']} notes in-process: {json.dumps(searches)}")
        return 0
    errors = sum(run["errors"] for size in results for run in size["concurrency"])
    for size in results:
        lat = size["latency_ms"]
        print(f"{size['notes']} notes: " + ", ".join(f"{t} p95 {v['p95']}" for t, v in lat.items()))
    print(f"concurrency errors: {errors}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

"""Compact (int8) against float32 vectors in the search matrix: recall, memory, latency.

Real data: every SciFact abstract, chunked as Lithos chunks it, with all-MiniLM-L6-v2 vectors
(from the benchmark vector cache, bench/cache.py; missing ones are embedded and saved), queried
with the 300 SciFact test claims. Scale: 100,000 SYNTHETIC random unit vectors of 384 dimensions
(search cost depends only on count and dimension), queried with 100 perturbed copies of stored
vectors. For each, the same SQLite vector store is opened once with float32 rows and once with
int8 rows (plus a float32 re-score of the best candidates), and we report:

- recall@10: the share of the exact float32 top 10 (chunks, and notes) the compact search
  returns, also without the re-score (raw int8 scores);
- memory: bytes of the matrix rows, and the growth of resident memory when the matrix is read;
- latency: median and 90th percentile of ``rank_notes(limit=10)`` and ``rank(limit=40)``.

    .venv/bin/python bench/vector_compact.py [--quick] [--out bench/out] [--cache PATH]

then ``bench/report.py`` adds the figures to RESULTS.md.
"""

from __future__ import annotations

import argparse
import functools
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import cache, machine, scifact
from lithos.domain.chunks import chunk_hash, chunk_text
from lithos.store.embedder import OnnxEmbedder
from lithos.store.vectors import VectorStore

SPACE = cache.SPACE
Notes = dict[str, list[tuple[str, np.ndarray]]]  # note id -> its (chunk text, vector)


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def cached_vectors(texts: list[str], path: Path) -> dict[str, np.ndarray]:
    """The shipped model's vector of each text, from the cache; missing ones embedded, saved."""
    wanted = {chunk_hash(t): t for t in texts}
    found: dict[str, np.ndarray] = {}
    if path.exists():
        with sqlite3.connect(path) as conn:
            rows = conn.execute(
                "SELECT chunk_hash, vector FROM embeddings WHERE model_id = ?", (SPACE.model_id,)
            )
            for h, blob in rows:
                if h in wanted:
                    found[h] = np.frombuffer(blob, dtype=np.float32)
    missing = [h for h in wanted if h not in found]
    if missing:
        machine.log(f"embedding {len(missing)} texts the cache lacks (slow: about 30/s)")
        vectors = OnnxEmbedder().embed([wanted[h] for h in missing])
        path.parent.mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(path) as conn:
            conn.execute(cache._SCHEMA)
            conn.executemany(
                "INSERT OR IGNORE INTO embeddings(model_id, chunk_hash, vector) VALUES (?, ?, ?)",
                [(SPACE.model_id, h, v.tobytes()) for h, v in zip(missing, vectors, strict=True)],
            )
        found.update(zip(missing, vectors, strict=True))
    return found


def scifact_data(path: Path, quick: bool) -> tuple[Notes, list[np.ndarray]]:
    data = scifact.load()
    if quick:
        data = scifact.subset(data, docs=600, queries_per_split=40)
    notes = {
        doc: chunk_text(f"{title or doc}\n\n{text}\n", 500, 1000)
        for doc, (title, text) in data.corpus.items()
    }
    queries = [data.queries[q] for q in data.qrels["test"]]
    vectors = cached_vectors([c for chunks in notes.values() for c in chunks] + queries, path)
    by_note = {doc: [(c, vectors[chunk_hash(c)]) for c in chunks] for doc, chunks in notes.items()}
    return by_note, [vectors[chunk_hash(q)] for q in queries]


def synthetic_data(
    count: int, queries: int
) -> tuple[dict[str, list[tuple[str, np.ndarray]]], list]:
    rng = np.random.default_rng(11)
    vectors = rng.standard_normal((count, SPACE.dimension)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    notes = {f"s{i}": [(f"synthetic chunk {i}", vectors[i])] for i in range(count)}
    picks = rng.choice(count, queries, replace=False)
    noisy = vectors[picks] + 0.05 * rng.standard_normal((queries, SPACE.dimension))
    return notes, list((noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32))


def build(path: Path, notes: Notes) -> None:
    store = VectorStore(path, SPACE.model_id, SPACE.dimension, revision=SPACE.revision)
    try:
        for doc, chunks in notes.items():
            store.set_note(doc, doc, [text for text, _ in chunks])
        store.store_embeddings([(chunk_hash(t), v) for cs in notes.values() for t, v in cs])
    finally:
        store.close()


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = fn()
    return result, (time.perf_counter() - start) * 1000


def measure(path: Path, queries: list[np.ndarray], compact: bool) -> dict[str, Any]:
    before = rss_bytes()
    store = VectorStore(
        path, SPACE.model_id, SPACE.dimension, revision=SPACE.revision, compact=compact
    )
    try:
        _, load_ms = timed(store.warm)
        resident = rss_bytes() - before
        matrix_bytes = store.matrix_bytes()
        notes: list[list[str]] = []
        chunks: list[list[tuple[str, int]]] = []
        note_ms, chunk_ms = [], []
        for query in queries:
            best_notes, ms = timed(functools.partial(store.rank_notes, query, 10))
            notes.append([c.note_id for c in best_notes])
            note_ms.append(ms)
            best_chunks, ms = timed(functools.partial(store.rank, query, 40))
            chunks.append([(c.note_id, c.chunk_index) for c in best_chunks[:10]])
            chunk_ms.append(ms)
    finally:
        store.close()
    return {
        "notes": notes,
        "chunks": chunks,
        "load_ms": round(load_ms, 1),
        "matrix_mb": round(matrix_bytes / 2**20, 2),
        "rss_growth_mb": round(resident / 2**20, 1),
        "rank_notes_ms": _spread(note_ms),
        "rank_ms": _spread(chunk_ms),
    }


def raw_int8_recall(notes: Notes, queries: list[np.ndarray]) -> float:
    """recall@10 of chunks by int8 scores alone (no re-score), computed directly."""
    matrix = np.stack([v for chunks in notes.values() for _, v in chunks])
    scales = np.abs(matrix).max(axis=1) / 127
    approx = np.rint(matrix / scales[:, None]).astype(np.float32) * scales[:, None]
    hits = 0
    for query in queries:
        exact = set(np.argsort(-(matrix @ query), kind="stable")[:10])
        rough = set(np.argsort(-(approx @ query), kind="stable")[:10])
        hits += len(exact & rough)
    return round(hits / (10 * len(queries)), 4)


def compare(name: str, notes: Notes, queries: list[np.ndarray], workdir: Path) -> dict[str, Any]:
    path = workdir / f"{name}.db"
    machine.log(f"{name}: {len(notes)} notes, {sum(map(len, notes.values()))} chunks")
    build(path, notes)
    exact = measure(path, queries, compact=False)
    compact = measure(path, queries, compact=True)
    return {
        "notes": len(notes),
        "chunks": sum(map(len, notes.values())),
        "queries": len(queries),
        "recall_at_10_notes": _recall(exact["notes"], compact["notes"]),
        "recall_at_10_chunks": _recall(exact["chunks"], compact["chunks"]),
        "recall_at_10_chunks_int8_without_rescore": raw_int8_recall(notes, queries),
        "float32": {k: v for k, v in exact.items() if k not in ("notes", "chunks")},
        "int8": {k: v for k, v in compact.items() if k not in ("notes", "chunks")},
        "load_average": os.getloadavg(),
    }


def _recall(exact: list[list], found: list[list]) -> float:
    hits = sum(len(set(a) & set(b)) for a, b in zip(exact, found, strict=True))
    return round(hits / max(1, sum(len(a) for a in exact)), 4)


def _spread(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median": round(statistics.median(ordered), 3),
        "p90": round(ordered[int(0.9 * (len(ordered) - 1))], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="600 abstracts, 10k synthetic")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "out")
    parser.add_argument("--cache", type=Path, default=cache.DEFAULT)
    args = parser.parse_args()
    result: dict[str, Any] = {"load_average_start": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp:
        notes, queries = scifact_data(args.cache, args.quick)
        result["scifact"] = compare("scifact", notes, queries, Path(tmp))
        count = 10_000 if args.quick else 100_000
        notes, queries = synthetic_data(count, 100)
        result[f"synthetic_{count}"] = compare(f"synthetic_{count}", notes, queries, Path(tmp))
    written = machine.write_result(args.out, "vector_compact", result)
    machine.log(f"wrote {written}")
    for name in ("scifact", f"synthetic_{count}"):
        row = result[name]
        print(
            f"{name}: recall@10 notes {row['recall_at_10_notes']} chunks "
            f"{row['recall_at_10_chunks']} "
            f"(int8 alone {row['recall_at_10_chunks_int8_without_rescore']}); "
            f"matrix {row['float32']['matrix_mb']} -> {row['int8']['matrix_mb']} MB, "
            f"rss +{row['float32']['rss_growth_mb']} -> +{row['int8']['rss_growth_mb']} MB; "
            f"rank_notes median {row['float32']['rank_notes_ms']['median']} -> "
            f"{row['int8']['rank_notes_ms']['median']} ms; load {row['load_average']}"
        )


if __name__ == "__main__":
    main()

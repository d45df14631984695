"""Semantic search at 100,000 notes: exact int8 scoring against a sign-bit shortlist.

At 100,000 notes of bench/scale_corpus.py (~345,000 chunks) scoring every int8 row takes tens
of milliseconds. The vector store can instead shortlist the rows whose sign bits differ least
from the query's (Hamming distance over 48 bytes a row) and score only those
(``search.vector_shortlist``). This compares, on the same vector store file, each opened
three ways:

- ``float32``: every row scored in float32, the exact ranking (the reference);
- ``int8``: every row scored from int8 codes, the best re-scored from SQLite (shipped before);
- ``shortlist``: int8 codes of the shortlisted rows only, the best re-scored likewise.

Two data sets: **real**, every all-MiniLM-L6-v2 vector in the benchmark cache (bench/cache.py:
SciFact, LongMemEval and perf corpus chunks, ~74,000) queried with SciFact test claims embedded
by the shipped model, which is where recall means something; and **synthetic**, ``--chunks``
random unit vectors (default 345,000, the 100,000-note corpus's chunk count) queried with
perturbed copies of stored vectors, for latency at that size (random vectors have no
structure, so their recall says little about real text). Reported per way: recall@10 of notes
(``rank_notes``) and chunks (``rank``) against float32, median and p95 ms of ``rank_notes(10)``
(queries interleaved between the ways, so load hits all alike), matrix MB.

    .venv/bin/python bench/vector_scale.py [--quick] [--chunks N] [--out bench/out]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import cache, machine, scifact
from bench.workload import percentiles
from lithos.domain.chunks import chunk_hash
from lithos.store.embedder import OnnxEmbedder
from lithos.store.vectors import VectorStore

SPACE = cache.SPACE
WAYS = {"float32": (False, 0), "int8": (True, 0), "shortlist": (True, 1000)}


def real_data(path: Path, queries: int) -> tuple[np.ndarray, np.ndarray]:
    """Every cached vector of the shipped model, and ``queries`` SciFact test claims."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT vector FROM embeddings WHERE model_id = ? ORDER BY chunk_hash",
            (SPACE.model_id,),
        ).fetchall()
    vectors = np.stack([np.frombuffer(blob, dtype=np.float32) for (blob,) in rows])
    data = scifact.load()
    claims = [data.queries[q] for q in sorted(data.qrels["test"])][:queries]
    return _units(vectors), _units(np.asarray(OnnxEmbedder().embed(claims), dtype=np.float32))


def synthetic_data(count: int, queries: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    vectors = _units(rng.standard_normal((count, SPACE.dimension)).astype(np.float32))
    picks = rng.choice(count, queries, replace=False)
    noisy = vectors[picks] + 0.05 * rng.standard_normal((queries, SPACE.dimension))
    return vectors, _units(noisy.astype(np.float32))


def _units(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def build(path: Path, vectors: np.ndarray) -> None:
    """A vector store with one note of one chunk per vector, written in one transaction
    (one ``set_note`` call per note would take minutes at 345,000)."""
    VectorStore(path, SPACE.model_id, SPACE.dimension, revision=SPACE.revision).close()
    with sqlite3.connect(path) as conn:
        names = [(f"n{i}", chunk_hash(f"c{i}")) for i in range(len(vectors))]
        conn.executemany(
            "INSERT INTO notes(note_id, content_hash) VALUES (?, 'h')", [(n,) for n, _ in names]
        )
        conn.executemany(
            "INSERT INTO chunks(note_id, chunk_index, chunk_hash, text) VALUES (?, 0, ?, ?)",
            [(n, h, h) for n, h in names],
        )
        conn.executemany(
            "INSERT INTO embeddings(space_id, chunk_hash, vector) VALUES (?, ?, ?)",
            [(SPACE.id, h, v.tobytes()) for (_, h), v in zip(names, vectors, strict=True)],
        )


def compare(name: str, vectors: np.ndarray, queries: np.ndarray, workdir: Path) -> dict[str, Any]:
    path = workdir / f"{name}.db"
    machine.log(f"{name}: {len(vectors)} chunks, {len(queries)} queries")
    build(path, vectors)
    stores = {
        way: VectorStore(
            path,
            SPACE.model_id,
            SPACE.dimension,
            revision=SPACE.revision,
            compact=compact,
            shortlist=shortlist,
        )
        for way, (compact, shortlist) in WAYS.items()
    }
    load = os.getloadavg()[0]
    try:
        for store in stores.values():
            store.warm()
        notes: dict[str, list[list[str]]] = {way: [] for way in WAYS}
        chunks: dict[str, list[list[str]]] = {way: [] for way in WAYS}
        ms: dict[str, list[float]] = {way: [] for way in WAYS}
        for query in queries:
            for way, store in stores.items():
                started = time.perf_counter()
                best = store.rank_notes(query, 10)
                ms[way].append(1000 * (time.perf_counter() - started))
                notes[way].append([c.note_id for c in best])
                chunks[way].append([c.note_id for c in store.rank(query, 40)[:10]])
        result: dict[str, Any] = {
            "chunks": len(vectors),
            "queries": len(queries),
            "load_average": [load, os.getloadavg()[0]],
        }
        for way, store in stores.items():
            result[way] = {
                "recall_at_10_notes": _recall(notes["float32"], notes[way]),
                "recall_at_10_chunks": _recall(chunks["float32"], chunks[way]),
                "rank_notes_ms": percentiles(ms[way]),
                "matrix_mb": round(store.matrix_bytes() / 2**20, 1),
            }
    finally:
        for store in stores.values():
            store.close()
    path.unlink()
    return result


def _recall(exact: list[list[str]], found: list[list[str]]) -> float:
    hits = sum(len(set(a) & set(b)) for a, b in zip(exact, found, strict=True))
    return round(hits / max(1, sum(len(a) for a in exact)), 4)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="20,000 synthetic, 20 queries")
    parser.add_argument("--chunks", type=int, default=345_000, help="synthetic vectors")
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--cache", type=Path, default=cache.DEFAULT)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "out")
    args = parser.parse_args(argv)
    if args.quick:
        args.chunks, args.queries = 20_000, 20
    result: dict[str, Any] = {"shortlist_minimum": WAYS["shortlist"][1]}
    with tempfile.TemporaryDirectory(prefix="lithos-vector-scale-") as tmp:
        if args.cache.exists() and not args.quick:
            vectors, queries = real_data(args.cache, args.queries)
            result["real"] = compare("real", vectors, queries, Path(tmp))
        vectors, queries = synthetic_data(args.chunks, min(args.queries, 100))
        result["synthetic"] = compare("synthetic", vectors, queries, Path(tmp))
    name = "vector_scale-quick" if args.quick else "vector_scale"
    path = machine.write_result(args.out, name, result)
    machine.log(f"wrote {path}")
    for data in ("real", "synthetic"):
        if data in result:
            row = result[data]
            print(
                f"{data} ({row['chunks']} chunks): "
                + "; ".join(
                    f"{way} recall@10 {row[way]['recall_at_10_notes']}"
                    f" p50 {row[way]['rank_notes_ms']['p50']} ms"
                    for way in WAYS
                )
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

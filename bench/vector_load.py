"""Reading the vector store's search matrices at start-up: from SQLite against the matrix
snapshot (store/vector_snapshot.py), at the 100,000-note corpus's size.

Builds (once, kept at ``--store``) a vector store of ``--notes`` notes with ``--chunks``
chunks in all, each with a SYNTHETIC unit vector (the cost of reading depends on the count
and dimension, not on what the vectors mean), then in fresh subprocesses, one way each:

- ``sqlite``: the matrices read from SQLite (no snapshot, or a stale one);
- ``snapshot``: the matrices read from the snapshot the ``sqlite`` run saved.

Each reports the seconds of ``VectorStore.warm()`` and the growth of the process's resident
memory across it (the matrix and its row keys), and the ``sqlite`` way the seconds to write
the snapshot. With ``--ways sqlite`` it runs under any version of Lithos (the version without
a snapshot, for a before/after figure).

    .venv/bin/python bench/vector_load.py [--notes 100000 --chunks 347451] [--ways ...]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import machine
from lithos.domain.chunks import chunk_hash
from lithos.store.vectors import VectorStore

MODEL, DIMENSION = "synthetic", 384


def build(path: Path, notes: int, chunks: int) -> None:
    """``notes`` notes sharing ``chunks`` chunks as evenly as they divide, each chunk with a
    random unit vector, written in a few large transactions."""
    VectorStore(path, MODEL, DIMENSION).close()
    rng = np.random.default_rng(5)
    per_note = np.full(notes, chunks // notes)
    per_note[: chunks % notes] += 1
    space = space_id(path)
    with sqlite3.connect(path) as conn:
        conn.executemany(
            "INSERT INTO notes(note_id, content_hash) VALUES (?, 'h')",
            [(f"note-{i:06d}",) for i in range(notes)],
        )
        done = 0
        for note in range(notes):
            count = int(per_note[note])
            vectors = rng.standard_normal((count, DIMENSION)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            texts = [f"chunk {done + i}" for i in range(count)]
            hashes = [chunk_hash(text) for text in texts]
            conn.executemany(
                "INSERT INTO chunks(note_id, chunk_index, chunk_hash, text) VALUES (?, ?, ?, ?)",
                [
                    (f"note-{note:06d}", i, h, t)
                    for i, (h, t) in enumerate(zip(hashes, texts, strict=True))
                ],
            )
            conn.executemany(
                "INSERT INTO embeddings(space_id, chunk_hash, vector) VALUES (?, ?, ?)",
                [(space, h, v.tobytes()) for h, v in zip(hashes, vectors, strict=True)],
            )
            done += count


def space_id(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        return str(conn.execute("SELECT space_id FROM spaces").fetchone()[0])


def one_way(path: Path, way: str) -> dict[str, Any]:
    """In this process: read the matrices once (the ``way`` the files on disk give)."""
    snapshot = path.with_suffix(".matrix")
    if way == "sqlite":
        snapshot.unlink(missing_ok=True)
    process = psutil.Process()
    store = VectorStore(path, MODEL, DIMENSION, compact=True, shortlist=1000)
    rss = process.memory_info().rss
    started = time.perf_counter()
    store.warm()
    result: dict[str, Any] = {
        "warm_s": round(time.perf_counter() - started, 3),
        "rss_growth_mb": round((process.memory_info().rss - rss) / 2**20, 1),
        "matrix_mb": round(store.matrix_bytes() / 2**20, 1),
    }
    query = np.random.default_rng(1).standard_normal(DIMENSION).astype(np.float32)
    started = time.perf_counter()
    store.rank_notes(query, 10)
    result["first_rank_ms"] = round(1000 * (time.perf_counter() - started), 1)
    if hasattr(store, "save_snapshot"):
        started = time.perf_counter()
        written = store.save_snapshot()
        if written:
            result["snapshot_write_s"] = round(time.perf_counter() - started, 3)
            result["snapshot_mb"] = round(snapshot.stat().st_size / 2**20, 1)
    result["rss_mb"] = round(process.memory_info().rss / 2**20, 1)
    store.close()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--notes", type=int, default=100_000)
    parser.add_argument("--chunks", type=int, default=347_451)
    parser.add_argument("--store", type=Path, default=Path("/tmp/lithos-vector-load/vectors.db"))
    parser.add_argument("--ways", nargs="*", default=["sqlite", "snapshot", "snapshot"])
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one_way(args.store, args.one)))
        return 0
    if not args.store.exists():
        machine.log(f"building {args.notes} notes, {args.chunks} chunks at {args.store}")
        args.store.parent.mkdir(parents=True, exist_ok=True)
        build(args.store, args.notes, args.chunks)
    results = []
    for way in args.ways:
        load = os.getloadavg()[0]
        command = [sys.executable, __file__, "--store", str(args.store), "--one", way]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        result = {"way": way, "load": round(load, 2), **json.loads(done.stdout)}
        machine.log(json.dumps(result))
        results.append(result)
    print(json.dumps({"notes": args.notes, "chunks": args.chunks, "runs": results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Micro-benchmark of offline embeddings and the brute-force vector store.

Measures, on this machine: the ONNX Runtime import and session load, embedding throughput for
~500-character chunks at batch 1/8/32 with 1 and 2 threads (each in a fresh process, so peak RSS
is per configuration), and exact top-10 search latency over 10k and 50k random unit vectors, both
as a bare numpy product and through :class:`VectorStore.search`. Chunks come from SciFact
abstracts (read-only), cut by Lithos's own chunker. Run from the repository root:

    .venv/bin/python bench/embedding_micro.py            # everything, a few minutes
    .venv/bin/python bench/embedding_micro.py --scifact  # plus dense nDCG@10 on SciFact test
    .venv/bin/python bench/embedding_micro.py --tokenizer  # only the tokenizer's cost per chunk
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SCIFACT = Path("/work/shared/data/scifact")
DIMENSION = 384


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def sample_chunks(count: int) -> list[str]:
    """``count`` chunks of 400-600 characters cut from SciFact abstracts by ``chunk_text``."""
    from lithos.domain.chunks import chunk_text

    chunks: list[str] = []
    with (SCIFACT / "corpus.jsonl").open(encoding="utf-8") as corpus:
        for line in corpus:
            text = json.loads(line)["text"].replace(". ", ".\n\n")
            chunks.extend(c for c in chunk_text(text, 500, 1000) if 400 <= len(c) <= 600)
            if len(chunks) >= count:
                return chunks[:count]
    raise SystemExit(f"only {len(chunks)} chunks in {SCIFACT}")


def child_load() -> dict[str, float]:
    started = time.perf_counter()
    import onnxruntime  # noqa: F401

    imported = time.perf_counter()
    from lithos.store.embedder import OnnxEmbedder

    embedder = OnnxEmbedder()
    before = time.perf_counter()
    embedder.embed(["warm up"])
    return {
        "import_s": imported - started,
        "first_embed_s": time.perf_counter() - before,
        "rss_mb": peak_rss_mb(),
    }


def child_throughput(threads: int, batch: int, count: int) -> dict[str, float]:
    from lithos.store.embedder import OnnxEmbedder

    chunks = sample_chunks(count)
    embedder = OnnxEmbedder(threads=threads, batch_size=batch)
    embedder.embed(chunks[:batch])  # load and warm up
    rates = []
    for _ in range(3):  # best of three: other processes on a shared machine only slow it down
        started = time.perf_counter()
        embedder.embed(chunks)
        rates.append(count / (time.perf_counter() - started))
    return {"chunks_per_s": max(rates), "rss_mb": peak_rss_mb()}


def tokenizer_cost(count: int) -> dict[str, float]:
    """Median time per chunk of Lithos's WordPiece tokenizer (first meeting of each chunk, so
    its word cache is cold for new words) against a whole ``embed`` of the chunk (batch 1)."""
    from lithos.store.embedder import OnnxEmbedder, model_files
    from lithos.store.wordpiece import WordPieceTokenizer

    chunks = sample_chunks(count)
    tokenizer = WordPieceTokenizer.from_file(model_files()[1])
    tokenize = []
    for chunk in chunks:
        started = time.perf_counter()
        tokenizer.encode(chunk, 256)
        tokenize.append((time.perf_counter() - started) * 1000)
    embedder = OnnxEmbedder()
    embedder.embed(["warm up"])
    embed = []
    for chunk in chunks:
        started = time.perf_counter()
        embedder.embed([chunk])
        embed.append((time.perf_counter() - started) * 1000)
    return {"tokenize_ms": statistics.median(tokenize), "embed_ms": statistics.median(embed)}


def in_child(*args: str) -> dict[str, float]:
    output = subprocess.run(
        [sys.executable, __file__, "--child", *args], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def median_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
        time.sleep(0.002)  # searches arrive one at a time, not in a hot loop
    return statistics.median(times)


def p90_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
        time.sleep(0.002)
    return statistics.quantiles(times, n=10)[-1]


def unit_rows(rng: np.random.Generator, rows: int) -> np.ndarray:
    matrix = rng.standard_normal((rows, DIMENSION), dtype=np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def search_latency(rows: int, repeats: int) -> dict[str, float]:
    from lithos.store.vectors import VectorStore

    rng = np.random.default_rng(7)
    matrix, query = unit_rows(rng, rows), unit_rows(rng, 1)[0]

    def bare() -> None:
        scores = matrix @ query  # one product: OpenBLAS may use several threads
        best = np.argpartition(-scores, 9)[:10]
        best[np.argsort(-scores[best])]

    with tempfile.TemporaryDirectory() as tmp:
        store = VectorStore(Path(tmp) / "vectors.db", "bench", DIMENSION)
        for start in range(0, rows, 1000):
            for n in range(start, start + 1000, 10):  # 100 notes of 10 chunks per round
                store.set_note(f"n{n}", "h", [f"chunk {n + i}" for i in range(10)])
            batch = store.pending(1000)
            store.store_embeddings([(h, matrix[start + i]) for i, (h, _) in enumerate(batch)])
        started = time.perf_counter()
        store.search(query, 10)  # first search reads the matrix from SQLite
        load_ms = (time.perf_counter() - started) * 1000
        half = {f"n{n}" for n in range(0, rows, 20)}
        result = {
            "bare_ms": median_ms(bare, repeats),
            "bare_p90_ms": p90_ms(bare, repeats),
            "store_p90_ms": p90_ms(lambda: store.search(query, 10), repeats),
            "store_ms": median_ms(lambda: store.search(query, 10), repeats),
            "store_filtered_ms": median_ms(lambda: store.search(query, 10, half.__contains__), 20),
            "counts_ms": median_ms(store.counts, 20),
            "load_ms": load_ms,
            "db_mb": (Path(tmp) / "vectors.db").stat().st_size / 2**20,
        }
        store.close()
    return result


def scifact_ndcg() -> float:
    """Dense-only nDCG@10 on the 300 SciFact test queries (title + abstract, 256 tokens)."""
    from lithos.store.embedder import OnnxEmbedder

    docs = [json.loads(line) for line in (SCIFACT / "corpus.jsonl").open(encoding="utf-8")]
    queries = {
        q["_id"]: q["text"]
        for q in map(json.loads, (SCIFACT / "queries.jsonl").open(encoding="utf-8"))
    }
    qrels: dict[str, set[str]] = {}
    for line in list((SCIFACT / "qrels" / "test.tsv").open())[1:]:
        query_id, doc_id, score = line.split("\t")
        if int(score) > 0:
            qrels.setdefault(query_id, set()).add(doc_id)
    embedder = OnnxEmbedder(threads=2)
    matrix = embedder.embed([f"{d['title']} {d['text']}" for d in docs])
    ids = [d["_id"] for d in docs]
    total = 0.0
    for query_id, relevant in qrels.items():
        scores = matrix @ embedder.embed([queries[query_id]])[0]
        ranked = [ids[i] for i in np.argsort(-scores)[:10]]
        dcg = sum(1 / math.log2(rank + 2) for rank, d in enumerate(ranked) if d in relevant)
        ideal = sum(1 / math.log2(rank + 2) for rank in range(min(10, len(relevant))))
        total += dcg / ideal
    return total / len(qrels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=256, help="chunks per throughput run")
    parser.add_argument("--repeats", type=int, default=50, help="search repetitions")
    parser.add_argument("--scifact", action="store_true", help="also score SciFact nDCG@10")
    parser.add_argument(
        "--tokenizer", action="store_true", help="only the tokenizer's share of an embed"
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.tokenizer:
        cost = tokenizer_cost(args.chunks)
        print(
            f"per chunk of 400-600 chars, median of {args.chunks}: tokenize"
            f" {cost['tokenize_ms'] * 1000:.0f} us, whole embed (batch 1)"
            f" {cost['embed_ms']:.1f} ms, tokenizer share"
            f" {cost['tokenize_ms'] / cost['embed_ms']:.1%}"
        )
        return
    if args.child:
        kind, *rest = args.child
        result = child_load() if kind == "load" else child_throughput(*map(int, rest))
        print(json.dumps(result))
        return

    import onnxruntime

    print(
        f"# {platform.processor() or platform.machine()}, {platform.python_version()},"
        f" onnxruntime {onnxruntime.__version__}, numpy {np.__version__}"
    )
    load = in_child("load")
    print(
        f"import onnxruntime {load['import_s']:.2f} s; first embed (tokenizer +"
        f" session load + 1 text) {load['first_embed_s']:.2f} s; peak RSS {load['rss_mb']:.0f} MB"
    )
    print(f"\n{args.chunks} chunks of 400-600 chars, one embed() call each run")
    print("threads | batch | chunks/s | peak RSS MB")
    for threads in (1, 2):
        for batch in (1, 8, 32):
            run = in_child("throughput", str(threads), str(batch), str(args.chunks))
            print(f"{threads} | {batch} | {run['chunks_per_s']:.1f} | {run['rss_mb']:.0f}")
    print("\nexact top-10 over N x 384 unit vectors, median ms")
    print(
        "N | numpy one product (p90) | VectorStore.search (p90) | filtered to 5% of notes"
        " | counts() | first load | db MB"
    )
    for rows in (10_000, 50_000):
        r = search_latency(rows, args.repeats)
        print(
            f"{rows} | {r['bare_ms']:.2f} ({r['bare_p90_ms']:.2f}) | {r['store_ms']:.2f}"
            f" ({r['store_p90_ms']:.2f}) | {r['store_filtered_ms']:.2f} | {r['counts_ms']:.2f}"
            f" | {r['load_ms']:.0f} | {r['db_mb']:.1f}"
        )
    if args.scifact:
        print(f"\nSciFact test, dense only, nDCG@10 = {scifact_ndcg():.3f}")


if __name__ == "__main__":
    main()

"""Embedding throughput: raw ONNX Runtime against Lithos's own pipeline, on the same chunks.

The chunks are the first ``--chunks`` that Lithos's chunker cuts from the real corpora
(bench/corpus.py), as the embedding worker would meet them. Measured, best of ``--rounds``
(other processes on a shared machine only ever slow a run down):

- ``raw``: the shipped model in an ONNX Runtime session, inputs tokenized beforehand (not
  timed), sorted by token count and run ``batch`` at a time, padded to the longest of each
  batch, with mean pooling and normalisation in numpy: the best this model does here.
- ``tokenizer``: Lithos's WordPiece tokenizer alone over the same chunks (cold word cache).
- ``lithos``: the chunks queued in a real vector store and drained by the embedding worker
  (``EmbeddingWorker`` over ``OnnxEmbedder``) with the given settings, as the server does:
  tokenizing, batching, inference and storing the vectors.

    .venv/bin/python bench/embedding_throughput.py                # 1 and 2 threads
    .venv/bin/python bench/embedding_throughput.py --threads 1 --chunks 256
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import corpus, machine
from bench.machine import log
from lithos.domain.chunks import chunk_text
from lithos.services.embedding import EmbeddingWorker
from lithos.store.embedder import MAX_TOKENS, OnnxEmbedder, model_files
from lithos.store.vectors import VectorStore
from lithos.store.wordpiece import WordPieceTokenizer


def corpus_chunks(count: int, root: Path) -> list[str]:
    chunks: list[str] = []
    for page in corpus.unpack(root):
        title, body = corpus.title_and_body(page)
        chunks.extend(chunk_text(f"{title}\n\n{body}", 500, 1000))
        if len(chunks) >= count:
            return chunks[:count]
    return chunks


def tokenizer_rate(chunks: list[str]) -> dict[str, float]:
    tokenizer = WordPieceTokenizer.from_file(model_files()[1])
    started = time.perf_counter()
    encoded = [tokenizer.encode(chunk, MAX_TOKENS) for chunk in chunks]
    seconds = time.perf_counter() - started
    return {
        "us_per_chunk": round(1e6 * seconds / len(chunks), 1),
        "tokens_per_chunk": round(sum(map(len, encoded)) / len(encoded), 1),
    }


def raw_rate(chunks: list[str], threads: int, batch: int, rounds: int) -> float:
    import onnxruntime

    tokenizer = WordPieceTokenizer.from_file(model_files()[1])
    rows = sorted((tokenizer.encode(chunk, MAX_TOKENS) for chunk in chunks), key=len)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(
        str(model_files()[0]), sess_options=options, providers=["CPUExecutionProvider"]
    )
    names = {node.name for node in session.get_inputs()}
    batches = []
    for start in range(0, len(rows), batch):
        part = rows[start : start + batch]
        width = max(map(len, part))
        ids = np.zeros((len(part), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for index, row in enumerate(part):
            ids[index, : len(row)] = row
            mask[index, : len(row)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        batches.append((feeds, mask))
    best = 0.0
    for _ in range(rounds):
        started = time.perf_counter()
        for feeds, mask in batches:
            hidden = session.run(None, feeds)[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
            pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        best = max(best, len(chunks) / (time.perf_counter() - started))
    return round(best, 1)


def lithos_rate(chunks: list[str], threads: int, batch: int, rounds: int) -> float:
    embedder = OnnxEmbedder(threads=threads, batch_size=batch)
    embedder.warm()
    best = 0.0
    for round_ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "vectors.db"
            store = VectorStore(
                path, embedder.model_id, embedder.dimension, revision=embedder.revision
            )
            # Distinct texts per round: the store would reuse a vector it already holds.
            for start in range(0, len(chunks), 10):
                part = [f"{round_} {c}" for c in chunks[start : start + 10]]
                store.set_note(f"n{start}", "h", part)
            worker = EmbeddingWorker(store, embedder, batch_size=batch)  # as the server runs it
            started = time.perf_counter()
            worker.start()
            worker.notify()
            while not worker.wait_idle(60) or store.pending_count():
                pass
            best = max(best, len(chunks) / (time.perf_counter() - started))
            worker.stop()
            store.close()
    return round(best, 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=512)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        chunks = corpus_chunks(args.chunks, Path(tmp))
    result: dict[str, Any] = {
        "chunks": len(chunks),
        "chars_per_chunk": round(sum(map(len, chunks)) / len(chunks)),
        "load_before": os.getloadavg()[0],
        "tokenizer": tokenizer_rate(chunks),
        "runs": [],
    }
    for threads in args.threads:
        for batch in args.batches:
            log(f"{threads} threads, batch {batch}")
            raw = raw_rate(chunks, threads, batch, args.rounds)
            inside = lithos_rate(chunks, threads, batch, args.rounds)
            run = {"threads": threads, "batch": batch, "raw_chunks_per_s": raw}
            run |= {"lithos_chunks_per_s": inside, "ratio": round(inside / raw, 2)}
            run["load"] = os.getloadavg()[0]
            print(json.dumps(run), flush=True)
            result["runs"].append(run)
    path = machine.write_result(args.out, "embedding", result)
    log(f"wrote {path}; tokenizer {result['tokenizer']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Retrieval quality on BEIR SciFact (nDCG@10, Recall@10/100, MRR@10 per search mode) and on
LongMemEval-S (session recall_any@5, recall_all@5, nDCG@10 per question type; bench/longmemeval.py).

The 5,183 abstracts are dropped into a fresh knowledge directory as Markdown files and indexed
by Lithos itself (start-up reconcile plus the embedding worker); vectors come from the shared
cache (bench/cache.py) when they were computed before. Every mode is one row of
``RETRIEVERS``, so a new retrieval mode (lithos_retrieve, ...) is one more entry. Fusion rules
(bench/fusion.py) are tuned on the train queries only and reported on the test queries.
The rows of LCMA's features with and without themselves (exploration, the graph scout with
typed edges, the analogy scout, concepts) are bench/explore_eval.py, concepts_eval.py and
analogy_eval.py; they share this module's knowledge base (bench/harness.py).

    .venv/bin/python bench/eval.py            # full run: bench/out/eval.json, longmemeval.json
    .venv/bin/python bench/eval.py --only longmemeval     # one of the two data sets
    .venv/bin/python bench/eval.py --quick --out /tmp/x   # ~300 abstracts, 6 questions: CI smoke
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fastmcp import Client

from bench import cache, concepts_eval, fusion, longmemeval, machine, retrieve_eval, scifact
from bench.machine import log
from bench.metrics import evaluate
from lithos.app import LithosApp
from lithos.config import load_config
from lithos.mcp.server import create_server

DEPTH = 100
Scored = list[tuple[str, float]]
# name -> (app, query, depth) -> [(note id, score)] best first
RETRIEVERS: dict[str, Callable[[LithosApp, str, int], Scored]] = {
    "fulltext": lambda app, q, n: [(h["id"], h["score"]) for h in app.search.fulltext_hits(q, n)],
    # The full-text half of hybrid search: the query read as plain words, not Tantivy syntax.
    "fulltext-words": lambda app, q, n: [
        (h["id"], h["score"]) for h in app.search.fulltext_hits(q, n, syntax=False)
    ],
    "semantic": lambda app, q, n: [
        (h["id"], h["similarity"]) for h in app.search.semantic_hits(q, n, threshold=0.0)
    ],
    "hybrid": lambda app, q, n: [(h["id"], h["score"]) for h in app.search.hybrid_hits(q, n)],
    "retrieve": retrieve_eval.ranking,
}
PUBLISHED = {
    "BM25 (Anserini flat)": {"ndcg@10": 0.679, "recall@100": 0.925},
    "BM25 (BEIR paper)": {"ndcg@10": 0.665, "recall@100": 0.908},
    "all-MiniLM-L6-v2 (MTEB)": {"ndcg@10": 0.645},
}


def open_indexed(
    write: Callable[[Path], object], root: Path, use_cache: bool
) -> tuple[LithosApp, dict]:
    """Lithos over the notes ``write`` puts into a knowledge directory, fully indexed and
    embedded; returns the app and timings."""
    data_dir = root / "data"
    write(data_dir / "knowledge")
    seeded = cache.seed(data_dir) if use_cache else 0
    overrides = {
        "server.watch_files": False,
        "search.embedding_threads": 2,
        "search.embedding_batch_size": 32,
    }
    app = LithosApp(load_config(data_dir=data_dir, overrides=overrides)).open()
    started = time.perf_counter()
    app.start(watch=False)
    indexed = time.perf_counter() - started
    notes = app.catalog.count()
    log(f"indexed {notes} notes in {indexed:.1f} s; {seeded} cached vectors")
    while not app.embedding.wait_idle(30):
        counts = app.vectors.counts()
        log(f"embedding: {counts.embedded_chunks}/{counts.chunks} chunks")
        if use_cache:
            cache.save(data_dir)
    embedded = time.perf_counter() - started - indexed
    if use_cache:
        cache.save(data_dir)
    counts = app.vectors.counts()
    timings = {
        "notes": notes,
        "index_s": round(indexed, 2),
        "embed_s": round(embedded, 2),
        "chunks": counts.chunks,
        "vectors_from_cache": seeded,
    }
    return app, timings


def run_queries(
    app: LithosApp, queries: dict[str, str], ids: dict[str, str], names: list[str]
) -> tuple[dict[str, dict[str, Scored]], dict[str, float]]:
    """The ranking (in SciFact ids) of every query by each retriever named, and its mean
    latency in ms."""
    rankings: dict[str, dict[str, Scored]] = {name: {} for name in names}
    latency: dict[str, float] = {}
    for name in names:
        retrieve = RETRIEVERS[name]
        started = time.perf_counter()
        for qid, text in queries.items():
            hits = retrieve(app, text, DEPTH)
            rankings[name][qid] = [(ids[note], score) for note, score in hits if note in ids]
        latency[name] = round(1000 * (time.perf_counter() - started) / max(1, len(queries)), 2)
    return rankings, latency


def score(rankings: dict[str, Scored], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    plain = {q: [doc for doc, _ in ranked] for q, ranked in rankings.items()}
    return {name: round(value, 4) for name, value in evaluate(plain, qrels).items()}


def tune_fusion(rankings: dict[str, dict[str, dict[str, Scored]]], data: scifact.SciFact) -> dict:
    """Score every fusion rule on train; report the best one (by nDCG@10) on test too."""
    by_rule: dict[str, dict[str, dict[str, float]]] = {}
    for name, rule in fusion.candidates().items():
        by_rule[name] = {}
        for split in ("train", "test"):
            text, semantic = rankings[split]["fulltext-words"], rankings[split]["semantic"]
            fused = {q: [(d, 0.0) for d in rule(text[q], semantic[q])] for q in text}
            by_rule[name][split] = score(fused, data.qrels[split])
    best = max(by_rule, key=lambda name: by_rule[name]["train"]["ndcg@10"])
    return {"best_on_train": best, "rules": by_rule}


async def mcp_agreement(app: LithosApp, queries: dict[str, str], limit: int = 10) -> dict:
    """Run queries through the search tools; count rankings identical to direct calls."""
    same = total = 0
    async with Client(create_server(app)) as client:
        for text in queries.values():
            for mode in ("fulltext", "semantic", "hybrid"):
                # lithos_semantic with threshold 0 is the semantic ranking the eval scores.
                tool, arguments = (
                    ("lithos_semantic", {"query": text, "limit": limit, "threshold": 0.0})
                    if mode == "semantic"
                    else ("lithos_search", {"query": text, "mode": mode, "limit": limit})
                )
                result = await client.call_tool(tool, arguments)
                tool_ids = [hit["id"] for hit in result.structured_content["results"]]
                direct = [note for note, _ in RETRIEVERS[mode](app, text, limit)]
                total += 1
                same += tool_ids == direct
    return {
        "queries": len(queries),
        "calls": total,
        "identical_rankings": same,
        "tools": "lithos_search (fulltext, hybrid), lithos_semantic threshold=0 (semantic)",
    }


def run_scifact(args: argparse.Namespace) -> None:
    data = scifact.load()
    mcp_queries = args.mcp_queries
    if args.quick:
        data = scifact.subset(data, docs=300, queries_per_split=20)
        mcp_queries = min(mcp_queries, 5)
    with tempfile.TemporaryDirectory(prefix="lithos-eval-") as tmp:
        ids = {note: doc for note, doc in ((scifact.note_id(d), d) for d in data.corpus)}
        write = partial(scifact.write_notes, data)
        app, build = open_indexed(write, Path(tmp), use_cache=not args.no_cache)
        try:
            rankings, latency, quality = {}, {}, {}
            searches = [name for name in RETRIEVERS if name != "retrieve"]
            for split in ("train", "test"):
                queries = {q: data.queries[q] for q in data.qrels[split]}
                log(f"{split}: {len(queries)} queries")
                rankings[split], latency[split] = run_queries(app, queries, ids, searches)
            tuning = tune_fusion(rankings, data)
            # retrieve runs with the shipped defaults; the grid is a sensitivity report.
            retrieve_tuning = retrieve_eval.tune(rankings, data.qrels)
            for split in ("train", "test"):
                queries = {q: data.queries[q] for q in data.qrels[split]}
                log(f"{split}: {len(queries)} queries by retrieve")
                more, more_latency = run_queries(app, queries, ids, ["retrieve"])
                rankings[split] |= more
                latency[split] |= more_latency
                quality[split] = {
                    m: score(r, data.qrels[split]) for m, r in rankings[split].items()
                }
            test_queries = {q: data.queries[q] for q in list(data.qrels["test"])[:mcp_queries]}
            agreement = asyncio.run(mcp_agreement(app, test_queries))
            # Last: feedback changes what retrieve has learned.
            before = {split: quality[split]["retrieve"] for split in ("train", "test")}
            learning = retrieve_eval.learning(app, data.queries, data.qrels, ids, DEPTH, before)
            # After learning (which is what forms concepts): the concept gateway on and off.
            concepts = concepts_eval.effect(app, data.queries, data.qrels, ids)
        finally:
            app.close()
    result: dict[str, Any] = {
        "quick": args.quick,
        "load_average": machine.load_average(),
        "corpus_docs": len(data.corpus),
        "queries": {split: len(table) for split, table in data.qrels.items()},
        "build": build,
        "quality": quality,
        "latency_ms_mean": latency,
        "fusion_tuning": tuning,
        "retrieve_tuning": retrieve_tuning,
        "retrieve_learning": learning,
        "concepts": concepts,
        "mcp_agreement": agreement,
        "published": PUBLISHED,
    }
    path = machine.write_result(args.out, "eval-quick" if args.quick else "eval", result)
    for mode, metrics in quality["test"].items():
        print(f"test {mode:9s} " + "  ".join(f"{k} {v:.4f}" for k, v in metrics.items()))
    best = tuning["best_on_train"]
    print(f"best fusion on train: {best}: test {tuning['rules'][best]['test']}")
    print(f"retrieve calibration best on train: {retrieve_tuning['best_on_train']}")
    print(f"retrieve learning: {learning}")
    print(f"concepts: {concepts}")
    print(f"MCP tool agreement: {agreement}")
    print(f"wrote {path}")


def run_longmemeval(args: argparse.Namespace) -> None:
    questions = longmemeval.load()
    if args.quick:
        questions = longmemeval.subset(questions, per_type=1, distractors=2)
    elif args.lme_per_type is not None:
        questions = longmemeval.subset(questions, per_type=args.lme_per_type)
    rows = longmemeval.ROWS + [longmemeval.parse_row(text) for text in args.lme_row]
    with tempfile.TemporaryDirectory(prefix="lithos-lme-") as tmp:
        sessions: dict[str, str] = {}

        def write(knowledge: Path) -> None:
            sessions.update(longmemeval.write_notes(questions, knowledge))

        app, build = open_indexed(write, Path(tmp), use_cache=not args.no_cache)
        ranked: dict[str, dict[str, longmemeval.Scored]] = {}
        try:
            rows_out = longmemeval.run(app, questions, sessions, rows, ranked)
        finally:
            app.close()
    tuning = longmemeval.tune(ranked, questions, sessions)
    result: dict[str, Any] = {
        "quick": args.quick,
        "load_average": machine.load_average(),
        "questions": len(questions),
        "sessions": len(sessions),
        "build": build,
        "rows": rows_out,
        "retrieve_tuning": tuning,
    }
    name = "longmemeval-quick" if args.quick else "longmemeval"
    path = machine.write_result(args.out, name, result)
    for row, values in rows_out.items():
        overall = values["scores"]["overall"]
        print(f"longmemeval {row:10s} " + "  ".join(f"{k} {v:.4f}" for k, v in overall.items()))
    print(f"longmemeval retrieve calibration, 2-fold: {tuning}")
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small slices of both data sets")
    parser.add_argument("--only", choices=("scifact", "longmemeval"), help="one data set")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    parser.add_argument("--no-cache", action="store_true", help="embed everything afresh")
    parser.add_argument("--mcp-queries", type=int, default=30)
    parser.add_argument(
        "--lme-per-type",
        type=int,
        help="LongMemEval: only the first N questions of each type (whole haystacks)",
    )
    parser.add_argument(
        "--lme-row",
        action="append",
        default=[],
        metavar="NAME=RETRIEVER[:JSON]",
        help="extra LongMemEval row: a retriever with lcma overrides, e.g. "
        """'nommr=retrieve:{"mmr_lambda": 1}'""",
    )
    args = parser.parse_args(argv)
    if args.only != "longmemeval":
        run_scifact(args)
    if args.only != "scifact":
        run_longmemeval(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())

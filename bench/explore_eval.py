"""Temperature-driven exploration, the analogy scout and the graph scout (typed edges), each
measured with and without itself on SciFact's test queries and LongMemEval-S's development set.

Every row is ``lithos_retrieve`` at ``limit`` 10, what an agent asks for (exploration keeps
places among the results shown, so it must be scored at the size shown), with ``lcma``
settings overridden for that row only (see :data:`ROWS`). SciFact runs twice: before and after
agents' feedback on its train queries, which writes the typed ``related_to`` edges the graph
scout follows and temperature reads (concepts formed from that feedback are measured by
bench/concepts_eval.py). Each row also reports how hot its queries were (mean
temperature, share above ``exploration.threshold``) and its mean latency.

    .venv/bin/python bench/explore_eval.py                # both data sets, bench/out/
    .venv/bin/python bench/explore_eval.py --quick --out /tmp/x
    .venv/bin/python bench/explore_eval.py --only longmemeval
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pydantic import BaseModel

from bench import longmemeval, machine, retrieve_eval, scifact
from bench.eval import DEPTH, open_indexed
from bench.machine import log
from bench.metrics import evaluate
from lithos.app import LithosApp
from lithos.domain.edges import EdgeFilter
from lithos.domain.retrieval import EXPLORATION_SCOUTS, Retrieval, RetrievalQuery

LIMIT = 10
# Row name -> lcma overrides (a dict merges into a dict or nested settings section).
ROWS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "no exploration": {"exploration": {"enabled": False}},
    "random scout at 0.02 (the earlier default)": {"scout_weights": {"scout_random": 0.02}},
    "exploration with a kept place": {"exploration": {"slots": 1}},
    "no analogy": {"scout_weights": {"scout_analogy": 0.0}},
    "no graph scout": {"scout_weights": {"scout_graph": 0.0}},
    "graph scout following rule edges": {"graph_provenance_weights": {"rule": 1.0}},
    "graph scout, rule edges at half weight": {"graph_provenance_weights": {"rule": 0.5}},
    "exploration weights not learned": {"exploration": {"learn": False}},
}


@contextmanager
def overridden(app: LithosApp, overrides: Mapping[str, Any]) -> Iterator[None]:
    """Retrieval rebuilt under ``overrides`` of ``app.config.lcma``, restored afterwards."""
    lcma = app.config.lcma
    saved = {key: getattr(lcma, key) for key in overrides}
    for key, value in overrides.items():
        current = saved[key]
        if isinstance(current, BaseModel):
            value = current.model_copy(update=value)
        elif isinstance(current, dict):
            value = {**current, **value}
        setattr(lcma, key, value)
    app.retrieval = app.build_retrieval()
    try:
        yield
    finally:
        for key, value in saved.items():
            setattr(lcma, key, value)
        app.retrieval = app.build_retrieval()


# What a retrieval changes in stats.db: its receipt and the returned notes' retrieval counts,
# which scout_novelty reads (its rarity term). Restored before each row, so a row does not
# carry what the rows before it retrieved.
ROW_STATE = ("node_stats", "receipts", "receipt_nodes")


def row_state(action: str, conn: sqlite3.Connection) -> None:
    """``save`` the tables of :data:`ROW_STATE` into temporary copies, or ``restore`` them."""
    if action == "save":
        for name in ROW_STATE:
            conn.execute(f"DROP TABLE IF EXISTS temp.saved_{name}")
            conn.execute(f"CREATE TEMP TABLE saved_{name} AS SELECT * FROM main.{name}")
        return
    for name in reversed(ROW_STATE):  # receipt_nodes before the receipts they point to
        conn.execute(f"DELETE FROM main.{name}")
    for name in ROW_STATE:
        conn.execute(f"INSERT INTO main.{name} SELECT * FROM temp.saved_{name}")


def run_rows(
    app: LithosApp,
    queries: Mapping[str, RetrievalQuery],
    score: Callable[[dict[str, list[str]]], dict[str, Any]],
) -> dict[str, Any]:
    """Each row's scores, temperature and latency over ``queries`` (id -> request). Every
    row starts from the same learned state (see :func:`row_state`)."""
    threshold = app.config.lcma.exploration.threshold
    app.stats_store.db.call(partial(row_state, "save"))
    for request in list(queries.values())[:5]:  # warm caches before the first timed row
        asyncio.run(app.retrieval.retrieve(request))
    table: dict[str, Any] = {}
    for name, overrides in ROWS.items():
        app.stats_store.db.call(partial(row_state, "restore"))
        with overridden(app, overrides):
            rankings: dict[str, list[str]] = {}
            heat: list[float] = []
            took: list[float] = []
            for qid, request in queries.items():
                started = time.perf_counter()
                result: Retrieval = asyncio.run(app.retrieval.retrieve(request))
                took.append(1000 * (time.perf_counter() - started))
                rankings[qid] = [r.id for r in result.results]
                heat.append(result.temperature)
        table[name] = {
            "lcma": overrides,
            "scores": score(rankings),
            "temperature_mean": round(statistics.fmean(heat), 4),
            "hot_share": round(sum(t > threshold for t in heat) / len(heat), 4),
            "median_ms": round(statistics.median(took), 2),
        }
        log(f"{name}: {table[name]}")
    return table


def scifact_rows(args: argparse.Namespace) -> dict[str, Any]:
    data = scifact.load()
    if args.quick:
        data = scifact.subset(data, docs=300, queries_per_split=20)
    ids = {scifact.note_id(doc): doc for doc in data.corpus}
    test = {q: RetrievalQuery(data.queries[q], limit=LIMIT) for q in data.qrels["test"]}

    def score(rankings: dict[str, list[str]]) -> dict[str, float]:
        plain = {q: [ids[n] for n in ranked if n in ids] for q, ranked in rankings.items()}
        found = evaluate(plain, data.qrels["test"])
        return {k: round(v, 4) for k, v in found.items() if not k.endswith("@100")}

    with tempfile.TemporaryDirectory(prefix="lithos-explore-") as tmp:
        write = partial(scifact.write_notes, data)
        app, build = open_indexed(write, Path(tmp), use_cache=not args.no_cache)
        try:
            before = run_rows(app, test, score)
            learning = retrieve_eval.learning(app, data.queries, data.qrels, ids, DEPTH, {})
            edges = len(app.edge_store.find(EdgeFilter(limit=10**7), app.clock()))
            scouts = app.stats_store.scout_weight_table(EXPLORATION_SCOUTS)
            after = run_rows(app, test, score)
        finally:
            app.close()
    return {
        "corpus_docs": len(data.corpus),
        "test_queries": len(test),
        "build": build,
        "before_feedback": before,
        "after_feedback": after,
        "feedback": {"cited_notes": learning["cited_notes"], "edges": edges},
        "scout_weights": [asdict(w) for w in scouts if w.learned],
    }


def longmemeval_rows(args: argparse.Namespace) -> dict[str, Any]:
    questions = longmemeval.load()
    if args.quick:
        questions = longmemeval.subset(questions, per_type=1, distractors=2)
    elif args.lme_per_type:
        questions = longmemeval.subset(questions, per_type=args.lme_per_type, distractors=1000)
    sessions: dict[str, str] = {}
    requests = {
        q.question_id: RetrievalQuery(q.question, limit=LIMIT, path_prefix=q.folder + "/")
        for q in questions
    }

    def write(knowledge: Path) -> None:
        sessions.update(longmemeval.write_notes(questions, knowledge))

    def score(rankings: dict[str, list[str]]) -> dict[str, Any]:
        return longmemeval.score(rankings, questions, sessions)["overall"]

    with tempfile.TemporaryDirectory(prefix="lithos-explore-") as tmp:
        app, build = open_indexed(write, Path(tmp), use_cache=not args.no_cache)
        try:
            rows = run_rows(app, requests, score)
        finally:
            app.close()
    return {"questions": len(questions), "build": build, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small slices of both data sets")
    parser.add_argument("--only", choices=("scifact", "longmemeval"))
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    parser.add_argument("--no-cache", action="store_true", help="embed everything afresh")
    parser.add_argument(
        "--lme-per-type", type=int, default=0, help="LongMemEval: first N questions per type"
    )
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"quick": args.quick, "limit": LIMIT, "rows": ROWS}
    if args.only != "longmemeval":
        result["scifact"] = scifact_rows(args)
    if args.only != "scifact":
        result["longmemeval"] = longmemeval_rows(args)
    result["load_average"] = machine.load_average()
    name = "explore-quick" if args.quick else "explore"
    print(f"wrote {machine.write_result(args.out, name, result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

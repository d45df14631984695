"""Temperature-driven exploration, the analogy scout and the graph scout (typed edges), each
measured with and without itself on SciFact's test queries and LongMemEval-S's development set.

Every row is ``lithos_retrieve`` at ``limit`` 10, what an agent asks for (exploration keeps
places among the results shown, so it must be scored at the size shown), with ``lcma``
settings overridden for that row only (see :data:`ROWS`). SciFact runs twice: before and after
agents' feedback on its train queries (with exploration on, :data:`LEARNING`, so that its
weights are learned), which writes the typed ``related_to`` edges the graph scout follows and
temperature reads (concepts formed from that feedback are measured by bench/concepts_eval.py).
``changed`` counts the queries whose results differ from the defaults row's. Each row also
reports how hot its queries were (mean temperature, share above ``exploration.threshold``)
and its median latency; each data set
records the machine, commit and load of its own run, so the two can run apart and be merged.

    .venv/bin/python bench/explore_eval.py                # both data sets, bench/out/
    .venv/bin/python bench/explore_eval.py --quick --out /tmp/x
    .venv/bin/python bench/explore_eval.py --only longmemeval --merge   # keep SciFact's rows
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable, Mapping
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import harness, longmemeval, machine, retrieve_eval, scifact
from bench.eval import DEPTH
from bench.harness import LIMIT, overridden, row_state
from bench.machine import log
from bench.metrics import evaluate
from lithos.app import LithosApp
from lithos.domain.edges import EdgeFilter
from lithos.domain.retrieval import EXPLORATION_SCOUTS, RetrievalQuery

# Row name -> lcma overrides (a dict merges into a dict or nested settings section).
# Exploration is off by default, so its rows turn it on.
EXPLORING = {"enabled": True}
ROWS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "exploration on": {"exploration": EXPLORING},
    "exploration on, random scout at 0.02": {
        "exploration": EXPLORING,
        "scout_weights": {"scout_random": 0.02},
    },
    "exploration on, a kept place": {"exploration": {**EXPLORING, "slots": 1}},
    "exploration on, weights not learned": {"exploration": {**EXPLORING, "learn": False}},
    "no analogy": {"scout_weights": {"scout_analogy": 0.0}},
    "no graph scout": {"scout_weights": {"scout_graph": 0.0}},
    "graph scout following rule edges": {"graph_provenance_weights": {"rule": 1.0}},
    "graph scout, rule edges at half weight": {"graph_provenance_weights": {"rule": 0.5}},
}
# The feedback run explores, so that the exploration rows after it rank with learned weights.
LEARNING: dict[str, Any] = {"exploration": EXPLORING}
DATA_SETS = ("scifact", "longmemeval")


def run_rows(
    app: LithosApp,
    queries: Mapping[str, RetrievalQuery],
    score: Callable[[dict[str, list[str]]], dict[str, Any]],
) -> dict[str, Any]:
    """Each row's scores, temperature and latency over ``queries`` (id -> request), and
    ``changed``: how many queries' results (ids in order) differ from the first row's. Every
    row starts from the same learned state (bench/harness.py ``row_state``)."""
    threshold = app.config.lcma.exploration.threshold
    app.stats_store.db.call(partial(row_state, "save"))
    harness.warm(app, queries)
    table: dict[str, Any] = {}
    first: dict[str, list[str]] | None = None
    for name, overrides in ROWS.items():
        app.stats_store.db.call(partial(row_state, "restore"))
        with overridden(app, overrides):
            rankings: dict[str, list[str]] = {}
            heat: list[float] = []
            took: list[float] = []
            for qid, result, ms in harness.timed(app, queries):
                took.append(ms)
                rankings[qid] = [r.id for r in result.results]
                heat.append(result.temperature)
        first = rankings if first is None else first
        table[name] = {
            "lcma": overrides,
            "scores": score(rankings),
            "changed": sum(rankings[q] != first[q] for q in rankings),
            "temperature_mean": round(statistics.fmean(heat), 4),
            "hot_share": round(sum(t > threshold for t in heat) / len(heat), 4),
            "median_ms": round(statistics.median(took), 2),
        }
        log(f"{name}: {table[name]}")
    return table


def scifact_rows(args: argparse.Namespace) -> dict[str, Any]:
    data = harness.scifact_data(args.quick)
    ids = {scifact.note_id(doc): doc for doc in data.corpus}
    test = {q: RetrievalQuery(data.queries[q], limit=LIMIT) for q in data.qrels["test"]}

    def score(rankings: dict[str, list[str]]) -> dict[str, float]:
        plain = {q: [ids[n] for n in ranked if n in ids] for q, ranked in rankings.items()}
        found = evaluate(plain, data.qrels["test"])
        return {k: round(v, 4) for k, v in found.items() if not k.endswith("@100")}

    write = partial(scifact.write_notes, data)
    with harness.knowledge_base(write, not args.no_cache, "lithos-explore-") as (app, build):
        before = run_rows(app, test, score)
        with overridden(app, LEARNING):
            learning = retrieve_eval.learning(app, data.queries, data.qrels, ids, DEPTH, {})
        edges = len(app.edge_store.find(EdgeFilter(limit=10**7), app.clock()))
        scouts = app.stats_store.scout_weight_table(EXPLORATION_SCOUTS)
        after = run_rows(app, test, score)
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
    base = longmemeval.Haystacks.load(args.quick, args.lme_per_type)
    with harness.knowledge_base(base.write, not args.no_cache, "lithos-explore-") as (app, build):
        rows = run_rows(app, base.requests(), base.overall)
    return {"questions": len(base.questions), "build": build, "rows": rows}


def merged(previous: Mapping[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with the data sets it did not run taken from ``previous`` (an earlier
    explore.json), each keeping the machine, date, commit and load of its own run."""
    for name in DATA_SETS:
        if name not in result and name in previous:
            earlier = dict(previous[name])
            earlier.setdefault("run", {"machine": previous["machine"]} | _load(previous))
            result[name] = earlier
    return result


def _load(result: Mapping[str, Any]) -> dict[str, Any]:
    return {"load_average": result["load_average"]} if "load_average" in result else {}


def main(argv: list[str] | None = None) -> int:
    parser = harness.arguments(__doc__, quick="small slices of both data sets")
    parser.add_argument("--only", choices=DATA_SETS)
    parser.add_argument(
        "--lme-per-type", type=int, default=0, help="LongMemEval: first N questions per type"
    )
    parser.add_argument(
        "--merge",
        action="store_true",
        help="keep the other data set's rows from an earlier explore.json in --out",
    )
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"quick": args.quick, "limit": LIMIT, "rows": ROWS}
    for name, rows in (("scifact", scifact_rows), ("longmemeval", longmemeval_rows)):
        if args.only in (None, name):
            result[name] = rows(args)
            result[name]["run"] = {
                "machine": machine.describe(),
                "load_average": machine.load_average(),
            }
    previous = args.out / ("explore-quick.json" if args.quick else "explore.json")
    if args.merge and previous.exists():
        result = merged(json.loads(previous.read_text()), result)
    return harness.finish(args, "explore", result)


if __name__ == "__main__":
    sys.exit(main())

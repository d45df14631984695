"""Concept nodes in the SciFact evaluation: which formation rule, and does returning concepts
as gateways help or hurt what an agent sees in its top 10?

Concepts form from the coactivation graph that feedback writes: each SciFact train query is
taught once (bench/retrieve_eval.py ``learning``), citing the retrieved abstracts its qrels
mark relevant, so a pair of abstracts is cited together once per train query that has both.
:data:`RULES` is a grid of formation rules; each forms its concepts from that one learning run
(the concepts of the rule before are deleted first), and both splits are then scored with
limit 10 exactly as an agent receives them, concept notes counting as non-relevant results.
The rule is chosen on the train queries and reported on the test queries. Every pass starts
from the learned state (receipts and retrieval counts restored, bench/harness.py ``row_state``),
so the damping of one pass does not carry into the next.

    .venv/bin/python bench/concepts_eval.py             # full SciFact: bench/out/concepts.json
    .venv/bin/python bench/concepts_eval.py --quick --out /tmp/x
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import harness, scifact
from bench.harness import overridden
from bench.machine import log
from bench.metrics import evaluate
from lithos.app import LithosApp
from lithos.domain.retrieval import RetrievalQuery

PERMISSIVE: dict[str, Any] = {"min_coactivation": 1, "min_size": 2, "min_density": 0.5}
# Row name -> formation rule overrides (lcma.concepts); "shipped" is the default rule.
RULES: dict[str, dict[str, Any]] = {
    "shipped": {},
    "pairs cited together twice, clusters of 3": {"min_coactivation": 2},
    "pairs cited together 3 times, clusters of 2": {"min_size": 2},
    "pairs cited together twice, clusters of 2": {"min_coactivation": 2, "min_size": 2},
    "pairs cited together once, clusters of 3": {"min_coactivation": 1},
    "pairs cited together once, clusters of 2": PERMISSIVE,
}
METRICS = ("ndcg@10", "recall@10", "mrr@10")
# Concepts are off by default; what is measured here runs with them on.
CONCEPTS_ON: dict[str, Any] = {"concepts": {"enabled": True}}


def _top10(app: LithosApp, text: str, ids: Mapping[str, str]) -> list[str]:
    """The top 10 as document ids; a concept note as ``concept:<id>``, any other note that
    is not a SciFact abstract as ``other:<id>`` (both count as non-relevant)."""
    got = asyncio.run(app.retrieval.retrieve(RetrievalQuery(text, limit=10)))
    found = []
    for r in got.results:
        entry = app.catalog.get(r.id) if r.id not in ids else None
        kind = "concept" if entry is not None and entry.note_type == "concept" else "other"
        found.append(ids.get(r.id, f"{kind}:{r.id}"))
    return found


def _score(
    app: LithosApp,
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, Mapping[str, int]]],
    ids: Mapping[str, str],
) -> dict[str, dict[str, float]]:
    found: dict[str, dict[str, float]] = {}
    for split in ("test", "train"):
        ranked = {q: _top10(app, queries[q], ids) for q in qrels[split]}
        metrics = evaluate(ranked, qrels[split])
        found[split] = {k: round(metrics[k], 4) for k in METRICS}
        shown = sum(any(n.startswith("concept:") for n in r) for r in ranked.values())
        found[split]["concept_shown"] = round(shown / max(1, len(ranked)), 4)
    return found


def effect(
    app: LithosApp,
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, Mapping[str, int]]],
    ids: Mapping[str, str],
) -> dict[str, Any]:
    """Concepts formed by the shipped and by the permissive rule, and top-10 quality with
    the gateway on and off (the permissive concepts in place)."""
    with overridden(app, CONCEPTS_ON):
        shipped = asyncio.run(app.concepts.form())
        app.concepts.rules = replace(app.concepts.rules, **PERMISSIVE)
        permissive = asyncio.run(app.concepts.form())
        _embedded(app)
        log(f"concepts: {len(shipped.formed)} shipped rule, {len(permissive.formed)} permissive")
        with_gateway = _score(app, queries, qrels, ids)
        gateway = app.retrieval.concepts
        app.retrieval.concepts = None
        try:
            without = _score(app, queries, qrels, ids)
        finally:
            app.retrieval.concepts = gateway
        return {
            "formed_shipped_rule": len(shipped.formed),
            "formed_permissive_rule": len(permissive.formed),
            "with_gateway": with_gateway,
            "without_gateway": without,
            "permissive_rule": dict(PERMISSIVE),
        }


def _embedded(app: LithosApp) -> None:
    """Wait until the concept notes just written are embedded (the vector scout finds them)."""
    while not app.embedding.wait_idle(30):
        log("embedding concept notes")


def _clear(app: LithosApp) -> None:
    """Delete every concept note and what ``stats.db`` records about concepts."""
    for concept in app.memory_store.concepts():
        if app.catalog.get(concept.concept_id) is not None:
            asyncio.run(app.knowledge.delete(concept.concept_id))

    def work(conn: sqlite3.Connection) -> None:
        conn.execute("DELETE FROM concept_members")
        conn.execute("DELETE FROM concepts")

    app.stats_store.db.call(work)


def grid(
    app: LithosApp,
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, Mapping[str, int]]],
    ids: Mapping[str, str],
    restore: Callable[[], None],
) -> dict[str, Any]:
    """Every rule of :data:`RULES` formed from the same feedback and scored on both splits,
    with a row without concepts first; the rule best on train nDCG@10 is chosen
    (:func:`choose`)."""
    with overridden(app, CONCEPTS_ON):
        shipped = app.concepts.rules
        rows: dict[str, Any] = {}
        _clear(app)  # concepts the background consolidation formed during the feedback
        restore()
        rows["no concepts"] = {
            "rule": None,
            "formed": 0,
            "members": 0,
            **_score(app, queries, qrels, ids),
        }
        log(f"no concepts: {rows['no concepts']}")
        for name, overrides in RULES.items():
            _clear(app)
            app.concepts.rules = replace(shipped, **overrides)
            report = asyncio.run(app.concepts.form())
            _embedded(app)
            members = sum(len(c.members) for c in app.memory_store.concepts())
            restore()
            # No concept formed: retrieval is the row without concepts, not scored again.
            scores = _score(app, queries, qrels, ids) if report.formed else _splits(rows)
            rows[name] = {
                "rule": overrides,
                "formed": len(report.formed),
                "members": members,
                **scores,
            }
            log(f"{name}: {rows[name]}")
        app.concepts.rules = shipped
        return {"rows": rows, "chosen_on_train": choose(rows)}


def choose(rows: Mapping[str, Any]) -> str:
    """The rule of :data:`RULES` best on train nDCG@10; a tie goes to the earlier rule (the
    shipped one first), so a looser rule must earn its concepts."""
    names = [n for n in rows if n in RULES]
    return max(names, key=lambda n: (rows[n]["train"]["ndcg@10"], -names.index(n)))


def _splits(rows: Mapping[str, Any]) -> dict[str, Any]:
    return {split: rows["no concepts"][split] for split in ("test", "train")}


def main(argv: list[str] | None = None) -> int:
    from bench import retrieve_eval
    from bench.eval import DEPTH

    args = harness.arguments(__doc__, quick="a small slice of SciFact").parse_args(argv)
    data = harness.scifact_data(args.quick)
    ids = {scifact.note_id(doc): doc for doc in data.corpus}
    write = partial(scifact.write_notes, data)
    with harness.knowledge_base(write, not args.no_cache, "lithos-concepts-") as (app, build):
        learning = retrieve_eval.learning(app, data.queries, data.qrels, ids, DEPTH, {})
        db = app.stats_store.db
        db.call(partial(harness.row_state, "save"))
        result = grid(
            app,
            data.queries,
            data.qrels,
            ids,
            partial(db.call, partial(harness.row_state, "restore")),
        )
    result |= {
        "quick": args.quick,
        "corpus_docs": len(data.corpus),
        "queries": {split: len(table) for split, table in data.qrels.items()},
        "build": build,
        "cited_notes": learning["cited_notes"],
    }
    return harness.finish(args, "concepts", result)


if __name__ == "__main__":
    sys.exit(main())

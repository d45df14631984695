"""Concept nodes in the SciFact evaluation: does returning concepts as gateways help or hurt
what an agent sees in its top 10?

Run after the learning run (bench/retrieve_eval.py). With the shipped settings no concept
forms on SciFact (each train query is taught once, so no pair of abstracts is cited together
three times); to measure the gateway at all, concepts are then formed with a permissive rule
(every pair cited together once counts, clusters from two notes). Both splits are scored with
limit 10 exactly as an agent receives them, concept notes counting as non-relevant results,
once with the gateway and damping on and once with them off.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from bench.machine import log
from bench.metrics import evaluate
from lithos.app import LithosApp
from lithos.domain.retrieval import RetrievalQuery

PERMISSIVE = {"min_coactivation": 1, "min_size": 2, "min_density": 0.5}


def _top10(app: LithosApp, text: str, ids: Mapping[str, str]) -> list[str]:
    got = asyncio.run(app.retrieval.retrieve(RetrievalQuery(text, limit=10)))
    return [ids.get(r.id, f"not-a-document:{r.id}") for r in got.results]


def _score(
    app: LithosApp,
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, Mapping[str, int]]],
    ids: Mapping[str, str],
) -> dict[str, dict[str, float]]:
    found = {}
    for split in ("test", "train"):
        ranked = {q: _top10(app, queries[q], ids) for q in qrels[split]}
        metrics = evaluate(ranked, qrels[split])
        found[split] = {k: round(metrics[k], 4) for k in ("ndcg@10", "recall@10", "mrr@10")}
    return found


def effect(
    app: LithosApp,
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, Mapping[str, int]]],
    ids: Mapping[str, str],
) -> dict[str, Any]:
    """Concepts formed by the shipped and by the permissive rule, and top-10 quality with
    the gateway on and off (the permissive concepts in place)."""
    shipped = asyncio.run(app.concepts.form())
    app.concepts.rules = replace(app.concepts.rules, **PERMISSIVE)
    permissive = asyncio.run(app.concepts.form())
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

"""Ranking metrics with binary or graded relevance, as BEIR / trec_eval compute them.

``ranking`` is the list of document ids a retriever returned, best first; ``relevant`` maps
each relevant document id to its grade (> 0). Every metric lies in ``[0, 1]``; a query with no
relevant documents scores 0 (the caller should skip such queries, as BEIR does).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

Qrels = Mapping[str, Mapping[str, int]]


def ndcg_at_k(ranking: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """Normalised discounted cumulative gain: gain ``grade / log2(rank + 1)``."""
    dcg = sum(relevant.get(doc, 0) / math.log2(rank + 1) for rank, doc in enumerate(ranking[:k], 1))
    ideal_grades = sorted((g for g in relevant.values() if g > 0), reverse=True)[:k]
    ideal = sum(grade / math.log2(rank + 1) for rank, grade in enumerate(ideal_grades, 1))
    return dcg / ideal if ideal > 0 else 0.0


def recall_at_k(ranking: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """Share of the relevant documents found in the first ``k``."""
    wanted = {doc for doc, grade in relevant.items() if grade > 0}
    if not wanted:
        return 0.0
    return len(wanted.intersection(ranking[:k])) / len(wanted)


def recall_any_at_k(ranking: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """1 when any relevant document is in the first ``k``, else 0 (LongMemEval's recall_any)."""
    return float(any(relevant.get(doc, 0) > 0 for doc in ranking[:k]))


def recall_all_at_k(ranking: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """1 when every relevant document is in the first ``k``, else 0 (recall_all)."""
    return float(recall_at_k(ranking, relevant, k) == 1.0)


def mrr_at_k(ranking: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """Reciprocal rank of the first relevant document within the first ``k`` (else 0)."""
    for rank, doc in enumerate(ranking[:k], 1):
        if relevant.get(doc, 0) > 0:
            return 1.0 / rank
    return 0.0


METRICS = {
    "ndcg@10": lambda r, rel: ndcg_at_k(r, rel, 10),
    "recall@10": lambda r, rel: recall_at_k(r, rel, 10),
    "recall@100": lambda r, rel: recall_at_k(r, rel, 100),
    "mrr@10": lambda r, rel: mrr_at_k(r, rel, 10),
}


def evaluate(rankings: Mapping[str, Sequence[str]], qrels: Qrels) -> dict[str, float]:
    """Mean of every metric in :data:`METRICS` over the queries of ``qrels``.

    A query missing from ``rankings`` counts as an empty ranking (it scores 0).
    """
    queries = [q for q, rel in qrels.items() if any(g > 0 for g in rel.values())]
    if not queries:
        raise ValueError("no query has a relevant document")
    totals = dict.fromkeys(METRICS, 0.0)
    for query in queries:
        ranking = rankings.get(query, ())
        for name, metric in METRICS.items():
            totals[name] += metric(ranking, qrels[query])
    return {name: total / len(queries) for name, total in totals.items()}

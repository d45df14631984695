"""Fusion rules for hybrid search, evaluated in the benchmark to decide what Lithos ships.

Each rule takes the full-text ranking and the semantic ranking of one query, each a list of
``(note_id, score)`` best first, and returns note ids best first. ``weighted_rrf`` with equal
weights is exactly the shipped reciprocal-rank fusion (``SearchService.hybrid_hits``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

Ranking = Sequence[tuple[str, float]]
Rule = Callable[[Ranking, Ranking], list[str]]


def weighted_rrf(k: float, text_weight: float = 1.0, semantic_weight: float = 1.0) -> Rule:
    """``score(d) = sum_r weight_r / (k + rank_r(d))``; ties broken by note id."""

    def fuse(text: Ranking, semantic: Ranking) -> list[str]:
        scores: dict[str, float] = {}
        for weight, ranking in ((text_weight, text), (semantic_weight, semantic)):
            for rank, (doc, _) in enumerate(ranking, 1):
                scores[doc] = scores.get(doc, 0.0) + weight / (k + rank)
        return sorted(scores, key=lambda doc: (-scores[doc], doc))

    return fuse


def convex(alpha: float) -> Rule:
    """``alpha * norm(bm25) + (1 - alpha) * norm(cosine)`` with min-max normalisation per
    query over each retriever's candidates; a note missing from one list gets 0 there."""

    def fuse(text: Ranking, semantic: Ranking) -> list[str]:
        scores: dict[str, float] = {}
        for weight, ranking in ((alpha, text), (1.0 - alpha, semantic)):
            for doc, value in _min_max(ranking).items():
                scores[doc] = scores.get(doc, 0.0) + weight * value
        for doc, _ in (*text, *semantic):
            scores.setdefault(doc, 0.0)
        return sorted(scores, key=lambda doc: (-scores[doc], doc))

    return fuse


def _min_max(ranking: Ranking) -> dict[str, float]:
    if not ranking:
        return {}
    values = [score for _, score in ranking]
    low, high = min(values), max(values)
    span = high - low
    return {doc: (score - low) / span if span > 0 else 1.0 for doc, score in ranking}


def candidates() -> dict[str, Rule]:
    """The grid searched on the train queries, by a readable name."""
    rules: dict[str, Rule] = {}
    for k in (1, 5, 10, 20, 40, 60, 100):
        for weight in (0.3, 0.5, 0.7):
            name = f"rrf k={k} w_text={weight:.1f}"
            rules[name] = weighted_rrf(k, 2 * weight, 2 * (1 - weight))
    for step in range(11):
        alpha = step / 10
        rules[f"convex alpha={alpha:.1f}"] = convex(alpha)
    return rules

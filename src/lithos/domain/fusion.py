"""Fusing a full-text ranking and a semantic ranking into one (hybrid search).

Each ranking is a list of ``(note, score)``, best first, where a note is named by anything
hashable and ordered (an id, or a key standing for one). Both rules return
``[(note, fused_score)]`` best first, ties broken by the name so results are deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

K = TypeVar("K", str, int)
Ranking = Sequence[tuple[K, float]]


def convex(text: Ranking[K], semantic: Ranking[K], alpha: float) -> list[tuple[K, float]]:
    """``alpha * norm(bm25) + (1 - alpha) * norm(similarity)``.

    Scores are min-max normalised per query over each retriever's own candidates, so BM25's
    unbounded scale and cosine's bounded one become comparable; a note missing from one list
    scores 0 there.
    """
    fused: dict[K, float] = {}
    for weight, ranking in ((alpha, text), (1.0 - alpha, semantic)):
        for note_id, value in _min_max(ranking).items():
            fused[note_id] = fused.get(note_id, 0.0) + weight * value
    return _sorted(fused)


def reciprocal_rank(text: Ranking[K], semantic: Ranking[K], k: int) -> list[tuple[K, float]]:
    """Reciprocal-rank fusion: ``sum 1 / (k + rank)`` over the rankings a note appears in."""
    fused: dict[K, float] = {}
    for ranking in (text, semantic):
        for rank, (note_id, _) in enumerate(ranking, 1):
            fused[note_id] = fused.get(note_id, 0.0) + 1.0 / (k + rank)
    return _sorted(fused)


def min_max(values: Sequence[float]) -> list[float]:
    """Each value scaled to [0, 1] between the lowest and highest of ``values``; all 1.0
    when they are equal (one value is the top of its own scale)."""
    if not values:
        return []
    low, high = min(values), max(values)
    span = high - low
    return [(v - low) / span if span > 0 else 1.0 for v in values]


def _min_max(ranking: Ranking[K]) -> dict[K, float]:
    scaled = min_max([score for _, score in ranking])
    return {note_id: value for (note_id, _), value in zip(ranking, scaled, strict=True)}


def _sorted(fused: dict[K, float]) -> list[tuple[K, float]]:
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))

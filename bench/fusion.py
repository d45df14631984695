"""The grid of hybrid fusion rules tuned on SciFact's train queries.

The rules are Lithos's own (``lithos.domain.fusion``), so what the evaluation picks is exactly
what ships; set the winner with ``search.hybrid_fusion`` / ``hybrid_alpha`` / ``rrf_k``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lithos.domain.fusion import convex, reciprocal_rank

Ranking = Sequence[tuple[str, float]]
Rule = Callable[[Ranking, Ranking], list[str]]


def _convex(alpha: float) -> Rule:
    return lambda text, semantic: [doc for doc, _ in convex(text, semantic, alpha)]


def _rrf(k: int) -> Rule:
    return lambda text, semantic: [doc for doc, _ in reciprocal_rank(text, semantic, k)]


def candidates() -> dict[str, Rule]:
    """Every rule of the grid, by a readable name."""
    rules: dict[str, Rule] = {f"rrf k={k}": _rrf(k) for k in (1, 5, 10, 20, 40, 60, 100)}
    for step in range(11):
        alpha = step / 10
        rules[f"convex alpha={alpha:.1f}"] = _convex(alpha)
    return rules

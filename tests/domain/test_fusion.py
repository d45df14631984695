"""Hybrid fusion rules."""

from __future__ import annotations

import pytest

from lithos.domain.fusion import convex, reciprocal_rank


def test_convex_normalises_each_ranking_before_weighting():
    text = [("a", 30.0), ("b", 20.0), ("c", 10.0)]  # unbounded BM25 scale
    semantic = [("c", 0.9), ("b", 0.5), ("d", 0.1)]  # cosine scale
    fused = dict(convex(text, semantic, alpha=0.5))
    assert fused["a"] == pytest.approx(0.5)  # best text, absent from semantic
    assert fused["b"] == pytest.approx(0.5 * 0.5 + 0.5 * 0.5)
    assert fused["c"] == pytest.approx(0.5)  # worst text, best semantic
    assert fused["d"] == pytest.approx(0.0)


def test_convex_alpha_one_is_the_text_ranking_and_zero_the_semantic_one():
    text = [("a", 3.0), ("b", 2.0)]
    semantic = [("b", 0.9), ("a", 0.2)]
    assert [i for i, _ in convex(text, semantic, 1.0)] == ["a", "b"]
    assert [i for i, _ in convex(text, semantic, 0.0)] == ["b", "a"]


def test_convex_handles_an_empty_ranking_and_equal_scores():
    assert convex([], [("x", 0.4)], 0.5) == [("x", 0.5)]
    assert convex([("a", 1.0), ("b", 1.0)], [], 0.5) == [("a", 0.5), ("b", 0.5)]


def test_reciprocal_rank_sums_over_rankings_and_breaks_ties_by_id():
    fused = reciprocal_rank([("a", 9.0), ("b", 1.0)], [("b", 0.9), ("a", 0.1)], k=60)
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)
    assert [i for i, _ in fused] == ["a", "b"]

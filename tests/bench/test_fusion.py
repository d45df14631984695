"""The fusion rules the evaluation compares, on rankings small enough to fuse by hand."""

from __future__ import annotations

from bench.fusion import convex, weighted_rrf


def test_rrf_with_equal_weights_sums_reciprocal_ranks():
    # a: 1/(1+1) + 1/(1+2) = 0.833; b: 1/(1+2) + 1/(1+1) = 0.833; c: 1/(1+3) = 0.25.
    fused = weighted_rrf(1)([("a", 9.0), ("b", 5.0), ("c", 1.0)], [("b", 0.9), ("a", 0.8)])
    assert fused == ["a", "b", "c"]  # a and b tie; the tie goes to the smaller id


def test_rrf_weights_favour_the_heavier_retriever():
    fused = weighted_rrf(60, 0.5, 1.5)([("a", 9.0), ("b", 5.0)], [("b", 0.9), ("a", 0.8)])
    assert fused[0] == "b"


def test_convex_mixes_min_max_normalised_scores():
    # Normalised: text a=1, b=0; semantic b=1, a=0.5, c=0.
    text = [("a", 10.0), ("b", 2.0)]
    semantic = [("b", 0.6), ("a", 0.5), ("c", 0.4)]
    # alpha 0.8: a = 0.8*1 + 0.2*0.5 = 0.9; b = 0.8*0 + 0.2*1 = 0.2; c = 0.
    assert convex(0.8)(text, semantic) == ["a", "b", "c"]
    # alpha 0.2: a = 0.2 + 0.8*0.5 = 0.6; b = 0.8; c = 0.
    assert convex(0.2)(text, semantic) == ["b", "a", "c"]

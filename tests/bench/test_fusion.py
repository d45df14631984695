"""The grid of fusion rules the evaluation tunes, built on the shipped rules."""

from __future__ import annotations

from bench.fusion import candidates
from lithos.config import SearchConfig


def test_the_grid_contains_the_shipped_default():
    default = SearchConfig()
    assert f"convex alpha={default.hybrid_alpha:.1f}" in candidates()
    assert f"rrf k={default.rrf_k}" in candidates()


def test_grid_rules_rank_note_ids():
    text = [("a", 10.0), ("b", 2.0)]
    semantic = [("b", 0.6), ("a", 0.5), ("c", 0.4)]
    rules = candidates()
    # alpha 0.8: a = 0.8 + 0.2 * 0.5 = 0.9; b = 0.2; c = 0.
    assert rules["convex alpha=0.8"](text, semantic) == ["a", "b", "c"]
    # alpha 0.2: a = 0.2 + 0.8 * 0.5 = 0.6; b = 0.8; c = 0.
    assert rules["convex alpha=0.2"](text, semantic) == ["b", "a", "c"]
    assert rules["rrf k=1"](text, semantic)[:2] == ["a", "b"]  # tie broken by id

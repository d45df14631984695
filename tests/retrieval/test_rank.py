"""Terrace 0 and 1 arithmetic: the relevance scouts' adaptive scale and focus."""

from __future__ import annotations

import numpy as np
import pytest

from lithos.domain.retrieval import Candidate
from lithos.retrieval.rank import focus
from lithos.retrieval.scouts import MIN_MAX_HITS, adaptive


def test_adaptive_blends_the_place_in_the_query_with_absolute_strength():
    raw = [float(x) for x in range(MIN_MAX_HITS, 0, -1)]  # 10 .. 1
    absolute = [0.8] * MIN_MAX_HITS
    scores = adaptive(raw, absolute, share=0.5)
    assert scores[0] == pytest.approx(0.5 * 1.0 + 0.5 * 0.8)
    assert scores[-1] == pytest.approx(0.5 * 0.0 + 0.5 * 0.8)
    assert scores == sorted(scores, reverse=True)


def test_a_lone_hit_scores_by_its_absolute_evidence_alone():
    weak = adaptive([4.0], [0.1], share=0.5)
    strong = adaptive([40.0], [0.9], share=0.5)
    # A tenth of the min-max share remains for a list of one (it fades with the count).
    assert weak[0] == pytest.approx(0.05 * 1.0 + 0.95 * 0.1)
    assert weak[0] < 0.2 < strong[0]


def test_min_max_share_grows_with_the_number_of_hits():
    few = adaptive([2.0, 1.0], [0.5, 0.5], share=0.5)
    many = adaptive([2.0, *[1.0] * (MIN_MAX_HITS - 1)], [0.5] * MIN_MAX_HITS, share=0.5)
    assert few[0] - few[1] < many[0] - many[1]


def _unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def _pool(scores: dict[str, float]) -> dict[str, Candidate]:
    return {n: Candidate(n, score=s) for n, s in scores.items()}


def test_focus_lifts_the_candidate_closest_to_the_best_ones():
    pool = _pool({"best": 1.0, "second": 0.9, "near": 0.5, "far": 0.5})
    vectors = {
        "best": _unit(1, 0.1, 0),
        "second": _unit(1, -0.1, 0),
        "near": _unit(1, 0, 0.2),
        "far": _unit(0, 0, 1),
    }
    focus(pool, vectors, seeds=2, weight=0.2, duplicate=0.99)
    assert pool["near"].score > pool["far"].score
    assert pool["far"].score == pytest.approx(0.5)  # the farthest gains nothing
    assert any(r.startswith("focus: close to the best results") for r in pool["near"].reasons)
    assert not any(r.startswith("focus") for r in pool["far"].reasons)


def test_focus_does_not_seed_with_a_copy_of_a_seed():
    pool = _pool({"a": 1.0, "a-copy": 0.99, "b": 0.6, "c": 0.5})
    vectors = {
        "a": _unit(1, 0, 0),
        "a-copy": _unit(1, 0, 0),
        "b": _unit(0, 1, 0),
        "c": _unit(0, 0, 1),
    }
    focus(pool, vectors, seeds=2, weight=0.2, duplicate=0.9)
    # Seeds are a and b (the copy is skipped): b gains as much as a, c nothing.
    assert pool["b"].score - 0.6 == pytest.approx(pool["a"].score - 1.0)
    assert pool["c"].score == pytest.approx(0.5)


def test_focus_off_or_without_vectors_changes_nothing():
    pool = _pool({"a": 1.0, "b": 0.5})
    focus(pool, {"a": _unit(1, 0)}, seeds=2, weight=0.0, duplicate=0.9)
    focus(pool, {}, seeds=2, weight=0.2, duplicate=0.9)
    assert [c.score for c in pool.values()] == [1.0, 0.5]

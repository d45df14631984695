"""Terrace 0 and 1 arithmetic: the relevance scouts' adaptive scale, focus, the pool's order
and a rerank of a pool already scored."""

from __future__ import annotations

import numpy as np
import pytest

from lithos.domain.retrieval import Candidate
from lithos.retrieval.rank import RerankWeights, focus, ranked, rerank, score_evidence
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


@pytest.mark.parametrize("seed", range(20))
def test_ranked_orders_best_first_and_ties_by_note_id(seed: int):
    rng = np.random.default_rng(seed)
    scores = rng.choice([0.0, -0.0, 0.25, 0.5, 1.0, float(rng.random())], size=40)
    ids = [f"n{int(i)}" for i in rng.permutation(1000)[:40]]
    pool = {n: Candidate(n, score=float(s)) for n, s in zip(ids, scores, strict=True)}
    expected = sorted(pool.values(), key=lambda c: (-c.score, c.note_id))
    assert [c.note_id for c in ranked(pool)] == [c.note_id for c in expected]


def _weights() -> RerankWeights:
    return RerankWeights(
        scout_weights={"scout_a": 1.0, "scout_b": 0.5},
        note_type_priors={"decision": 0.2},
        note_type_weight=0.5,
        salience_weight=0.0,
        usage_weight=0.0,
        query_class_weight=0.0,
        ignored_weight=0.0,
        misleading_weight=0.0,
        default_salience=0.5,
        misleading_limit=3,
    )


def _evidence() -> dict[str, Candidate]:
    pool = {n: Candidate(n) for n in ("x", "y", "z")}
    pool["x"].evidence.update(scout_a=0.4, scout_b=0.8)
    pool["y"].evidence.update(scout_b=0.9, scout_c=1.0)  # scout_c has no weight
    pool["z"].evidence.update(scout_a=0.6)
    return pool


def test_score_evidence_weighs_every_scout_of_each_candidate():
    pool = _evidence()
    score_evidence(pool, _weights().scout_weights)
    assert [pool[n].score for n in "xyz"] == [0.4 + 0.5 * 0.8, 0.5 * 0.9, 0.6]


def test_a_pool_already_scored_reranks_as_one_scored_by_rerank():
    note_types = {"x": "observation", "y": "decision", "z": "observation"}
    fresh = rerank(_evidence(), _weights(), note_types, {}, "lookup")
    pool = _evidence()
    score_evidence(pool, _weights().scout_weights)
    again = rerank(pool, _weights(), note_types, {}, "lookup", scored=True)
    assert [(c.note_id, c.score, c.reasons) for c in again] == [
        (c.note_id, c.score, c.reasons) for c in fresh
    ]
    assert [c.note_id for c in fresh] == ["x", "z", "y"]
    # Unscored, the same call would rank on whatever the scores held.
    stale = rerank(_evidence(), _weights(), note_types, {}, "lookup", scored=True)
    assert [c.note_id for c in stale] == ["y", "x", "z"]

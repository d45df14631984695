"""The ranking metrics on examples small enough to compute by hand."""

from __future__ import annotations

import math

import pytest

from bench.metrics import (
    evaluate,
    mrr_at_k,
    ndcg_at_k,
    recall_all_at_k,
    recall_any_at_k,
    recall_at_k,
)


def test_ndcg_is_one_for_an_ideal_ranking():
    assert ndcg_at_k(["a", "b", "x"], {"a": 1, "b": 1}, 10) == pytest.approx(1.0)


def test_ndcg_discounts_a_relevant_document_at_rank_two():
    # DCG = 1/log2(3); ideal DCG = 1/log2(2) = 1.
    assert ndcg_at_k(["x", "a"], {"a": 1}, 10) == pytest.approx(1 / math.log2(3))


def test_ndcg_ignores_documents_below_the_cutoff():
    assert ndcg_at_k(["x", "y", "a"], {"a": 1}, 2) == 0.0


def test_ndcg_uses_graded_relevance():
    # DCG = 1/1 + 2/log2(3); ideal = 2/1 + 1/log2(3).
    expected = (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    assert ndcg_at_k(["b", "a"], {"a": 2, "b": 1}, 10) == pytest.approx(expected)


def test_recall_counts_the_share_of_relevant_documents_found():
    assert recall_at_k(["a", "x", "c"], {"a": 1, "b": 1, "c": 1, "d": 1}, 2) == 0.25


def test_mrr_is_the_reciprocal_rank_of_the_first_hit():
    assert mrr_at_k(["x", "y", "a", "b"], {"a": 1, "b": 1}, 10) == pytest.approx(1 / 3)


def test_mrr_is_zero_when_the_first_hit_is_below_the_cutoff():
    assert mrr_at_k(["x", "y", "a"], {"a": 1}, 2) == 0.0


def test_evaluate_averages_over_queries_and_scores_missing_rankings_zero():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    scores = evaluate({"q1": ["a"]}, qrels)
    assert scores["ndcg@10"] == pytest.approx(0.5)
    assert scores["mrr@10"] == pytest.approx(0.5)
    assert scores["recall@100"] == pytest.approx(0.5)


def test_evaluate_rejects_qrels_without_relevant_documents():
    with pytest.raises(ValueError):
        evaluate({}, {"q": {"a": 0}})


def test_recall_any_and_all_at_k():
    relevant = {"a": 1, "b": 1}
    assert recall_any_at_k(["x", "a", "y"], relevant, 2) == 1.0
    assert recall_any_at_k(["x", "y", "a"], relevant, 2) == 0.0
    assert recall_all_at_k(["a", "x", "b"], relevant, 3) == 1.0
    assert recall_all_at_k(["a", "x", "b"], relevant, 2) == 0.0

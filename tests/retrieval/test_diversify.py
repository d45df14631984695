"""MMR diversification (Terrace 1): the greedy loop over Python floats picks what the NumPy
loop it replaced picked, with the same reasons, on random pools with near-duplicates, notes
without vectors and tied scores."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from lithos.domain.retrieval import Candidate
from lithos.retrieval.rank import diversify


def numpy_diversify(
    candidates: Sequence[Candidate], vectors: Mapping[str, np.ndarray], mmr: tuple[float, ...]
) -> list[Candidate]:
    """The NumPy loop diversify() ran until session 15, as the reference; ``mmr`` is
    (lambda, similarity floor, window)."""
    mmr_lambda, similarity_floor, window = mmr[0], mmr[1], int(mmr[2])
    head, tail = list(candidates[:window]), list(candidates[window:])
    if mmr_lambda >= 1.0 or len(head) < 2:
        return [*head, *tail]
    span = max(1e-6, 1.0 - similarity_floor)
    dimension = next((len(v) for v in vectors.values()), 0)
    has = np.array([c.note_id in vectors for c in head])
    matrix = np.zeros((len(head), dimension), dtype=np.float32)
    for i, c in enumerate(head):
        if has[i]:
            matrix[i] = vectors[c.note_id]
    similarity = matrix @ matrix.T
    scores = np.array([c.score for c in head])
    closest = np.full(len(head), -np.inf)
    left = np.ones(len(head), dtype=bool)
    chosen: list[Candidate] = []
    for _ in range(len(head)):
        redundancy = np.where(has, np.maximum(0.0, (closest - similarity_floor) / span), 0.0)
        value = np.where(left, mmr_lambda * scores - (1 - mmr_lambda) * redundancy, -np.inf)
        best = int(np.argmax(value))
        left[best] = False
        pick = head[best]
        if redundancy[best] > 0:
            pick.reasons.append(
                f"diversity: near-duplicate of a higher result ({redundancy[best]:.2f})"
            )
        chosen.append(pick)
        if has[best]:
            closest = np.maximum(closest, similarity[:, best])
    return [*chosen, *tail]


def _unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v)).astype(np.float32)


def _pool(rng: np.random.Generator, size: int) -> tuple[list[Candidate], dict[str, np.ndarray]]:
    """Candidates best first (some scores tied), most with a vector, some near-duplicates."""
    scores = np.round(rng.random(size), 1 if rng.random() < 0.3 else 6)
    pool = sorted(
        (Candidate(f"n{i}", score=float(s)) for i, s in enumerate(scores)),
        key=lambda c: (-c.score, c.note_id),
    )
    vectors: dict[str, np.ndarray] = {}
    for c in pool:
        if rng.random() < 0.15:
            continue  # not embedded yet
        if vectors and rng.random() < 0.3:
            base = vectors[str(rng.choice(list(vectors)))]
            vectors[c.note_id] = _unit(base + rng.normal(0, rng.choice([0.0, 0.02, 0.1]), 384))
        else:
            vectors[c.note_id] = _unit(rng.standard_normal(384))
    return pool, vectors


@pytest.mark.parametrize("seed", range(40))
def test_picks_and_reasons_match_the_numpy_loop(seed: int):
    rng = np.random.default_rng(seed)
    pool, vectors = _pool(rng, int(rng.integers(2, 60)))
    mmr_lambda = float(rng.choice([0.0, 0.3, 0.7, 0.95]))
    floor = float(rng.choice([0.0, 0.5, 0.9, 0.99]))
    window = int(rng.choice([1, 2, 10, 30, 100]))
    expected = numpy_diversify(copy.deepcopy(pool), vectors, (mmr_lambda, floor, window))
    found = diversify(copy.deepcopy(pool), vectors, mmr_lambda, floor, window)
    assert [c.note_id for c in found] == [c.note_id for c in expected]
    assert [c.reasons for c in found] == [c.reasons for c in expected]


def test_a_near_duplicate_is_pushed_below_a_different_note():
    rng = np.random.default_rng(7)
    first, other = _unit(rng.standard_normal(384)), _unit(rng.standard_normal(384))
    copy_of_first = _unit(first + rng.normal(0, 0.01, 384))
    pool = [Candidate("a", score=1.0), Candidate("a2", score=0.95), Candidate("b", score=0.9)]
    vectors = {"a": first, "a2": copy_of_first, "b": other}
    found = diversify(pool, vectors, 0.7, 0.9, 30)
    assert [c.note_id for c in found] == ["a", "b", "a2"]
    assert found[2].reasons[0].startswith("diversity: near-duplicate of a higher result (0.")
    assert found[0].reasons == [] and found[1].reasons == []

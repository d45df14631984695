"""Terrace 0 and 1: merge the scouts' hits into one pool, rerank it with priors and what
feedback taught (LCMA-DESIGN 5.5) and diversify with MMR over note embeddings. Temperature
lives in :mod:`lithos.retrieval.temperature`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter

from lithos.domain.fusion import min_max
from lithos.domain.retrieval import Candidate, NodeStats, ScoutHit
from lithos.lazy_numpy import np


@dataclass(frozen=True)
class RerankWeights:
    """Every weight of Terrace 1 (from ``lcma.*`` settings)."""

    scout_weights: Mapping[str, float]
    note_type_priors: Mapping[str, float]
    note_type_weight: float
    salience_weight: float
    usage_weight: float
    query_class_weight: float
    ignored_weight: float
    misleading_weight: float
    default_salience: float
    misleading_limit: int
    focus_seeds: int = 2
    focus_weight: float = 0.0


def merge(pool: dict[str, Candidate], scout: str, hits: Sequence[ScoutHit]) -> None:
    """Add a scout's hits to the pool (one candidate per note)."""
    for hit in hits:
        candidate = pool.get(hit.note_id)
        if candidate is None:
            candidate = pool[hit.note_id] = Candidate(hit.note_id)
        candidate.add(scout, hit)


def score_evidence(pool: Mapping[str, Candidate], weights: Mapping[str, float]) -> None:
    """Terrace 0: each candidate's score becomes the weighted sum of every scout's calibrated
    score."""
    get = weights.get  # loops, not sum() over generators: this runs for every pooled note
    for c in pool.values():
        total = 0.0
        for scout, value in c.evidence.items():
            total += get(scout, 0.0) * value
        c.score = total


def focus(
    pool: Mapping[str, Candidate],
    vectors: Mapping[str, np.ndarray],
    seeds: int,
    weight: float,
    duplicate: float,
) -> None:
    """Pseudo-relevance feedback in embedding space: add ``weight`` times how close each
    candidate lies to the centroid of the ``seeds`` best candidates by evidence (min-max over
    the pool, so the closest scores ``weight`` and the farthest 0) to its score. A candidate
    whose cosine to a seed already taken is ``duplicate`` or more is not taken as a seed (two
    copies of one note would pull the centroid onto themselves). Candidates without a vector
    gain nothing. Scores must hold Terrace 0's evidence when called."""
    if weight <= 0 or len(pool) < 2:
        return
    best: list[str] = []
    for c in ranked(pool):
        if len(best) == seeds:
            break
        v = vectors.get(c.note_id)
        if v is not None and all(float(v @ vectors[b]) < duplicate for b in best):
            best.append(c.note_id)
    if not best:
        return
    centroid = np.mean([vectors[n] for n in best], axis=0)
    norm = float(np.linalg.norm(centroid))
    if norm == 0:
        return
    notes = [n for n in vectors if n in pool]
    # One matrix product for the whole pool rather than a product per note.
    values = ((np.stack([vectors[n] for n in notes]) @ centroid).astype(np.float64) / norm).tolist()
    scaled = min_max(values)
    for note, value, share in zip(notes, values, scaled, strict=True):
        gain = weight * share
        c = pool[note]
        c.score += gain
        if gain >= weight / 2 and note not in best:
            c.reasons.append(f"focus: close to the best results (cosine {value:.2f})")


_SCORE = attrgetter("score")
_NOTE_ID = attrgetter("note_id")


def ranked(pool: Mapping[str, Candidate]) -> list[Candidate]:
    """Best score first, ties by note id. Two stable sorts on one attribute each, the order
    of one sort by ``(-score, note_id)`` without a key tuple built per candidate."""
    order = sorted(pool.values(), key=_NOTE_ID)
    order.sort(key=_SCORE, reverse=True)  # stable: equal scores keep the ids' order
    return order


def rerank(
    pool: Mapping[str, Candidate],
    weights: RerankWeights,
    note_types: Mapping[str, str],
    stats: Mapping[str, NodeStats],
    query_class: str,
    vectors: Mapping[str, np.ndarray] | None = None,
    duplicate: float = 1.0,
    scored: bool = False,
) -> list[Candidate]:
    """Terrace 1: evidence, :func:`focus` (when ``vectors`` holds the pool's note vectors;
    ``duplicate`` is the cosine at which two notes count as copies),
    note-type prior, salience, usage and the query class's learned prior, minus ignored and
    misleading penalties; best first. Every adjustment large enough to matter is added to
    the candidate's reasons. ``scored``: the scores already hold the evidence under
    ``weights.scout_weights`` (:func:`score_evidence` ran since the pool last changed)."""
    if not scored:
        score_evidence(pool, weights.scout_weights)
    if vectors is not None:
        focus(pool, vectors, weights.focus_seeds, weights.focus_weight, duplicate)
    type_weight, type_priors = weights.note_type_weight, weights.note_type_priors
    for c in pool.values():
        score = c.score
        note_type = note_types.get(c.note_id, "")
        type_prior = type_weight * type_priors.get(note_type, 0.0)
        if type_prior:
            c.reasons.append(f"type: {note_type} prior {type_prior:+.2f}")
        score += type_prior
        learned = stats.get(c.note_id)
        if learned is not None:
            score += _learned(c, learned, weights, query_class)
        c.score = score
    return ranked(pool)


def _learned(c: Candidate, s: NodeStats, w: RerankWeights, query_class: str) -> float:
    salience = w.salience_weight * (s.salience - w.default_salience)
    usage = w.usage_weight * min(1.0, math.log1p(s.cited_count) / math.log(10))
    prior = w.query_class_weight * s.query_class_priors.get(query_class, 0.0)
    ignored = w.ignored_weight * s.ignored_count / (s.ignored_count + s.cited_count + 2)
    misleading = w.misleading_weight * min(1.0, s.misleading_count / w.misleading_limit)
    if s.cited_count or s.salience != w.default_salience:
        c.reasons.append(f"learned: cited {s.cited_count} times, salience {s.salience:.2f}")
    if s.query_class_priors.get(query_class):
        c.reasons.append(
            f"learned: {query_class} queries prior {s.query_class_priors[query_class]:+.2f}"
        )
    if s.ignored_count:
        c.reasons.append(f"learned: ignored {s.ignored_count} times")
    if s.misleading_count:
        c.reasons.append(f"learned: marked misleading {s.misleading_count} times")
    return salience + usage + prior - ignored - misleading


def diversify(
    candidates: Sequence[Candidate],
    vectors: Mapping[str, np.ndarray],
    mmr_lambda: float,
    similarity_floor: float,
    window: int,
) -> list[Candidate]:
    """Greedy MMR over the top ``window`` candidates by note embedding: each pick maximises
    ``lambda * score - (1 - lambda) * redundancy``, where redundancy is how far the cosine to
    the closest pick lies above ``similarity_floor`` (scaled to [0, 1]), so only near-duplicates
    are pushed down. Candidates without a vector are never penalised."""
    head, tail = list(candidates[:window]), list(candidates[window:])
    if mmr_lambda >= 1.0 or len(head) < 2:
        return [*head, *tail]
    span = max(1e-6, 1.0 - similarity_floor)
    dimension = next((len(v) for v in vectors.values()), 0)
    has = [c.note_id in vectors for c in head]
    matrix = np.zeros((len(head), dimension), dtype=np.float32)
    for i, c in enumerate(head):
        if has[i]:
            matrix[i] = vectors[c.note_id]
    # Column j of the cosines as row j. The greedy loop runs over Python floats: for a
    # window this small, a NumPy call per step cost more than the arithmetic (the same
    # float64 operations in the same order, so the same picks).
    similarity = (matrix @ matrix.T).T.tolist()
    weighted = [mmr_lambda * c.score for c in head]
    penalty = 1 - mmr_lambda
    # The cosine of each candidate to its closest pick so far (-inf: no pick with a vector),
    # and its redundancy and value, which change only when that cosine passes the floor (a
    # redundancy of 0 leaves the weighted score as it is): each step picks with one max().
    closest = [-math.inf] * len(head)
    redundancy = [0.0] * len(head)
    values = list(weighted)
    left = list(range(len(head)))
    chosen: list[Candidate] = []
    while left:
        best = max(left, key=values.__getitem__)  # the first best, as argmax picks
        left.remove(best)
        pick = head[best]
        if redundancy[best] > 0:
            pick.reasons.append(
                f"diversity: near-duplicate of a higher result ({redundancy[best]:.2f})"
            )
        chosen.append(pick)
        if has[best]:
            column = similarity[best]
            for i in left:
                cosine = column[i]
                if cosine > closest[i]:
                    closest[i] = cosine
                    if has[i] and cosine > similarity_floor:
                        r = redundancy[i] = (cosine - similarity_floor) / span
                        values[i] = weighted[i] - penalty * r
    return [*chosen, *tail]

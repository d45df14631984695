"""Exploration scouts: what a hot query (see :mod:`lithos.retrieval.temperature`) adds to its
pool before Terrace 1 reranks it.

Two scouts behind one interface, kept apart so that their effect is measured and their
weights learned separately, per query class, from task feedback (LCMA-DESIGN 2.2,
disagreement 1; :class:`~lithos.domain.retrieval.ScoutLearning`):

- ``scout_novelty``: diverse but relevant. Candidates already near the query that the best
  candidates do not cover (far from them in embedding space) and that retrieval has rarely
  returned before, MMR-style.
- ``scout_random``: serendipity. A few of the weaker candidates (found by some scout, ranked
  below the best), drawn at random with a generator seeded by ``lcma.exploration.seed`` and
  the query, so the same query on the same knowledge base draws the same notes (reproducible
  tests and receipts). It draws from the pool, not the whole knowledge base: a note no scout
  connected to the query would only fill a short result list with noise.

Both only add evidence to candidates already in the pool; Terrace 1 then reranks it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from lithos.domain.retrieval import EXPLORATION_SCOUTS, NOVELTY, RANDOM, Candidate, ScoutHit
from lithos.lazy_numpy import np
from lithos.retrieval.context import ScoutContext
from lithos.store.stats import StatsStore
from lithos.store.vectors import VectorStore


@dataclass(frozen=True)
class ExplorationSettings:
    enabled: bool
    novelty_k: int
    random_k: int
    slots: int  # places of the final results kept for exploration picks when hot
    seed: int


class ExplorationScout(Protocol):
    name: str

    def explore(
        self, ctx: ScoutContext, top: Sequence[str], pool: Mapping[str, Candidate]
    ) -> list[ScoutHit]:
        """Notes beyond ``top`` (the best candidates so far, best first), every one allowed by
        ``ctx.eligibility``."""
        ...


class NoveltyScout:
    name = NOVELTY

    def __init__(self, vectors: VectorStore, stats: StatsStore, k: int) -> None:
        self.vectors, self.stats, self.k = vectors, stats, k

    def explore(
        self, ctx: ScoutContext, top: Sequence[str], pool: Mapping[str, Candidate]
    ) -> list[ScoutHit]:
        if self.k <= 0:
            return []
        covered = set(top)
        rest = [note for note in pool if note not in covered]
        vectors = self.vectors.note_vectors([*top, *rest])
        rest = [note for note in rest if note in vectors]
        if not rest:
            return []
        query = ctx.query_vector()
        chosen = [vectors[note] for note in top if note in vectors]
        counts = self.stats.node_stats(rest)
        block = np.stack([vectors[note] for note in rest])
        relevances = block @ query
        overlaps = (block @ np.stack(chosen).T).max(axis=1) if chosen else np.zeros(len(rest))
        scored = []
        for note, relevance, overlap in zip(
            rest, relevances.tolist(), overlaps.tolist(), strict=True
        ):
            if relevance <= 0:
                continue
            retrieved = counts[note].retrieval_count if note in counts else 0
            rarity = 1.0 / (1.0 + math.log1p(retrieved))
            score = relevance * (1.0 - max(0.0, overlap)) * rarity
            scored.append((score, note, relevance, overlap, retrieved))
        scored.sort(key=lambda s: (-s[0], s[1]))
        hits = []
        for score, note, relevance, overlap, retrieved in scored[: self.k]:
            times = "never retrieved" if retrieved == 0 else f"retrieved {retrieved} times"
            reason = (
                f"exploration: rarely retrieved note near the query ({times}, cosine"
                f" {relevance:.2f} to the query, {max(0.0, overlap):.2f} to the best results)"
            )
            hits.append(ScoutHit(note, min(1.0, score), reason))
        return hits


class RandomScout:
    name = RANDOM

    def __init__(self, k: int, seed: int) -> None:
        self.k, self.seed = k, seed

    def explore(
        self, ctx: ScoutContext, top: Sequence[str], pool: Mapping[str, Candidate]
    ) -> list[ScoutHit]:
        covered = set(top)
        rest = sorted(note for note in pool if note not in covered)
        if self.k <= 0 or not rest:
            return []
        draw = random.Random(f"{self.seed}\x00{ctx.query.query}")
        picks = draw.sample(rest, min(self.k, len(rest)))
        reason = "exploration: random pick among the weaker candidates, for serendipity"
        return [ScoutHit(note, 1.0, reason) for note in sorted(picks)]


def reserve_slots(
    ordered: Sequence[Candidate], limit: int, slots: int, heat_note: str
) -> list[Candidate]:
    """Keep up to ``slots`` of the first ``limit`` places for the best exploration picks: an
    exploration candidate ranked below ``limit`` takes the last places (the candidates it
    displaces follow right after), so a hot query always shows where it looked further."""
    head, tail = list(ordered[:limit]), list(ordered[limit:])
    present = sum(1 for c in head if _explored(c))
    wanted = [c for c in tail if _explored(c)][: max(0, slots - present)]
    if not wanted:
        return [*head, *tail]
    keep = head[: max(0, limit - len(wanted))]
    displaced = head[len(keep) :]
    for c in wanted:
        c.reasons.append(f"exploration: kept a place, the results are scattered ({heat_note})")
    moved = {c.note_id for c in wanted}
    rest = [c for c in tail if c.note_id not in moved]
    return [*keep, *wanted, *displaced, *rest]


def _explored(c: Candidate) -> bool:
    return any(scout in c.evidence for scout in EXPLORATION_SCOUTS)

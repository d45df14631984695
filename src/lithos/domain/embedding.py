"""The embedder contract (text in, unit vectors out) and the embedding spaces vectors live in.

Stores and services depend on this Protocol, never on a concrete model, so tests can run a
deterministic fake and the composition root picks the real model.

An :class:`EmbeddingSpace` names what makes two vectors comparable: the model, its revision
(the exact weights), the dimension and the normalisation. Every stored vector records its
space; vectors of different spaces are never compared with each other. When the configured
model changes, the vector index holds two spaces for a while (the new one and the one being
retired) and a query is embedded in each (:class:`QueryVectors`); :func:`calibration` puts the
scores of the older space on the scale of the newer one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from lithos.lazy_numpy import np

# Below this many vectors in either space, a query's score distribution over the space is too
# noisy to calibrate by: scores are then compared as they are.
MIN_CALIBRATION_ROWS = 50


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors in one embedding space.

    ``model_id`` names the model and ``revision`` its exact weights (empty when the model id
    alone pins them); ``dimension`` is the length of every vector. Together they make the
    :class:`EmbeddingSpace` (see :func:`space_of`): a stored vector is reused, and compared,
    only within its space.
    """

    model_id: str
    revision: str
    dimension: int

    def warm(self) -> None:
        """Load whatever the first :meth:`embed` would (model files, sessions), so a later
        call does not pay for it. Safe to call more than once."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` in order.

        Returns a float32 array of shape ``(len(texts), dimension)`` whose rows have L2 norm 1,
        so a dot product is a cosine similarity. An empty ``texts`` gives shape
        ``(0, dimension)``. Implementations must be safe to call from several threads.
        """
        ...


@dataclass(frozen=True)
class EmbeddingSpace:
    """Where a vector lives: vectors are comparable only within one space."""

    model_id: str
    revision: str
    dimension: int
    normalisation: str = "l2"

    @property
    def id(self) -> str:
        """The stable text id stored with every vector, e.g.
        ``all-MiniLM-L6-v2-int8@a55a83cadb25/384/l2``."""
        revision = f"@{self.revision}" if self.revision else ""
        return f"{self.model_id}{revision}/{self.dimension}/{self.normalisation}"


def space_of(embedder: Embedder) -> EmbeddingSpace:
    """The space ``embedder`` embeds into (every embedder returns L2-normalised vectors)."""
    return EmbeddingSpace(embedder.model_id, embedder.revision, embedder.dimension)


@dataclass(frozen=True)
class QueryVectors:
    """One query embedded in each space the vector index searches, by space id.

    ``primary`` is the id of the configured space; its vector is always present. A space the
    query has no vector for is not searched.
    """

    primary: str
    vectors: Mapping[str, np.ndarray]

    @property
    def primary_vector(self) -> np.ndarray:
        return self.vectors[self.primary]


@dataclass(frozen=True)
class ScoreStats:
    """The distribution of one query's cosine scores over every vector of a space."""

    count: int
    mean: float
    std: float

    @classmethod
    def of(cls, scores: np.ndarray) -> ScoreStats:
        if scores.size == 0:
            return cls(0, 0.0, 0.0)
        return cls(int(scores.size), float(scores.mean()), float(scores.std()))


@dataclass(frozen=True)
class Calibration:
    """``score * scale + shift``: moves cosine scores of one space onto another's scale."""

    scale: float = 1.0
    shift: float = 0.0

    def apply(self, scores: np.ndarray) -> np.ndarray:
        if self.scale == 1.0 and self.shift == 0.0:
            return scores
        return (scores * np.float32(self.scale) + np.float32(self.shift)).astype(np.float32)


IDENTITY = Calibration()


def calibration(primary: ScoreStats, other: ScoreStats) -> Calibration:
    """The affine map that gives ``other``'s scores the mean and spread ``primary``'s have for
    the same query (z-score matching), so that the n-th percentile of one space lands on the
    n-th percentile of the other. Both spaces index parts of the same knowledge base, so a
    query's score distribution over each is an estimate of the same thing.

    Identity when either side has fewer than :data:`MIN_CALIBRATION_ROWS` vectors or no spread:
    too little to estimate from.
    """
    if min(primary.count, other.count) < MIN_CALIBRATION_ROWS or other.std < 1e-6:
        return IDENTITY
    scale = primary.std / other.std
    return Calibration(scale, primary.mean - scale * other.mean)

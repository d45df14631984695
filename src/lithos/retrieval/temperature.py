"""Temperature (LCMA-DESIGN 2.1 I and 5.3): how scattered the best candidates of one query are,
and so how far retrieval should look beyond them.

``temperature = 1 - coherence`` of the top candidates, coherence blending what the typed
edges and wiki-links among them say (weighted by edge type; a ``contradicts`` edge lowers it)
with how close their embeddings are. A tight, linked set is cold: the answer is probably
there. A scattered set, or one whose notes disagree, is hot: above the threshold the
exploration scouts run and the pool is reranked with what they found.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lithos.domain.edges import EdgeType, weighted_pair_mean
from lithos.lazy_numpy import np
from lithos.services.edges import EdgeService


@dataclass(frozen=True)
class TemperatureSettings:
    top_k: int
    link_weight: float  # share of coherence taken from edges and links; the rest from embeddings
    edge_strength: Mapping[EdgeType, float]  # per edge type (``contradicts`` counts against)
    threshold: float  # above it the query counts as hot and exploration runs


@dataclass(frozen=True)
class Heat:
    """One query's temperature and what it was made of."""

    temperature: float
    graph: float  # coherence by edges and links, in [-1, 1]
    semantic: float  # mean pairwise cosine of the notes' embeddings, in [0, 1]
    hot: bool

    def describe(self) -> str:
        return (
            f"temperature {self.temperature:.2f}"
            f" (edges and links {self.graph:+.2f}, embeddings {self.semantic:.2f})"
        )


def semantic_coherence(
    ids: Sequence[str],
    vectors: Mapping[str, np.ndarray],
    importance: Mapping[str, float] | None = None,
) -> float:
    """Mean pairwise cosine (negative ones count 0) over the notes that have a vector,
    weighted like :func:`~lithos.domain.edges.pair_coherence`."""
    present = [i for i in dict.fromkeys(ids) if i in vectors]
    return max(
        0.0,
        weighted_pair_mean(
            present,
            lambda pair: max(0.0, float(np.dot(*(vectors[i] for i in pair)))),
            importance,
        ),
    )


def temperature(coherence: float) -> float:
    """LCMA-DESIGN 2.1 I: temperature = 1 - coherence, in [0, 1]."""
    return round(1.0 - max(0.0, min(1.0, coherence)), 4)


class Thermometer:
    def __init__(self, settings: TemperatureSettings, edges: EdgeService) -> None:
        self.settings, self.edges = settings, edges

    def measure(
        self,
        ids: Sequence[str],
        vectors: Mapping[str, np.ndarray],
        scores: Mapping[str, float] | None = None,
    ) -> Heat:
        """The temperature of ``ids`` (the best candidates, best first; only the first
        ``top_k`` count), each pair weighted by the product of the two notes' ``scores`` so
        a weak tail counts for little. Fewer than two notes have nothing to cohere:
        temperature 1."""
        cfg = self.settings
        top = list(dict.fromkeys(ids))[: cfg.top_k]
        graph = self.edges.coherence(top, type_strength=cfg.edge_strength, importance=scores)
        semantic = semantic_coherence(top, vectors, scores)
        heat = temperature(cfg.link_weight * graph + (1 - cfg.link_weight) * semantic)
        return Heat(heat, round(graph, 4), round(semantic, 4), heat > cfg.threshold)

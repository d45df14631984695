"""Phase B scouts: expand from the best Phase A candidates (the seeds) along provenance,
links, past co-citation and shared sources.

A found note scores its seed's score times how strong the connection is, so an expansion
never outranks the evidence it came from by itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from lithos.domain.edges import Provenance
from lithos.domain.retrieval import ScoutHit
from lithos.retrieval.context import ScoutContext
from lithos.services.edges import EdgeService
from lithos.services.edges import Neighbour as EdgeNeighbour
from lithos.services.graph import LinkGraph
from lithos.store.catalog import Catalog
from lithos.store.stats import StatsStore


@dataclass(frozen=True)
class Seed:
    note_id: str
    title: str
    score: float


@dataclass(frozen=True)
class Neighbour:
    """A note connected to a seed: ``relation`` completes "<note> <relation> <seed title>"
    (``linked from``, ``supports edge to``...) and ``weight`` in [0, 1] is how strong the
    connection is."""

    note_id: str
    relation: str
    weight: float


class NeighbourProvider(Protocol):
    """Where the graph scout finds the seeds' neighbours: wiki-links and typed weighted
    edges (several providers can be combined)."""

    def neighbours(self, note_ids: Sequence[str]) -> dict[str, list[Neighbour]]:
        """Each of ``note_ids``' neighbours, all of them read at once."""
        ...


class WikiLinkNeighbours:
    """Neighbours by ``[[wiki-link]]``, in both directions, all of weight ``weight``."""

    def __init__(self, graph: LinkGraph, weight: float = 0.5) -> None:
        self.graph, self.weight = graph, weight

    def neighbours(self, note_ids: Sequence[str]) -> dict[str, list[Neighbour]]:
        return {
            note_id: [
                Neighbour(other, "linked from" if way == "outgoing" else "links to", self.weight)
                for other, way in self.graph.neighbours(note_id)
            ]
            for note_id in note_ids
        }


class TypedEdgeNeighbours:
    """Neighbours by typed, weighted edges (``.lithos/edges.db``), weighted as of now and
    scaled by ``provenance_weights`` (who made the edge: an edge of a provenance weighted 0
    is not followed; a provenance not named counts fully). Each seed gets its own ``limit``
    strongest neighbours; one query reads them for every seed."""

    def __init__(
        self,
        edges: EdgeService,
        limit: int,
        provenance_weights: Mapping[Provenance, float] | None = None,
    ) -> None:
        self.edges, self.limit = edges, limit
        self.provenance_weights = dict(provenance_weights or {})

    def neighbours(self, note_ids: Sequence[str]) -> dict[str, list[Neighbour]]:
        each = self.edges.neighbours_each(note_ids, limit=self.limit)
        return {note_id: self._scaled(note_id, found) for note_id, found in each.items()}

    def _scaled(self, note_id: str, found: Sequence[EdgeNeighbour]) -> list[Neighbour]:
        scaled = []
        for n in found:
            weight = n.weight * self.provenance_weights.get(n.edge.provenance, 1.0)
            if weight <= 0:
                continue
            way = "from" if n.edge.from_id == note_id else "to"
            scaled.append(Neighbour(n.note_id, f"{n.edge.type} edge {way}", weight))
        return scaled


class ExpansionScout(Protocol):
    name: str

    def expand(self, ctx: ScoutContext, seeds: Sequence[Seed]) -> list[ScoutHit]:
        """Notes connected to ``seeds``, every one allowed by ``ctx.eligibility``."""
        ...


def strongest(hits: list[ScoutHit], depth: int) -> list[ScoutHit]:
    best: dict[str, ScoutHit] = {}
    for hit in hits:
        if hit.note_id not in best or hit.score > best[hit.note_id].score:
            best[hit.note_id] = hit
    return sorted(best.values(), key=lambda h: (-h.score, h.note_id))[:depth]


class GraphScout:
    name = "scout_graph"

    def __init__(self, providers: Sequence[NeighbourProvider], depth: int) -> None:
        self.providers, self.depth = list(providers), depth

    def expand(self, ctx: ScoutContext, seeds: Sequence[Seed]) -> list[ScoutHit]:
        seed_ids = {s.note_id for s in seeds}
        found = [provider.neighbours([s.note_id for s in seeds]) for provider in self.providers]
        hits = []
        for seed in seeds:
            for neighbours in found:
                for n in neighbours.get(seed.note_id, ()):
                    if n.note_id in seed_ids or not ctx.eligibility.allows(n.note_id):
                        continue
                    reason = f"graph: {n.relation} '{seed.title}'"
                    hits.append(ScoutHit(n.note_id, seed.score * n.weight, reason))
        return strongest(hits, self.depth)


class CoactivationScout:
    """Notes that earlier tasks cited together with a seed."""

    name = "scout_coactivation"

    def __init__(self, stats: StatsStore, depth: int, saturation: int = 3) -> None:
        self.stats, self.depth, self.saturation = stats, depth, saturation

    def expand(self, ctx: ScoutContext, seeds: Sequence[Seed]) -> list[ScoutHit]:
        by_id = {s.note_id: s for s in seeds}
        limit = self.depth + len(ctx.eligibility.hidden)
        hits = []
        for note, seed_id, count in self.stats.cited_together(list(by_id), limit):
            if not ctx.eligibility.allows(note):
                continue
            seed = by_id[seed_id]
            strength = min(1.0, count / self.saturation)
            times = "once" if count == 1 else f"{count} times"
            reason = f"coactivation: cited together with '{seed.title}' {times}"
            hits.append(ScoutHit(note, seed.score * strength, reason))
        return strongest(hits, self.depth)


class ProvenanceScout:
    """Notes a seed was derived from, and notes derived from a seed (``derived_from_ids``)."""

    name = "scout_provenance"

    def __init__(self, catalog: Catalog, depth: int) -> None:
        self.catalog, self.depth = catalog, depth

    def expand(self, ctx: ScoutContext, seeds: Sequence[Seed]) -> list[ScoutHit]:
        ids = [s.note_id for s in seeds]
        lineage = self.catalog.lineage(ids)
        hits = []
        for phrase, table in (
            ("source of", lineage.sources),
            ("derived from", lineage.derivatives),
        ):
            for seed in seeds:
                for note in table.get(seed.note_id, ()):
                    if note not in ids and ctx.eligibility.allows(note):
                        reason = f"provenance: {phrase} '{seed.title}'"
                        hits.append(ScoutHit(note, seed.score, reason))
        return strongest(hits, self.depth)


class SourceUrlScout:
    """Notes taken from the same source URL as a seed."""

    name = "scout_source_url"

    def __init__(self, catalog: Catalog, depth: int) -> None:
        self.catalog, self.depth = catalog, depth

    def expand(self, ctx: ScoutContext, seeds: Sequence[Seed]) -> list[ScoutHit]:
        ids = [s.note_id for s in seeds]
        sharing = self.catalog.sharing_source(ids)
        hits = []
        for seed in seeds:
            for note in sharing.get(seed.note_id, ()):
                if note not in ids and ctx.eligibility.allows(note):
                    reason = f"source: same source URL as '{seed.title}'"
                    hits.append(ScoutHit(note, seed.score, reason))
        return strongest(hits, self.depth)

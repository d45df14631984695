"""Typed edges as a use case: create and reinforce them, list them, and read the graph signals
retrieval needs (neighbours by weight, coherence of a set of notes).

Edges join notes that exist: an upsert naming an unknown note fails with ``doc_not_found``
and writes nothing. Weights are reported as of now (decay applied on read). The methods
without ``async`` block on SQLite; call them from worker threads (``asyncio.to_thread``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from lithos.domain.edges import (
    DEFAULT_COHERENCE_STRENGTH,
    DEFAULT_NAMESPACE,
    EDGE_TYPES,
    Edge,
    EdgeFilter,
    EdgeType,
    EdgeUpsert,
    pair_coherence,
)
from lithos.domain.notes import require_valid_id
from lithos.domain.retrieval import Feedback, GraphLearning, cited_pairs, misleading_context
from lithos.domain.scope import Scope
from lithos.domain.timestamps import utc_now
from lithos.errors import DocNotFound, EdgeNotFound, InvalidInput
from lithos.services.graph import LinkGraph
from lithos.store.catalog import Catalog
from lithos.store.edges import EdgeStore

Clock = Callable[[], datetime]
PURGE_BATCH = 10_000
log = logging.getLogger("lithos.edges")


@dataclass(frozen=True)
class LearnedEdges:
    """What one completion's feedback did to the graph."""

    reinforced: tuple[Edge, ...]
    weakened: int


@dataclass(frozen=True)
class Neighbour:
    """A note one typed edge away from ``seed``; ``weight`` is the edge's weight now."""

    note_id: str
    seed: str
    weight: float
    edge: Edge


class EdgeService:
    def __init__(
        self,
        store: EdgeStore,
        catalog: Catalog,
        graph: LinkGraph,
        clock: Clock = utc_now,
        link_strength: float = 0.5,
    ) -> None:
        self.store = store
        self.catalog = catalog
        self.graph = graph
        self.clock = clock
        self.link_strength = link_strength

    # -- tools ------------------------------------------------------------------------------

    async def upsert(self, request: EdgeUpsert) -> Edge:
        """Create the edge or reinforce it (see :class:`EdgeUpsert`).

        Raises InvalidInput (malformed ids, a self-edge, blank namespace), DocNotFound (either
        note unknown). Nothing is written when it raises.
        """
        return await asyncio.to_thread(self.upsert_now, request)

    def upsert_now(self, request: EdgeUpsert) -> Edge:
        request = self._checked(request)
        for note_id in (request.from_id, request.to_id):
            if self.catalog.get(note_id) is None:
                raise DocNotFound(f"no note with id {note_id}")
        return self.store.upsert([request], self.clock())[0]

    async def find(self, query: EdgeFilter, scope: Scope | None = None) -> list[Edge]:
        """Edges matching every given filter, strongest (as of now) first, leaving out edges
        of notes ``scope`` may not see (default: an anonymous caller)."""
        hidden = await asyncio.to_thread(self.catalog.hidden_ids, scope or Scope())
        query = replace(
            query,
            hidden=frozenset(hidden),
            from_id=None if query.from_id is None else require_valid_id(query.from_id),
            to_id=None if query.to_id is None else require_valid_id(query.to_id),
        )
        return await asyncio.to_thread(self.store.find, query, self.clock())

    async def get(self, edge_id: str) -> Edge:
        edge = await asyncio.to_thread(self.store.get, edge_id, self.clock())
        if edge is None:
            raise EdgeNotFound(f"no edge with id {edge_id}")
        return edge

    # -- signals for retrieval ----------------------------------------------------------------

    def neighbours(
        self,
        note_ids: Sequence[str],
        namespaces: Sequence[str] | None = None,
        types: Sequence[str] | None = None,
        limit: int = 50,
        exclude_seeds: bool = True,
        hidden: Collection[str] = (),
    ) -> list[Neighbour]:
        """Notes joined to any of ``note_ids`` by a typed edge, strongest edge first, each note
        once (by its strongest edge), none of ``hidden`` (the caller's
        ``catalog.hidden_ids(scope)``). ``contradicts`` edges count only when asked for by
        ``types``: a contradiction is no reason to retrieve a note alongside another."""
        seeds = set(note_ids)
        edges = self.store.touching(list(seeds), self.clock(), namespaces, _wanted(types))
        return _nearest(edges, seeds, set(hidden), limit, exclude_seeds)

    def neighbours_each(
        self,
        note_ids: Sequence[str],
        namespaces: Sequence[str] | None = None,
        types: Sequence[str] | None = None,
        limit: int = 50,
        hidden: Collection[str] = (),
    ) -> dict[str, list[Neighbour]]:
        """For each of ``note_ids`` what ``neighbours([note_id], ...)`` returns (its own
        ``limit``, order and exclusions: another seed may be a seed's neighbour), read with
        one query for all of them."""
        seeds = list(dict.fromkeys(note_ids))
        edges = self.store.touching(seeds, self.clock(), namespaces, _wanted(types))
        touching: dict[str, list[Edge]] = {seed: [] for seed in seeds}
        for edge in edges:  # strongest first: each seed's share keeps that order
            touching.get(edge.from_id, []).append(edge)
            if edge.to_id != edge.from_id:
                touching.get(edge.to_id, []).append(edge)
        unseen = set(hidden)
        return {seed: _nearest(touching[seed], {seed}, unseen, limit) for seed in seeds}

    def coherence(
        self,
        note_ids: Sequence[str],
        namespaces: Sequence[str] | None = None,
        type_strength: Mapping[EdgeType, float] | None = None,
        importance: Mapping[str, float] | None = None,
    ) -> float:
        """How much ``note_ids`` hang together by typed edges and wiki-links, in [-1, 1]
        (:func:`~lithos.domain.edges.pair_coherence`): the mean over every pair of its
        strongest edge as of now, weighted by type, or ``link_strength`` for a wiki-link,
        less any ``contradicts`` edge between them, pairs weighted by ``importance`` when
        given. 0 for fewer than two notes."""
        ids = list(dict.fromkeys(note_ids))
        if len(ids) < 2:
            return 0.0
        edges = self.store.touching(ids, self.clock(), namespaces, None, both_ends=True)
        return pair_coherence(
            ids,
            edges,
            self.graph.linked(ids),
            DEFAULT_COHERENCE_STRENGTH if type_strength is None else type_strength,
            self.link_strength,
            importance,
        )

    def learn(self, feedback: Feedback, rules: GraphLearning) -> LearnedEdges:
        """Reinforce ``related_to`` edges between the cited notes and weaken the edges that
        may have pulled a misleading note in (see :class:`GraphLearning`), in one
        transaction. A pair's edge lives in the notes' namespace when they share one, else in
        the default namespace; notes deleted since the retrieval are left out."""
        pairs = cited_pairs(feedback, rules.max_cited_notes)
        entries = self.catalog.get_many(list({n for pair in pairs for n in pair}))
        evidence = f"cited together for task {feedback.task_id} ({feedback.receipt_id})"
        reinforce = []
        for a, b in pairs:
            if a not in entries or b not in entries:
                continue
            ns_a, ns_b = entries[a].namespace, entries[b].namespace
            reinforce.append(
                EdgeUpsert(
                    from_id=a,
                    to_id=b,
                    type="related_to",
                    namespace=ns_a if ns_a == ns_b else DEFAULT_NAMESPACE,
                    provenance="rule",
                    actor=feedback.agent_id,
                    evidence=(evidence,),
                    start_weight=rules.start_weight,
                    step=rules.step,
                )
            )
        weaken = misleading_context(feedback)
        edges, weakened = self.store.learn(
            reinforce,
            weaken,
            rules.misleading_step,
            self.clock(),
            once=_learned(feedback.receipt_id),
        )
        return LearnedEdges(tuple(edges), weakened)

    def learned(self, receipt_ids: Sequence[str]) -> set[str]:
        """Which of these receipts' feedback the graph has learned from."""
        keys = self.store.ledger_keys([_learned(r) for r in receipt_ids])
        return {r for r in receipt_ids if _learned(r) in keys}

    def learning_recorded_since(self) -> datetime | None:
        """From when on the graph records which receipts' feedback it learned from: whether
        it learned from older feedback cannot be told."""
        return self.store.ledger_since(_learned(""))

    def motifs(self, note_ids: Sequence[str]) -> dict[str, frozenset[str]]:
        """For each note, the kinds of typed edges it takes part in, as of now: ``supports>``
        for an edge from it, ``<supports`` for one to it (a note's place in the graph, whatever
        its neighbours are about)."""
        ids = list(dict.fromkeys(note_ids))
        found: dict[str, set[str]] = {n: set() for n in ids}
        for edge in self.store.touching(ids, self.clock()):
            if edge.from_id in found:
                found[edge.from_id].add(f"{edge.type}>")
            if edge.to_id in found:
                found[edge.to_id].add(f"<{edge.type}")
        return {n: frozenset(kinds) for n, kinds in found.items()}

    def mark_used(self, edge_ids: Sequence[str]) -> int:
        """Edges retrieval actually followed: their decay starts again from now."""
        return self.store.mark_used(edge_ids, self.clock())

    def purge_removed(self, grace: timedelta, limit: int = PURGE_BATCH) -> int:
        """Drop edges whose note was deleted more than ``grace`` ago, at most ``limit`` of them
        (a bounded sweep: the rest go on the next start)."""
        purged = self.store.purge_removed(self.clock() - grace, limit)
        if purged:
            log.info("purged %d edges of notes deleted over %s ago", purged, grace)
        return purged

    # -- rules ----------------------------------------------------------------------------

    def _checked(self, request: EdgeUpsert) -> EdgeUpsert:
        from_id, to_id = require_valid_id(request.from_id), require_valid_id(request.to_id)
        if from_id == to_id:
            raise InvalidInput("an edge joins two different notes")
        if request.weight is not None and not 0.0 <= request.weight <= 1.0:
            raise InvalidInput("weight must be between 0 and 1")
        namespace = request.namespace.strip()
        if not namespace:
            raise InvalidInput("namespace must not be empty")
        return EdgeUpsert(
            from_id=from_id,
            to_id=to_id,
            type=request.type,
            namespace=namespace,
            provenance=request.provenance,
            actor=request.actor,
            weight=request.weight,
            evidence=tuple(e.strip() for e in request.evidence if e.strip()),
        )


def _learned(receipt_id: str) -> str:
    """The reinforcement-ledger key that says a receipt's feedback was learned from."""
    return f"feedback:{receipt_id}"


def _wanted(types: Sequence[str] | None) -> Sequence[str]:
    return types if types is not None else [t for t in EDGE_TYPES if t != "contradicts"]


def _nearest(
    edges: Sequence[Edge],
    seeds: Collection[str],
    unseen: Collection[str],
    limit: int,
    exclude_seeds: bool = True,
) -> list[Neighbour]:
    """The notes ``edges`` (strongest first) join to ``seeds``, each once by its strongest
    edge, none of ``unseen``, strongest first, at most ``limit``."""
    found: dict[str, Neighbour] = {}
    for edge in edges:
        for seed, other in ((edge.from_id, edge.to_id), (edge.to_id, edge.from_id)):
            if seed not in seeds or other in found or other in unseen:
                continue
            if exclude_seeds and other in seeds:
                continue
            found[other] = Neighbour(other, seed, edge.weight, edge)
    return sorted(found.values(), key=lambda n: (-n.weight, n.note_id))[:limit]

"""Everything connected to a note in one walk: wiki-links, provenance and typed edges.

Only notes the caller may see (:mod:`lithos.domain.scope`) are listed or walked through.
Each kind is walked breadth-first up to ``depth`` hops (1-3) on its own graph: links in both
directions, provenance up (``derived_from_ids``) and down (notes derived from it), typed edges
in both directions. Every note reached is reported once per kind, at the hop it was first
reached, with the edge that reached it for typed edges.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

from lithos.domain.edges import Edge
from lithos.domain.scope import Scope
from lithos.errors import DocNotFound
from lithos.services.graph import LinkGraph
from lithos.store.catalog import Catalog
from lithos.store.edges import EdgeStore

Include = Literal["links", "provenance", "edges"]
INCLUDE_ALL: tuple[Include, ...] = ("links", "provenance", "edges")


@dataclass(frozen=True)
class RelatedNote:
    id: str
    title: str
    path: str
    depth: int


@dataclass(frozen=True)
class EdgeStep:
    """A note reached over a typed edge; ``direction`` is the edge's direction as seen from
    the note it was reached from (``outgoing``: that note is the edge's ``from_id``)."""

    note: RelatedNote
    edge: Edge
    direction: Literal["outgoing", "incoming"]


@dataclass(frozen=True)
class Related:
    id: str
    title: str
    links_outgoing: list[RelatedNote] | None = None
    links_incoming: list[RelatedNote] | None = None
    derived_from: list[RelatedNote] | None = None
    derivatives: list[RelatedNote] | None = None
    edges: list[EdgeStep] | None = None


class RelatedService:
    def __init__(
        self,
        graph: LinkGraph,
        catalog: Catalog,
        edges: EdgeStore,
        clock: Callable[[], datetime],
    ) -> None:
        self._graph = graph
        self._catalog = catalog
        self._edges = edges
        self._clock = clock

    async def related(
        self,
        note_id: str,
        include: Collection[Include] = INCLUDE_ALL,
        depth: int = 1,
        scope: Scope | None = None,
    ) -> Related:
        """What is connected to the note, by the kinds in ``include``. Notes ``scope`` may not
        see (default: an anonymous caller) are neither listed nor walked through. Raises
        DocNotFound."""
        return await asyncio.to_thread(self._related, note_id, set(include), depth, scope)

    def _related(
        self, note_id: str, include: set[Include], depth: int, scope: Scope | None
    ) -> Related:
        entry = self._catalog.get(note_id)
        if entry is None:
            raise DocNotFound(f"no note with id {note_id}")
        hidden = self._catalog.hidden_ids(scope or Scope()) - {note_id}
        result = Related(id=note_id, title=entry.title)
        if "links" in include:
            result = replace(
                result,
                links_outgoing=self._walk(note_id, depth, self._graph.outgoing_ids, hidden),
                links_incoming=self._walk(note_id, depth, self._graph.incoming_ids, hidden),
            )
        if "provenance" in include:
            result = replace(
                result,
                derived_from=self._walk(note_id, depth, self._catalog.derived_from, hidden),
                derivatives=self._walk(note_id, depth, self._catalog.derivatives, hidden),
            )
        if "edges" in include:
            result = replace(result, edges=self._edge_walk(note_id, depth, hidden))
        return result

    def _walk(
        self,
        start: str,
        depth: int,
        step: Callable[[Sequence[str]], dict[str, list[str]]],
        hidden: AbstractSet[str],
    ) -> list[RelatedNote]:
        seen = {start} | hidden
        found: list[tuple[str, int]] = []
        frontier = [start]
        for hop in range(1, depth + 1):
            reached = step(frontier)
            frontier = []
            for node in list(dict.fromkeys(n for f in reached.values() for n in f)):
                if node not in seen:
                    seen.add(node)
                    frontier.append(node)
                    found.append((node, hop))
            if not frontier:
                break
        return self._notes(found)

    def _edge_walk(self, start: str, depth: int, hidden: AbstractSet[str]) -> list[EdgeStep]:
        now = self._clock()
        seen = {start} | hidden
        steps: list[tuple[str, int, Edge, Literal["outgoing", "incoming"]]] = []
        frontier = [start]
        for hop in range(1, depth + 1):
            next_frontier: list[str] = []
            for edge in self._edges.touching(frontier, now):
                for here, there, way in (
                    (edge.from_id, edge.to_id, "outgoing"),
                    (edge.to_id, edge.from_id, "incoming"),
                ):
                    if here in frontier and there not in seen:
                        seen.add(there)
                        next_frontier.append(there)
                        steps.append((there, hop, edge, way))  # type: ignore[arg-type]
            frontier = next_frontier
            if not frontier:
                break
        described = self._graph.describe([s[0] for s in steps])
        return [
            EdgeStep(RelatedNote(n, *described[n], hop), edge, way)
            for n, hop, edge, way in steps
            if n in described
        ]

    def _notes(self, found: list[tuple[str, int]]) -> list[RelatedNote]:
        described = self._graph.describe([n for n, _ in found])
        return [RelatedNote(n, *described[n], hop) for n, hop in found if n in described]

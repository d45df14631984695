"""Concept nodes (LCMA-DESIGN 5.8, 2.1 J): stable clusters of notes agents keep citing
together become ``note_type: concept`` notes, real Markdown files under the concepts folder
that link every member with ``[[wiki-links]]``.

Lithos writes them as an agent (``lithos-concepts``) through the knowledge service and never
rewrites anyone else's file: a concept whose file a person has edited (or deleted) since
Lithos wrote it keeps the person's version, and only its membership is tracked. Formation is
deterministic and idempotent: the same coactivation graph gives the same clusters, a cluster
already standing for a concept (same members, or overlapping by ``overlap``) updates it
instead of forming a second one, and each new concept is claimed in ``stats.db`` before its
file is written, so a crash in between is adopted, not duplicated.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from lithos.domain.memory import (
    CONCEPT_ACTOR,
    Cluster,
    Concept,
    ConceptRules,
    concept_body,
    concept_title,
    detect_clusters,
    matching_concept,
)
from lithos.domain.metadata import MetadataChange
from lithos.domain.notes import version_of
from lithos.domain.timestamps import format_timestamp, utc_now
from lithos.errors import DocNotFound, VersionConflict
from lithos.services.graph import LinkGraph
from lithos.services.knowledge import KnowledgeService, WriteRequest
from lithos.store.catalog import Catalog, CatalogEntry
from lithos.store.memory import ConceptClaim, MemoryStore

log = logging.getLogger("lithos.memory")
MAX_PAIRS = 20_000  # strongest coactivation pairs read per formation


@dataclass(frozen=True)
class ConceptReport:
    formed: tuple[str, ...] = ()  # concept notes created now
    updated: tuple[str, ...] = ()  # concept notes rewritten with new members
    tracked: tuple[str, ...] = ()  # members changed, the file left as a person left it


class ConceptService:
    def __init__(
        self,
        memory: MemoryStore,
        knowledge: KnowledgeService,
        catalog: Catalog,
        graph: LinkGraph,
        rules: ConceptRules,
        folder: str = "concepts",
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.memory = memory
        self.knowledge = knowledge
        self.catalog = catalog
        self.graph = graph
        self.rules = rules
        self.folder = folder
        self.clock = clock

    async def form(self) -> ConceptReport:
        """Form or update a concept for every stable cluster of the coactivation graph."""
        pairs = await asyncio.to_thread(
            self.memory.coactivation, self.rules.min_coactivation, MAX_PAIRS
        )
        ids = sorted({p.a for p in pairs} | {p.b for p in pairs})
        entries = await asyncio.to_thread(self.catalog.get_many, ids)
        spaces = {i: e.namespace for i, e in entries.items() if _may_join(e)}
        clusters = detect_clusters(pairs, spaces, self.rules)
        concepts = await asyncio.to_thread(self.memory.concepts)
        formed, updated, tracked = [], [], []
        taken: set[str] = set()
        for cluster in clusters:
            free = [c for c in concepts if c.cluster_key not in taken]
            existing = matching_concept(cluster, free, self.rules)
            if existing is None:
                formed.append(await self._create(cluster, entries))
                continue
            taken.add(existing.cluster_key)
            if set(existing.members) == set(cluster.members):
                continue
            if await self._rewrite(existing, cluster, entries):
                updated.append(existing.concept_id)
            else:
                tracked.append(existing.concept_id)
        if formed or updated or tracked:
            log.info(
                "concepts: %d formed, %d updated, %d tracked",
                len(formed),
                len(updated),
                len(tracked),
            )
        return ConceptReport(tuple(formed), tuple(updated), tuple(tracked))

    async def _create(self, cluster: Cluster, entries: dict[str, CatalogEntry]) -> str:
        key = cluster.key
        now = format_timestamp(self.clock())
        title = concept_title([entries[m].title for m in cluster.members], key)
        claim = ConceptClaim(key, cluster.namespace, title, cluster.members)
        if not await asyncio.to_thread(self.memory.claim_concept, claim, now):
            # Claimed by a run that stopped before recording its note: adopt that note.
            title = (await asyncio.to_thread(self.memory.concept_titles)).get(key, title)
            [orphan] = await asyncio.to_thread(self.graph.resolve, [_alias(key)])
            if orphan is not None:
                await self._record(key, orphan, cluster.members)
                return orphan
        written = await self.knowledge.write(
            WriteRequest(
                agent=CONCEPT_ACTOR,
                title=title,
                content=self._body(cluster, entries),
                path=self.folder,
                tags=["concept"],
                aliases=[_alias(key)],
                metadata=MetadataChange(
                    note_type="concept",
                    namespace=cluster.namespace,
                    derived_from_ids=list(cluster.members),
                ),
            )
        )
        concept_id = str(written["id"])
        await self._record(key, concept_id, cluster.members)
        return concept_id

    async def _rewrite(
        self, concept: Concept, cluster: Cluster, entries: dict[str, CatalogEntry]
    ) -> bool:
        """Rewrite the concept's note for its new members if the file is still the version
        Lithos wrote; otherwise only track the members. True when the file was rewritten."""
        entry = await asyncio.to_thread(self.catalog.get, concept.concept_id)
        untouched = entry is not None and entry.content_hash == concept.written_hash
        if untouched and concept.written_hash is not None:
            request = WriteRequest(
                agent=CONCEPT_ACTOR,
                id=concept.concept_id,
                content=self._body(cluster, entries),
                expected_version=version_of(concept.written_hash),
                metadata=MetadataChange(derived_from_ids=list(cluster.members)),
            )
            try:
                await self.knowledge.write(request)
            except (VersionConflict, DocNotFound):
                untouched = False  # a person got there first: their version stands
        if untouched:
            await self._record(concept.cluster_key, concept.concept_id, cluster.members)
            return True
        await asyncio.to_thread(
            self.memory.concept_written,
            concept.cluster_key,
            concept.concept_id,
            cluster.members,
            concept.written_hash or "",
            format_timestamp(self.clock()),
        )
        return False

    async def _record(self, key: str, concept_id: str, members: tuple[str, ...]) -> None:
        entry = await asyncio.to_thread(self.catalog.get, concept_id)
        written = entry.content_hash if entry is not None else ""
        now = format_timestamp(self.clock())
        await asyncio.to_thread(self.memory.concept_written, key, concept_id, members, written, now)

    def _body(self, cluster: Cluster, entries: dict[str, CatalogEntry]) -> str:
        members = [(entries[m].path, entries[m].title) for m in cluster.members]
        return concept_body(members, cluster.strength)


def _may_join(entry: CatalogEntry) -> bool:
    """Only shared, active, non-concept notes join a concept: a concept note is shared, so
    it must not name a private or task-scoped note."""
    return (
        entry.note_type != "concept" and entry.status == "active" and entry.access_scope == "shared"
    )


def _alias(key: str) -> str:
    return f"concept-{key}"

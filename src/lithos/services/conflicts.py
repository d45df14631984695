"""Contradictions as a workflow: conflicts are opened by ``contradicts`` edges, listed, and
closed only by an explicit decision; likely contradictions are flagged for review.

Resolution is never silent: :meth:`ConflictService.resolve` is the only way a conflict leaves
``unreviewed``, and the detector only ever records ``unreviewed`` candidates.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime

from lithos.domain.contradictions import contradiction_signal
from lithos.domain.edges import (
    DEFAULT_NAMESPACE,
    Conflict,
    ConflictFilter,
    ConflictResolution,
    EdgeUpsert,
)
from lithos.domain.frontmatter import FrontmatterError
from lithos.domain.notes import parse_note, require_valid_id
from lithos.domain.scope import Scope
from lithos.errors import DocNotFound, EdgeNotFound, InvalidInput
from lithos.services.knowledge import KnowledgeService, WriteRequest
from lithos.store.catalog import Catalog
from lithos.store.edges import EdgeStore
from lithos.store.markdown import KnowledgeFiles

log = logging.getLogger("lithos.conflicts")

DETECTOR = "contradiction-detector"
CANDIDATE_WEIGHT = 0.6
MAX_DETECT = 50  # notes compared at once: 1,225 pairs


class ConflictService:
    def __init__(
        self,
        store: EdgeStore,
        knowledge: KnowledgeService,
        catalog: Catalog,
        files: KnowledgeFiles,
        clock: Callable[[], datetime],
    ) -> None:
        self._store = store
        self._knowledge = knowledge
        self._catalog = catalog
        self._files = files
        self._clock = clock

    async def resolve(self, decision: ConflictResolution) -> Conflict:
        """Close (or re-decide) a conflict; its history keeps every decision.

        ``superseded`` needs ``winner_id``, one of the two notes: ``supersedes: <other>`` is
        then written into the winner's frontmatter (as ``resolver``) before the state changes.
        ``merged`` may name a third note (the one both became) as ``winner_id``; it must exist.
        Raises EdgeNotFound, InvalidInput (not a contradiction, bad winner); DocNotFound when
        the winner's note is gone. Nothing changes when it raises.
        """
        edge = await asyncio.to_thread(self._store.get, decision.edge_id, self._clock())
        if edge is None:
            raise EdgeNotFound(f"no edge with id {decision.edge_id}")
        if edge.type != "contradicts":
            raise InvalidInput(f"edge {edge.edge_id} is a {edge.type} edge, not a contradiction")
        if not decision.resolver.strip():
            raise InvalidInput("resolver must not be empty")
        winner = None if decision.winner_id is None else require_valid_id(decision.winner_id)
        if decision.resolution == "superseded" and winner is None:
            raise InvalidInput("a superseded conflict needs winner_id: the note that stands")
        endpoints = (edge.from_id, edge.to_id)
        if winner is not None and decision.resolution != "merged" and winner not in endpoints:
            raise InvalidInput(f"winner_id must be {edge.from_id} or {edge.to_id}")
        third = None if winner is None or winner in endpoints else winner  # merged into it
        if third is not None and await asyncio.to_thread(self._catalog.get, third) is None:
            raise DocNotFound(f"no note with id {third}: merged into a note that exists")
        if decision.resolution == "superseded":
            assert winner is not None
            request = WriteRequest(
                agent=decision.resolver, id=winner, supersedes=edge.other(winner)
            )
            await self._knowledge.write(request)
        resolved = await asyncio.to_thread(
            self._store.resolve,
            ConflictResolution(
                edge.edge_id, decision.resolution, decision.resolver, winner, decision.note
            ),
            self._clock(),
        )
        if resolved is None:  # the edge went away with its note in the meantime
            raise EdgeNotFound(f"no edge with id {decision.edge_id}")
        return resolved

    async def find(self, query: ConflictFilter, scope: Scope | None = None) -> list[Conflict]:
        """Conflicts matching every given filter, most recently changed first, leaving out
        those of notes ``scope`` may not see (default: an anonymous caller)."""
        if query.note_id is not None:
            query = replace(query, note_id=require_valid_id(query.note_id))
        hidden = await asyncio.to_thread(self._catalog.hidden_ids, scope or Scope())
        query = replace(query, hidden=frozenset(hidden))
        return await asyncio.to_thread(self._store.conflicts, query, self._clock())

    def conflicts_among(
        self, note_ids: Sequence[str], namespaces: Sequence[str] | None = None
    ) -> list[Conflict]:
        """Unreviewed conflicts whose two notes are both in ``note_ids`` (blocking: call from a
        worker thread)."""
        edges = self._store.touching(
            list(dict.fromkeys(note_ids)), self._clock(), namespaces, ["contradicts"], True
        )
        open_edges = [e for e in edges if e.conflict_state == "unreviewed"]
        history = self._store.history([e.edge_id for e in open_edges])
        return [Conflict(e, history.get(e.edge_id, ())) for e in open_edges]

    def detect_among(
        self, note_ids: Sequence[str], namespace: str = DEFAULT_NAMESPACE
    ) -> list[Conflict]:
        """:meth:`detect` over notes by id, reading their titles and content from the files;
        notes that are gone or unreadable are skipped (blocking: call from a worker thread)."""
        texts: dict[str, str] = {}
        for note_id in list(dict.fromkeys(note_ids))[:MAX_DETECT]:
            entry = self._catalog.get(note_id)
            if entry is None:
                continue
            try:
                note = parse_note(self._files.read_text(entry.path), entry.path)
            except (OSError, UnicodeDecodeError, FrontmatterError) as exc:
                log.warning("cannot compare %s for contradictions: %s", entry.path, exc)
                continue
            texts[note_id] = f"{note.title}\n{note.content}"
        return self.detect(texts, namespace)

    def detect(self, texts: dict[str, str], namespace: str = DEFAULT_NAMESPACE) -> list[Conflict]:
        """Flag likely contradictions among notes given as ``{id: title and content}``:
        pairs that share most of their words yet one negates or gives other numbers. Each is
        recorded as an ``inferred`` contradicts edge (state ``unreviewed``, the reasons as
        evidence); pairs already joined by a contradiction are left as they are. Returns the
        conflicts opened (blocking: call from a worker thread)."""
        ids = sorted(texts)[:MAX_DETECT]
        known = {
            frozenset((e.from_id, e.to_id))
            for e in self._store.touching(ids, self._clock(), None, ["contradicts"], True)
        }
        requests = []
        for a, b in itertools.combinations(ids, 2):
            if frozenset((a, b)) in known:
                continue
            signal = contradiction_signal(texts[a], texts[b])
            if signal is None:
                continue
            evidence = (f"word overlap {signal.overlap}", *signal.reasons)
            requests.append(
                EdgeUpsert(
                    a, b, "contradicts", namespace, "inferred", DETECTOR, CANDIDATE_WEIGHT, evidence
                )
            )
        if not requests:
            return []
        edges = self._store.upsert(requests, self._clock())
        log.info("flagged %d likely contradictions for review", len(edges))
        history = self._store.history([e.edge_id for e in edges])
        return [Conflict(e, history.get(e.edge_id, ())) for e in edges]

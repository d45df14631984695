"""Typed edges people write in frontmatter, kept in step with their files.

A note whose frontmatter says ``supports: ["[[Other note]]"]`` (any edge type's name works as
a key) gets an edge ``supports`` to the note the target resolves to, with provenance ``human``,
the note's namespace and its author as actor. The file is only ever read, never rewritten.

:class:`FrontmatterEdges` is an index listener, told of every note the indexer indexes or
forgets (after the link graph, so targets resolve against the current notes):

- ``noted``: record what each note declares and the file version read; re-project the notes
  whose declarations changed and the notes whose declared targets could name one of these
  notes (a target that was broken or ambiguous may resolve now); bring back the edges of a
  note that returns. Told during a whole-base check (``reset_follows``), it only records:
  the ``reset`` that ends the check projects every source once.
- ``forgotten``: mark every edge of the note removed (hidden, purged after a grace period).
- ``reset`` (after a whole-base reconcile): read the frontmatter of every note whose file
  changed since it was last read (every note, the first time), drop what deleted notes
  declared, and re-project every declaration.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime

from lithos.domain.edges import DeclaredEdges, EdgeUpsert, declared_in
from lithos.domain.frontmatter import FrontmatterError
from lithos.domain.links import target_keys
from lithos.domain.notes import Note, parse_note
from lithos.services.graph import LinkGraph
from lithos.store.catalog import Catalog, CatalogRecord
from lithos.store.edges import EdgeStore
from lithos.store.markdown import KnowledgeFiles

log = logging.getLogger("lithos.edges")


class FrontmatterEdges:
    def __init__(
        self,
        store: EdgeStore,
        graph: LinkGraph,
        catalog: Catalog,
        files: KnowledgeFiles,
        clock: Callable[[], datetime],
        human_weight: float,
    ) -> None:
        self._store = store
        self._graph = graph
        self._catalog = catalog
        self._files = files
        self._clock = clock
        self._weight = human_weight
        # Sources whose declarations a whole-base check changed before its reset projects.
        self._unprojected: set[str] = set()

    # -- IndexListener ----------------------------------------------------------------------

    def noted(self, records: Sequence[CatalogRecord], *, reset_follows: bool = False) -> None:
        # Each file version is recorded as read, declarations or not: the reset after the next
        # whole-base check then reads only files changed behind the indexer's back.
        declared = [_declared(r.note, r.content_hash) for r in records]
        changed = self._store.set_declarations(declared, record_all=True)
        if reset_follows:
            self._unprojected.update(changed)  # a source declaring nothing now still needs it
            return
        keys: set[str] = set()
        for r in records:
            keys |= target_keys(r.note.id, r.note.path, r.note.aliases, r.note.title)
        self._project({*changed, *self._store.sources_declaring(keys)})
        ids = [r.note.id for r in records]
        self._store.restore(ids, lambda n: n in ids or self._catalog.get(n) is not None)

    def forgotten(self, note_id: str) -> None:
        self._store.remove_note(note_id, self._clock())

    def reset(self) -> None:
        live = {entry.id: entry for entry in self._catalog.fingerprints()}
        known = self._store.source_hashes()
        for gone in known.keys() - live.keys():
            self._store.remove_note(gone, self._clock())
        stale = [e for e in live.values() if known.get(e.id) != e.content_hash]
        declared = [d for d in (self._read(e.id, e.path, e.content_hash) for e in stale) if d]
        changed = self._store.set_declarations(declared, record_all=True)
        unprojected, self._unprojected = self._unprojected, set()
        self._project({*changed, *unprojected, *self._store.declarations()} & live.keys())
        self._store.restore(None, live.__contains__)

    # -- projection -----------------------------------------------------------------------

    def _project(self, source_ids: set[str]) -> None:
        """Make each source's human edges exactly what its declarations resolve to now."""
        if not source_ids:
            return
        declared = self._store.declarations(sorted(source_ids))
        now = self._clock()
        for source_id in sorted(source_ids):
            found = declared.get(source_id)
            desired: dict[tuple[str, str, str, str], EdgeUpsert] = {}
            if found is not None:
                targets = self._graph.resolve([d.target for d in found.items])
                for item, target_id in zip(found.items, targets, strict=True):
                    if target_id is None or target_id == source_id:
                        continue
                    edge = EdgeUpsert(
                        from_id=source_id,
                        to_id=target_id,
                        type=item.type,
                        namespace=found.namespace,
                        provenance="human",
                        actor=found.actor,
                        weight=self._weight,
                        evidence=(f"frontmatter {item.type}: {item.target}",),
                    )
                    desired.setdefault(edge.key, edge)
            added, removed = self._store.sync_declared(source_id, list(desired.values()), now)
            if added or removed:
                log.debug("frontmatter edges of %s: +%d -%d", source_id, added, removed)

    def _read(self, note_id: str, path: str, content_hash: str) -> DeclaredEdges | None:
        try:
            note = parse_note(self._files.read_text(path), path)
        except (OSError, UnicodeDecodeError, FrontmatterError) as exc:
            log.warning("cannot read the frontmatter edges of %s: %s", path, exc)
            return None
        # A person's file has no id in it; the catalog holds the one it was given.
        return _declared(note.with_changes(id=note_id), content_hash)


def _declared(note: Note, content_hash: str) -> DeclaredEdges:
    return DeclaredEdges(
        source_id=note.id,
        content_hash=content_hash,
        namespace=note.namespace,
        actor=note.author,
        items=declared_in(note.extra),
    )

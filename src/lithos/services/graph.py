"""The wiki-link graph, derived from the catalog and kept in step with every indexed change.

It is built from the catalog on first use, then the :class:`~lithos.services.indexing.Indexer`
reports each note it indexes or forgets (:meth:`LinkGraph.noted`, :meth:`LinkGraph.forgotten`),
so reading a note's links after a write costs a few dictionary look-ups, not a rebuild. Edges
are resolved when asked for, because resolution depends on every note at once (a new file can
make ``[[name]]`` ambiguous): outgoing links resolve the note's own targets, incoming links
resolve only the targets that could name the note.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Literal

from lithos.domain.links import Groups, LinkResolver, Resolution, normalise_target
from lithos.domain.scope import Scope
from lithos.errors import DocNotFound
from lithos.store.catalog import Catalog, CatalogRecord
from lithos.store.fulltext import id_key

Direction = Literal["outgoing", "incoming", "both"]


@dataclass
class _Links:
    resolver: LinkResolver = field(default_factory=LinkResolver)
    titles: dict[str, str] = field(default_factory=dict)
    paths: dict[str, str] = field(default_factory=dict)
    note_types: dict[str, str] = field(default_factory=dict)
    targets: dict[str, tuple[str, ...]] = field(default_factory=dict)
    sources: Groups = field(default_factory=Groups)  # target key -> linking notes
    by_title: Groups = field(default_factory=Groups)  # lower-case title -> notes
    by_key: dict[int, str] = field(default_factory=dict)  # id_key(note id) -> note id

    def put(
        self,
        note_id: str,
        path: str,
        title: str,
        aliases: Iterable[str],
        targets: Iterable[str],
        note_type: str,
    ) -> None:
        self.drop(note_id)
        self.resolver.add(note_id, path, aliases, title)
        self.titles[note_id] = title
        self.by_title.add(title.strip().lower(), note_id)
        self.paths[note_id] = path
        self.note_types[note_id] = note_type
        self.by_key[id_key(note_id)] = note_id
        self.targets[note_id] = tuple(targets)
        for target in self.targets[note_id]:
            self.sources.add(normalise_target(target), note_id)

    def drop(self, note_id: str) -> None:
        self.resolver.remove(note_id)
        title = self.titles.pop(note_id, None)
        if title is not None:
            self.by_title.discard(title.strip().lower(), note_id)
        self.note_types.pop(note_id, None)
        if self.paths.pop(note_id, None) is not None:
            key = id_key(note_id)
            if self.by_key.get(key) == note_id:
                del self.by_key[key]
        for target in self.targets.pop(note_id, ()):
            self.sources.discard(normalise_target(target), note_id)

    def resolutions(self, note_id: str) -> list[Resolution]:
        return [self.resolver.resolve(t) for t in self.targets.get(note_id, ())]

    def outgoing(self, note_id: str) -> list[str]:
        found: dict[str, None] = {}
        for resolution in self.resolutions(note_id):
            if resolution.note_id and resolution.note_id != note_id:
                found.setdefault(resolution.note_id, None)
        return list(found)

    def incoming(self, note_id: str) -> list[str]:
        candidates: set[str] = set()
        for key in self.resolver.keys_of(note_id):
            candidates.update(self.sources.get(key))
        candidates.discard(note_id)
        return sorted(c for c in candidates if note_id in self.outgoing(c))


class LinkGraph:
    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self._lock = threading.Lock()
        self._links: _Links | None = None  # None: (re)build from the catalog on next use

    # -- kept in step by the indexer ------------------------------------------------------

    def noted(self, records: Sequence[CatalogRecord], *, reset_follows: bool = False) -> None:
        """Notes the catalog now holds as given (call after writing the catalog)."""
        with self._lock:
            if self._links is not None:
                for r in records:
                    note = r.note
                    self._links.put(
                        note.id, note.path, note.title, note.aliases, r.links, note.note_type
                    )

    def forgotten(self, note_id: str) -> None:
        with self._lock:
            if self._links is not None:
                self._links.drop(note_id)

    def reset(self) -> None:
        """Many notes changed at once (a reconcile): rebuild from the catalog on next use."""
        with self._lock:
            self._links = None

    # -- queries --------------------------------------------------------------------------

    def outgoing_links(self, note_id: str) -> list[dict[str, Any]]:
        """Every link in a note, in order, with how it resolved."""
        return self._read(lambda links: _outgoing(links, note_id))

    def outgoing_links_held(self, note_id: str) -> list[dict[str, Any]] | None:
        """:meth:`outgoing_links` when it is answered at once (the graph is built and no
        change holds it), else None: for a caller that must not wait (the event loop)."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            return None if self._links is None else _outgoing(self._links, note_id)
        finally:
            self._lock.release()

    def resolve(self, targets: Sequence[str]) -> list[str | None]:
        """The note each target resolves to now (None when broken or ambiguous)."""
        return self._read(lambda links: [links.resolver.resolve(t).note_id for t in targets])

    def note_ids(self) -> set[str]:
        """The id of every note the graph knows."""
        return self._read(lambda links: set(links.titles))

    def linked(self, note_ids: Sequence[str]) -> dict[str, set[str]]:
        """For each note, the notes among ``note_ids`` it links to or is linked from."""
        wanted = set(note_ids)

        def collect(links: _Links) -> dict[str, set[str]]:
            found: dict[str, set[str]] = {n: set() for n in wanted}
            for note_id in wanted:
                for target in links.outgoing(note_id) if note_id in links.titles else ():
                    if target in wanted:
                        found[note_id].add(target)
                        found[target].add(note_id)
            return found

        return self._read(collect)

    def outgoing_ids(self, note_ids: Sequence[str]) -> dict[str, list[str]]:
        """The notes each of ``note_ids`` links to (resolved links only)."""
        return self._read(lambda links: {n: links.outgoing(n) for n in note_ids})

    def incoming_ids(self, note_ids: Sequence[str]) -> dict[str, list[str]]:
        """The notes linking to each of ``note_ids``."""
        return self._read(lambda links: {n: links.incoming(n) for n in note_ids})

    def describe(self, note_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """(title, path) of each known note among ``note_ids``."""
        return self._read(
            lambda links: {
                n: (links.titles[n], links.paths[n]) for n in note_ids if n in links.titles
            }
        )

    def links(
        self,
        note_id: str,
        direction: Direction = "both",
        depth: int = 1,
        scope: Scope | None = None,
    ) -> dict[str, Any]:
        """Notes reachable within ``depth`` hops (1-3), as flat de-duplicated lists.

        Only notes ``scope`` may see (default: an anonymous caller) are listed or walked
        through, so a hidden note neither appears nor reveals what lies beyond it.
        """
        hidden = self._catalog.hidden_ids(scope or Scope())

        def walk(links: _Links) -> dict[str, Any]:
            if note_id not in links.titles:
                raise DocNotFound(f"no note with id {note_id}")
            result: dict[str, Any] = {"id": note_id}
            if direction in ("outgoing", "both"):
                result["outgoing"] = _walk(links, links.outgoing, note_id, depth, hidden)
            if direction in ("incoming", "both"):
                result["incoming"] = _walk(links, links.incoming, note_id, depth, hidden)
            return result

        return self._read(walk)

    def neighbours(self, note_id: str) -> list[tuple[str, Literal["outgoing", "incoming"]]]:
        """Notes one wiki-link away: ``(id, "outgoing")`` for those the note links to,
        ``(id, "incoming")`` for those linking to it. Empty for an unknown note."""

        def read(links: _Links) -> list[tuple[str, Literal["outgoing", "incoming"]]]:
            if note_id not in links.titles:
                return []
            out: list[tuple[str, Literal["outgoing", "incoming"]]] = [
                (n, "outgoing") for n in links.outgoing(note_id)
            ]
            seen = {n for n, _ in out}
            out += [(n, "incoming") for n in links.incoming(note_id) if n not in seen]
            return out

        result: list[tuple[str, Literal["outgoing", "incoming"]]] = self._read(read)
        return result

    def titles(self, note_ids: Iterable[str]) -> dict[str, str]:
        """Titles of the given notes that exist."""
        wanted = list(note_ids)
        return self._read(lambda links: {n: links.titles[n] for n in wanted if n in links.titles})

    def note_types(self, note_ids: Iterable[str]) -> dict[str, str]:
        """``id -> note_type`` of the given notes that exist."""
        wanted = list(note_ids)
        return self._read(
            lambda links: {n: links.note_types[n] for n in wanted if n in links.note_types}
        )

    def keyed(self, keys: Iterable[int]) -> dict[int, tuple[str, str]]:
        """``(id, title)`` of the known note behind each of ``keys`` (a note id's
        :func:`~lithos.store.fulltext.id_key`, as a full-text ranking names its documents);
        a key no known note has is left out."""
        wanted = list(keys)

        def read(links: _Links) -> dict[int, tuple[str, str]]:
            found: dict[int, tuple[str, str]] = {}
            for key in wanted:
                note_id = links.by_key.get(key)
                if note_id is not None:
                    found[key] = (note_id, links.titles[note_id])
            return found

        result: dict[int, tuple[str, str]] = self._read(read)
        return result

    def exact_matches(self, text: str) -> list[tuple[str, str]]:
        """``(id, how)`` of notes that ``text`` names exactly: by title (case-insensitive),
        path or file name, id, or alias; ``how`` is ``title``, ``path``, ``id`` or ``alias``."""

        def read(links: _Links) -> list[tuple[str, str]]:
            found: dict[str, str] = {}
            for note in sorted(links.by_title.get(text.strip().lower())):
                found.setdefault(note, "title")
            key = normalise_target(text)
            resolver = links.resolver
            if key in resolver.by_path:
                found.setdefault(resolver.by_path[key], "path")
            for note in sorted(resolver.by_name.get(key)) if "/" not in key else ():
                found.setdefault(note, "path")
            if resolver.knows(key):
                found.setdefault(key, "id")
            for note in sorted(resolver.by_alias.get(key)):
                found.setdefault(note, "alias")
            return list(found.items())

        result: list[tuple[str, str]] = self._read(read)
        return result

    def _read(self, query: Callable[[_Links], Any]) -> Any:
        with self._lock:
            if self._links is None:
                self._links = self._build()
            return query(self._links)

    def _build(self) -> _Links:
        links = _Links()
        targets = self._catalog.links()
        for note_id, path, title, aliases, note_type in self._catalog.link_rows():
            links.put(note_id, path, title, aliases, targets.get(note_id, ()), note_type)
        return links


def _walk(
    links: _Links,
    neighbours: Callable[[str], list[str]],
    start: str,
    depth: int,
    hidden: AbstractSet[str],
) -> list[dict[str, str]]:
    seen = {start} | hidden
    order: list[dict[str, str]] = []
    frontier = deque([(start, 0)])
    while frontier:
        node, hops = frontier.popleft()
        if hops == depth:
            continue
        for neighbour in neighbours(node):
            if neighbour in seen:
                continue
            seen.add(neighbour)
            order.append(
                {"id": neighbour, "title": links.titles[neighbour], "path": links.paths[neighbour]}
            )
            frontier.append((neighbour, hops + 1))
    return order


def _outgoing(links: _Links, note_id: str) -> list[dict[str, Any]]:
    return [
        {
            "target": r.target,
            "id": r.note_id,
            "title": links.titles.get(r.note_id) if r.note_id else None,
            "status": r.status,
        }
        for r in links.resolutions(note_id)
    ]

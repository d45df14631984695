"""The analogy scout (LCMA-DESIGN 2.1 D): notes built like the best candidates, whatever
their topic.

:class:`FrameIndex` keeps the frame (:mod:`lithos.domain.frames`) of every note that has one,
keyed by the note's content hash: it is told of every note the indexer indexes or forgets,
parses a note again only when its content changed, and after a whole-base reconcile reads the
notes it has not seen in their current version, once, on first use. Until that first use (a
new process, ``lithos import``, writes before the first retrieval) a note indexed is not
parsed at all: the pass on first use reads it then. Nothing is parsed per retrieval.

:class:`AnalogyScout` is a Phase B scout: for each seed with a frame it finds notes sharing
content words in the same slots (an inverted index over ``slot:word``), and scores them by
frame structure (which slots both fill), slot content (the words of their constraints,
actions, outcome and lessons, not their problem's subject), tag pattern and graph motif (the
kinds of typed edges each takes part in), never by closeness of topic. Its reasons say which
slots matched.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lithos.domain.frames import SLOTS, Frame, Slot, extract_frame
from lithos.domain.notes import parse_note
from lithos.domain.retrieval import ScoutHit
from lithos.retrieval.context import ScoutContext
from lithos.retrieval.expansion import Seed, strongest
from lithos.services.edges import EdgeService
from lithos.store.catalog import Catalog, CatalogRecord
from lithos.store.markdown import KnowledgeFiles

log = logging.getLogger("lithos.retrieval.analogy")

ANALOGY = "scout_analogy"
# Slots whose words say how a story went, not what it was about.
_TELLING: tuple[Slot, ...] = ("constraints", "actions", "outcome", "lessons")
_COMMON = 1000  # a slot word shared by more notes than this says nothing


@dataclass(frozen=True)
class AnalogyWeights:
    structure: float = 0.35
    content: float = 0.35
    tags: float = 0.15
    motif: float = 0.15


class FrameIndex:
    """Frames of the notes that have at least ``min_slots`` slots, in memory. Thread-safe."""

    def __init__(self, catalog: Catalog, files: KnowledgeFiles, min_slots: int = 2) -> None:
        self.catalog, self.files, self.min_slots = catalog, files, min_slots
        self._lock = threading.Lock()
        self._loading = threading.Lock()
        self._parsed: dict[str, str] = {}  # note id -> content hash last parsed
        self._frames: dict[str, Frame] = {}
        self._postings: dict[str, set[str]] = {}
        self._complete = False
        self._passing = False  # a pass over the files (_load) has read the catalog
        self._resets = 0  # a reset during a pass over the files means another pass is due
        self.parses = 0  # notes parsed so far: lets tests see nothing is parsed twice

    # -- index listener ----------------------------------------------------------------------

    def noted(self, records: Sequence[CatalogRecord], *, reset_follows: bool = False) -> None:
        with self._lock:
            if not (self._complete or self._passing):
                # The catalog holds these versions already: the pass on first use parses them.
                return
            for record in records:
                self._put(record.note.id, record.content_hash, record.note.content)

    def forgotten(self, note_id: str) -> None:
        with self._lock:
            self._drop(note_id)
            self._parsed.pop(note_id, None)

    def reset(self) -> None:
        with self._lock:
            self._complete = False
            self._resets += 1

    # -- reads ---------------------------------------------------------------------------------

    def frames(self, note_ids: Iterable[str]) -> dict[str, Frame]:
        self._ensure_complete()
        with self._lock:
            return {n: self._frames[n] for n in note_ids if n in self._frames}

    def sharing(self, frame: Frame) -> dict[str, int]:
        """Framed notes sharing a telling slot word with ``frame``: id -> how many."""
        self._ensure_complete()
        found: dict[str, int] = {}
        with self._lock:
            for key in _keys(frame):
                notes = self._postings.get(key, ())
                if len(notes) > _COMMON:
                    continue
                for note in notes:
                    found[note] = found.get(note, 0) + 1
        return found

    @property
    def size(self) -> int:
        self._ensure_complete()
        with self._lock:
            return len(self._frames)

    # -- internals ------------------------------------------------------------------------------

    def _ensure_complete(self) -> None:
        if self._complete:
            return
        with self._loading:  # one pass over the files at a time; later callers find it done
            if not self._complete:
                self._load()

    def _load(self) -> None:
        with self._lock:  # from here on, notes indexed are parsed when told (see noted)
            self._passing = True
        try:
            self._pass()
        finally:
            with self._lock:
                self._passing = False

    def _pass(self) -> None:
        entries = self.catalog.entries()
        with self._lock:
            resets = self._resets
            stale = [e for e in entries if self._parsed.get(e.id) != e.content_hash]
            live = {e.id for e in entries}
            for gone in [n for n in self._parsed if n not in live]:
                self._drop(gone)
                del self._parsed[gone]
        for entry in stale:  # read outside the lock: writes go on meanwhile
            try:
                note = parse_note(self.files.read_text(entry.path), entry.path)
            except (OSError, ValueError) as exc:
                log.debug("no frame for %s: %r", entry.path, exc)
                continue
            with self._lock:
                if self._parsed.get(entry.id) != entry.content_hash:
                    self._put(entry.id, entry.content_hash, note.content)
        with self._lock:
            self._complete = self._resets == resets

    def _put(self, note_id: str, content_hash: str, body: str) -> None:
        if self._parsed.get(note_id) == content_hash:
            return
        self._drop(note_id)
        self._parsed[note_id] = content_hash
        self.parses += 1
        frame = extract_frame(body)
        if len(frame.filled) < self.min_slots:
            return
        self._frames[note_id] = frame
        for key in _keys(frame):
            self._postings.setdefault(key, set()).add(note_id)

    def _drop(self, note_id: str) -> None:
        frame = self._frames.pop(note_id, None)
        if frame is None:
            return
        for key in _keys(frame):
            notes = self._postings.get(key)
            if notes is not None:
                notes.discard(note_id)
                if not notes:
                    del self._postings[key]


def _keys(frame: Frame) -> list[str]:
    return [f"{slot}:{word}" for slot in _TELLING for word in frame.slots.get(slot, ())]


def _jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    left, right = set(a), set(b)
    union = left | right
    return len(left & right) / len(union) if union else 0.0


class AnalogyScout:
    name = ANALOGY

    def __init__(
        self,
        frames: FrameIndex,
        catalog: Catalog,
        edges: EdgeService,
        depth: int,
        weights: AnalogyWeights | None = None,
    ) -> None:
        self.frames, self.catalog, self.edges, self.depth = frames, catalog, edges, depth
        self.weights = weights or AnalogyWeights()

    def expand(self, ctx: ScoutContext, seeds: Sequence[Seed]) -> list[ScoutHit]:
        if self.depth <= 0:
            return []
        seed_ids = {s.note_id for s in seeds}
        seed_frames = self.frames.frames(seed_ids)
        if not seed_frames:
            return []
        candidates: dict[str, set[str]] = {}  # candidate -> the seeds it shares words with
        for seed_id, frame in seed_frames.items():
            for note in self.frames.sharing(frame):
                if note not in seed_ids and ctx.eligibility.allows(note):
                    candidates.setdefault(note, set()).add(seed_id)
        if not candidates:
            return []
        found = self.frames.frames(candidates)
        ids = [*seed_frames, *found]
        entries = self.catalog.get_many(ids)
        motifs = self.edges.motifs(ids)
        by_id = {s.note_id: s for s in seeds}
        hits = []
        for note, sharing in candidates.items():
            if note not in found or note not in entries:
                continue
            for seed_id in sharing:
                match = self._match(
                    seed_frames[seed_id],
                    found[note],
                    entries[seed_id].tags if seed_id in entries else (),
                    entries[note].tags,
                    motifs.get(seed_id, frozenset()),
                    motifs.get(note, frozenset()),
                )
                if match is not None:
                    strength, reason = match
                    seed = by_id[seed_id]
                    hits.append(
                        ScoutHit(note, seed.score * strength, f"analogy: {reason} '{seed.title}'")
                    )
        return strongest(hits, self.depth)

    def _match(
        self,
        seed: Frame,
        other: Frame,
        seed_tags: Sequence[str],
        other_tags: Sequence[str],
        seed_motif: frozenset[str],
        other_motif: frozenset[str],
    ) -> tuple[float, str] | None:
        shared = [slot for slot in SLOTS if slot in seed.slots and slot in other.slots]
        if len(shared) < 2:
            return None
        w = self.weights
        structure = len(shared) / len(seed.filled | other.filled)
        telling = [slot for slot in shared if slot in _TELLING]
        overlaps = {slot: seed.slots[slot] & other.slots[slot] for slot in telling}
        content = (
            sum(_jaccard(seed.slots[s], other.slots[s]) for s in telling) / len(telling)
            if telling
            else 0.0
        )
        tags = _jaccard(seed_tags, other_tags)
        motif = _jaccard(seed_motif, other_motif)
        strength = w.structure * structure + w.content * content + w.tags * tags + w.motif * motif
        if strength <= 0:
            return None
        parts = [f"frame slots {', '.join(shared)} match"]
        for slot, common in overlaps.items():
            if common:
                parts.append(f"{slot} share {', '.join(sorted(common)[:3])}")
        if tags:
            parts.append(f"tags {', '.join(sorted(set(seed_tags) & set(other_tags))[:3])}")
        if motif:
            parts.append(f"edges {', '.join(sorted(seed_motif & other_motif)[:3])}")
        return min(1.0, strength), f"{'; '.join(parts)}; built like"

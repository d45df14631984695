"""Keeps every derived index in step with the Markdown files.

The files are the truth. :class:`Indexer` brings the catalog, the full-text index and the
vector index to a file's current content (``index_path``), forgets removed files
(``forget_path``), and on start-up or ``lithos reindex`` verifies every index against the files
by id, path and content hash and repairs only what differs (``reconcile``). Embedding itself
happens later on the :class:`EmbeddingWorker` thread, so indexing never waits for the model.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from lithos.domain.chunks import CHUNKER_VERSION, chunk_text
from lithos.domain.frontmatter import FrontmatterError
from lithos.domain.frontmatter_edit import edit_frontmatter
from lithos.domain.links import parse_links
from lithos.domain.notes import (
    KNOWN_KEYS,
    Note,
    content_hash,
    is_valid_id,
    note_from_parts,
    parse_note,
    split_frontmatter,
)
from lithos.domain.tags import note_tags
from lithos.domain.timestamps import format_timestamp
from lithos.store.catalog import (
    CATALOG_FORMAT,
    Catalog,
    CatalogEntry,
    CatalogRecord,
    Fingerprint,
)
from lithos.store.fulltext import FULLTEXT_FORMAT, FullTextDoc, FullTextIndex
from lithos.store.identities import IdentityMap
from lithos.store.markdown import FileInfo, KnowledgeFiles
from lithos.store.vectors import NoteChunks, VectorStore

log = logging.getLogger("lithos.indexing")

Progress = Callable[[int, int], None]
BATCH = 256


class IndexListener(Protocol):
    """Told of every catalog change, to keep a view of the notes (the link graph, the typed
    edges declared in frontmatter) in step. Listeners are told in the order given."""

    def noted(self, records: Sequence[CatalogRecord], *, reset_follows: bool = False) -> None:
        """These notes are now in the catalog as given. ``reset_follows``: told during a
        whole-base check, whose :meth:`reset` comes before it ends."""
        ...

    def forgotten(self, note_id: str) -> None: ...

    def reset(self) -> None: ...


class DerivedIndex(Protocol):
    """An index made from the files that records how it was made."""

    def derivation(self) -> dict[str, object] | None: ...

    def record_derivation(self, derivation: dict[str, object]) -> None: ...

    def clear(self) -> None: ...


@dataclass
class ReconcileReport:
    """What a reconcile found and did. Counts are of notes."""

    files: int = 0
    unchanged: int = 0
    catalog_fixed: int = 0
    fulltext_fixed: int = 0
    vectors_fixed: int = 0
    removed: int = 0
    ids_assigned: int = 0
    temp_files_removed: int = 0
    rederived: list[str] = field(default_factory=list)  # indexes made again: settings changed
    problems: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class IndexedFile:
    note: Note
    file_hash: str
    info: FileInfo


@dataclass(frozen=True)
class WrittenText:
    """A file's text exactly as its writer has just written it, with its frontmatter already
    split (:func:`split_frontmatter`), so that indexing it neither reads nor parses it again."""

    text: str
    parts: tuple[dict[str, Any], str]


@dataclass(frozen=True)
class _Repair:
    """A note found on disk during reconcile, and which indexes hold a stale copy of it."""

    item: IndexedFile
    catalog: bool = False
    fulltext: bool = False
    vectors: bool = False

    @property
    def needed(self) -> bool:
        return self.catalog or self.fulltext or self.vectors


class Indexer:
    """Applies file state to the derived indexes. Thread-safe; call from worker threads."""

    def __init__(
        self,
        files: KnowledgeFiles,
        catalog: Catalog,
        fulltext: FullTextIndex,
        vectors: VectorStore,
        identities: IdentityMap,
        notify_embedder: Callable[[], None],
        chunk_size: int = 500,
        chunk_max: int = 1000,
        max_file_bytes: int = 2_000_000,
        listeners: Sequence[IndexListener] = (),
        lock: threading.RLock | None = None,
        adopt_files: bool = False,
    ) -> None:
        """``identities`` gives ids to files without one (a person's files), which are left
        untouched unless ``adopt_files`` asks to write the id into them."""
        self.files = files
        self.catalog = catalog
        self.fulltext = fulltext
        self.vectors = vectors
        self._notify = notify_embedder
        self._chunk_size = chunk_size
        self._chunk_max = chunk_max
        self._max_file_bytes = max_file_bytes
        self.lock = lock or threading.RLock()
        self._listeners = tuple(listeners)
        self.identities = identities
        self._adopt_files = adopt_files
        self.applied = 0  # notes (re)indexed: lets tests see that nothing was re-done
        # Paths whose index update failed after their file was written: path -> reason. Also
        # recorded in the catalog; retried by the repair worker, never skipped as unchanged.
        self._deferred: dict[str, str] = {}
        self._deferred_lock = threading.Lock()
        self.on_deferred: Callable[[], None] | None = None
        # Durable marks of writes (see begin_write): writes under way per path, and paths
        # whose writes all finished, whose marks the next begin_write forgets.
        self._writing: Counter[str] = Counter()
        self._finished: set[str] = set()
        # Changes searchable through the full-text overlay whose Tantivy commit is still to
        # come (ticket, paths, marked): the marks of writes stay until it is; a change the
        # commit drops is deferred. Filled only while commit_in_background is set.
        self._awaiting: list[tuple[int, tuple[str, ...], bool]] = []
        self._committer: Callable[[], None] | None = None
        fulltext.on_commit = self._settle_commits

    # -- single notes -------------------------------------------------------------------

    def apply(self, indexed: list[IndexedFile]) -> None:
        """Bring every index to these notes' content; searchable when this returns."""
        self.commit(self.stage(indexed))

    def stage(self, indexed: list[IndexedFile]) -> int:
        """Update the catalog and vectors and queue the full-text change; returns the ticket
        to pass to :meth:`commit`. Call with or without :attr:`lock` held; commit without it,
        so concurrent writers share one full-text commit."""
        with self.lock:
            # The chunks are written on the vector store's thread while this one goes on.
            chunked = self.vectors.start_set_notes([self._note_chunks(item) for item in indexed])
            try:
                tagged = [_tagged(item) for item in indexed]
                records = [self._record(item) for item in tagged]
                self.catalog.upsert(records)
                for listener in self._listeners:
                    listener.noted(records)
                ticket = self.fulltext.stage_upsert([_fulltext_doc(item) for item in tagged])
            except BaseException:
                _wait_after_failure(chunked)
                raise
            chunked()
            self.applied += len(indexed)
        self._notify()
        return ticket

    def commit(self, ticket: int) -> None:
        """Wait until the full-text changes up to ``ticket`` are committed and searchable."""
        self.fulltext.commit_through(ticket)

    # -- writes: a durable mark first, then the file, then the indexes -----------------

    def begin_write(self, paths: Sequence[str]) -> None:
        """Mark, durably and before these files change, that their indexes are about to be
        updated: a kill after the file changed then leaves a mark that start-up re-indexes.
        Call with :attr:`lock` held, and :meth:`commit_written` (or :meth:`end_write`) after.

        Costs one small SQLite transaction on the catalog (WAL, no fsync: it survives a
        killed process, like the catalog itself), which also forgets the marks of writes
        finished since the last one. If even that fails (the catalog is broken, and its
        repair re-checks every file), the paths are deferred instead."""
        with self._deferred_lock:
            self._writing.update(paths)
            finished = [p for p in self._finished if p not in self._writing]
            self._finished.difference_update(finished)
        try:
            self.catalog.mark_pending(paths, finished)
        except Exception as exc:
            with self._deferred_lock:
                self._finished.update(finished)
            self.defer(paths, exc)

    def end_write(self, paths: Sequence[str], indexed: bool) -> None:
        """The update of these paths begun by :meth:`begin_write` is over: searchable
        (``indexed``; its mark is forgotten with the next write) or deferred."""
        with self._deferred_lock:
            self._writing.subtract(paths)
            for path in paths:
                if self._writing[path] <= 0:
                    del self._writing[path]
                    if indexed and path not in self._deferred:
                        self._finished.add(path)

    def forget_finished_marks(self) -> None:
        """Forget the marks of every finished write now (at close) instead of with the next
        write."""
        with self._deferred_lock:
            finished = [p for p in self._finished if p not in self._writing]
            self._finished.difference_update(finished)
        if finished:
            self.catalog.settle(finished)

    # -- writes whose file is already on disk -------------------------------------------

    def stage_written(self, indexed: list[IndexedFile]) -> int | None:
        """:meth:`stage` for files already written: a failure is deferred (recorded and
        retried in the background), never raised. Returns None when deferred."""
        try:
            return self.stage(indexed)
        except Exception as exc:
            self.defer([item.info.path for item in indexed], exc)
            return None

    def stage_forget_written(self, note_id: str, path: str) -> int | None:
        """:meth:`stage_forget` for a file already deleted; a failure is deferred."""
        try:
            return self.stage_forget(note_id)
        except Exception as exc:
            self.defer([path], exc)
            return None

    def commit_in_background(self, notify: Callable[[], None] | None) -> None:
        """Leave the full-text commits of writes to a committer woken by ``notify`` (None:
        each write commits before it returns, as without a running server)."""
        self._committer = notify

    def uncommitted(self) -> int:
        """How many staged full-text changes wait for a commit."""
        return self.fulltext.uncommitted()

    def awaiting_commit(self) -> int:
        """How many acknowledged writes still wait for the commit that ends their marks."""
        with self._deferred_lock:
            return sum(1 for _, _, marked in self._awaiting if marked)

    def commit_staged(self) -> None:
        """Commit every staged full-text change; a failure defers the notes it held (their
        marks stay, the repair worker re-indexes them) and is never raised."""
        try:
            self.fulltext.commit_pending()
        except Exception as exc:
            log.warning("full-text commit failed: %s", getattr(exc, "message", exc))
        self._settle_commits()

    def _settle_commits(self) -> None:
        """End the marks of awaiting writes a commit has covered; defer those it dropped."""
        with self._deferred_lock:
            awaiting = list(self._awaiting)
        states = [(item, self.fulltext.ticket_state(item[0])) for item in awaiting]
        settled = [(item, state) for item, state in states if state != "pending"]
        if not settled:
            return
        with self._deferred_lock:
            # The committer and a writer may settle the same commit at once: whoever takes
            # an item off the list ends its mark, the other leaves it.
            settled = [(item, state) for item, state in settled if item in self._awaiting]
            for item, _ in settled:
                self._awaiting.remove(item)
        for (_, paths, marked), state in settled:
            if state == "discarded":
                self.defer(paths, RuntimeError("the full-text commit holding it failed"))
            if marked:
                self.end_write(paths, indexed=state == "committed")

    def commit_written(self, ticket: int | None, paths: Sequence[str]) -> bool:
        """:meth:`commit` for files already written (after :meth:`begin_write`); True once
        searchable, False when the update is deferred (a failure is recorded and retried,
        never raised). With a committer running (:meth:`commit_in_background`) a staged
        change is searchable at once, and the write's mark ends when the committer commits."""
        if ticket is not None and self._leave_to_committer(ticket, paths, marked=True):
            return True
        indexed = False
        try:
            if ticket is not None:
                self.commit(ticket)
                indexed = True
        except Exception as exc:
            self.defer(paths, exc)
        finally:
            self.end_write(paths, indexed)
        return indexed

    def _leave_to_committer(self, ticket: int, paths: Sequence[str], marked: bool) -> bool:
        """Leave the commit of a staged change, searchable now through the overlay, to the
        committer; False (nothing done) when no committer runs."""
        notify = self._committer
        if notify is None:
            return False
        with self._deferred_lock:
            self._awaiting.append((ticket, tuple(paths), marked))
        notify()
        if self._committer is None:  # stopped meanwhile: nobody else will commit it
            self.commit_staged()
        self._settle_commits()
        return True

    def abandon_write(self, paths: Sequence[str], error: BaseException) -> None:
        """A write begun by :meth:`begin_write` failed part-way: whatever reached the disk is
        indexed by the background retry."""
        if paths:
            self.defer(paths, error)
        self.end_write(paths, indexed=False)

    def defer(self, paths: Sequence[str], error: BaseException) -> None:
        """Record that these files' index update failed, durably where the catalog allows,
        and have it retried until it succeeds."""
        reason = getattr(error, "message", None) or f"{type(error).__name__}: {error}"
        log.warning("index update of %s deferred: %s", ", ".join(paths), reason)
        with self._deferred_lock:
            self._deferred.update(dict.fromkeys(paths, reason))
        try:
            for path in paths:
                self.catalog.defer(path, reason)
        except Exception as exc:  # the catalog itself may be what failed; memory still has it
            log.warning("could not record the deferred update in the catalog: %s", exc)
        if self.on_deferred is not None:
            self.on_deferred()

    def deferred(self) -> dict[str, str]:
        """Paths whose index update is deferred: path -> reason."""
        with self._deferred_lock:
            return dict(self._deferred)

    def retry_deferred(self) -> None:
        """Index every deferred path again; raises if that fails (they stay deferred)."""
        pending = self.deferred()
        if not pending:
            return
        if any(self.files.stat(path) is None for path in pending):
            self.reconcile()  # a deleted note's id may be gone from the catalog: check all
        else:
            self.sync_paths(list(pending))
        self._settle(pending)

    def repair_marked(self) -> int:
        """Index again, in every index, the files the catalog's marks name (writes a kill cut
        short, updates that failed), as the full check would; returns how many. Start-up
        runs this before serving when the full check runs beside it: what a write
        acknowledged is then searchable from the first call. A path that cannot be indexed
        now stays deferred, for the repair worker."""
        marked = self.catalog.deferred()
        if not marked:
            return 0
        with self._deferred_lock:  # re-read even where the catalog already holds the file
            self._deferred.update(marked)
        self.sync_paths(list(marked))
        return len(marked)

    def _settle(self, paths: Iterable[str]) -> None:
        paths = list(paths)
        if not paths:
            return
        with self._deferred_lock:
            for path in paths:
                self._deferred.pop(path, None)
        self.catalog.settle(paths)

    def forget(self, note_id: str) -> None:
        """Remove a note from every index; searchable as gone when this returns."""
        self.commit(self.stage_forget(note_id))

    def stage_forget(self, note_id: str) -> int:
        with self.lock:
            self.catalog.remove(note_id)
            for listener in self._listeners:
                listener.forgotten(note_id)
            ticket = self.fulltext.stage_delete([note_id])
            self.vectors.remove_note(note_id)
        return ticket

    def index_path(self, path: str) -> IndexedFile | None:
        """Index the file at ``path`` if its content differs from what the catalog holds.

        Returns what was indexed, or None when it was already current, gone, unreadable or
        invalid (invalid files are recorded as problems, never fatal). A file without an ``id``
        gets one from the identity map; the file itself is not changed.
        """
        return self.sync_paths([path]).get(path)

    def forget_path(self, path: str) -> None:
        self.sync_paths([path])

    def sync_paths(
        self,
        paths: Sequence[str],
        background_commit: bool = False,
        written: Mapping[str, WrittenText] | None = None,
    ) -> dict[str, IndexedFile]:
        """Bring the indexes in step with these files (indexed if present, forgotten if gone),
        with one identity transaction, one catalog transaction and one full-text commit for
        all of them; returns what was (re)indexed by path. Searchable when this returns:
        with ``background_commit`` and a committer running (:meth:`commit_in_background`)
        through the full-text overlay, the commit left to the committer (a kill before it
        leaves the full-text index behind the catalog, which start-up sees and repairs).
        ``written`` gives, by path, the text the caller has just written to a file and still
        holds the file for (no one else can have changed it): it is not read again."""
        indexed, ticket = self.stage_paths(paths, written)
        if background_commit and ticket and self._leave_to_committer(ticket, paths, False):
            ticket = 0  # the committer's now
        self.commit_paths(ticket, paths)
        return indexed

    def stage_paths(
        self, paths: Sequence[str], written: Mapping[str, WrittenText] | None = None
    ) -> tuple[dict[str, IndexedFile], int]:
        """:meth:`sync_paths` up to the full-text commit: the changes are searchable (through
        the overlay) but not committed; returns what was (re)indexed by path and the ticket
        to pass to :meth:`commit_paths` (0: nothing to commit)."""
        indexed: dict[str, IndexedFile] = {}
        tickets = [0]
        given = written or {}
        with self.lock:
            changed: list[tuple[FileInfo, str, tuple[dict[str, Any], str] | None]] = []
            unique = list(dict.fromkeys(paths))
            known = self.catalog.by_paths(unique)
            for path in unique:
                info = self.files.stat(path)
                if info is None:
                    tickets.append(self._stage_forget_path(path))
                    continue
                held = given.get(path)
                text = self._changed(info, known.get(path), held.text if held else None)
                if text is not None:
                    changed.append((info, text, held.parts if held else None))
            items = self._load_many(changed)
            if items:
                tickets.append(self.stage(items))
                indexed = {item.info.path: item for item in items}
        return indexed, max(tickets)

    def commit_paths(self, ticket: int, paths: Sequence[str]) -> None:
        """End what :meth:`stage_paths` began: commit through ``ticket`` (if any) and settle
        the deferred updates of these paths."""
        if ticket:
            self.commit(ticket)
        self._settle(p for p in paths if p in self._deferred)

    def _changed(
        self, info: FileInfo, current: CatalogEntry | None, held: str | None = None
    ) -> str | None:
        """The file's text (``held`` if given, else read) when it differs from ``current``,
        what the catalog holds (or its update is deferred)."""
        text = self._read(info) if held is None or info.size > self._max_file_bytes else held
        if text is None:
            return None
        unchanged = current is not None and current.content_hash == content_hash(text)
        if unchanged and info.path not in self._deferred:
            return None
        return text

    def _stage_forget_path(self, path: str) -> int:
        self.catalog.clear_problems([path])
        entry = self.catalog.by_path(path)
        return self.stage_forget(entry.id) if entry is not None else 0

    # -- whole knowledge base -----------------------------------------------------------

    def reconcile(
        self,
        clear: bool = False,
        progress: Progress | None = None,
        skip: Collection[str] = (),
        trust_stat: bool = False,
    ) -> ReconcileReport:
        """Verify every index against the files and repair what differs, nothing more.

        ``skip`` names indexes (``fulltext``, ``vectors``) left alone, because they are
        being refilled from the files by :meth:`refill`. With ``trust_stat`` (start-up) a file
        whose modification time and size are those the catalog recorded, and whose content
        hash every index agrees on, counts as unchanged without being read, as git and rsync
        judge files; otherwise (``lithos reindex``) every file is read and hashed."""
        with self.lock:
            deferred = {**self.deferred(), **self.catalog.deferred()}
            report = ReconcileReport()
            if clear:
                self.catalog.clear()
                self.fulltext.clear()
                self.vectors.clear()
            else:
                report.rederived = self._clear_rederived(skip)
            report.temp_files_removed = self.files.remove_temp_files()
            on_disk = list(self.files.scan())
            report.files = len(on_disk)
            known = self.catalog.fingerprints()
            catalog = {e.path: e for e in known}
            fulltext = self.fulltext.fingerprints() if "fulltext" not in skip else None
            vectors = self.vectors.note_hashes() if "vectors" not in skip else None
            seen_ids: set[str] = set()
            pending: list[_Repair] = []
            for done, info in enumerate(on_disk, 1):
                entry = catalog.get(info.path)
                if trust_stat and self._unchanged(info, entry, fulltext, vectors, deferred):
                    assert entry is not None
                    report.unchanged += 1
                    seen_ids.add(entry.id)
                    continue
                repair = self._check(info, entry, fulltext, vectors, report)
                if repair is not None:
                    if repair.item.note.id in seen_ids:
                        self._duplicate(repair.item)
                    else:
                        seen_ids.add(repair.item.note.id)
                        pending.append(repair)
                if len(pending) >= BATCH:
                    self._repair(pending, report)
                    pending = []
                if progress:
                    progress(done, len(on_disk))
            self._repair(pending, report)
            self._remove_stale(seen_ids, [e.id for e in known], fulltext, vectors, report)
            report.problems = self.catalog.problems()
            self._settle(deferred)  # every index now agrees with the files (or is refilled)
            for name, index in self._derived().items():
                if name not in skip:
                    index.record_derivation(self.derivations()[name])
            for listener in self._listeners:
                listener.reset()
        self._notify()
        return report

    def refill(self, stores: Collection[str], progress: Progress | None = None) -> None:
        """Fill the emptied ``fulltext`` and/or ``vectors`` index from the files while Lithos
        serves, :data:`BATCH` notes at a time.

        The lock is held per batch only, so writes go on between batches: each file is read
        under the lock, and a write or watcher update indexes its note itself under the same
        lock, so whichever comes second carries the file's latest content (an upsert by id:
        never two copies). A file gone by the time its batch runs is skipped; one created
        after the scan was indexed by whoever created it. A file whose catalog entry is out
        of date is brought up to date in every index."""
        stores = frozenset(stores) & {"fulltext", "vectors"}
        paths = [info.path for info in self.files.scan()]
        for start in range(0, len(paths), BATCH):
            with self.lock:
                ticket = self._refill_batch(paths[start : start + BATCH], stores)
            if ticket:
                self.commit(ticket)
            self._notify()
            if progress:
                progress(min(start + BATCH, len(paths)), len(paths))
        with self.lock:
            for name in stores:
                self._derived()[name].record_derivation(self.derivations()[name])

    def _refill_batch(self, paths: Sequence[str], stores: frozenset[str]) -> int:
        records, docs, chunked = [], [], []
        for path in paths:
            info = self.files.stat(path)
            text = self._read(info) if info is not None else None
            if info is None or text is None:
                continue
            known = self.catalog.by_path(path)
            loaded = self._load(path, text, info)
            if loaded is None:
                continue
            item = _tagged(loaded)
            stale = known is None or (known.id, known.content_hash) != (
                item.note.id,
                item.file_hash,
            )
            if stale:
                records.append(self._record(item))
            if stale or "fulltext" in stores:
                docs.append(_fulltext_doc(item))
            if stale or "vectors" in stores:
                chunked.append(self._note_chunks(item))
        if chunked:
            self.vectors.set_notes(chunked)
        if records:
            self.catalog.upsert(records)
            for listener in self._listeners:
                listener.noted(records)
        return self.fulltext.stage_upsert(docs) if docs else 0

    def derivations(self) -> dict[str, dict[str, object]]:
        """How each derived index is made with the current code and settings."""
        return {
            "catalog": {"format": CATALOG_FORMAT},
            "fulltext": {"format": FULLTEXT_FORMAT},
            # Not the model: each vector records its embedding space, and a model change is
            # a migration between spaces (store/vector_spaces.py), not a rebuild.
            "vectors": {
                "chunker": CHUNKER_VERSION,
                "chunk_size": self._chunk_size,
                "chunk_max": self._chunk_max,
            },
        }

    def _derived(self) -> dict[str, DerivedIndex]:
        return {"catalog": self.catalog, "fulltext": self.fulltext, "vectors": self.vectors}

    def _clear_rederived(self, skip: Collection[str] = ()) -> list[str]:
        """Empty each index whose recorded derivation differs from :meth:`derivations`, for
        the reconcile to fill again. An index that recorded nothing (made before derivations
        were recorded, or just created) is trusted and recorded as it is."""
        wanted = self.derivations()
        stale = []
        for name, index in self._derived().items():
            if name in skip:
                continue
            recorded = index.derivation()
            if recorded is not None and recorded != wanted[name]:
                log.warning(
                    "the %s index was made with %s, now %s: re-deriving it",
                    name,
                    recorded,
                    wanted[name],
                )
                index.clear()  # the vector cache stays: unchanged chunk text is not re-embedded
                stale.append(name)
        return stale

    @staticmethod
    def _unchanged(
        info: FileInfo,
        known: Fingerprint | None,
        fulltext: dict[str, tuple[str, str]] | None,
        vectors: dict[str, str] | None,
        deferred: dict[str, str],
    ) -> bool:
        """True when the file has the modification time and size the catalog recorded and
        every index holds the catalog's content hash for it: indexed as it is, unread."""
        if known is None or (known.mtime_ns, known.size) != (info.mtime_ns, info.size):
            return False
        if info.path in deferred:
            return False
        hashed = known.content_hash
        return (fulltext is None or fulltext.get(known.id) == (hashed, info.path)) and (
            vectors is None or vectors.get(known.id) == hashed
        )

    def _check(
        self,
        info: FileInfo,
        known: Fingerprint | None,
        fulltext: dict[str, tuple[str, str]] | None,
        vectors: dict[str, str] | None,
        report: ReconcileReport,
    ) -> _Repair | None:
        """What to repair for one file; ``fulltext`` or ``vectors`` None: leave that index."""
        text = self._read(info)
        if text is None:
            return None
        file_hash = content_hash(text)
        if known is not None and known.content_hash == file_hash:
            ok_fulltext = fulltext is None or fulltext.get(known.id) == (file_hash, info.path)
            ok_vectors = vectors is None or vectors.get(known.id) == file_hash
            if ok_fulltext and ok_vectors:
                report.unchanged += 1
                stub = Note(known.id, "", "", info.path, "", "", "")
                return _Repair(IndexedFile(stub, file_hash, info))
        item = self._load(info.path, text, info, report)
        if item is None:
            return None
        note_id = item.note.id
        return _Repair(
            item,
            catalog=known is None or known.content_hash != item.file_hash or known.id != note_id,
            fulltext=fulltext is not None and fulltext.get(note_id) != (item.file_hash, info.path),
            vectors=vectors is not None and vectors.get(note_id) != item.file_hash,
        )

    def _repair(self, pending: list[_Repair], report: ReconcileReport) -> None:
        tagged = [(r, _tagged(r.item)) for r in pending if r.catalog or r.fulltext]
        catalog = [self._record(item) for r, item in tagged if r.catalog]
        fulltext = [_fulltext_doc(item) for r, item in tagged if r.fulltext]
        vectors = [r.item for r in pending if r.vectors]
        if catalog:
            self.catalog.upsert(catalog)
            for listener in self._listeners:  # what they hold of these is current: not re-read
                listener.noted(catalog, reset_follows=True)
        if fulltext:
            self.fulltext.upsert(fulltext)
        if vectors:
            self.vectors.set_notes([self._note_chunks(item) for item in vectors])
        report.catalog_fixed += len(catalog)
        report.fulltext_fixed += len(fulltext)
        report.vectors_fixed += len(vectors)
        self.applied += sum(1 for r in pending if r.needed)

    def _remove_stale(
        self,
        live: set[str],
        cataloged: list[str],
        fulltext: dict[str, tuple[str, str]] | None,
        vectors: dict[str, str] | None,
        report: ReconcileReport,
    ) -> None:
        stale_catalog = [note_id for note_id in cataloged if note_id not in live]
        for note_id in stale_catalog:
            self.catalog.remove(note_id)
        stale_fulltext = [i for i in fulltext or {} if i not in live]
        if stale_fulltext:
            self.fulltext.delete(stale_fulltext)
        stale_vectors = [i for i in vectors or {} if i not in live]
        for note_id in stale_vectors:
            self.vectors.remove_note(note_id)
        report.removed = len(set(stale_catalog) | set(stale_fulltext) | set(stale_vectors))

    # -- parsing ------------------------------------------------------------------------

    def _read(self, info: FileInfo) -> str | None:
        """The file's text, or None (recorded as a problem) when it is too large to be a note
        or cannot be read as UTF-8."""
        if info.size > self._max_file_bytes:
            message = f"{info.size} bytes; notes are limited to {self._max_file_bytes}"
            self.catalog.record_problem(info.path, "too_large", message, info.mtime_ns)
            return None
        try:
            return self.files.read_text(info.path)
        except (OSError, UnicodeDecodeError) as exc:
            # strerror, not str(exc): an OSError's text names the absolute path.
            reason = exc.strerror if isinstance(exc, OSError) else str(exc)
            self.catalog.record_problem(info.path, "unreadable", str(reason), info.mtime_ns)
            return None

    def _load(
        self, path: str, text: str, info: FileInfo, report: ReconcileReport | None = None
    ) -> IndexedFile | None:
        loaded = self._load_many([(info, text, None)], report)
        return loaded[0] if loaded else None

    def _load_many(
        self,
        files: Sequence[tuple[FileInfo, str, tuple[dict[str, Any], str] | None]],
        report: ReconcileReport | None = None,
    ) -> list[IndexedFile]:
        """Parse files read from disk (their frontmatter split already where given) into
        notes ready to index. Files without an id get theirs from the identity map (one
        transaction for all); broken frontmatter and ids another file already holds are
        recorded as problems and left out."""
        parsed: list[tuple[FileInfo, str, Note]] = []
        for info, text, parts in files:
            try:
                fallback = _mtime_iso(info)
                note = (
                    note_from_parts(parts, info.path, fallback)
                    if parts is not None
                    else parse_note(text, info.path, fallback_time=fallback)
                )
            except FrontmatterError as exc:
                log.warning("skipping %s: %s", info.path, exc)
                self.catalog.record_problem(info.path, "frontmatter", str(exc), info.mtime_ns)
                continue
            parsed.append((info, text, note))
        unnamed = [(i.path, content_hash(t)) for i, t, n in parsed if not is_valid_id(n.id)]
        identities = dict(
            zip(
                [path for path, _ in unnamed],
                self.identities.identify_many(unnamed, self.files.exists),
                strict=True,
            )
        )
        ids = [identities[i.path].note_id if i.path in identities else n.id for i, _, n in parsed]
        owners = {note_id: entry.path for note_id, entry in self.catalog.get_many(ids).items()}
        loaded: list[IndexedFile] = []
        for info, text, note in parsed:
            identity = identities.get(info.path)
            if identity is not None:
                note = note.with_changes(id=identity.note_id)
                if report and identity.new:
                    report.ids_assigned += 1
                if self._adopt_files:
                    text = self._write_identity(note, text)
                    info = self.files.stat(info.path) or info
            item = IndexedFile(note, content_hash(text), info)
            owner = owners.get(note.id)
            if owner is not None and owner != info.path and self.files.exists(owner):
                self._duplicate(item)
                continue
            owners[note.id] = info.path  # a later file of this batch with this id is a duplicate
            loaded.append(item)
        self.catalog.clear_problems([item.info.path for item in loaded])
        return loaded

    # -- adoption -----------------------------------------------------------------------

    def adopt(self, paths: Sequence[str]) -> list[str]:
        """Write the id (and creation and update times when missing) into the frontmatter of
        each of these files that has no id yet, keeping everything else in them as written;
        returns the paths changed. Files already carrying an id are left alone."""
        adopted: list[str] = []
        with self.lock:
            for path in paths:
                info = self.files.stat(path)
                text = self._read(info) if info is not None else None
                if info is None or text is None:
                    continue
                try:
                    note = parse_note(text, path, fallback_time=_mtime_iso(info))
                except FrontmatterError:
                    continue
                if is_valid_id(note.id):
                    continue
                identity = self.identities.identify(path, content_hash(text), self.files.exists)
                self._write_identity(note.with_changes(id=identity.note_id), text)
                adopted.append(path)
            self.sync_paths(adopted)
        return adopted

    def _write_identity(self, note: Note, text: str) -> str:
        meta, _ = split_frontmatter(text)
        changes: dict[str, object] = {"id": note.id}
        for key in ("created_at", "updated_at"):
            if key not in meta:
                changes[key] = getattr(note, key)
        edited = edit_frontmatter(text, changes, KNOWN_KEYS)
        self.files.replace(note.path, edited)
        return edited

    def _duplicate(self, item: IndexedFile) -> None:
        message = f"id {item.note.id} is already used by another file"
        log.warning("skipping %s: %s", item.info.path, message)
        self.catalog.record_problem(item.info.path, "duplicate_id", message, item.info.mtime_ns)

    def _record(self, item: IndexedFile) -> CatalogRecord:
        """The catalog row of a :func:`_tagged` item."""
        note = item.note
        links = parse_links(note.content)
        return CatalogRecord(note, item.file_hash, item.info.mtime_ns, item.info.size, links)

    def _note_chunks(self, item: IndexedFile) -> NoteChunks:
        note = item.note
        body = f"{note.title}\n\n{note.content}" if note.title else note.content
        chunks = chunk_text(body, self._chunk_size, self._chunk_max)
        return NoteChunks(note.id, item.file_hash, chunks)


def _wait_after_failure(write: Callable[[], object]) -> None:
    """Let a write begun beside a step that failed end before the failure is raised (the
    caller holds the lock that orders index updates); its own failure is logged, the first
    one raised."""
    try:
        write()
    except Exception as exc:
        log.warning("index update beside a failed one also failed: %s", exc)


def _tagged(item: IndexedFile) -> IndexedFile:
    """The item as the indexes hold it: tagged with its inline ``#tags`` too, as Obsidian is."""
    note = item.note
    tags = note_tags(note.tags, note.content)
    return item if tags == note.tags else replace(item, note=note.with_changes(tags=tags))


def _fulltext_doc(item: IndexedFile) -> FullTextDoc:
    """The full-text document of a :func:`_tagged` item."""
    note = item.note
    return FullTextDoc(
        id=note.id,
        title=note.title,
        content=note.content,
        path=note.path,
        author=note.author,
        tags=note.tags,
        content_hash=item.file_hash,
        updated_at=note.updated_at,
    )


def _mtime_iso(info: FileInfo) -> str:
    return format_timestamp(datetime.fromtimestamp(info.mtime_ns / 1e9, UTC))

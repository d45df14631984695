"""The Tantivy full-text index of notes.

One :class:`FullTextIndex` owns one index directory. It is derived data: everything in it can be
rebuilt from the Markdown files. Any failure of Tantivy to open, read or commit the index (an
error, or a Rust panic, which reaches Python as ``pyo3_runtime.PanicException``, a
``BaseException``) surfaces as :class:`~lithos.errors.IndexCorrupt` and is passed to
``on_corrupt``; moving the broken index aside and rebuilding it is store/lifecycle.py's job.

Writer rule: Tantivy allows one writer per index directory across all processes (a lock file).
A :class:`FullTextIndex` takes that writer when it is constructed and keeps it until
:meth:`~FullTextIndex.close`, so writes are fast and a second process (``lithos reindex`` while
the server runs) fails at once with :class:`~lithos.errors.IndexLocked` instead of half-way
through. Writes from several threads are serialised by a lock; searches take no lock and run
concurrently with writes.

A change is searchable the moment it is staged (``stage_upsert``/``stage_delete``), before any
commit: staged changes wait in an :class:`~lithos.store.fulltext_overlay.Overlay` that every
search consults beside the on-disk index, newer copy winning by id, until a commit covers them
(``commit_through``: one Tantivy commit for every change staged so far).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import re
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import TracebackType
from typing import Literal

import tantivy
from tantivy import IndexWriter, Occur, Query

from lithos.domain.tags import tag_key
from lithos.errors import IndexCorrupt, IndexLocked, InvalidInput
from lithos.store.fulltext_overlay import (
    TEXT_FIELDS,
    Clause,
    Node,
    Overlay,
    OverlayDoc,
    OverlayView,
    compile_query,
    disk_totals,
    leaves,
    overlay_statistics,
    passes,
    score,
)
from lithos.store.fulltext_snippets import (
    SNIPPET_MAX_CHARS,
    Scanned,
    SnippetTerms,
    best_fragment,
    fragment_weights,
    lead,
    overlay_snippet,
    render_fragment,
    render_snippet,
    snippet_window,
    term_weights,
)
from lithos.store.fulltext_stored import StoredDocs, StoredFields

logger = logging.getLogger(__name__)

# Weight of a title match relative to a content match. BM25 scores each field on its own, and a
# short title's length normalisation already inflates its hits; on SciFact's train queries a
# boost of 2.0 cost 0.07 nDCG@10 against 1.0, and 0.2-0.7 formed a plateau slightly above 1.0.
# 0.5 sits in the middle of it (bench/RESULTS.md).
TITLE_BOOST = 0.5
# The writer's indexing arena. 50 MB holds a full reindex of ~10k notes between internal flushes
# while staying small next to the embedding model; one thread suits a 2-core machine, where the
# server's other work needs the second core (see docs/fulltext.md for the measurement).
WRITER_HEAP_BYTES = 50_000_000
WRITER_THREADS = 1

SEARCH_FIELDS = list(TEXT_FIELDS)
FIELD_BOOSTS = {"title": TITLE_BOOST}
_WORD = re.compile(r"\w+")
# The characters Rust's regex syntax treats as meta (regex_syntax::is_meta_character).
_REGEX_META = frozenset("\\.+*?()|[]{}^$#&-~")
# Tantivy's own files: meta.json, .managed.json and segment files named by a 32-hex-digit id.
_WRITER_LOCK_FILE = ".tantivy-writer.lock"
_DERIVATION_FILE = "lithos-derivation.json"


@dataclass(frozen=True)
class FullTextDoc:
    """One note as the full-text index sees it. ``updated_at`` is ISO 8601."""

    id: str
    title: str
    content: str
    path: str
    author: str
    tags: tuple[str, ...]
    content_hash: str
    updated_at: str


@dataclass(frozen=True)
class FullTextHit:
    """One search result. ``snippet`` is Markdown: matching terms are wrapped in ``**``."""

    id: str
    title: str
    path: str
    snippet: str
    score: float


@dataclass(frozen=True)
class TextRanking:
    """The ranked documents of one search, read from one searcher (a document address is
    only valid for the searcher that returned it) and not loaded yet: best first, with each
    document's :func:`id_key`."""

    searcher: tantivy.Searcher
    text_query: Query
    parsed: str
    node: Node | None
    found: Sequence[tuple[float, tantivy.DocAddress | OverlayDoc]]
    keys: Sequence[int]
    stored: StoredDocs | None = None  # the documents read lately, if valid for ``searcher``

    def scores(self) -> list[tuple[int, float]]:
        """``(key, BM25 score)`` of each document, best first."""
        return [(key, float(hit[0])) for key, hit in zip(self.keys, self.found, strict=True)]


@lru_cache(maxsize=1 << 14)
def id_key(note_id: str) -> int:
    """A note id as 64 bits, held in the index as a fast field (``id_key``) so a ranking
    names its documents without loading them. Two ids share a key with odds of 2^-64 a
    pair."""
    return int.from_bytes(hashlib.blake2b(note_id.encode(), digest_size=8).digest(), "big")


# Parsed queries kept per index (FullTextIndex._parsed) and compiled ones per process.
PARSED_QUERIES = 512


@lru_cache(maxsize=PARSED_QUERIES)
def compiled(parsed: str) -> Node | None:
    """:func:`compile_query` of ``parsed`` with the index's field boosts, kept per query
    text (a pure function of it; the nodes are immutable)."""
    return compile_query(parsed, FIELD_BOOSTS)


@lru_cache(maxsize=PARSED_QUERIES)
def content_terms(parsed: str) -> frozenset[str]:
    """The terms the :func:`compiled` query of ``parsed`` looks for in the content field
    (none when it does not compile), kept per query text."""
    node = compiled(parsed)
    if node is None:
        return frozenset()
    return frozenset(
        {term for leaf in leaves(node) if leaf.field == "content" for term in leaf.terms}
    )


@lru_cache(maxsize=PARSED_QUERIES)
def snippet_terms(frequencies: tuple[tuple[str, int], ...], documents: int) -> SnippetTerms:
    """The :class:`SnippetTerms` of terms held by ``frequencies`` (term, documents holding
    it) in an index of ``documents``: a pure function of them, kept so that a query asked
    again while they are unchanged finds its terms' weights and regexes made."""
    counts = dict(frequencies)
    return SnippetTerms(term_weights(counts, documents, counts), fragment_weights(counts))


# Bump with any change to build_schema or to what a document holds: the index is re-derived.
# 2: tags include the inline #tags of the body; 3: tags by tag_key; 4: the id_key fast field
FULLTEXT_FORMAT = 4


def build_schema() -> tantivy.Schema:
    """The schema of the index. Changing it makes existing indexes fail to open (rebuild)."""
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("title", stored=True, tokenizer_name="en_stem", index_option="position")
    builder.add_text_field(
        "content", stored=True, tokenizer_name="en_stem", index_option="position"
    )
    builder.add_text_field("path", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("author", tokenizer_name="raw", index_option="basic")
    builder.add_text_field("tags", tokenizer_name="raw", index_option="basic")
    builder.add_text_field("content_hash", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("updated_at", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_unsigned_field("id_key", fast=True)
    return builder.build()


class FullTextIndex:
    """The persisted full-text index in ``directory``, opened for reading and writing.

    Raises :class:`IndexCorrupt` if the directory holds an index that cannot be opened,
    and :class:`~lithos.errors.IndexLocked` if another writer (usually a running server, possibly
    another object in this process) owns the index. Call :meth:`close` to release the writer.
    """

    def __init__(
        self,
        directory: Path,
        read_only: bool = False,
        on_corrupt: Callable[[IndexCorrupt], None] | None = None,
    ) -> None:
        """``read_only`` takes no writer, so it works beside a running server (CLI search and
        stats); each search then reloads to see the server's latest commits."""
        self.directory = directory
        self.read_only = read_only
        self._schema = build_schema()
        self.commits = 0  # Tantivy commits made, for tests and benchmarks
        self._commit_lock = threading.Lock()  # one commit at a time; guards the writer
        self._pending_lock = threading.Lock()
        self._pending: list[Callable[[IndexWriter], object]] = []
        self._staged = 0  # tickets handed out by _stage
        self._waiting = 0  # documents (or ids) in the changes no commit has taken yet
        self._committing = 0  # ... and in those the commit under way took
        self._committed = 0  # every ticket up to this one is committed
        self._discarded: list[tuple[int, int]] = []  # (low, high]: tickets a rollback dropped
        self._on_corrupt: Callable[[IndexCorrupt], None] | None = None
        self._overlay = Overlay()
        # The on-disk index's BM25 totals (documents, mean field lengths) for scoring overlay
        # documents, read once per reload: (generation, documents, means).
        self._generation = 0
        self._disk_totals: tuple[int, int, dict[str, float]] | None = None
        # The stored fields of documents read lately, for the current index and generation.
        self._stored: StoredDocs | None = None
        # Told after every commit, successful or not (outside the commit lock).
        self.on_commit: Callable[[], None] | None = None
        self._parse_cache = lru_cache(maxsize=PARSED_QUERIES)(self._parse_uncached)
        self._index, self._writer = self._open()
        self._on_corrupt = on_corrupt

    def _open(self) -> tuple[tantivy.Index, IndexWriter | None]:
        self.directory.mkdir(parents=True, exist_ok=True)
        with self._tantivy("open"):
            index = tantivy.Index(self._schema, path=str(self.directory), reuse=True)
            writer = None if self.read_only else _acquire_writer(index)
            return index, writer

    def reopen(self) -> None:
        """Open the directory again (after it was closed, emptied or moved aside). Changes
        staged and not yet committed are discarded: their ``commit_through`` raises."""
        with self._commit_lock:
            with self._pending_lock:
                self._pending, self._waiting = [], 0
                if self._staged > self._committed:
                    self._discarded.append((self._committed, self._staged))
                self._committed = self._staged
                self._overlay.drop_through(self._staged)
            self._index, self._writer = self._open()
            self._parse_cache.cache_clear()
            self._generation += 1
        self._told_committed()

    def held_elsewhere(self) -> bool:
        """Whether another process (or object) holds this index's writer."""
        return writer_lock_is_held(self.directory)

    def derivation(self) -> dict[str, object] | None:
        """What this index was derived with, as last recorded (None if never)."""
        try:
            value = json.loads((self.directory / _DERIVATION_FILE).read_text())
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def record_derivation(self, derivation: dict[str, object]) -> None:
        path = self.directory / _DERIVATION_FILE
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(derivation, sort_keys=True))
        temporary.replace(path)

    def upsert(self, docs: Iterable[FullTextDoc]) -> None:
        """Add or replace ``docs`` by id; visible to the next search on return.

        A repeated id in the batch keeps the last occurrence.
        """
        self.commit_through(self.stage_upsert(docs))

    def delete(self, ids: Iterable[str]) -> None:
        """Remove the documents with these ids; unknown ids are ignored."""
        self.commit_through(self.stage_delete(ids))

    def clear(self) -> None:
        """Remove every document."""
        # Tantivy drops every committed segment, not documents added since: commit those first.
        self.commit_pending()
        self.commit_through(self._stage(lambda writer: writer.delete_all_documents()))

    def stage_upsert(self, docs: Iterable[FullTextDoc]) -> int:
        """Queue adds/replacements, searchable at once, without committing; returns a ticket
        for commit_through."""
        docs = list(docs)
        batch = [(doc.id, _to_document(doc)) for doc in docs]

        def apply(writer: IndexWriter) -> None:
            for doc_id, document in batch:
                writer.delete_documents_by_term("id", doc_id)
                writer.add_document(document)

        staged = [_overlay_doc(doc) for doc in docs]
        return self._stage(apply, lambda ticket: self._overlay.put(ticket, staged), len(docs))

    def stage_delete(self, ids: Iterable[str]) -> int:
        """Queue deletions, searchable at once, without committing; returns a ticket for
        commit_through."""
        batch = list(ids)

        def apply(writer: IndexWriter) -> None:
            for doc_id in batch:
                writer.delete_documents_by_term("id", doc_id)

        return self._stage(apply, lambda ticket: self._overlay.remove(ticket, batch), len(batch))

    @property
    def staged(self) -> int:
        """The ticket of the latest staged change."""
        return self._staged

    def uncommitted(self) -> int:
        """How many documents the staged changes no commit has taken yet hold (a change of
        none counts one): what the overlay must search."""
        with self._pending_lock:
            return self._waiting + self._committing

    def ticket_state(self, ticket: int) -> Literal["pending", "committed", "discarded"]:
        """Whether the change of ``ticket`` is on disk, waits for a commit, or was dropped by
        a failed commit (or a reopen)."""
        with self._pending_lock:
            if any(low < ticket <= high for low, high in self._discarded):
                return "discarded"
            return "committed" if ticket <= self._committed else "pending"

    def commit_pending(self) -> None:
        """Commit every change staged so far (nothing to do when none is)."""
        self.commit_through(self._staged)

    def commit_through(self, ticket: int) -> None:
        """Return once everything staged up to ``ticket`` is committed and searchable.

        Group commit: one Tantivy commit (tens of milliseconds of fsync) covers every change
        staged before it, so concurrent writers share commits instead of queueing for one each.
        Raises if the commit that should have held ``ticket`` failed (nothing of it applied).
        """
        try:
            self._commit_through(ticket)
        finally:
            self._told_committed()

    def _commit_through(self, ticket: int) -> None:
        with self._commit_lock:
            if self.ticket_state(ticket) == "discarded":
                raise RuntimeError("a failed full-text commit discarded this change; retry it")
            if ticket <= self._committed:
                return
            with self._pending_lock:
                batch, self._pending = self._pending, []
                target, self._committing, self._waiting = self._staged, self._waiting, 0
            writer = self._require_writer()
            try:
                with self._tantivy("commit"):
                    for apply in batch:
                        apply(writer)
                    writer.commit()
                    self._index.reload()
            except BaseException:
                with self._pending_lock:
                    self._discarded.append((self._committed, target))
                    self._committed, self._committing = target, 0
                # The overlay shows what is on disk again; the writer's caller defers the
                # notes, and their repair stages them anew.
                self._overlay.drop_through(target)
                with _suppressed(), self._tantivy("roll back"):
                    writer.rollback()
                raise
            self._generation += 1
            # Only now: a search that took the overlay before this finds the documents there,
            # one that takes it after finds them in the reloaded searcher.
            self._overlay.drop_through(target)
            self.commits += 1
            with self._pending_lock:
                self._committed, self._committing = target, 0

    def _told_committed(self) -> None:
        if self.on_commit is not None:
            self.on_commit()

    def count(self) -> int:
        """The number of documents held, staged changes included."""
        view = self._overlay.view()
        with self._tantivy("read"):
            searcher = self._searcher()
            total = int(searcher.num_docs)
            if not view.entries:
                return total
            ids = Query.term_set_query(self._schema, "id", list(view.entries))
            replaced = searcher.search(ids, limit=len(view.entries), count=False).hits
            return total - len(replaced) + len(view.docs)

    def hashes(self) -> dict[str, str]:
        """``{id: content_hash}`` for every document held, to check the index against the files."""
        return {note_id: held[0] for note_id, held in self.fingerprints().items()}

    def fingerprints(self) -> dict[str, tuple[str, str]]:
        """``{id: (content_hash, path)}`` for every document held: a document is current only
        when both match its file (a note renamed or moved keeps its hash, not its path)."""
        view = self._overlay.view()
        result: dict[str, tuple[str, str]] = {}
        with self._tantivy("read"):
            searcher = self._searcher()
            total = searcher.num_docs
            hits = (
                searcher.search(Query.all_query(), limit=total, count=False).hits if total else []
            )
            for _, address in hits:
                doc = searcher.doc(address)
                held = (str(doc.get_first("content_hash")), str(doc.get_first("path")))
                result[str(doc.get_first("id"))] = held
        for note_id, staged in view.entries.items():
            if staged is None:
                result.pop(note_id, None)
            else:
                result[note_id] = (staged.content_hash, staged.path)
        return result

    def search(
        self,
        query: str,
        limit: int = 10,
        tags: Sequence[str] = (),
        author: str | None = None,
        path_prefix: str | None = None,
        syntax: bool = True,
        highlight: int | None = None,
        only_ids: Collection[str] | None = None,
        exclude_ids: Collection[str] = (),
        snippets: bool = True,
    ) -> list[FullTextHit]:
        """Best ``limit`` documents for ``query`` by BM25 over title and content.

        ``query`` uses Tantivy's query syntax (docs/fulltext.md); a query it cannot parse is
        searched as its plain words, any of them. ``syntax=False`` treats the query as natural
        language from the start (its words, any of them: no phrases from hyphens, no
        exclusions), as hybrid search does. Only the first ``highlight`` hits (all when None) get
        a highlighted snippet; the rest start with the first lines of their content, which
        saves time when a caller keeps only a few of many candidates. ``snippets=False`` leaves
        every snippet empty and the content unread (a caller that shows few of many hits can
        ask again for those with ``only_ids``: the filters never change a score).

        Filters narrow the search inside the index: every tag in ``tags`` must be present,
        ``author`` must match exactly, ``path`` must start with ``path_prefix``, the id must be
        in ``only_ids`` when given and must not be in ``exclude_ids``. Raises
        :class:`~lithos.errors.InvalidInput` for an empty query or a ``limit`` below 1.
        """
        ranking = self.rank(query, limit, tags, author, path_prefix, syntax, only_ids, exclude_ids)
        return self.hits(ranking, highlight=highlight, snippets=snippets)

    def rank(
        self,
        query: str,
        limit: int = 10,
        tags: Sequence[str] = (),
        author: str | None = None,
        path_prefix: str | None = None,
        syntax: bool = True,
        only_ids: Collection[str] | None = None,
        exclude_ids: Collection[str] = (),
    ) -> TextRanking:
        """What :meth:`search` finds, as keys (:func:`id_key`) and scores, without reading a
        stored document: :meth:`hits` reads the ones a caller shows. Same arguments and
        errors as :meth:`search`."""
        if not query.strip():
            raise InvalidInput("The search query is empty.")
        if limit < 1:
            raise InvalidInput(f"limit must be at least 1, got {limit}.")
        text_query, parsed = self._parsed(query, syntax)
        view, node = self._overlay_for(parsed)
        # Read after the overlay's view (see fulltext_stored.py), and the searcher from it.
        index, generation = self._index, self._generation
        filtered = self._with_filters(text_query, tags, author, path_prefix, only_ids)
        masked = {*exclude_ids, *view.entries}
        if masked:
            excluded = Query.term_set_query(self._schema, "id", list(masked))
            filtered = Query.boolean_query([(Occur.Must, filtered), (Occur.MustNot, excluded)])
        with self._tantivy("read"):
            searcher = self._searcher(index)
            found: list[tuple[float, tantivy.DocAddress | OverlayDoc]] = list(
                searcher.search(filtered, limit=limit, count=False).hits
            )
            if node is not None:
                fresh = [
                    doc
                    for doc in view.docs
                    if passes(doc, tags, author, path_prefix, only_ids, exclude_ids)
                ]
                found += self._overlay_hits(searcher, node, fresh, view)
            found.sort(key=lambda hit: -hit[0])
            found = found[:limit]
            on_disk = [source for _, source in found if not isinstance(source, OverlayDoc)]
            stored = iter(searcher.fast_field_values("id_key", on_disk) if on_disk else [])
            keys = [
                id_key(source.id) if isinstance(source, OverlayDoc) else int(next(stored) or 0)
                for _, source in found
            ]
        memo = self._stored_docs(index, generation)
        return TextRanking(searcher, text_query, parsed, node, found, keys, memo)

    def hits(
        self,
        ranking: TextRanking,
        keys: Collection[int] | None = None,
        highlight: int | None = None,
        snippets: bool = True,
    ) -> list[FullTextHit]:
        """The documents of ``ranking`` whose key is in ``keys`` (all when None), read and
        in ranking order; the first ``highlight`` of them (all when None) with a highlighted
        snippet, as :meth:`search` gives them (``snippets=False``: empty snippets)."""
        found, found_keys = ranking.found, ranking.keys
        if keys is not None:
            kept = [(hit, key) for hit, key in zip(found, found_keys, strict=True) if key in keys]
            found, found_keys = [hit for hit, _ in kept], [key for _, key in kept]
        with self._tantivy("read"):
            return self._rendered(ranking, found, found_keys, highlight, snippets)

    def _stored_docs(self, index: tantivy.Index, generation: int) -> StoredDocs | None:
        """The memo of stored documents valid for searchers of ``index`` at ``generation``:
        a new one if those are current, None if they are not (a commit or reopen since)."""
        if self.read_only:  # another process writes: no generation tells its commits
            return None
        stored = self._stored
        if stored is not None and stored.owner is index and stored.generation == generation:
            return stored
        if index is not self._index or generation != self._generation:
            return None
        stored = self._stored = StoredDocs(index, generation)
        return stored

    def never_commits(self, query: str, syntax: bool = True) -> bool:
        """Whether searching ``query`` can never commit staged changes first (the overlay can
        evaluate it; see :meth:`rank`): such a search waits on no commit and no fsync."""
        _, parsed = self._parsed(query, syntax)
        return not parsed.strip() or compiled(parsed) is not None

    def _overlay_for(self, parsed: str) -> tuple[OverlayView, Node | None]:
        """The staged changes a search must merge, and the query compiled for them. A query
        the overlay cannot evaluate commits the staged changes first and searches the disk."""
        view = self._overlay.view()
        if not view.entries:
            return view, None
        node = compiled(parsed) if parsed.strip() else Clause()
        if node is None:
            self.commit_pending()
            return OverlayView({}), None
        return view, node

    def _overlay_hits(
        self,
        searcher: tantivy.Searcher,
        node: Node,
        docs: Sequence[OverlayDoc],
        view: OverlayView,
    ) -> list[tuple[float, tantivy.DocAddress | OverlayDoc]]:
        """Staged documents matching ``node``, scored with the statistics the disk index will
        have once they are committed."""
        if not docs:
            return []
        cached = self._disk_totals
        if cached is None or cached[0] != self._generation:
            cached = (self._generation, *disk_totals(searcher, self._schema))
            self._disk_totals = cached
        stats = overlay_statistics(searcher, node, cached[1], cached[2], view.docs)
        hits: list[tuple[float, tantivy.DocAddress | OverlayDoc]] = []
        for doc in docs:
            value = score(node, doc, stats)
            if value is not None:
                hits.append((value, doc))
        return hits

    def _rendered(
        self,
        ranking: TextRanking,
        hits: Sequence[tuple[float, tantivy.DocAddress | OverlayDoc]],
        keys: Sequence[int],
        highlight: int | None,
        snippets: bool = True,
    ) -> list[FullTextHit]:
        if not hits:
            return []
        searcher = ranking.searcher
        highlighted = len(hits) if highlight is None else min(highlight, len(hits))
        generator = None
        if snippets and highlighted:
            generator = _Snippets(
                searcher,
                self._schema,
                ranking.text_query,
                ranking.parsed,
                ranking.node,
                ranking.stored,
            )
        results = []
        for rank, ((score_, source), key) in enumerate(zip(hits, keys, strict=True)):
            if isinstance(source, OverlayDoc):
                note_id, title, path = source.id, source.title, source.path
                content = source.content
            else:
                fields = _read_stored(searcher, source, key, ranking.stored, snippets)
                note_id, title, path, content = fields
            if not snippets:
                snippet = ""
            elif generator is None or rank >= highlighted:
                snippet = lead(content)
            elif isinstance(source, OverlayDoc):
                snippet = generator.of_staged(content)
            else:
                snippet = generator.of_committed(content, key)
            results.append(FullTextHit(note_id, title, path, snippet, float(score_)))
        return results

    def close(self) -> None:
        """Wait for background merges and release the writer lock. Safe to call twice."""
        with self._commit_lock:
            writer, self._writer = self._writer, None
        if writer is not None:
            # A broken index may fail here too; closing must still release it.
            with _suppressed(), self._tantivy("close"):
                writer.wait_merging_threads()

    def __enter__(self) -> FullTextIndex:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    @contextmanager
    def _tantivy(self, action: str) -> Iterator[None]:
        """Turn Tantivy's failures (ValueError, or a Rust panic) into IndexCorrupt."""
        try:
            yield
        except IndexCorrupt:
            raise
        except (ValueError, OSError) as exc:
            if "LockBusy" in str(exc):
                raise _locked_error(self.directory) from exc
            raise self._corrupt(action, exc) from exc
        except BaseException as exc:
            if not _is_panic(exc):
                raise
            raise self._corrupt(action, exc) from None

    def _corrupt(self, action: str, exc: BaseException) -> IndexCorrupt:
        lines = str(exc).strip().splitlines()
        reason = lines[0] if lines else type(exc).__name__
        error = IndexCorrupt(
            f"The full-text index failed to {action} ({reason[:300]}). It is derived from the "
            "notes and is rebuilt from them.",
            location=self.directory,
        )
        if self._on_corrupt is not None:
            self._on_corrupt(error)
        return error

    def _searcher(self, index: tantivy.Index | None = None) -> tantivy.Searcher:
        index = self._index if index is None else index
        if self.read_only:  # another process writes; pick up its latest commit
            index.reload()
        return index.searcher()

    def _stage(
        self,
        apply: Callable[[IndexWriter], object],
        show: Callable[[int], None] = lambda ticket: None,
        size: int = 1,
    ) -> int:
        # Only queued here: the writer cannot be touched while another thread commits
        # ("Already borrowed"), and queueing lets the next commit take every waiting change.
        # ``show`` puts the change in the overlay under the same lock, so tickets and the
        # overlay agree on which change of a note is the newest.
        self._require_writer()
        with self._pending_lock:
            self._pending.append(apply)
            self._staged += 1
            self._waiting += max(size, 1)
            show(self._staged)
            return self._staged

    def _require_writer(self) -> IndexWriter:
        if self._writer is None:
            state = "read-only" if self.read_only else "closed"
            raise RuntimeError(f"The full-text index in {self.directory} is {state}.")
        return self._writer

    def _parsed(self, query: str, syntax: bool) -> tuple[Query, str]:
        """The query, and the text it was parsed from (the words alone if it did not parse,
        or with ``syntax=False``). Kept per query text: parsing depends on the schema and
        its tokenizers only, never on what the index holds, and a Tantivy query is
        immutable, so one parsed query serves every later search of that text."""
        return self._parse_cache(query, syntax)

    def _parse_uncached(self, query: str, syntax: bool) -> tuple[Query, str]:
        if syntax:
            try:
                parsed = self._index.parse_query(query, SEARCH_FIELDS, field_boosts=FIELD_BOOSTS)
                return parsed, query
            except ValueError as error:
                # Agents write free text with colons, brackets and stray quotes; search its
                # words.
                logger.debug("Query %r searched as plain words: %s", query, error)
        words = " ".join(word.lower() for word in _WORD.findall(query))
        if not words:
            return Query.empty_query(), ""
        parsed = self._index.parse_query(words, SEARCH_FIELDS, field_boosts=FIELD_BOOSTS)
        return parsed, words

    def _with_filters(
        self,
        text_query: Query,
        tags: Sequence[str],
        author: str | None,
        path_prefix: str | None,
        only_ids: Collection[str] | None,
    ) -> Query:
        if only_ids is not None and not only_ids:
            return Query.empty_query()
        filters = [Query.term_query(self._schema, "tags", tag_key(tag), "basic") for tag in tags]
        if only_ids is not None:
            filters.append(Query.term_set_query(self._schema, "id", list(only_ids)))
        if author is not None:
            filters.append(Query.term_query(self._schema, "author", author, "basic"))
        if path_prefix:
            pattern = _regex_literal(path_prefix) + ".*"
            filters.append(Query.regex_query(self._schema, "path", pattern))
        if not filters:
            return text_query
        # Boost 0: a filter decides membership only; its BM25 (e.g. lower for notes with many
        # tags) must not move the ranking.
        clauses = [(Occur.Must, text_query)]
        clauses += [(Occur.Must, Query.boost_query(f, 0.0)) for f in filters]
        return Query.boolean_query(clauses)


def _acquire_writer(index: tantivy.Index) -> IndexWriter:
    # The binding reports every writer failure as ValueError; only the text tells them apart
    # (FullTextIndex._tantivy turns "LockBusy" into IndexLocked, the rest into IndexCorrupt).
    return index.writer(heap_size=WRITER_HEAP_BYTES, num_threads=WRITER_THREADS)


def _locked_error(directory: Path) -> IndexLocked:
    return IndexLocked(
        f"Another Lithos process owns the full-text index in {directory}, most likely a running "
        "Lithos server. Stop that server, or do this through the server instead.",
        directory=str(directory),
    )


def writer_lock_is_held(directory: Path) -> bool:
    """Whether some writer holds Tantivy's lock file (Tantivy takes it with ``flock``)."""
    lock_path = directory / _WRITER_LOCK_FILE
    if not lock_path.exists():
        return False
    with lock_path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def _is_panic(exc: BaseException) -> bool:
    """A Rust panic inside Tantivy (pyo3 raises it as a BaseException, not an Exception)."""
    kind = type(exc)
    return kind.__name__ == "PanicException" and kind.__module__ == "pyo3_runtime"


@contextmanager
def _suppressed() -> Iterator[None]:
    """Ignore a failure while already handling one (a rollback or close of a broken index)."""
    try:
        yield
    except Exception as exc:
        logger.debug("ignored while handling a full-text failure: %s", exc)


def _overlay_doc(doc: FullTextDoc) -> OverlayDoc:
    return OverlayDoc(
        id=doc.id,
        title=doc.title,
        content=doc.content,
        path=doc.path,
        author=doc.author,
        tag_keys=frozenset(tag_key(tag) for tag in doc.tags),
        content_hash=doc.content_hash,
        updated_at=doc.updated_at,
    )


def _to_document(doc: FullTextDoc) -> tantivy.Document:
    document = tantivy.Document()
    document.add_text("id", doc.id)
    document.add_unsigned("id_key", id_key(doc.id))
    document.add_text("title", doc.title)
    document.add_text("content", doc.content)
    document.add_text("path", doc.path)
    document.add_text("author", doc.author)
    for tag in doc.tags:  # indexed by key: #Python and #python are one tag
        document.add_text("tags", tag_key(tag))
    document.add_text("content_hash", doc.content_hash)
    document.add_text("updated_at", doc.updated_at)
    return document


def _read_stored(
    searcher: tantivy.Searcher,
    address: tantivy.DocAddress,
    key: int,
    stored: StoredDocs | None,
    content: bool,
) -> StoredFields:
    """The stored fields of the document at ``address`` (key ``key``), from ``stored`` when it
    holds them; the content is left empty unless ``content`` (a read without it is not kept)."""
    if stored is not None and key:
        fields = stored.get(key)
        if fields is not None:
            return fields if content else fields._replace(content="")
    doc = searcher.doc(address)
    fields = StoredFields(
        str(doc.get_first("id")),
        str(doc.get_first("title") or ""),
        str(doc.get_first("path") or ""),
        str(doc.get_first("content") or "") if content else "",
    )
    if stored is not None and key and content:
        stored.put(key, fields)
    return fields


def _regex_literal(text: str) -> str:
    return "".join("\\" + char if char in _REGEX_META else char for char in text)


class _Snippets:
    """Highlighted snippets for the hits of one query on one searcher. A text met before
    (the same page kept as several notes) gets the snippet made for it then: a snippet is a
    function of the text and the query alone."""

    def __init__(
        self,
        searcher: tantivy.Searcher,
        schema: tantivy.Schema,
        text_query: Query,
        parsed: str,
        node: Node | None,
        stored: StoredDocs | None = None,
    ) -> None:
        self._stored = stored  # keeps each document's lower-cased content with it
        self._searcher, self._schema, self._text_query = searcher, schema, text_query
        # Tantivy's generator, made on first use: most snippets are placed without it.
        self._generator: tantivy.SnippetGenerator | None = None
        self._terms = content_terms(parsed)  # none for a node of no query (Clause())
        # A query the overlay's compiler cannot read (prefixes, regexes) gets Tantivy's
        # snippet of the whole content; None then.
        self._sought: SnippetTerms | None = None
        if node is not None or compiled(parsed) is not None:
            frequencies = tuple((term, searcher.doc_freq("content", term)) for term in self._terms)
            self._sought = snippet_terms(frequencies, searcher.num_docs)
        # Texts highlighted so far and their snippets, by length: comparing two texts of
        # equal length is cheaper than hashing a long one.
        self._made: dict[int, list[tuple[str, str]]] = {}

    def _tantivy_snippet(self, text: str) -> tantivy.Snippet:
        generator = self._generator
        if generator is None:
            generator = tantivy.SnippetGenerator.create(
                self._searcher, self._text_query, self._schema, "content"
            )
            generator.set_max_num_chars(SNIPPET_MAX_CHARS)
            self._generator = generator
        return generator.snippet_from_doc(tantivy.Document(content=text))

    def of_staged(self, content: str) -> str:
        return overlay_snippet(content, self._terms)

    def of_committed(self, content: str, key: int) -> str:
        """The snippet of a committed document's ``content`` (``key``: its :func:`id_key`)."""
        same_length = self._made.setdefault(len(content), [])
        for text, snippet in same_length:
            if text == content:
                return snippet
        snippet = self._highlighted(content, key)
        same_length.append((content, snippet))
        return snippet

    def _highlighted(self, content: str, key: int) -> str:
        sought = self._sought
        if sought is None:
            start, end = 0, len(content)
        else:
            stored = self._stored
            lowered = stored.lowered(key, content) if stored is not None else content.lower()
            scanned: Scanned = {}
            window = snippet_window(content, sought, lowered, scanned)
            if window is None:
                return lead(content)
            start, end = window
            fragment = best_fragment(content[start:end], sought, lowered[start:end], scanned, start)
            if fragment is not None:
                return render_fragment(content, window, fragment)
        snippet = self._tantivy_snippet(content[start:end])
        if not snippet.highlighted() and (start, end) != (0, len(content)):
            # The window missed what Tantivy matches (a phrase across its edge): read it all.
            start, end = 0, len(content)
            snippet = self._tantivy_snippet(content)
        return render_snippet(snippet, content, (start, end))

"""Knowledge use cases: write, read, delete and list notes.

The Markdown file is written first (atomically, durably); the derived indexes follow in the
same call, so a note is in the catalog and full-text index when ``write`` returns. Embedding is
queued, never awaited.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, MutableSequence, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, NamedTuple

from lithos.domain.coordination import require_text
from lithos.domain.filters import clean_prefix
from lithos.domain.frontmatter import FrontmatterError
from lithos.domain.frontmatter_edit import render_changes
from lithos.domain.metadata import (
    MetadataChange,
    NoteMetadata,
    apply_change,
    check_change,
    metadata_as_dict,
)
from lithos.domain.note_migrations import CURRENT_SCHEMA_VERSION
from lithos.domain.notes import (
    Note,
    content_hash,
    new_id,
    parse_note,
    render_note,
    require_valid_id,
    slugify,
    title_file_stem,
    truncate,
    version_of,
)
from lithos.domain.tags import clean_tags, filter_tags
from lithos.domain.timestamps import now_iso
from lithos.errors import (
    ContentTooLarge,
    DocNotFound,
    InvalidInput,
    LithosError,
    NoteUnreadable,
    VersionConflict,
)
from lithos.services.agents import AgentRegistry
from lithos.services.graph import LinkGraph
from lithos.services.indexing import IndexedFile, Indexer
from lithos.services.parsed import KEPT_CHARS, ParsedNotes
from lithos.store.catalog import CatalogEntry, ListQuery
from lithos.store.markdown import KnowledgeFiles, NewFile

MAX_TITLE = 300
# A note Lithos creates follows the current schema, so `lithos migrate` leaves it alone.
CURRENT_METADATA = NoteMetadata(
    schema_version=CURRENT_SCHEMA_VERSION, declared=frozenset({"schema_version"})
)
FileNames = Literal["title", "slug"]


@dataclass(frozen=True)
class WriteRequest:
    """What an agent asked ``lithos_write`` to do. ``None`` means "not given"."""

    agent: str
    title: str | None = None
    content: str | None = None
    id: str | None = None
    tags: Sequence[str] | None = None
    confidence: float | None = None
    path: str | None = None
    source: str | None = None
    aliases: Sequence[str] | None = None
    supersedes: str | None = None
    expected_version: str | None = None
    metadata: MetadataChange = field(default_factory=MetadataChange)


@dataclass(frozen=True)
class WriteOutcome:
    """What became of one note of a batch write: ``created``/``updated`` with its id, path,
    version and ``indexing`` (and ``warnings``), or ``error`` with the code and message
    :meth:`KnowledgeService.write` would have raised."""

    status: Literal["created", "updated", "error"]
    id: str | None = None
    path: str | None = None
    version: str | None = None
    indexing: Literal["done", "pending"] | None = None
    warnings: tuple[str, ...] = ()
    code: str | None = None
    message: str | None = None

    @classmethod
    def of(cls, result: dict[str, Any]) -> WriteOutcome:
        return cls(
            result["status"],
            id=result["id"],
            path=result["path"],
            version=result["version"],
            indexing=result["indexing"],
            warnings=tuple(result.get("warnings", ())),
        )

    @classmethod
    def failed(cls, error: LithosError) -> WriteOutcome:
        return cls("error", code=error.code, message=error.message)


@dataclass(frozen=True)
class _NewNote:
    """A note to create: its text, and the folder and file stem its file will take."""

    note: Note
    text: str
    directory: str
    stem: str

    @property
    def file(self) -> NewFile:
        return NewFile(self.directory, self.stem, self.text)

    def result(self, path: str, indexed: bool) -> dict[str, Any]:
        result = _result("created", self.note.with_changes(path=path), self.text, indexed)
        expected = f"{self.directory}/{self.stem}.md" if self.directory else f"{self.stem}.md"
        if path != expected:
            result.setdefault("warnings", []).insert(
                0, f"{expected} already exists; this note was saved as {path} (nothing overwritten)"
            )
        return result


class _Opened(NamedTuple):
    """A note's catalog row and its file's text, read but not parsed."""

    entry: CatalogEntry
    text: str
    digest: str  # content_hash(text)


@dataclass(frozen=True)
class _Staged:
    """An update whose file is written and whose index change is queued (``ticket``; None
    when the index update was deferred)."""

    note: Note
    text: str
    ticket: int | None
    paths: list[str]


class KnowledgeService:
    def __init__(
        self,
        files: KnowledgeFiles,
        indexer: Indexer,
        graph: LinkGraph,
        agents: AgentRegistry,
        max_content_bytes: int,
        file_names: FileNames = "title",
        catalog_ready: Callable[[], None] = lambda: None,
    ) -> None:
        """``file_names``: ``title`` names a new note's file after its title (``Event
        Loop.md``, what Obsidian shows and resolves ``[[Event Loop]]`` to), ``slug`` after its
        slug (``event-loop.md``). ``catalog_ready`` raises while the catalog is being rebuilt:
        reads and lists then answer ``index_unavailable`` instead of ``doc_not_found`` or a
        short list (writes wait for the rebuild on the indexer lock)."""
        self._catalog_ready = catalog_ready
        self.files = files
        self.indexer = indexer
        self.catalog = indexer.catalog
        self.graph = graph
        self.agents = agents
        self.max_content_bytes = max_content_bytes
        self.file_names = file_names
        self._parsed = ParsedNotes()  # notes read lately, for the reads that follow

    async def write(self, request: WriteRequest) -> dict[str, Any]:
        """Create a note (no ``id``) or update one (partial: omitted fields are kept).

        Raises InvalidInput/InvalidPath/ContentTooLarge for bad input (nothing is written),
        DocNotFound for an unknown id, VersionConflict when ``expected_version`` is stale.
        """
        self._validate(request)
        if request.id is not None:
            request = replace(request, id=require_valid_id(request.id))
        work = self._create if request.id is None else self._update
        result = await asyncio.to_thread(work, request)
        # Only a write that happened records its agent: a failed call changes nothing.
        await self.agents.touch(request.agent)
        return result

    async def write_batch(
        self, agent: str, requests: Sequence[WriteRequest]
    ) -> tuple[WriteOutcome, ...]:
        """Create or update many notes for ``agent``; one outcome per request, in order.

        Each request is checked whole and applied as :meth:`write` would; one that fails (bad
        input, unknown id, stale ``expected_version``) gets an ``error`` outcome and changes
        nothing, without stopping the others. New files are made durable together, and every
        written note is searchable by full text, with one commit, when this returns.
        """
        require_text("agent", agent)
        requests = [replace(r, agent=agent) for r in requests]
        outcomes = await asyncio.to_thread(self._write_batch, requests)
        if any(outcome.status != "error" for outcome in outcomes):
            await self.agents.touch(agent)
        return outcomes

    async def read(
        self, note_id: str | None = None, path: str | None = None, max_length: int | None = None
    ) -> dict[str, Any]:
        """A note's content and metadata; raises DocNotFound, InvalidInput, IndexUnavailable.

        A note read lately (its parse kept by the memo) is answered on the event loop, without
        the hop to a worker thread: its catalog row through the loop's own query-only
        connection, one small file read, the text's hash and the links the graph holds. Any
        part that would wait, parse or fail sends the read to a worker thread as before."""
        self._catalog_ready()
        opened = None
        if note_id:
            note_id = require_valid_id(note_id)
            opened = self._open_now(note_id)
            held = None if opened is None else self._read_held(opened, max_length)
            if held is not None:
                return held
        return await asyncio.to_thread(self._read, note_id, path, max_length, opened)

    async def delete(self, note_id: str, agent: str | None = None) -> dict[str, Any]:
        """Remove the note's file and every index entry for it; raises DocNotFound."""
        note_id = require_valid_id(note_id)
        if agent:
            require_text("agent", agent)
        result = await asyncio.to_thread(self._delete, note_id)
        if agent:
            await self.agents.touch(agent)
        return result

    async def list(self, query: ListQuery) -> dict[str, Any]:
        self._catalog_ready()
        if query.filter.path_prefix:
            cleaned = replace(query.filter, path_prefix=clean_prefix(query.filter.path_prefix))
            query = replace(query, filter=cleaned)
        if query.filter.tags:
            query = replace(
                query, filter=replace(query.filter, tags=filter_tags(query.filter.tags))
            )
        summaries, total = await self.catalog.summaries(query)
        return {"items": [summary.as_dict() for summary in summaries], "total": total}

    # -- synchronous bodies, run in worker threads ------------------------------------

    def _create(self, request: WriteRequest) -> dict[str, Any]:
        new = self._new_note(request)
        marked: list[str] = []  # every path marked before its file could appear
        with self.indexer.lock:
            try:
                path = self._create_files([new.file], marked)[0]
            except Exception as exc:
                self.indexer.abandon_write(marked, exc)
                raise
            ticket = self._stage(new.note.with_changes(path=path), new.text)
        return new.result(path, self.indexer.commit_written(ticket, marked))

    def _new_note(self, request: WriteRequest) -> _NewNote:
        """The note a create request describes, checked whole, before it has a file."""
        assert request.title is not None and request.content is not None
        directory = self.files.check_dir(request.path)
        stamp = now_iso()
        note = Note(
            id=new_id(),
            title=request.title.strip(),
            content=request.content,
            path="",
            author=request.agent,
            created_at=stamp,
            updated_at=stamp,
            tags=clean_tags(request.tags or ()),
            confidence=1.0 if request.confidence is None else request.confidence,
            aliases=_unique(request.aliases or ()),
            source=request.source,
            supersedes=request.supersedes,
            metadata=apply_change(CURRENT_METADATA, request.metadata),
        )
        stem = title_file_stem(note.title) if self.file_names == "title" else slugify(note.title)
        return _NewNote(note, render_note(note), directory, stem)

    def _update(self, request: WriteRequest) -> dict[str, Any]:
        staged = self._update_staged(request)
        indexed = self.indexer.commit_written(staged.ticket, staged.paths)
        return _result("updated", staged.note, staged.text, indexed)

    def _update_staged(self, request: WriteRequest) -> _Staged:
        """Write the updated file and stage its index change; the caller commits."""
        assert request.id is not None
        with self.indexer.lock:
            current, current_text, current_hash = self._load(request.id)
            if request.expected_version and request.expected_version != version_of(current_hash):
                raise VersionConflict(
                    f"note {current.id} changed since version {request.expected_version}; "
                    "read it again and retry",
                    current_version=version_of(current_hash),
                )
            note = self._merge(current, request)
            text = render_changes(current_text, current, note)
            marked = [current.path]
            self.indexer.begin_write(marked)
            try:
                if note.path != current.path:
                    directory, _, name = note.path.rpartition("/")
                    new_file = NewFile(directory, name[:-3], text)
                    new_path = self._create_files([new_file], marked)[0]
                    note = note.with_changes(path=new_path)
                    self.files.delete(current.path)
                else:
                    self.files.replace(note.path, text)
            except Exception as exc:
                self.indexer.abandon_write(marked, exc)
                raise
            ticket = self._stage(note, text)
        return _Staged(note, text, ticket, marked)

    def _write_batch(self, requests: Sequence[WriteRequest]) -> tuple[WriteOutcome, ...]:
        outcomes: dict[int, WriteOutcome] = {}
        updates: dict[int, _Staged] = {}
        creates: dict[int, _NewNote] = {}
        for index, request in enumerate(requests):
            try:
                self._validate(request)
                if request.id is None:
                    creates[index] = self._new_note(request)
                else:
                    checked = replace(request, id=require_valid_id(request.id))
                    updates[index] = self._update_staged(checked)
            except LithosError as exc:
                outcomes[index] = WriteOutcome.failed(exc)
        created: dict[int, str] = {}
        ticket: int | None = None
        marked: list[str] = []  # every new name, marked before its file could appear
        if creates:
            with self.indexer.lock:
                try:
                    paths = self._create_files([new.file for new in creates.values()], marked)
                except Exception as exc:
                    self.indexer.abandon_write(marked, exc)
                    raise
                created = dict(zip(creates, paths, strict=True))
                ticket = self.indexer.stage_written(
                    [
                        self._indexed(new.note.with_changes(path=path), new.text)
                        for new, path in zip(creates.values(), paths, strict=True)
                    ]
                )
        tickets = [s.ticket for s in updates.values() if s.ticket is not None]
        tickets += [ticket] if ticket is not None else []
        written = [p for s in updates.values() for p in s.paths] + marked
        # Always called, so every mark begun above is ended, even when nothing was staged.
        committed = self.indexer.commit_written(max(tickets) if tickets else None, written)
        for index, update in updates.items():
            indexed = committed and update.ticket is not None
            result = _result("updated", update.note, update.text, indexed)
            outcomes[index] = WriteOutcome.of(result)
        for index, path in created.items():
            indexed = committed and ticket is not None
            outcomes[index] = WriteOutcome.of(creates[index].result(path, indexed))
        return tuple(outcomes[index] for index in range(len(requests)))

    def _merge(self, current: Note, request: WriteRequest) -> Note:
        contributors = current.contributors
        if request.agent != current.author and request.agent not in contributors:
            contributors = (*contributors, request.agent)
        path = current.path
        if request.path is not None:
            directory = self.files.check_dir(request.path)
            current_dir = current.path.rpartition("/")[0]
            if directory != current_dir:
                name = current.path.rpartition("/")[2]
                path = f"{directory}/{name}" if directory else name
        return current.with_changes(
            title=current.title if request.title is None else request.title.strip(),
            content=current.content if request.content is None else request.content,
            tags=current.tags if request.tags is None else clean_tags(request.tags),
            confidence=current.confidence if request.confidence is None else request.confidence,
            aliases=current.aliases if request.aliases is None else _unique(request.aliases),
            source=current.source if request.source is None else request.source,
            supersedes=current.supersedes if request.supersedes is None else request.supersedes,
            metadata=apply_change(current.metadata, request.metadata),
            contributors=contributors,
            updated_at=now_iso(),
            path=path,
        )

    def _create_files(
        self, files: Sequence[NewFile], marked: MutableSequence[str]
    ) -> Sequence[str]:
        """Create the files (durable together), each under a free name, marking each name
        durably (``Indexer.begin_write``) before a file may appear under it; ``marked``
        collects the names."""

        def mark(paths: Sequence[str]) -> None:
            self.indexer.begin_write(paths)
            marked.extend(paths)

        if self.file_names == "title":
            paths = self.files.create_many(files, separator=" ", ignore_case=True, before_link=mark)
        else:
            paths = self.files.create_many(files, before_link=mark)
        return tuple(path for path in paths if path is not None)  # they rename: never None

    def _stage(self, note: Note, text: str) -> int | None:
        """Queue the index update of a note whose file was just written (None: deferred)."""
        return self.indexer.stage_written([self._indexed(note, text)])

    def _indexed(self, note: Note, text: str) -> IndexedFile:
        info = self.files.stat(note.path)
        assert info is not None
        return IndexedFile(note, content_hash(text), info)

    def _load(
        self, note_id: str, memo: ParsedNotes | None = None, opened: _Opened | None = None
    ) -> tuple[Note, str, str]:
        """The note with this id, its file's text and the text's content hash, parsed
        through ``memo`` if given; ``opened``: its row and text, already read."""
        if opened is None:
            entry = self.catalog.get(note_id)
            if entry is None:
                raise DocNotFound(f"no note with id {note_id}")
            opened = self._open(entry)
        entry, text, digest = opened
        try:
            if memo is None:
                note = parse_note(text, entry.path, entry.created_at)
            else:
                note = memo.parse(text, digest, entry.path, entry.created_at)
        except FrontmatterError as exc:
            raise NoteUnreadable(f"note {note_id} has broken frontmatter: {exc}") from exc
        # A person's file has no id of its own: its identity lives in the identity map.
        return note.with_changes(id=entry.id), text, digest

    def _open(self, entry: CatalogEntry) -> _Opened:
        """The note's row and its file's text; raises DocNotFound (the note forgotten) when
        the file is gone."""
        try:
            text = self.files.read_text(entry.path)
        except FileNotFoundError:
            self.indexer.forget(entry.id)
            raise DocNotFound(f"no note with id {entry.id} (its file is gone)") from None
        return _Opened(entry, text, content_hash(text))

    def _open_now(self, note_id: str) -> _Opened | None:
        """The note's row and text read without waiting (on the event loop), or None when
        the catalog is locked, the note is unknown or long, or its file unreadable."""
        entry = self.catalog.get_now(note_id)
        if entry is None or entry.size > KEPT_CHARS:  # a longer text is never kept parsed
            return None
        try:
            # Never blocks: anything but a small regular file goes to the worker thread.
            text = self.files.read_text_now(entry.path, 4 * KEPT_CHARS)
        except (OSError, ValueError):  # the worker thread's read meets it again, and answers
            return None
        if text is None or len(text) > KEPT_CHARS:
            return None
        return _Opened(entry, text, content_hash(text))

    def _read_held(self, opened: _Opened, max_length: int | None) -> dict[str, Any] | None:
        """The read of an opened note whose parse the memo keeps and whose links the graph
        holds, else None (never parses, never waits)."""
        entry = opened.entry
        note = self._parsed.held(opened.digest, entry.path, entry.created_at)
        links = None if note is None else self.graph.outgoing_links_held(entry.id)
        if note is None or links is None:
            return None
        return _read_result(note.with_changes(id=entry.id), opened.digest, max_length, links)

    def _read(
        self,
        note_id: str | None,
        path: str | None,
        max_length: int | None,
        opened: _Opened | None = None,
    ) -> dict[str, Any]:
        if note_id:
            note, _, digest = self._load(require_valid_id(note_id), self._parsed, opened)
        elif path:
            relative = self.files.check_file(path if path.endswith(".md") else f"{path}.md")
            entry = self.catalog.by_path(relative)
            if entry is None and self.files.exists(relative):
                # Dropped in by hand moments ago: index it now rather than wait for the watcher.
                self.indexer.index_path(relative)
                entry = self.catalog.by_path(relative)
            if entry is None:
                problem = self.catalog.problem(relative)
                if problem is not None:
                    kind, message = problem
                    raise NoteUnreadable(f"{relative} is not a readable note ({kind}): {message}")
                raise DocNotFound(f"no note at {relative}")
            note, _, digest = self._load(entry.id, self._parsed, self._open(entry))
        else:
            raise InvalidInput("give either id or path")
        return _read_result(note, digest, max_length, self.graph.outgoing_links(note.id))

    def _delete(self, note_id: str) -> dict[str, Any]:
        with self.indexer.lock:
            entry = self.catalog.get(note_id)
            if entry is None:
                raise DocNotFound(f"no note with id {note_id}")
            self.indexer.begin_write([entry.path])
            try:
                self.files.delete(entry.path)
            except Exception as exc:
                self.indexer.abandon_write([entry.path], exc)
                raise
            ticket = self.indexer.stage_forget_written(note_id, entry.path)
        indexed = self.indexer.commit_written(ticket, [entry.path])
        return {"success": True, "id": note_id, "path": entry.path, **_indexing(indexed)}

    def _validate(self, request: WriteRequest) -> None:
        if not request.agent or not request.agent.strip():
            raise InvalidInput("agent must not be empty")
        if request.id is None and (request.title is None or request.content is None):
            raise InvalidInput("a new note needs both title and content")
        if request.title is not None and not request.title.strip():
            raise InvalidInput("title must not be empty")
        if request.title is not None and len(request.title) > MAX_TITLE:
            raise InvalidInput(f"title is longer than {MAX_TITLE} characters")
        if request.confidence is not None and not 0.0 <= request.confidence <= 1.0:
            raise InvalidInput("confidence must be between 0 and 1")
        if request.content is not None:
            size = len(request.content.encode("utf-8"))
            if size > self.max_content_bytes:
                raise ContentTooLarge(
                    f"content is {size} bytes; the limit is {self.max_content_bytes}"
                )
        if request.path is not None:
            self.files.check_dir(request.path)
        if request.supersedes is not None:
            require_valid_id(request.supersedes)
        if request.tags is not None:
            clean_tags(request.tags)
        # Rules that depend on the note (a task note needs its task_id) are checked when the
        # change is applied, still before anything is written.
        check_change(request.metadata)


def _unique(values: Sequence[str]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for value in values:
        cleaned = value.strip()
        if cleaned:
            seen.setdefault(cleaned, None)
    return tuple(seen)


def _read_result(
    note: Note, digest: str, max_length: int | None, links: list[dict[str, Any]]
) -> dict[str, Any]:
    """What lithos_read answers for a parsed note (``digest``: its text's content hash)."""
    content, truncated = truncate(note.content, max_length) if max_length else (note.content, False)
    return {
        "id": note.id,
        "title": note.title,
        "path": note.path,
        "content": content,
        "truncated": truncated,
        "version": version_of(digest),
        "metadata": _metadata(note),
        "links": links,
    }


def _metadata(note: Note) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "author": note.author,
        "contributors": list(note.contributors),
        "created_at": note.created_at,
        "updated_at": note.updated_at,
        "tags": list(note.tags),
        "confidence": note.confidence,
        "aliases": list(note.aliases),
        "source": note.source,
        "supersedes": note.supersedes,
    }
    meta.update({k: _plain(v) for k, v in note.extra.items()})
    meta.update(metadata_as_dict(note.metadata, note.path))
    return meta


def _plain(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


def _result(status: str, note: Note, text: str, indexed: bool) -> dict[str, Any]:
    return {
        "status": status,
        "id": note.id,
        "path": note.path,
        "version": version_of(content_hash(text)),
        **_indexing(indexed),
    }


def _indexing(indexed: bool) -> dict[str, Any]:
    """``indexing``: ``done`` when every index shows the change, ``pending`` when the file is
    saved but an index update failed and is being retried in the background."""
    if indexed:
        return {"indexing": "done"}
    return {
        "indexing": "pending",
        "warnings": [
            "the note is saved; updating the search indexes failed and is retried in the "
            "background, so search may show the previous version for a while"
        ],
    }

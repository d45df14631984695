"""Import a folder of Markdown files into the knowledge base (``lithos import FOLDER``).

People's files are theirs: an imported file is copied byte for byte, with nothing added (no
``id:`` line, no other frontmatter). A file that carries no id gets one in
``.lithos/identities.db``, as a file written by hand into the knowledge directory does. The
source folder is only read; a file whose target already exists is left alone and reported,
never overwritten. A folder already inside the knowledge directory is indexed where it is,
nothing copied.

Copies are written a batch at a time, made durable together (their fsyncs issued at once), and
each batch is indexed with one identity transaction, one catalog transaction and one full-text
commit, so the notes are searchable by full text when the import returns. Their chunks are left
pending: the server embeds them in the background.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from lithos.domain.frontmatter import FrontmatterError
from lithos.domain.notes import is_valid_id, note_id_of, split_frontmatter
from lithos.errors import InvalidInput, InvalidPath
from lithos.services.indexing import Indexer, WrittenText
from lithos.store.markdown import KnowledgeFiles, NewFile, note_text

BATCH = 1000  # files per durable write and full-text commit
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class SkippedFile:
    """A source file that was not imported, and why: ``exists``, ``invalid_path``,
    ``too_large``, ``unreadable``, ``frontmatter`` or ``duplicate_id``."""

    path: str
    reason: str
    message: str


@dataclass
class ImportReport:
    files: int = 0
    imported: int = 0
    in_place: bool = False
    seconds: float = 0.0
    skipped: list[SkippedFile] = field(default_factory=list)

    @property
    def notes_per_s(self) -> float:
        return round(self.imported / self.seconds, 1) if self.seconds > 0 else 0.0

    def skip(self, path: str, reason: str, message: str) -> None:
        self.skipped.append(SkippedFile(path, reason, message))


@dataclass(frozen=True)
class _Copy:
    source: str  # relative to the source folder
    new_file: NewFile
    note_id: str | None  # the id the file carries, if valid
    written: WrittenText  # its text and split frontmatter, indexed without reading it again


class Importer:
    def __init__(self, files: KnowledgeFiles, indexer: Indexer, max_file_bytes: int) -> None:
        self.files = files
        self.indexer = indexer
        self.max_file_bytes = max_file_bytes

    def import_folder(
        self, source: Path, into: str = "", progress: Progress | None = None
    ) -> ImportReport:
        """Copy every Markdown file under ``source`` into the folder ``into`` of the knowledge
        base and index it; a ``source`` inside the knowledge directory is indexed in place.
        Raises InvalidInput when ``source`` is not a folder (or ``into`` is given for one
        inside the knowledge directory), InvalidPath for a bad ``into``."""
        root = source.expanduser().resolve()
        if not root.is_dir():
            raise InvalidInput(f"not a folder: {source}")
        started = time.perf_counter()
        report = ImportReport()
        if root == self.files.root or self.files.root in root.parents:
            if into:
                raise InvalidInput(
                    "the folder is inside the knowledge directory and is indexed where it is: "
                    "--into does not apply"
                )
            self._index_in_place(root, report, progress)
        else:
            self._copy_all(root, self.files.check_dir(into), report, progress)
        report.seconds = round(time.perf_counter() - started, 3)
        return report

    # -- a folder outside the knowledge directory: copies ----------------------------------

    def _copy_all(
        self, root: Path, target: str, report: ImportReport, progress: Progress | None
    ) -> None:
        sources = sorted(_markdown_files(root))
        report.files = len(sources)
        folders: dict[str, str | InvalidPath] = {}
        claimed: set[str] = set()  # ids carried by files of this import
        done = 0  # files of the batches written and staged, the last one not yet committed
        # A batch's full-text commit runs while the next batch is read and written; progress
        # counts the files of committed batches; the last commit ends before the import does.
        with ThreadPoolExecutor(1, thread_name_prefix="lithos-import-commit") as committer:
            committing: Future[None] | None = None
            for start in range(0, len(sources), BATCH):
                batch = self._batch(
                    root, sources[start : start + BATCH], target, folders, claimed, report
                )
                staged = self._write(batch, report)
                if committing is not None:
                    committing.result()
                    if progress:
                        progress(done, len(sources))
                committing = committer.submit(self.indexer.commit_paths, *staged)
                done = min(start + BATCH, len(sources))
            if committing is not None:
                committing.result()
                if progress:
                    progress(done, len(sources))

    def _batch(
        self,
        root: Path,
        sources: list[str],
        target: str,
        folders: dict[str, str | InvalidPath],
        claimed: set[str],
        report: ImportReport,
    ) -> list[_Copy]:
        """The copies to make of these source files (those that cannot be notes reported)."""
        prepared = [
            copy
            for relative in sources
            if (copy := self._prepare(root, relative, target, folders, claimed, report))
        ]
        taken = self.indexer.catalog.get_many([c.note_id for c in prepared if c.note_id])
        batch = []
        for copy in prepared:
            if copy.note_id in taken:
                message = f"id {copy.note_id} is already used by a note"
                report.skip(copy.source, "duplicate_id", message)
            else:
                batch.append(copy)
        return batch

    def _prepare(
        self,
        root: Path,
        relative: str,
        target: str,
        folders: dict[str, str | InvalidPath],
        claimed: set[str],
        report: ImportReport,
    ) -> _Copy | None:
        """The copy to make of one source file, or None (reported) when it cannot be a note."""
        parent, _, name = relative.rpartition("/")
        directory = self._folder(target, parent, folders)
        if isinstance(directory, InvalidPath):
            report.skip(relative, "invalid_path", directory.message)
            return None
        try:
            self.files.check_name(name)  # its folder is checked above; a new name is no link
        except InvalidPath as exc:
            report.skip(relative, "invalid_path", exc.message)
            return None
        try:
            with open(f"{root}/{relative}", "rb", buffering=0) as file:  # one open: stat, read
                size = os.fstat(file.fileno()).st_size
                if size > self.max_file_bytes:
                    message = f"{size} bytes; notes are limited to {self.max_file_bytes}"
                    report.skip(relative, "too_large", message)
                    return None
                data = file.read()
            text = note_text(data)  # as the indexer would read the copy
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else str(exc)
            report.skip(relative, "unreadable", str(reason))
            return None
        try:
            parts = split_frontmatter(text)
        except FrontmatterError as exc:
            report.skip(relative, "frontmatter", str(exc))
            return None
        carried = note_id_of(parts[0])
        note_id = carried if is_valid_id(carried) else None
        if note_id is not None:
            if note_id in claimed:
                report.skip(relative, "duplicate_id", f"id {note_id} is already used by a note")
                return None
            claimed.add(note_id)
        new_file = NewFile(directory, name[:-3], data, rename=False)
        return _Copy(relative, new_file, note_id, WrittenText(text, parts))

    def _folder(
        self, target: str, parent: str, folders: dict[str, str | InvalidPath]
    ) -> str | InvalidPath:
        """The checked knowledge folder for a source folder (checked once: a check resolves
        every segment)."""
        if parent not in folders:
            try:
                folders[parent] = self.files.check_dir("/".join(p for p in (target, parent) if p))
            except InvalidPath as exc:
                folders[parent] = exc
        return folders[parent]

    def _write(self, batch: list[_Copy], report: ImportReport) -> tuple[int, list[str]]:
        """Write the batch's copies (durable when this returns) and stage their indexing:
        searchable, the full-text commit not made yet. Returns the ticket and the paths for
        :meth:`Indexer.commit_paths`."""
        if not batch:
            return 0, []
        with self.indexer.lock, _collection_paused():
            paths = self.files.create_many([copy.new_file for copy in batch])
            written: dict[str, WrittenText] = {}
            for copy, path in zip(batch, paths, strict=True):
                if path is None:
                    message = "a file with that name is already in the knowledge directory"
                    report.skip(copy.source, "exists", message)
                else:
                    written[path] = copy.written
            indexed, ticket = self.indexer.stage_paths(list(written), written=written)
        report.imported += len(indexed)
        return ticket, list(written)

    # -- a folder inside the knowledge directory: indexed where it is ----------------------

    def _index_in_place(self, root: Path, report: ImportReport, progress: Progress | None) -> None:
        prefix = root.relative_to(self.files.root).as_posix()
        paths = [
            relative if prefix == "." else f"{prefix}/{relative}"
            for relative in sorted(_markdown_files(root))
        ]
        report.files = len(paths)
        report.in_place = True
        for start in range(0, len(paths), BATCH):
            batch = paths[start : start + BATCH]
            self.indexer.sync_paths(batch)
            problems = {p["path"]: p for p in self.indexer.catalog.problems()}
            for path in batch:
                if path in problems:
                    report.skip(path, problems[path]["kind"], problems[path]["message"])
                elif self.indexer.catalog.by_path(path) is not None:
                    report.imported += 1
            if progress:
                progress(min(start + BATCH, len(paths)), len(paths))


def _markdown_files(root: Path, prefix: str = "") -> Iterator[str]:
    """``*.md`` files below ``root`` as relative POSIX paths, skipping hidden files and
    folders and symlinks, as the knowledge directory's own scan does."""
    try:
        entries = list(os.scandir(root / prefix if prefix else root))
    except OSError:  # a folder removed or unreadable meanwhile: as os.walk, pass over it
        return
    for entry in entries:
        name = entry.name
        if name.startswith(".") or entry.is_symlink():
            continue
        if entry.is_dir():
            yield from _markdown_files(root, f"{prefix}{name}/")
        elif name.endswith(".md"):
            yield f"{prefix}{name}"


@contextmanager
def _collection_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for one batch. A batch allocates hundreds of
    thousands of objects, nearly all freed by reference counting, which trigger collections
    that each traverse every object the process holds (~6 % of the import's CPU); the
    collector resumes after the batch and finds what cycles there are then."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()

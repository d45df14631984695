"""The knowledge directory: Markdown files, the source of truth.

Every write is atomic and durable: the text goes to a hidden temporary file in the same
directory, is fsynced, then renamed (or hard-linked, for a create that must not overwrite) into
place, and the directory is fsynced. A crash leaves either the old file or the new one, never a
torn note, and a write that returned is on disk. A batch (:meth:`KnowledgeFiles.create_many`)
writes all its texts first and fsyncs them together, from several threads, before linking any
of them into place.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from lithos.errors import InvalidPath

_SEGMENT = re.compile(r"^[^\x00-\x1f<>:\"|?*\\]+$")
MAX_SEGMENT_BYTES = 255  # NAME_MAX of every common file system
TEMP_PREFIX = ".lithos-tmp-"
# fsyncs issued at once for a batch: the file system joins concurrent fsyncs into shared journal
# commits, so 16 in flight cost ~0.16 ms a file on ext4 here against ~1.6 ms one after another.
SYNC_THREADS = 16


def note_text(data: bytes) -> str:
    """A note file's bytes as the indexes read it: UTF-8 with universal newlines (``\\r\\n``
    and ``\\r`` read as ``\\n``, as :meth:`Path.read_text` does), so a text its writer holds
    and the same file read back hash alike. Raises ``UnicodeDecodeError``."""
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


@dataclass(frozen=True)
class NewFile:
    """A file for :meth:`KnowledgeFiles.create_many`: ``stem.md`` in the checked folder
    ``directory`` holding ``text`` (bytes are written as they are). When the name is taken,
    ``rename`` picks the next free name as :meth:`KnowledgeFiles.create` does; otherwise the
    file is not created."""

    directory: str
    stem: str
    text: str | bytes
    rename: bool = True

    def path(self, attempt: int = 1, separator: str = "-") -> str:
        """The relative path of the ``attempt``-th name tried: ``stem.md``, then
        ``stem-2.md``..."""
        name = f"{self.stem}.md" if attempt == 1 else f"{self.stem}{separator}{attempt}.md"
        return f"{self.directory}/{name}" if self.directory else name


@dataclass(frozen=True)
class FileInfo:
    path: str  # relative to the knowledge directory, forward slashes
    mtime_ns: int
    size: int


class KnowledgeFiles:
    """Reads and writes notes under ``root``; never touches anything outside it."""

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root.resolve()
        self.reads = 0  # files read by read_text: lets tests see what a check read again

    def check_dir(self, subdir: str | None) -> str:
        """Validate a caller-given subdirectory; return it normalised ("" for the root).

        Raises InvalidPath for absolute paths, ``..``, hidden or odd segments, or a path that
        leaves the knowledge directory through a symlink.
        """
        if not subdir or not subdir.strip().strip("/"):
            return ""
        raw = subdir.strip().replace("\\", "/")
        if raw.startswith("/") or re.match(r"^[A-Za-z]:", raw):
            raise InvalidPath(f"path must be relative to the knowledge directory: {subdir!r}")
        parts = [p for p in PurePosixPath(raw).parts if p not in ("", ".")]
        for part in parts:
            _check_segment(part, subdir)
        if parts and parts[-1].endswith(".md"):
            raise InvalidPath(
                f"path names a folder, not a file ({subdir!r}); the file name comes from the title"
            )
        normalised = "/".join(parts)
        self._require_inside(self.root / normalised, subdir)
        return normalised

    def check_name(self, name: str) -> None:
        """Validate a note's file name alone (``Title.md``), for a folder checked already."""
        if not name.endswith(".md") or not name[:-3]:
            raise InvalidPath(f"a note file name must end in .md: {name!r}")
        _check_segment(name, name)

    def check_file(self, path: str) -> str:
        """Validate a note's relative file path (must end in .md); return it normalised."""
        cleaned = path.strip().replace("\\", "/")
        if not cleaned.endswith(".md"):
            raise InvalidPath(f"a note path must end in .md: {path!r}")
        parent, _, name = cleaned.rpartition("/")
        if not name[:-3]:
            raise InvalidPath(f"invalid note file name: {path!r}")
        _check_segment(name, path)
        directory = self.check_dir(parent)
        relative = f"{directory}/{name}" if directory else name
        self._require_inside(self.root / relative, path)
        return relative

    def absolute(self, relative: str) -> Path:
        return self.root / relative

    def read_text(self, relative: str) -> str:
        """The note file's text (:func:`note_text`). The open never blocks, and anything but a
        regular file (a FIFO or device put where a note was) is refused as
        ``FileNotFoundError``, so no reader can hang on it; raises ``OSError`` and
        ``UnicodeDecodeError``."""
        with os.fdopen(self._open_regular(relative), "rb") as file:
            self.reads += 1
            return note_text(file.read())

    def read_text_now(self, relative: str, max_bytes: int) -> str | None:
        """:meth:`read_text` for a caller that must not wait (the event loop): None, without
        reading, when the file holds more than ``max_bytes``."""
        with os.fdopen(self._open_regular(relative), "rb") as file:
            if os.fstat(file.fileno()).st_size > max_bytes:
                return None
            self.reads += 1
            data = file.read(max_bytes + 1)  # one byte more: a file grown since is refused too
        return None if len(data) > max_bytes else note_text(data)

    def _open_regular(self, relative: str) -> int:
        """A descriptor of the regular file at ``relative``, opened without blocking."""
        fd = os.open(self.root / relative, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise FileNotFoundError(errno.ENOENT, "not a regular file")
        return fd

    def exists(self, relative: str) -> bool:
        return (self.root / relative).is_file()

    def create(
        self,
        directory: str,
        stem: str,
        text: str,
        separator: str = "-",
        ignore_case: bool = False,
        before_link: Callable[[Sequence[str]], None] | None = None,
    ) -> str:
        """Write a new file named ``stem.md`` in ``directory``, or ``stem-2.md``... if taken
        (``stem 2.md`` with ``separator=" "``). With ``ignore_case`` a name that differs from an
        existing one only in case counts as taken: Obsidian, macOS and Windows treat them as one.
        ``before_link`` is told each relative path before the file may appear under it.

        Never overwrites: the final step is a hard link that fails if the name exists, so two
        concurrent creators of the same title each get their own file.
        """
        new = NewFile(directory, stem, text)
        path = self.create_many([new], separator, ignore_case, before_link)[0]
        assert path is not None  # renamed rather than refused
        return path

    def create_many(
        self,
        files: Sequence[NewFile],
        separator: str = "-",
        ignore_case: bool = False,
        before_link: Callable[[Sequence[str]], None] | None = None,
    ) -> list[str | None]:
        """Create every file as :meth:`create` does (``before_link`` too); returns each one's
        relative path, or None where the name was taken and the file does not ``rename``. All
        texts are on disk before any name points at one, and every file is durable when this
        returns. Nothing is overwritten; on an error no half-written file is left under a
        note's name. ``before_link`` is told every first-choice name at once, after the texts
        are durable and before the first link, then each later name tried on its own."""
        temps: list[Path] = []
        made: set[str] = set()  # folders made (or found) by this call: one mkdir each
        try:
            for new in files:
                folder = self.root / new.directory
                if new.directory not in made:
                    folder.mkdir(parents=True, exist_ok=True)
                    made.add(new.directory)
                temps.append(self._write_temp(folder, new.text, sync=len(files) == 1))
            if len(files) > 1:
                _fsync_all(temps)
            if before_link is not None:
                before_link([new.path() for new in files])
            taken: dict[str, set[str]] = {}
            paths = []
            for temp, new in zip(temps, files, strict=True):
                if ignore_case and new.directory not in taken:
                    folder = self.root / new.directory
                    taken[new.directory] = {name.casefold() for name in os.listdir(folder)}
                folded = taken.get(new.directory)
                paths.append(self._link(temp, new, separator, folded, before_link))
            _fsync_all(self.root / directory for directory in {new.directory for new in files})
            return paths
        finally:
            for temp in temps:
                temp.unlink(missing_ok=True)

    def _link(
        self,
        temp: Path,
        new: NewFile,
        separator: str,
        taken: set[str] | None,
        before_link: Callable[[Sequence[str]], None] | None,
    ) -> str | None:
        """Hard-link ``temp`` to the first free name for ``new``; ``taken`` (folded names in
        its folder, when case is ignored) gains the name used."""
        folder = self.root / new.directory
        for attempt in range(1, 10_000 if new.rename else 2):
            relative = new.path(attempt, separator)
            name = relative.rpartition("/")[2]
            if taken is not None and name.casefold() in taken:
                continue
            if before_link is not None and attempt > 1:  # the first choice was told before
                before_link([relative])
            try:
                os.link(temp, folder / name)
            except FileExistsError:
                continue
            if taken is not None:
                taken.add(name.casefold())
            return relative
        if not new.rename:
            return None
        raise InvalidPath(f"no free file name for {new.stem!r} in {new.directory or '.'!r}")

    def replace(self, relative: str, text: str) -> None:
        """Atomically replace an existing file's text."""
        target = self.root / relative
        temp = self._write_temp(target.parent, text)
        try:
            os.replace(temp, target)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        _fsync_dir(target.parent)

    def delete(self, relative: str) -> bool:
        target = self.root / relative
        try:
            target.unlink()
        except FileNotFoundError:
            return False
        _fsync_dir(target.parent)
        return True

    def stat(self, relative: str) -> FileInfo | None:
        try:
            st = (self.root / relative).stat()
        except FileNotFoundError:
            return None
        return FileInfo(relative, st.st_mtime_ns, st.st_size)

    def scan(self) -> Iterator[FileInfo]:
        """Every ``*.md`` file below root in name order, skipping hidden files and folders and
        symlinks (a link could pull a file from outside the knowledge directory into the
        index). One ``scandir`` per folder and one ``stat`` per note file."""
        return self._scan("", str(self.root))

    def _scan(self, prefix: str, folder: str) -> Iterator[FileInfo]:
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError:  # a folder removed or unreadable meanwhile: as os.walk, pass over it
            return
        folders = []
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False):
                folders.append(entry)
            elif name.endswith(".md") and not entry.is_symlink():
                try:
                    st = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                yield FileInfo(f"{prefix}{name}", st.st_mtime_ns, st.st_size)
        for entry in folders:
            yield from self._scan(f"{prefix}{entry.name}/", entry.path)

    def remove_temp_files(self) -> int:
        """Delete temporary files a killed write left behind; call only with no writer running."""
        removed = 0
        for leftover in self.root.rglob(f"{TEMP_PREFIX}*"):
            leftover.unlink(missing_ok=True)
            removed += 1
        return removed

    def relative(self, absolute: Path) -> str | None:
        """The knowledge-relative path of an absolute path, or None if outside/irrelevant."""
        if absolute.is_symlink():
            return None
        try:
            rel = absolute.resolve().relative_to(self.root).as_posix()
        except ValueError:
            return None
        parts = rel.split("/")
        if not rel.endswith(".md") or any(p.startswith(".") for p in parts):
            return None
        return rel

    def _require_inside(self, candidate: Path, original: str) -> None:
        try:
            resolved = candidate.resolve()
        except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop
            raise InvalidPath(f"path cannot be resolved: {original!r}") from exc
        if resolved != self.root and self.root not in resolved.parents:
            raise InvalidPath(f"path leaves the knowledge directory: {original!r}")

    @staticmethod
    def _write_temp(folder: Path, text: str | bytes, sync: bool = True) -> Path:
        fd, name = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".md", dir=folder)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(text if isinstance(text, bytes) else text.encode("utf-8"))
                handle.flush()
                if sync:
                    os.fsync(handle.fileno())
        except BaseException:
            Path(name).unlink(missing_ok=True)
            raise
        return Path(name)


def _check_segment(part: str, original: str) -> None:
    if part == ".." or part.startswith(".") or not _SEGMENT.match(part):
        raise InvalidPath(f"invalid path segment {part!r} in {original!r}")
    if len(part.encode("utf-8", "surrogatepass")) > MAX_SEGMENT_BYTES:
        raise InvalidPath(f"path segment {part[:40]!r}... is longer than {MAX_SEGMENT_BYTES} bytes")


def _fsync_all(paths: Iterable[Path]) -> None:
    """fsync every file or folder, several at a time; raises the first failure."""
    paths = list(paths)
    if len(paths) == 1:
        _fsync_dir(paths[0])
        return
    with ThreadPoolExecutor(min(SYNC_THREADS, len(paths)), "lithos-fsync") as pool:
        list(pool.map(_fsync_dir, paths))


def _fsync_dir(folder: Path) -> None:
    """fsync a folder, or a file: opening read-only and fsyncing works for both."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

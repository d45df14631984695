"""How stores are opened, and the one place that repairs a broken derived store.

Derived stores (the catalog in ``.index/``, the full-text index in ``.tantivy/``, the vector
store in ``.vectors/``) hold nothing the Markdown files do not. When one cannot be opened, read
or written, :class:`StoreKeeper` logs it, moves its directory aside (renamed
``<dir>.broken-<UTC time>``, never deleted, so it can be examined), opens an empty store in its
place and marks it ``rebuilding`` until the caller has filled it again from the files. Each
store keeps its own directory, so the vector cache survives a broken catalog or full-text index.

Authoritative stores (everything under ``.lithos/``) are the opposite: Lithos never replaces
one by itself. :func:`open_authoritative` checks such a database when it opens and stops with a
:class:`~lithos.errors.StateCorrupt` that says what is wrong and how to restore it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, Protocol, TypedDict, TypeVar

from lithos.errors import IndexLocked, IndexUnavailable, StateCorrupt, StoreCorrupt
from lithos.store.sqlite import Database, Migration

log = logging.getLogger("lithos.stores")

State = Literal["ok", "rebuilding", "failed"]
Health = Literal["ok", "degraded", "failed", "starting"]
S = TypeVar("S", bound="DerivedStore")
T = TypeVar("T")
OnCorrupt = Callable[[StoreCorrupt], None]


class ProgressDict(TypedDict):
    done: int
    total: int


class StoreStatusDict(TypedDict, total=False):
    state: State
    reason: str
    moved_to: str
    progress: ProgressDict


@dataclass(frozen=True)
class StoreStatus:
    """One store's health. ``reason`` says why it is not ``ok``; ``moved_to`` names the
    broken copy kept for diagnosis, relative to the data directory; ``progress`` counts the
    notes a rebuild has refilled so far, ``(done, total)``."""

    state: State = "ok"
    reason: str | None = None
    moved_to: str | None = None
    progress: tuple[int, int] | None = None

    def as_dict(self) -> StoreStatusDict:
        body: StoreStatusDict = {"state": self.state}
        if self.reason:
            body["reason"] = self.reason
        if self.moved_to:
            body["moved_to"] = self.moved_to
        if self.progress is not None:
            body["progress"] = {"done": self.progress[0], "total": self.progress[1]}
        return body


class DerivedStore(Protocol):
    def close(self) -> None: ...

    def reopen(self) -> None: ...


@dataclass
class _Entry:
    name: str
    directory: Path
    in_use: Callable[[], bool]
    store: DerivedStore | None = None
    status: StoreStatus = field(default_factory=StoreStatus)
    broken: str | None = None  # why it must be moved aside; None when it is not broken


class StoreKeeper:
    """Opens the derived stores and repairs them. Thread-safe.

    ``lock`` is held while a store is swapped for an empty one, so no index update runs
    against a store half-way through its repair (the indexer's lock).
    """

    def __init__(self, data_dir: Path, lock: threading.RLock | None = None) -> None:
        self.data_dir = data_dir
        self._lock = lock or threading.RLock()
        self._entries: dict[str, _Entry] = {}
        # Guards each entry's status and broken mark; waiters for a rebuild wait on it.
        self._status_lock = threading.Condition(threading.Lock())
        self.listener: Callable[[], None] | None = None  # told when a store is reported broken

    # -- opening ------------------------------------------------------------------------

    def open(
        self,
        name: str,
        directory: Path,
        factory: Callable[[OnCorrupt], S],
        in_use: Callable[[], bool] = lambda: False,
    ) -> S:
        """Open a store with ``factory(on_corrupt)``; if it is damaged, move ``directory``
        aside and open an empty one (then the store is ``rebuilding`` until :meth:`rebuilt`).

        Raises :class:`IndexLocked` instead when another process has the store open.
        """
        entry = _Entry(name, directory, in_use)
        self._entries[name] = entry
        try:
            store = factory(self.report)
        except StoreCorrupt as exc:
            self._move_aside(entry, exc.message)
            store = factory(self.report)
        entry.store = store
        return store

    # -- failures -----------------------------------------------------------------------

    def report(self, error: StoreCorrupt) -> None:
        """Note that the store holding ``error.location`` is broken; never blocks. Ignored
        for a location no derived store owns (the caller keeps the error)."""
        entry = self._owner(error.location)
        if entry is None:
            return
        with self._status_lock:
            if entry.broken is None:
                log.error("the %s index is broken and will be rebuilt: %s", entry.name, error)
            entry.broken = error.message
            entry.status = StoreStatus("failed", error.message, entry.status.moved_to)
        if self.listener is not None:
            self.listener()

    def owns(self, error: BaseException) -> bool:
        """Whether ``error`` is a failure of a derived store this keeper can repair."""
        return isinstance(error, StoreCorrupt) and self._owner(error.location) is not None

    def broken(self) -> bool:
        """Whether some store was reported broken and is not yet moved aside."""
        with self._status_lock:
            return any(e.broken is not None for e in self._entries.values())

    # -- repair -------------------------------------------------------------------------

    def heal(self) -> list[str]:
        """Move every broken store aside and open an empty one in its place; returns their
        names. Each is then ``rebuilding`` until :meth:`rebuilt`. A store that cannot even be
        opened empty is ``failed`` and raises."""
        healed = []
        with self._lock:
            for entry in list(self._entries.values()):
                if entry.broken is None or entry.store is None:
                    continue
                reason = entry.broken
                entry.store.close()
                self._move_aside(entry, reason)
                try:
                    entry.store.reopen()
                except BaseException as exc:
                    entry.status = StoreStatus("failed", f"{reason}; reopening failed: {exc}")
                    raise
                healed.append(entry.name)
        return healed

    def rebuilding(self) -> frozenset[str]:
        """The stores moved aside and not yet refilled from the files."""
        with self._status_lock:
            return frozenset(
                e.name for e in self._entries.values() if e.status.state == "rebuilding"
            )

    def progress(self, names: Collection[str], done: int, total: int) -> None:
        """Record how far the rebuild of these ``rebuilding`` stores has come."""
        with self._status_lock:
            for name in names:
                entry = self._entries[name]
                if entry.status.state == "rebuilding":
                    entry.status = replace(entry.status, progress=(done, total))

    def rebuilt(self, only: Collection[str] | None = None) -> None:
        """The caller has brought these ``rebuilding`` stores (default: every one) in step
        with the files."""
        with self._status_lock:
            for entry in self._entries.values():
                if only is not None and entry.name not in only:
                    continue
                if entry.status.state == "rebuilding" and entry.broken is None:
                    log.info("the %s index is rebuilt", entry.name)
                    entry.status = StoreStatus("ok", moved_to=entry.status.moved_to)
            self._status_lock.notify_all()

    def wait_rebuilt(self, timeout: float) -> bool:
        """Wait until no store is ``rebuilding`` or ``failed``; False after ``timeout``."""
        with self._status_lock:
            return self._status_lock.wait_for(
                lambda: all(e.status.state == "ok" for e in self._entries.values()), timeout
            )

    def run(self, fn: Callable[[], T], only: Collection[str] | None = None) -> T:
        """Run ``fn`` (which brings the stores named in ``only``, default every one, in step
        with the files), repairing any derived store it finds broken and running it again,
        until it succeeds. A store outside ``only`` that is ``rebuilding`` stays so."""
        for _ in range(len(self._entries) + 2):
            try:
                result = fn()
            except StoreCorrupt as exc:
                if not self.owns(exc):
                    raise
                self.report(exc)
                self.heal()
                continue
            if not self.broken():
                self.rebuilt(only)
                return result
            self.heal()
        raise StoreCorrupt("the indexes keep breaking while they are rebuilt", self.data_dir)

    def require_all(self, names: Sequence[str]) -> None:
        """:meth:`require` each of ``names``: a reader filtered by the catalog needs it too."""
        for name in names:
            self.require(name)

    def require(self, name: str) -> None:
        """Raise :class:`IndexUnavailable` (with the state and progress) unless the store
        ``name`` is ``ok``: a store being refilled holds only some notes, and answering
        from it would pass a partial answer off as a whole one."""
        with self._status_lock:
            entry = self._entries.get(name)
            status = entry.status if entry is not None else StoreStatus()
        if status.state == "ok":
            return
        details = status.as_dict()
        details.pop("moved_to", None)
        done, total = status.progress or (0, 0)
        progress = f" ({done} of {total} notes)" if status.progress else ""
        raise IndexUnavailable(
            f"the {name} index is {status.state}{progress}; it is refilled from the notes in "
            "the background, try again shortly or use another search mode",
            index=name,
            **details,
        )

    def statuses(self) -> dict[str, StoreStatus]:
        with self._status_lock:
            return {name: entry.status for name, entry in self._entries.items()}

    # -- internals ----------------------------------------------------------------------

    def _owner(self, location: Path) -> _Entry | None:
        for entry in self._entries.values():
            if location == entry.directory or entry.directory in location.parents:
                return entry
        return None

    def _move_aside(self, entry: _Entry, reason: str) -> None:
        if entry.in_use():
            raise IndexLocked(
                f"The {entry.name} index is damaged ({reason}) but another Lithos process has "
                "it open. Stop that process (usually a running server) and start Lithos again."
            )
        target = _free_name(entry.directory)
        if entry.directory.exists():
            entry.directory.rename(target)
        moved = target.relative_to(self.data_dir).as_posix()
        log.warning("moved the broken %s index aside to %s: %s", entry.name, moved, reason)
        with self._status_lock:
            entry.broken = None
            entry.status = StoreStatus("rebuilding", reason, moved)
            self._status_lock.notify_all()


def overall_health(statuses: Iterable[StoreStatus], pending_updates: Collection[str]) -> Health:
    """Lithos as a whole: ``failed`` if a store is failed, ``degraded`` if one is being
    rebuilt or an index update is waiting to be retried, else ``ok``."""
    states = {status.state for status in statuses}
    if "failed" in states:
        return "failed"
    if "rebuilding" in states or pending_updates:
        return "degraded"
    return "ok"


def _free_name(directory: Path) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    target = directory.with_name(f"{directory.name}.broken-{stamp}")
    number = 1
    while target.exists():
        target = directory.with_name(f"{directory.name}.broken-{stamp}-{number}")
        number += 1
    return target


def open_authoritative(
    path: Path,
    migrations: Sequence[Migration],
    holds: str,
    data_dir: Path,
    checkpoint_aside: bool = False,
) -> Database:
    """Open a database Lithos cannot rebuild (``holds`` says what it holds), checking every
    page. A damaged one is never replaced: raises :class:`StateCorrupt` saying how to restore
    it. ``checkpoint_aside``: see :class:`Database`."""
    try:
        database = Database(path, migrations, checkpoint_aside=checkpoint_aside)
    except StoreCorrupt as exc:
        raise _state_corrupt(path, exc, holds, data_dir) from None
    try:
        database.quick_check()
    except StoreCorrupt as exc:
        database.close()
        raise _state_corrupt(path, exc, holds, data_dir) from None
    return database


def _state_corrupt(path: Path, exc: StoreCorrupt, holds: str, data_dir: Path) -> StateCorrupt:
    name = path.relative_to(data_dir).as_posix() if data_dir in path.parents else path.name
    return StateCorrupt(
        f"{name} is damaged: {exc.message}. Lithos never replaces it by itself, because it "
        f"holds {holds}, which cannot be rebuilt from the notes. Stop Lithos, then either "
        f"restore {name} from a backup (delete {name}-wal and {name}-shm beside it first) or "
        f"move it aside to start with empty state, and start Lithos again "
        "(docs/failure-modes.md)."
    )

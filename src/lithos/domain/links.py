"""Wiki-links (spec 3.4): parsing ``[[target]]`` / ``[[target|text]]`` and resolving targets.

Resolution precedence, first match wins: exact path, unique filename, UUID, unique alias,
unique title. Every step ignores case, as Obsidian does for file names. A target that matches
several notes at the step that decides it is ambiguous and unresolved.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

_WIKI_LINK = re.compile(r"\[\[([^\[\]|#]+?)(?:#[^\[\]|]*)?(?:\|[^\[\]]*)?\]\]")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")


def parse_links(content: str) -> tuple[str, ...]:
    """Distinct link targets in order of first appearance, ignoring code blocks and spans."""
    if "[[" not in content and "[`" not in content:
        # No link, even once code is cut out: only a cut inline span can join two '['.
        return ()
    text = _INLINE_CODE.sub("", _FENCE.sub("", content))
    seen: dict[str, None] = {}
    for match in _WIKI_LINK.finditer(text):
        target = match.group(1).strip()
        if target:
            seen.setdefault(target, None)
    return tuple(seen)


def normalise_target(target: str) -> str:
    """Lower-case, forward slashes, no leading ``./`` or ``/``, no ``.md`` suffix."""
    value = target.strip().replace("\\", "/").lower()
    while value.startswith("./"):
        value = value[2:]
    value = value.lstrip("/")
    return value[:-3] if value.endswith(".md") else value


def target_keys(note_id: str, path: str, aliases: Iterable[str], title: str = "") -> set[str]:
    """Every normalised target that could resolve to a note: path, file name, id, aliases,
    title."""
    key = normalise_target(path)
    keys = {key, _name(key), note_id, *(normalise_target(alias) for alias in aliases)}
    return keys | {normalise_target(title)} if title.strip() else keys


@dataclass(frozen=True)
class Resolution:
    """The outcome of resolving one target: ``note_id`` when resolved, else why not."""

    target: str
    note_id: str | None
    status: str  # "resolved" | "ambiguous" | "broken"
    candidates: tuple[str, ...] = ()


class Groups:
    """Key -> the notes under it, for keys that nearly always name one note (file names,
    titles, aliases, link targets): a lone note is held as its id, a set only for two or
    more. A set per key took 216 bytes: ~65 MB over the link tables at 100,000 notes."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: dict[str, str | set[str]] = {}

    def get(self, key: str) -> Collection[str]:
        """The notes under ``key`` (empty when none); do not change what is returned."""
        held = self._held.get(key)
        if held is None:
            return ()
        return (held,) if isinstance(held, str) else held

    def add(self, key: str, note_id: str) -> None:
        held = self._held.get(key)
        if held is None:
            self._held[key] = note_id
        elif isinstance(held, str):
            if held != note_id:
                self._held[key] = {held, note_id}
        else:
            held.add(note_id)

    def discard(self, key: str, note_id: str) -> None:
        held = self._held.get(key)
        if held is None:
            return
        if isinstance(held, str):
            if held == note_id:
                del self._held[key]
            return
        held.discard(note_id)
        if len(held) == 1:
            self._held[key] = next(iter(held))


@dataclass
class LinkResolver:
    """Lookup tables over the notes' paths, ids and aliases, kept in step note by note."""

    by_path: dict[str, str] = field(default_factory=dict)
    by_name: Groups = field(default_factory=Groups)
    by_alias: Groups = field(default_factory=Groups)
    by_title: Groups = field(default_factory=Groups)
    # Note id -> its keys (path, aliases, title); also the set of ids resolution knows.
    _keys: dict[str, tuple[str, tuple[str, ...], str]] = field(default_factory=dict)

    @classmethod
    def build(cls, notes: Iterable[tuple[str, str, Iterable[str], str]]) -> LinkResolver:
        """``notes`` yields (id, path relative to knowledge/, aliases, title)."""
        resolver = cls()
        for note_id, path, aliases, title in notes:
            resolver.add(note_id, path, aliases, title)
        return resolver

    def add(self, note_id: str, path: str, aliases: Iterable[str], title: str = "") -> None:
        """Add a note, or replace what was known of it."""
        self.remove(note_id)
        key = normalise_target(path)
        alias_keys = tuple(normalise_target(alias) for alias in aliases)
        title_key = normalise_target(title)
        self._keys[note_id] = (key, alias_keys, title_key)
        self.by_path[key] = note_id
        self.by_name.add(_name(key), note_id)
        for alias in alias_keys:
            self.by_alias.add(alias, note_id)
        if title_key:
            self.by_title.add(title_key, note_id)

    def remove(self, note_id: str) -> None:
        known = self._keys.pop(note_id, None)
        if known is None:
            return
        key, alias_keys, title_key = known
        if self.by_path.get(key) == note_id:
            del self.by_path[key]
        self.by_name.discard(_name(key), note_id)
        for alias in alias_keys:
            self.by_alias.discard(alias, note_id)
        self.by_title.discard(title_key, note_id)

    def knows(self, note_id: str) -> bool:
        """Whether ``note_id`` is the id of a note the resolver holds."""
        return note_id in self._keys

    def keys_of(self, note_id: str) -> set[str]:
        """Every normalised target that could resolve to the note: path, file name, id, aliases,
        title."""
        known = self._keys.get(note_id)
        if known is None:
            return set()
        key, alias_keys, title_key = known
        return {key, _name(key), note_id, *alias_keys} | ({title_key} if title_key else set())

    def resolve(self, target: str) -> Resolution:
        key = normalise_target(target)
        if key in self.by_path:
            return Resolution(target, self.by_path[key], "resolved")
        if "/" not in key:
            outcome = self._unique(target, self.by_name.get(key))
            if outcome:
                return outcome
        if key in self._keys:
            return Resolution(target, key, "resolved")
        outcome = self._unique(target, self.by_alias.get(key))
        outcome = outcome or self._unique(target, self.by_title.get(key))
        return outcome or Resolution(target, None, "broken")

    @staticmethod
    def _unique(target: str, matches: Collection[str]) -> Resolution | None:
        if len(matches) == 1:
            return Resolution(target, next(iter(matches)), "resolved")
        if len(matches) > 1:
            return Resolution(target, None, "ambiguous", tuple(sorted(matches)))
        return None


def closest_name(target: str, names: Iterable[str]) -> str | None:
    """The name nearest to ``target`` by edit distance, ignoring case, when it is near enough
    to be what a broken link meant (at most a third of the target's letters differ)."""
    wanted = target.strip().casefold()
    limit = max(1, len(wanted) // 3)
    best: tuple[int, str] | None = None
    for name in names:
        candidate = name.casefold()
        if abs(len(candidate) - len(wanted)) > limit or candidate == wanted:
            continue
        distance = _edit_distance(wanted, candidate, limit)
        if distance <= limit and (best is None or (distance, name) < best):
            best = (distance, name)
    return best[1] if best else None


def _edit_distance(a: str, b: str, limit: int) -> int:
    """Levenshtein distance, or ``limit + 1`` as soon as it must exceed ``limit``."""
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        current = [i]
        for j, other in enumerate(b, 1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char != other))
            )
        if min(current) > limit:
            return limit + 1
        previous = current
    return previous[-1]


def _name(key: str) -> str:
    return key.rsplit("/", 1)[-1]

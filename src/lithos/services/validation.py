"""``lithos validate``: a read-only check of every knowledge file.

Reports missing or malformed frontmatter, duplicate ids, and broken, ambiguous or stale
wiki-links (stale: the target is a path a note had before it was moved or renamed).
"""

from __future__ import annotations

from dataclasses import dataclass

from lithos.domain.frontmatter import FrontmatterError
from lithos.domain.links import LinkResolver, closest_name, normalise_target, parse_links
from lithos.domain.metadata import parse_metadata
from lithos.domain.notes import (
    Note,
    is_valid_id,
    parse_note,
    split_frontmatter,
)
from lithos.store.catalog import Catalog
from lithos.store.markdown import KnowledgeFiles

# Keys a note Lithos manages (one whose frontmatter has an ``id``) must carry. A person's file
# without an id needs none: its identity is kept in .lithos/ and its title comes from the
# frontmatter, the first heading or the file name.
REQUIRED = ("id", "created_at", "updated_at")


@dataclass(frozen=True)
class Problem:
    path: str
    kind: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "kind": self.kind, "message": self.message}


def validate(files: KnowledgeFiles, catalog: Catalog, max_file_bytes: int) -> list[Problem]:
    """Every problem found, sorted by path. Changes nothing."""
    problems: list[Problem] = []
    notes: list[Note] = []
    owners: dict[str, str] = {}
    for info in files.scan():
        if info.size > max_file_bytes:
            message = f"{info.size} bytes; notes are limited to {max_file_bytes}"
            problems.append(Problem(info.path, "too_large", message))
            continue
        try:
            text = files.read_text(info.path)
            meta, _ = split_frontmatter(text)
            note = parse_note(text, info.path)
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(Problem(info.path, "unreadable", str(exc)))
            continue
        except FrontmatterError as exc:
            problems.append(Problem(info.path, "malformed_frontmatter", str(exc)))
            continue
        problems.extend(_frontmatter_problems(info.path, meta))
        if note.id and note.id in owners:
            problems.append(
                Problem(
                    info.path, "duplicate_id", f"id {note.id} is also used by {owners[note.id]}"
                )
            )
            continue
        if note.id:
            owners[note.id] = info.path
        notes.append(note)
    indexed = {entry.path: entry.id for entry in catalog.entries()}
    notes = [n if n.id else n.with_changes(id=indexed.get(n.path, "")) for n in notes]
    problems.extend(_link_problems(notes, catalog.former_paths()))
    return sorted(problems, key=lambda p: (p.path, p.kind, p.message))


def _frontmatter_problems(path: str, meta: dict[str, object]) -> list[Problem]:
    found = []
    missing = [key for key in REQUIRED if not meta.get(key)]
    if meta.get("id") and missing:
        found.append(Problem(path, "missing_field", f"missing: {', '.join(missing)}"))
    raw_id = meta.get("id")
    if raw_id and not is_valid_id(str(raw_id).strip().lower()):
        found.append(Problem(path, "malformed_id", f"id {raw_id!r} is not a UUID"))
    confidence = meta.get("confidence")
    if confidence is not None:
        try:
            ok = 0.0 <= float(str(confidence)) <= 1.0
        except ValueError:
            ok = False
        if not ok:
            found.append(
                Problem(path, "malformed_field", f"confidence {confidence!r} not in [0, 1]")
            )
    _, rejected = parse_metadata(meta)
    for key, value in rejected.items():
        reads_as = getattr(parse_metadata({key: value})[0], key)
        message = f"{key} {value!r} is not valid; it is kept and reads as {reads_as!r}"
        found.append(Problem(path, "malformed_field", message))
    return found


def _link_problems(notes: list[Note], former: dict[str, str]) -> list[Problem]:
    # A file not indexed yet is still a link target; its path stands in for the id.
    keys = {n.path: n.id or f"path:{n.path}" for n in notes}
    resolver = LinkResolver.build((keys[n.path], n.path, n.aliases, n.title) for n in notes)
    paths = {keys[n.path]: n.path for n in notes}
    former_keys = {normalise_target(path): note_id for path, note_id in former.items()}
    former_names = {key.rsplit("/", 1)[-1]: note_id for key, note_id in former_keys.items()}
    names = [name for n in notes for name in (n.title, _stem(n.path), *n.aliases)]
    found = []
    for note in notes:
        for target in parse_links(note.content):
            outcome = resolver.resolve(target)
            if outcome.status == "ambiguous":
                found.append(
                    Problem(
                        note.path,
                        "ambiguous_link",
                        f"[[{target}]] matches {len(outcome.candidates)} notes: "
                        + ", ".join(paths.get(c, c) for c in outcome.candidates),
                    )
                )
            elif outcome.status == "broken":
                key = normalise_target(target)
                moved_to = former_keys.get(key) or former_names.get(key)
                if moved_to and moved_to in paths:
                    found.append(
                        Problem(
                            note.path,
                            "stale_link",
                            f"[[{target}]] points to a note that moved to {paths[moved_to]}",
                        )
                    )
                else:
                    found.append(Problem(note.path, "broken_link", _broken(target, names)))
    return found


def _broken(target: str, names: list[str]) -> str:
    message = f"[[{target}]] matches no note"
    suggestion = closest_name(target, names)
    return f"{message}; did you mean [[{suggestion}]]?" if suggestion else message


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].removesuffix(".md")

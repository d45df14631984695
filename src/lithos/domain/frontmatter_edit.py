"""Round-trip editing of a file's YAML frontmatter: change some keys, leave the rest as written.

When Lithos writes into a file a person wrote, only the keys whose values change are rendered
again; every other line (unknown keys, comments, quoting, list style, key order) stays exactly as
it was. A new key goes after the keys that precede it in Lithos' own order, else first.

Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from lithos.domain.frontmatter import FrontmatterError, load_frontmatter
from lithos.domain.notes import (
    FRONTMATTER_BLOCK,
    KNOWN_KEYS,
    Note,
    frontmatter_of,
    parse_note,
    split_frontmatter,
)

REMOVE = object()  # a change value that deletes the key

_TOP_LEVEL_KEY = re.compile(r"""^(?:[^\s#\-'"][^:]*|'[^']*'|"[^"]*")\s*:(?:\s|$)""")


@dataclass
class _Block:
    """A top-level key with every line that belongs to it, or (key None) comments and blanks."""

    key: str | None
    lines: list[str]


def render_changes(text: str, before: Note, after: Note) -> str:
    """The file text once ``before`` (parsed from ``text``) became ``after``.

    Only keys whose values changed are written, plus ``id`` when the file lacks it and
    ``created_at`` when the file lacks it (its modification time is about to be lost). Defaults
    Lithos derives for a person's file (an ``unknown`` author, no tags) are not written. The
    body is replaced only when the content changed, keeping the blank lines above it.
    """
    meta, _ = split_frontmatter(text)
    old, new = frontmatter_of(before), frontmatter_of(after)
    changes: dict[str, Any] = {}
    for key, value in new.items():
        if key == "id":
            if str(meta.get("id", "")).strip().lower() != value:
                changes[key] = value
        elif value != old.get(key) or (key == "created_at" and key not in meta):
            changes[key] = value
    for key in old:
        if key not in new and key in meta:
            changes[key] = REMOVE
    edited = edit_frontmatter(text, changes, KNOWN_KEYS) if changes else text
    if after.content != before.content:
        match = FRONTMATTER_BLOCK.match(edited)
        head, body = (edited[: match.end()], edited[match.end() :]) if match else ("", edited)
        lead = body[: len(body) - len(body.lstrip("\r\n"))] or ("\n" if head else "")
        content = after.content if after.content.endswith("\n") else after.content + "\n"
        edited = head + lead + content
    if "title" not in changes and parse_note(edited, after.path).title != after.title:
        # The title came from a heading the new content no longer has: write it down.
        edited = edit_frontmatter(edited, {"title": after.title}, KNOWN_KEYS)
    return edited


def edit_frontmatter(text: str, changes: Mapping[str, Any], order: Sequence[str] = ()) -> str:
    """``text`` with each key in ``changes`` set to its value (or removed, for ``REMOVE``).

    ``order`` is the preferred key order, used only to place keys the file does not have yet.
    A file without frontmatter gets a block at the top and keeps its text below it unchanged.
    Raises FrontmatterError when the existing frontmatter is not a YAML mapping.
    """
    meta, _ = split_frontmatter(text)
    match = FRONTMATTER_BLOCK.match(text)
    newline = "\r\n" if "\r\n" in (match.group(0) if match else text[:200]) else "\n"
    if match is None:
        added = {k: v for k, v in changes.items() if v is not REMOVE}
        if not added:
            return text
        return f"---{newline}{_dump(added, newline)}---{newline}{text}"
    original = match.group(1)
    edited = _edit_blocks(original, meta, changes, order, newline)
    return text[: match.start(1)] + edited + text[match.end(1) :]


def _edit_blocks(
    original: str,
    meta: dict[str, Any],
    changes: Mapping[str, Any],
    order: Sequence[str],
    newline: str,
) -> str:
    blocks = _blocks(original)
    expected = {**meta}
    if blocks is not None:
        for key, value in changes.items():
            _apply(blocks, key, value, order, newline)
        edited = "".join("".join(b.lines) for b in blocks).rstrip("\r\n")
    for key, value in changes.items():
        if value is REMOVE:
            expected.pop(key, None)
        else:
            expected[key] = value
    if blocks is not None and _loads(edited) == expected:
        return edited
    # The file's YAML is too unusual to edit line by line (anchors, flow mappings over many
    # lines...): render it again, keeping the person's key order.
    return _dump(expected, newline).rstrip("\r\n")


def _blocks(frontmatter: str) -> list[_Block] | None:
    """Split into top-level blocks; None when a block does not parse to exactly one key."""
    blocks: list[_Block] = []
    for line in frontmatter.splitlines(keepends=True):
        if _TOP_LEVEL_KEY.match(line):
            blocks.append(_Block("", [line]))
        elif line.strip() == "" or line.startswith("#"):
            blocks.append(_Block(None, [line]))
        elif blocks and blocks[-1].key is not None:
            blocks[-1].lines.append(line)
        else:
            return None
    for block in blocks:
        if block.key is None:
            continue
        try:
            parsed = load_frontmatter("".join(block.lines))
        except FrontmatterError:
            return None
        if not isinstance(parsed, dict) or len(parsed) != 1:
            return None
        block.key = str(next(iter(parsed)))
    if blocks and not blocks[-1].lines[-1].endswith("\n"):
        blocks[-1].lines[-1] += "\n"
    return blocks


def _apply(blocks: list[_Block], key: str, value: Any, order: Sequence[str], newline: str) -> None:
    index = next((i for i, b in enumerate(blocks) if b.key == key), None)
    if value is REMOVE:
        if index is not None:
            del blocks[index]
        return
    if index is not None:
        flow = blocks[index].lines[0].split(":", 1)[-1].lstrip().startswith("[")
        blocks[index] = _Block(key, _dump({key: value}, newline, flow).splitlines(keepends=True))
        return
    block = _Block(key, _dump({key: value}, newline).splitlines(keepends=True))
    before = order[: order.index(key)] if key in order else order
    positions = [i for i, b in enumerate(blocks) if b.key in before]
    blocks.insert(positions[-1] + 1 if positions else 0, block)


def _dump(values: Mapping[str, Any], newline: str, flow: bool = False) -> str:
    text = yaml.safe_dump(
        dict(values),
        sort_keys=False,
        allow_unicode=True,
        width=10_000,
        default_flow_style=None if flow else False,
    )
    return text.replace("\n", newline) if newline != "\n" else text


def _loads(frontmatter: str) -> Any:
    try:
        return load_frontmatter(frontmatter) or {}
    except FrontmatterError:
        return None

"""Tags as Obsidian reads them: in the frontmatter ``tags`` list and inline as ``#tag``.

A tag holds letters, digits, ``_``, ``-`` and ``/`` (for nesting, ``#area/sub``), and at least
one character that is not a digit; no spaces, commas or ``#`` inside. An inline tag starts at a
``#`` at the start of a line or after white space, outside code blocks and inline code, so a
heading (``# Title``), a link to a heading (``[[Note#Part]]``) and a URL fragment
(``https://x.org/#part``) are not tags.

Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from lithos.errors import InvalidInput

_TAG = re.compile(r"^[\w/-]+$")
_INLINE_TAG = re.compile(r"(?:^|(?<=\s))#([\w/-]+)", re.MULTILINE)
_FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[^\n]*$", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"(`+)(?!`).+?(?<!`)\1", re.DOTALL)
_TAG_CANDIDATE = re.compile(r"#[\w/-]")  # a '#' that could open a tag, wherever it stands
# A candidate after white space, a '`' (inline code ends) or a '#' ("\\#" is dropped): where
# one could stand after code and escapes are removed (each becomes a space).
_TAG_START = re.compile(r"[\s`#]#[\w/-]")


def is_valid_tag(tag: str) -> bool:
    """True when Obsidian would take ``tag`` (without its ``#``) as one tag."""
    return (
        bool(_TAG.match(tag))
        and not tag.isdigit()
        and not tag.startswith("/")
        and not tag.endswith("/")
        and "//" not in tag
    )


def clean_tags(tags: Sequence[str]) -> tuple[str, ...]:
    """Tags as given by an agent, each without a leading ``#``, duplicates (in any case: they
    are one tag) dropped, the first spelling kept.

    Raises InvalidInput naming the first tag Obsidian could not use, with a form it could.
    """
    cleaned: dict[str, str] = {}
    for raw in tags:
        tag = raw.strip().removeprefix("#")
        if not tag:
            continue
        if not is_valid_tag(tag):
            raise InvalidInput(_refusal(raw))
        cleaned.setdefault(tag_key(tag), tag)
    return tuple(cleaned.values())


def tag_key(tag: str) -> str:
    """The form two spellings of one tag share: Obsidian treats ``#Python`` and ``#python`` as
    one tag (it lowercases tags to compare them), and so does every Lithos tag filter and count.
    """
    return tag.lower()


def display_spelling(spellings: dict[str, int]) -> str:
    """The spelling to show for one tag, given how many notes use each: the most used one,
    and of equally used ones the first in sort order (``Python`` before ``python``)."""
    return min(spellings, key=lambda spelling: (-spellings[spelling], spelling))


def filter_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """Tags given as a filter: ``#python`` and ``python`` mean the same tag."""
    return tuple(dict.fromkeys(t.strip().removeprefix("#") for t in tags if t.strip()))


def inline_tags(content: str) -> tuple[str, ...]:
    """The ``#tags`` in a Markdown body, in order of first appearance, as Obsidian counts
    them: not in fenced code or inline code, never a heading or a URL fragment."""
    if not _TAG_CANDIDATE.search(content):  # most bodies: skip removing code, which costs most
        return ()
    if not (_TAG_CANDIDATE.match(content) or _TAG_START.search(content)):
        return ()  # every '#' is inside a word, as in code comments and URL fragments
    text = _INLINE_CODE.sub(" ", _FENCE.sub(" ", content)).replace("\\#", " ")
    found: dict[str, None] = {}
    for match in _INLINE_TAG.finditer(text):
        tag = match.group(1).rstrip("/")
        if is_valid_tag(tag):
            found.setdefault(tag, None)
    return tuple(found)


def note_tags(frontmatter_tags: Iterable[str], content: str) -> tuple[str, ...]:
    """Every tag of a note: its frontmatter tags (a leading ``#`` dropped), then the inline
    tags of its body that the frontmatter does not already list."""
    return tuple(dict.fromkeys([*filter_tags(frontmatter_tags), *inline_tags(content)]))


def _refusal(raw: str) -> str:
    suggestion = re.sub(r"[^\w/-]+", "-", raw.strip().lstrip("#")).strip("-/")
    suggestion = re.sub(r"/{2,}", "/", suggestion)
    hint = f'; write it as "{suggestion}"' if suggestion and is_valid_tag(suggestion) else ""
    return (
        f"tag {raw!r} cannot be used in Obsidian: a tag holds letters, digits, '_', '-' and "
        f"'/' (for nested tags), with at least one non-digit; no spaces, commas or '#'{hint}"
    )

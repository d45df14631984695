"""YAML frontmatter parsed with limits, so one hand-written file cannot freeze or crash Lithos.

A frontmatter block is parsed only when it is at most :data:`MAX_CHARS` characters, nests at
most :data:`MAX_DEPTH` levels, uses at most :data:`MAX_ALIASES` aliases (``*name``), and would
hold at most :data:`MAX_NODES` values once every alias is expanded. Anything beyond, including
an alias that refers to itself, raises :class:`FrontmatterError` before a single value is built:
a "billion laughs" file is reported as a problem, never expanded, and deep nesting never
reaches Python's recursion limit.

Where PyYAML has libyaml (its wheels do), the block is parsed in C: once as events to check
nesting and aliases, then composed and constructed by the same safe constructor, about twenty
times faster than the pure-Python parser, which dominated indexing time. Without libyaml the
pure-Python loader checks the same limits while composing. Frontmatter is written by libyaml
too (:func:`dump_frontmatter`), except for the few texts it would spell differently.

Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    ScalarEvent,
)
from yaml.nodes import MappingNode, Node, SequenceNode

MAX_CHARS = 64_000
MAX_DEPTH = 64
MAX_ALIASES = 100
MAX_NODES = 100_000


class FrontmatterError(ValueError):
    """A file's YAML frontmatter cannot be parsed, or is beyond the limits."""


_C_LOADER: type[yaml.SafeLoader] | None = getattr(yaml, "CSafeLoader", None)
_C_DUMPER: type[yaml.SafeDumper] | None = getattr(yaml, "CSafeDumper", None)
# libyaml escapes characters beyond the Basic Multilingual Plane (emoji: "\U0001F680"), which
# the Python emitter writes as they are; a person reads these files, so such texts go through
# the Python emitter. For any other text both emit the same bytes, except that libyaml escapes
# the line breaks NEL, LS and PS where the Python emitter writes a text that reads back with
# NEL turned into a space.
_PYTHON_SPELLED = re.compile("[\U00010000-\U0010ffff]")


class _LimitedLoader(yaml.SafeLoader):
    """PyYAML's safe loader with a nesting-depth and alias-count check in the composer."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise FrontmatterError(f"frontmatter uses more than {MAX_ALIASES} aliases")
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise FrontmatterError(f"frontmatter nests deeper than {MAX_DEPTH} levels")
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def load_frontmatter(block: str) -> Any:
    """The value of one YAML frontmatter block (``None`` when empty), within the limits.

    Raises FrontmatterError for invalid YAML or a block beyond any limit.
    """
    if len(block) > MAX_CHARS:
        raise FrontmatterError(f"frontmatter is {len(block)} characters; the limit is {MAX_CHARS}")
    if _bracket_depth(block) > MAX_DEPTH:
        # PyYAML's scanner slows down with every open flow level; refuse before scanning.
        raise FrontmatterError(f"frontmatter nests deeper than {MAX_DEPTH} levels")
    if _C_LOADER is None:
        return _load(_LimitedLoader(block))
    _check_shape(block, _C_LOADER)
    return _load(_C_LOADER(block))


def dump_frontmatter(values: Mapping[str, Any]) -> str:
    """The YAML block of a frontmatter mapping, keys in the given order, characters as they
    are (``allow_unicode``), never folded (a wide line width)."""
    dumper = yaml.SafeDumper if _C_DUMPER is None or _python_spelled(values) else _C_DUMPER
    return yaml.dump(dict(values), Dumper=dumper, sort_keys=False, allow_unicode=True, width=10_000)


def _python_spelled(value: object) -> bool:
    """Whether any text in ``value`` (keys too) holds a character libyaml would escape."""
    if isinstance(value, str):
        return _PYTHON_SPELLED.search(value) is not None
    if isinstance(value, Mapping):
        return any(_python_spelled(k) or _python_spelled(v) for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return any(_python_spelled(item) for item in value)
    return False


def _load(loader: yaml.SafeLoader) -> Any:
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expanded_size(node)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"invalid YAML frontmatter: {exc}") from exc
    finally:
        loader.dispose()


def _check_shape(block: str, loader_type: type[yaml.SafeLoader]) -> None:
    """Refuse a block nesting deeper than MAX_DEPTH (a value counts one level below its
    collection, as the pure-Python composer counts) or with more than MAX_ALIASES aliases,
    from its parse events alone: no node is built."""
    loader = loader_type(block)
    depth = aliases = 0
    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, CollectionStartEvent | ScalarEvent):
                if depth + 1 > MAX_DEPTH:
                    raise FrontmatterError(f"frontmatter nests deeper than {MAX_DEPTH} levels")
                depth += isinstance(event, CollectionStartEvent)
            elif isinstance(event, CollectionEndEvent):
                depth -= 1
            elif isinstance(event, AliasEvent):
                aliases += 1
                if aliases > MAX_ALIASES:
                    raise FrontmatterError(f"frontmatter uses more than {MAX_ALIASES} aliases")
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"invalid YAML frontmatter: {exc}") from exc
    finally:
        loader.dispose()


def _bracket_depth(block: str) -> int:
    """How deep ``[`` and ``{`` nest in the raw text, quotes ignored: never less than the
    flow nesting PyYAML would see, so a block within it cannot exceed MAX_DEPTH by flow."""
    depth = deepest = 0
    for char in block:
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}" and depth:
            depth -= 1
    return deepest


def _check_expanded_size(root: Node) -> None:
    """Count the values ``root`` stands for with every alias expanded, without expanding.

    An alias is the same node object as its anchor, so sizes are memoised per node; a node
    met again while still being counted is an alias to itself, which could never be
    written back out or compared, and is refused.
    """
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise FrontmatterError("frontmatter has an alias that refers to itself")
        open_nodes.add(key)
        total = 1
        if isinstance(node, SequenceNode):
            total += sum(size(child) for child in node.value)
        elif isinstance(node, MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        if total > MAX_NODES:
            raise FrontmatterError(
                f"frontmatter expands to more than {MAX_NODES} values through its aliases"
            )
        open_nodes.discard(key)
        sizes[key] = total
        return total

    size(root)

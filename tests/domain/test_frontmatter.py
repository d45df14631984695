"""Frontmatter is parsed within limits: hostile YAML is refused quickly, never expanded."""

from __future__ import annotations

import time

import pytest
import yaml

from lithos.domain.frontmatter import (
    MAX_CHARS,
    MAX_DEPTH,
    FrontmatterError,
    dump_frontmatter,
    load_frontmatter,
)
from lithos.domain.notes import split_frontmatter


def billion_laughs(levels: int = 9) -> str:
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels):
        refs = ", ".join([f"*l{level - 1}"] * 9)
        lines.append(f"l{level}: &l{level} [{refs}]")
    return "\n".join(lines)


HOSTILE = {
    "billion laughs": billion_laughs(),
    "alias to itself": "a: &a [1, *a]",
    "too many aliases": "a: &a 1\nb: [" + ", ".join(["*a"] * 101) + "]",
    "deep flow nesting": "a: " + "[" * 3000 + "]" * 3000,
    "deep flow mappings": "a: " + "{b: " * 3000 + "1" + "}" * 3000,
    "deep block nesting": "".join(" " * i + "k:\n" for i in range(MAX_DEPTH + 10)),
    "oversized": "a: " + "x" * (MAX_CHARS + 1),
}


@pytest.mark.parametrize("block", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_frontmatter_is_refused_promptly(block: str):
    started = time.monotonic()
    with pytest.raises(FrontmatterError):
        split_frontmatter(f"---\n{block}\n---\n\nbody\n")
    # Generous even for a loaded machine: the unbounded parse runs for minutes or never ends.
    assert time.monotonic() - started < 5


def test_ordinary_anchors_and_moderate_nesting_still_parse():
    meta = load_frontmatter(
        "defaults: &d {lang: en, tags: [a, b]}\nthis: *d\nnested: "
        + "[" * (MAX_DEPTH - 2)
        + "1"
        + "]" * (MAX_DEPTH - 2)
    )
    assert meta["this"] == {"lang": "en", "tags": ["a", "b"]}
    assert meta["defaults"] == meta["this"]


def test_invalid_yaml_is_still_a_frontmatter_error():
    with pytest.raises(FrontmatterError, match="invalid YAML"):
        load_frontmatter("title: [unclosed")


@pytest.mark.parametrize(
    "text",
    [
        "Deploy 🚀 done",  # beyond the Basic Multilingual Plane: libyaml would escape it
        "plain words",
        "colon: and #hash, 'quotes' and \"double\"",
        "two\nlines\n",
        "tab\there, ünïcödé 中文, a\x07bell and \ufeffBOM",
        "yes",
        "",
    ],
)
def test_frontmatter_is_written_as_the_python_emitter_writes_it(text: str):
    values = {"title": text, "tags": [text, "b"], "confidence": 0.5, "meta": {"k": [text, 1]}}
    expected = yaml.safe_dump(values, sort_keys=False, allow_unicode=True, width=10_000)
    assert dump_frontmatter(values) == expected
    assert load_frontmatter(dump_frontmatter(values)) == values


def test_characters_beyond_the_basic_plane_are_written_as_they_are():
    assert dump_frontmatter({"title": "Deploy 🚀"}) == "title: Deploy 🚀\n"


def test_unicode_line_breaks_read_back_as_written():
    values = {"title": "line\x85next\u2028and\u2029more"}
    assert load_frontmatter(dump_frontmatter(values)) == values

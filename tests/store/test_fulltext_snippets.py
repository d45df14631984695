"""Placing the stretch of a note Tantivy's snippet generator reads, and picking its fragment in
Python as Tantivy would (pure functions, checked against Tantivy's own generator)."""

from __future__ import annotations

import random
from collections.abc import Mapping

import pytest
import tantivy

from lithos.store.fulltext import build_schema
from lithos.store.fulltext_overlay import analyze
from lithos.store.fulltext_snippets import (
    SNIPPET_MAX_CHARS,
    WINDOW_CHARS,
    Scanned,
    SnippetTerms,
    best_fragment,
    fragment_weights,
    render_fragment,
    snippet_window,
    term_weights,
)


def window(content: str, weights: Mapping[str, float]) -> tuple[int, int]:
    found = snippet_window(content, SnippetTerms(weights))
    assert found is not None
    return found


def test_term_weights_make_rare_terms_heavier_and_drop_absent_ones() -> None:
    weights = term_weights({"the", "pangolin", "zebra"}, 100, {"the": 90, "pangolin": 2})
    assert set(weights) == {"the", "pangolin"}
    assert weights["pangolin"] > 5 * weights["the"] > 0


def test_the_window_surrounds_the_heaviest_words_and_is_cut_at_spaces() -> None:
    content = "the cat sat. " * 300 + "a pangolin walked by. " + "the end. " * 300
    at = content.index("pangolin")
    start, end = window(content, {"the": 0.1, "pangolin": 4.0})
    assert start < at < end and end - start <= WINDOW_CHARS + 20
    assert content[start - 1] == " " and content[end] == " "


def test_stemmed_forms_count_and_other_words_with_the_same_start_do_not() -> None:
    content = "runway " * 200 + "she was running. " + "runway " * 200
    start, end = window(content, {"run": 1.0})
    assert start < content.index("running") < end


def test_no_window_when_no_word_can_match() -> None:
    assert snippet_window("nothing to see here", SnippetTerms({"pangolin": 3.0})) is None


def test_common_terms_place_the_window_when_no_rare_one_occurs() -> None:
    content = "x " * 1000 + "the end"
    start, end = window(content, {"pangolin": 5.0, "the": 0.1})
    assert start < content.index("the end") < end


def test_text_whose_lower_case_changes_length_is_read_whole() -> None:
    content = "İstanbul " + "word " * 500
    assert snippet_window(content, SnippetTerms({"word": 1.0})) == (0, len(content))


# Words chosen for the edges of Tantivy's tokenizer and stemmer: irregular stems, stems that
# drop letters, digits, tokens of 39 and 40 letters (the second is dropped), joined by
# separators that split tokens (underscore, apostrophe, hyphen) or not.
WORDS = [
    *["dying", "die", "dies", "lying", "lie", "tying", "ties", "tie"],
    *["run", "running", "runs", "runner", "runway", "a", "an", "as"],
    *["tar", "tarball", "tars", "archive", "archives", "archiving", "arch"],
    *["Archive", "TAR", "x2", "42", "v1", "2024", "b" * 39, "c" * 40, "d" * 60],
]
SEPARATORS = [" ", " ", " ", "  ", "\n", ", ", "-", "/", ". ", "_", "'", "`{{", "}}` "]
QUERY = "die run a tar archive lie tie 42 " + "b" * 39


@pytest.fixture(scope="module")
def generator() -> tuple[tantivy.SnippetGenerator, dict[str, float]]:
    """Tantivy's snippet generator for QUERY over a small index in which the terms are held
    by different numbers of documents (two by the same number, for ties)."""
    index = tantivy.Index(build_schema())
    writer = index.writer(heap_size=15_000_000, num_threads=1)
    texts = ["die run tar", "run a tar archive", "a tar lie", "a tie", "a 42", "b" * 39]
    for number, text in enumerate(texts):
        writer.add_document(tantivy.Document(id=str(number), title="", content=text))
    writer.commit()
    index.reload()
    searcher = index.searcher()
    query = index.parse_query(QUERY, ["title", "content"])
    made = tantivy.SnippetGenerator.create(searcher, query, index.schema, "content")
    made.set_max_num_chars(SNIPPET_MAX_CHARS)
    terms = {token for token, _ in analyze(QUERY)}
    return made, fragment_weights({term: searcher.doc_freq("content", term) for term in terms})


def random_window(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(1, 160)):
        parts += [rng.choice(WORDS), rng.choice(SEPARATORS)]
    return "".join(parts[: rng.randint(1, len(parts))])


def test_fragment_weights_are_tantivys_32_bit_floats() -> None:
    weights = fragment_weights({"a": 4, "tar": 2, "absent": 0})
    assert weights == {"a": 0.20000000298023224, "tar": 0.3333333432674408}


def test_the_fragment_found_in_python_is_the_one_tantivy_picks(
    generator: tuple[tantivy.SnippetGenerator, dict[str, float]],
) -> None:
    made, weights = generator
    terms = SnippetTerms({}, weights)
    rng = random.Random(11)
    compared = highlighted = 0
    for _ in range(1500):
        window = random_window(rng)
        snippet = made.snippet_from_doc(tantivy.Document(content=window))
        found = best_fragment(window, terms)
        expected = [(span.start, span.end) for span in snippet.highlighted()]
        if not expected:
            assert found is None, window
            continue
        where = snippet.fragment_range()
        assert found == (where.start, where.end, expected), window
        compared += 1
        highlighted += len(expected)
    assert compared > 1000 and highlighted > 10_000


def test_a_window_that_is_not_ascii_is_left_to_tantivy(
    generator: tuple[tantivy.SnippetGenerator, dict[str, float]],
) -> None:
    terms = SnippetTerms({}, generator[1])
    assert best_fragment("the café sells a tar archive", terms) is None


def test_a_rendered_fragment_is_marked_and_cut_as_tantivys_snippet_is() -> None:
    content = "intro words. " * 40 + "extract a tar archive here. " + "more words. " * 40
    start = content.index("extract") - 13
    window = (start, start + 300)
    terms = SnippetTerms({}, {"tar": 0.5, "archiv": 0.25})
    fragment = best_fragment(content[start : start + 300], terms)
    assert fragment is not None
    snippet = render_fragment(content, window, fragment)
    assert "**tar** **archive**" in snippet
    assert snippet.startswith("…") and snippet.endswith("…")


def test_fragment_scores_tie_in_32_bit_floats_as_tantivys_do() -> None:
    """Three matches weighing 1/6 sum to exactly 0.5 in 32-bit floats (not in 64-bit ones),
    tying with one match weighing 1/2: the first fragment wins, in Tantivy and here."""
    index = tantivy.Index(build_schema())
    writer = index.writer(heap_size=15_000_000, num_threads=1)
    for number, text in enumerate(["tar a", "a", "a", "a", "a"]):
        writer.add_document(tantivy.Document(id=str(number), title="", content=text))
    writer.commit()
    index.reload()
    searcher = index.searcher()
    made = tantivy.SnippetGenerator.create(
        searcher, index.parse_query("tar a", ["content"]), index.schema, "content"
    )
    made.set_max_num_chars(SNIPPET_MAX_CHARS)
    weights = fragment_weights({term: searcher.doc_freq("content", term) for term in ("tar", "a")})
    window = "tar " + "filler " * 40 + "a a a"
    snippet = made.snippet_from_doc(tantivy.Document(content=window))
    where = snippet.fragment_range()
    assert where.start == 0
    assert best_fragment(window, SnippetTerms({}, weights)) == (where.start, where.end, [(0, 3)])


def test_the_words_placing_the_window_give_the_fragment_a_fresh_look_gives(
    generator: tuple[tantivy.SnippetGenerator, dict[str, float]],
) -> None:
    """best_fragment reuses what snippet_window saw of the rare terms (their first words, or
    all of them); texts long enough that a term's scan stops before, inside and after the
    window, so each way of reusing it is met."""
    weights = generator[1]
    terms = SnippetTerms({term: 1.0 / weight for term, weight in weights.items()}, weights)
    rng = random.Random(5)
    stops = {"before": 0, "inside": 0, "after": 0}
    compared = 0
    for _ in range(600):
        content = "".join(random_window(rng) + " " for _ in range(rng.randint(1, 12)))
        lowered = content.lower()
        scanned: Scanned = {}
        placed = snippet_window(content, terms, lowered, scanned)
        assert placed == snippet_window(content, terms, lowered)
        if placed is None:
            continue
        start, end = placed
        fresh = best_fragment(content[start:end], terms, lowered[start:end])
        assert best_fragment(content[start:end], terms, lowered[start:end], scanned, start) == fresh
        compared += fresh is not None
        for words in scanned.values():
            if len(words) == 8:  # the scan stopped at the eighth word
                stop = words[-1].end()
                stops["before" if stop <= start else "inside" if stop < end else "after"] += 1
    assert compared > 300 and min(stops.values()) > 10, stops
